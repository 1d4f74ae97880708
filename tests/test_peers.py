"""`benchmarks/peers/`: the demo's splits exported as its own BPE pieces, the side-by-side settings and fairseq's flags
derived from them, fairseq's logs read back, and the record's schema. None of it needs a peer's environment."""

import datetime
import json
from pathlib import Path

import pytest
from datasets import Dataset, DatasetDict

from hf_vanilla.configuration_vanilla import SIZES
from hf_vanilla.training.presets import WMT_PRESETS

from benchmarks.peers import __main__ as peers_main
from benchmarks.peers import comparison
from benchmarks.peers import translation as translation_task
from benchmarks.peers.common import pieces as common_pieces
from benchmarks.peers.common import records, venvs
from benchmarks.peers.common import settings as common_settings
from benchmarks.peers.fairseq import runner as fairseq_runner
from benchmarks.peers.fairseq import translation_table as fairseq_table
from benchmarks.peers.opennmt import translation_table as opennmt_table
from benchmarks.peers.recipe import ct2
from benchmarks.peers.recipe import runs as recipe_runs
from benchmarks.studies import decode_split, settled_sentences
from benchmarks.studies import opennmt_beam_stop as study

PAIRS = {
    "train": [
        ("The light was good.", "Das Licht war gut."),
        ("God saw the light, and it was good.", "Und Gott sah das Licht, daß es gut war."),
        ("In the beginning God created the heavens.", "Im Anfang schuf Gott die Himmel."),
        ("Yes.", "Und es geschah so, und es war Abend und es war Morgen, der erste Tag."),  # ratio > 1.5: dropped
    ],
    "validation": [("The earth was empty.", "Die Erde war leer.")],
    "test": [("God said: light!", "Gott sprach: Licht!"), ("It was evening.", "Es war Abend."), ("Ja", "Yes")],
}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    corpus = DatasetDict(
        {
            split: Dataset.from_list([{"translation": {"en": en, "de": de}} for en, de in pairs])
            for split, pairs in PAIRS.items()
        }
    )
    folder = tmp_path_factory.mktemp("peers")
    tokenizer = translation_task.translation_tokenizer(folder / "tokenizer", corpus["train"], 300)
    settings = {"max_length": 250, "max_length_ratio": 1.5}
    return translation_task.export_splits(corpus, tokenizer, folder / "data", settings, test_limit=2), tokenizer


def test_the_exported_pieces_are_the_recipe_s_ids_and_decode_to_the_text(exported):
    export, tokenizer = exported
    kept = {"train": PAIRS["train"][:3], "valid": PAIRS["validation"], "test": PAIRS["test"][:2]}
    for stem, pairs in kept.items():
        for index, side in enumerate(("en", "de")):
            lines = (export.folder / f"{stem}.{side}").read_text(encoding="utf-8").splitlines()
            texts = [pair[index] for pair in pairs]
            assert len(lines) == len(texts), (stem, side)
            for line, text in zip(lines, texts):
                ids = tokenizer.convert_tokens_to_ids(line.split()) + [tokenizer.eos_token_id]
                assert ids == tokenizer(text)["input_ids"]
                assert common_pieces.text_from_pieces(line, tokenizer) == text
    assert (export.folder / "test.raw.de").read_text(encoding="utf-8").splitlines() == [
        "Gott sprach: Licht!",
        "Es war Abend.",
    ]
    assert export.counts == {"train": 3, "valid": 1, "test": 2} and export.dropped["length_ratio"] == 1


def test_the_dictionary_gives_fairseq_the_tokenizer_s_vocabulary(exported):
    export, tokenizer = exported
    pieces = [line.rsplit(" ", 1)[0] for line in (export.folder / "dict.txt").read_text(encoding="utf-8").splitlines()]
    # fairseq puts its own <s> <pad> </s> <unk> in front: the same size and the same pieces as the tokenizer's.
    assert len(pieces) + 4 == len(tokenizer) and len(set(pieces)) == len(pieces)
    assert set(pieces) | {"<s>", "<pad>", "</s>", "<unk>"} == set(tokenizer.get_vocab())
    used = {piece for stem in ("train", "valid", "test") for side in ("en", "de")
            for piece in (export.folder / f"{stem}.{side}").read_text(encoding="utf-8").split()}  # fmt: skip
    assert used <= set(pieces)


def test_every_setting_of_the_demo_preset_is_in_the_table_and_fairseq_s_flags():
    settings = translation_task.demo_settings()
    model, run = SIZES["demo"], WMT_PRESETS["demo"]
    for name in ("encoder_layers", "decoder_layers", "d_model", "num_attention_heads", "d_ff", "dropout"):
        assert settings[name] == model[name]
    for name in ("vocab_size", "tokens_per_step", "warmup_steps", "max_steps", "average_last", "save_every"):
        assert settings[name] == run[name]
    flags = fairseq_table.fairseq_train_flags(settings, seed=3)
    given = dict(zip(flags, flags[1:]))
    expected = {
        "--encoder-layers": "3", "--decoder-layers": "3", "--encoder-embed-dim": "128", "--decoder-embed-dim": "128",
        "--encoder-attention-heads": "4", "--encoder-ffn-embed-dim": "512", "--dropout": "0.1",
        "--attention-dropout": "0.0", "--activation-dropout": "0.0", "--label-smoothing": "0.1",
        "--adam-betas": "(0.9, 0.98)", "--adam-eps": "1e-09", "--warmup-updates": "400", "--warmup-init-lr": "0",
        "--max-tokens": "2000", "--required-batch-size-multiple": "1", "--max-update": "2400",
        "--save-interval-updates": "100", "--keep-interval-updates": "3", "--validate-interval-updates": "600",
        "--seed": "3",
    }  # fmt: skip
    assert {flag: given[flag] for flag in expected} == expected
    assert float(given["--lr"]) == pytest.approx(0.5 * 128**-0.5 * 400**-0.5)  # the peak of the paper's schedule
    assert "--share-all-embeddings" in flags and "--no-epoch-checkpoints" in flags
    generate = fairseq_table.fairseq_generate_flags(settings)
    assert dict(zip(generate[::2], generate[1::2])) == {
        "--beam": "4", "--lenpen": "0.6", "--max-len-a": "1", "--max-len-b": "49", "--max-tokens": "4000",
        "--batch-size": "192", "--required-batch-size-multiple": "1",  # 768 beam rows at beam 4
    }  # fmt: skip
    rows = {row.setting: row for row in fairseq_table.fairseq_rows(settings)}
    assert not rows["length penalty"].matched and "GNMT" in rows["length penalty"].hf_vanilla
    assert "length normalization" in rows["length penalty"].peer
    rendered = common_settings.render(list(rows.values()), "fairseq")
    assert rendered.splitlines()[-1] == "fairseq cannot match: learning rate, batching, validation, length penalty."
    assert not rows["validation"].matched and "every 100 updates" in rows["validation"].note


def test_a_short_check_overrides_only_the_budget():
    short = translation_task.demo_settings(max_steps=20, save_every=5, eval_every=10)
    assert (short["max_steps"], short["save_every"], short["eval_every"]) == (20, 5, 10)
    assert short["peak_lr"] == translation_task.demo_settings()["peak_lr"]
    with pytest.raises(ValueError, match="not overridable"):
        translation_task.demo_settings(dropout=0.3)


def test_fairseq_s_logs_are_read_back():
    generated = "S-1\tx\nH-1\t-0.5\tĠb\nD-1\t-0.5\tb\nH-0\t-0.2\tĠa Ġc\n"
    generated += "2026-11-26 | INFO | fairseq_cli.generate | Translated 2 sentences (5 tokens) in 0.3s (6.67 sentences/s, 16.67 tokens/s)\n"  # noqa: E501
    assert fairseq_runner.hypotheses_in_order(generated) == ["Ġa Ġc", "Ġb"]
    assert fairseq_runner.decoding_speed(generated) == 6.67
    with pytest.raises(ValueError, match=r"no hypothesis for test sentences \[0\]"):
        fairseq_runner.hypotheses_in_order(generated.replace("H-0", "X-0"))
    log = '2026 | INFO | train_inner | {"epoch": 1, "update": 0.1, "wps": "10"}\n'
    log += '2026 | INFO | train | {"epoch": 1, "train_loss": "9.1", "train_wps": "1234.5", "train_wall": "12"}\n'
    assert fairseq_runner.train_figures(log) == {
        "epoch": 1.0,
        "train_loss": 9.1,
        "train_wps": 1234.5,
        "train_wall": 12.0,
    }
    valid = '2026 | INFO | valid | {{"epoch": 1, "valid_loss": "6.2", "valid_ppl": "{}", "valid_num_updates": "9"}}\n'
    figures = fairseq_runner.train_figures(valid.format("80.5") + log + valid.format("41.25"))
    assert (figures["valid_ppl"], figures["train_loss"]) == (41.25, 9.1)  # the last validation's


def test_fairseq_s_training_speed_is_the_whole_run_s_tokens_over_its_training_seconds():
    """Every epoch's tokens (its mean batch times its updates) over the sum of its training meter, not the last
    epoch's own figure: here 1,000 + 5 x 200 tokens in 2 + 3 s."""
    line = '2026 | INFO | train | {{"epoch": {}, "train_wps": "{}", "train_wpb": "{}", "train_num_updates": "{}", '
    line += '"train_train_wall": "{}", "train_wall": "{}"}}\n'
    log = line.format(1, 50, 100, 10, 2, 3) + line.format(2, 333.3, 200, 15, 3, 7)
    speed = fairseq_runner.target_tokens_per_second(log)
    assert speed == {"target_tokens": 2000, "seconds": 5.0, "target_tokens_per_s": 400.0}
    with pytest.raises(ValueError, match="no end-of-epoch figures"):
        fairseq_runner.target_tokens_per_second(log.replace("train_wps", "wps"))


def test_a_record_holds_every_figure_and_is_refused_without_one(tmp_path):
    record = {
        "task": "translation",
        "system": "fairseq",
        "seed": 1,
        "quality": {"metric": "sacrebleu", "value": 12.3},
        "train_tokens_per_s": 1000.0,
        "decode_sentences_per_s": 5.0,
        "wall_s": 60.0,
        "peak_rss_mb": 700.0,
        "environment": {"machine": {"cpu_model": None}},  # named apart by the CPU model: see below
        "device": records.device(2),
        "settings": [{"setting": "beam", "hf_vanilla": "4", "peer": "--beam 4", "note": "", "matched": True}],
        "command": "python -m benchmarks.peers --task translation --system fairseq --seed 1",
    }
    path = records.write_record(record, tmp_path)
    assert path.name == f"peers-translation-fairseq-seed1-{datetime.date.today().isoformat()}.json"
    assert json.loads(path.read_text()) == record
    for broken in ({k: v for k, v in record.items() if k != "wall_s"}, {**record, "quality": 12.3},
                   {**record, "system": "marian"}, {**record, "system": "opennmt"}):  # fmt: skip
        with pytest.raises(ValueError, match="not a peer record"):
            records.write_record(broken, tmp_path / "refused")
    assert not (tmp_path / "refused").exists()
    for variant in ("opennmt-py", "fairseq-no-copy", "sockeye"):
        assert records.write_record({**record, "system": variant}, tmp_path).exists()


def test_the_install_lines_are_pinned():
    assert venvs.install_line("fairseq") == "pip install torch==2.14.1 fairseq-fixed==0.12.3.1"
    assert venvs.install_line("opennmt") == "pip install opennmt-py==3.5.1 'numpy<2'"
    assert all("==" in package or "<" in package for packages in venvs.INSTALL.values() for package in packages)


def test_the_command_line_takes_a_short_check_and_refuses_a_count_under_one(monkeypatch, capsys):
    args = peers_main.parse_args(
        ["--system", "fairseq", "--max-updates", "20", "--save-every", "5", "--test-limit", "20"]
    )
    settings = comparison.run_settings(args)
    assert (settings["max_steps"], settings["save_every"], settings["eval_every"]) == (20, 5, 600)
    assert comparison.short_check(args) and not comparison.short_check(
        peers_main.parse_args(["--system", "hf_vanilla"])
    )
    with pytest.raises(SystemExit):
        peers_main.parse_args(["--system", "fairseq", "--max-updates", "0"])
    assert (
        capsys.readouterr().err.splitlines()[-1]
        == "python -m benchmarks.peers: error: --max-updates must be at least 1, got 0"
    )
    with pytest.raises(SystemExit):
        peers_main.parse_args(["--system", "marian"])  # no such peer: refused by argparse


def test_a_peer_s_tuned_rate_reaches_its_flags_its_table_and_its_record_name(monkeypatch, capsys, tmp_path):
    """`--peer-lr-scale`: the peer's flags take the scaled peak, the table's hf_vanilla column keeps the preset's and
    a row says what was tuned, and the record and work folder are named apart from an untuned run's."""
    preset = comparison.run_settings(peers_main.parse_args(["--system", "fairseq"]))
    tuned = comparison.run_settings(peers_main.parse_args(["--system", "fairseq", "--peer-lr-scale", "0.25"]))
    assert tuned == {**preset, "peer_lr_scale": 0.25}
    flags = fairseq_table.fairseq_train_flags(tuned, 1)
    peak = preset["peak_lr"] * 0.25 / preset["lr_scale"]
    assert float(flags[flags.index("--lr") + 1]) == pytest.approx(peak)
    rate = next(row for row in fairseq_table.fairseq_rows(tuned) if row.setting == "learning rate")
    assert f"peak {preset['peak_lr']:.6g}" in rate.hf_vanilla and f"--lr {peak:.6g}" in rate.peer
    assert comparison.tuned_rows(preset) == []
    [row] = comparison.tuned_rows(tuned)
    assert (row.hf_vanilla, row.peer) == (
        f"lr_scale {preset['lr_scale']} (the preset's)",
        "lr_scale 0.25 (--peer-lr-scale)",
    )
    assert not row.matched
    opennmt = opennmt_table.train_config(tuned, 1, tmp_path, tmp_path / "v", tmp_path / "m", 10)
    assert opennmt["learning_rate"] == 0.25
    record = {"task": "translation", "system": "fairseq", "seed": 1, "resolved_settings": tuned}
    day = datetime.date(2026, 11, 27)
    assert (
        records.record_path(tmp_path, record, day).name
        == "peers-translation-fairseq-lr_scale0.25-seed1-2026-11-27.json"
    )
    record["environment"] = {"machine": {"processor": "x86_64", "cpu_model": "AMD EPYC 7B13 (2 cores)"}}
    assert records.record_path(tmp_path, record, day).name == (
        "peers-translation-fairseq-lr_scale0.25-seed1-2026-11-27-amd-epyc-7b13-2-cores.json"
    )
    for refused in (
        ["--system", "hf_vanilla", "--peer-lr-scale", "0.5"],
        ["--system", "fairseq", "--peer-lr-scale", "0"],
    ):
        with pytest.raises(SystemExit):
            peers_main.parse_args(refused)
        assert "--peer-lr-scale is a positive scale of a peer's rate" in capsys.readouterr().err


def test_a_finished_run_s_tokenizer_is_reused_only_for_the_same_training_text(exported, tmp_path):
    export, tokenizer = exported
    folder = export.folder.parent / "tokenizer"  # written as the recipe writes OUTPUT_DIR/tokenizer
    train = Dataset.from_list([{"translation": {"en": en, "de": de}} for en, de in PAIRS["train"]])
    assert (
        translation_task.translation_tokenizer(tmp_path / "unused", train, 300, source=folder).get_vocab()
        == tokenizer.get_vocab()
    )
    other = train.select(range(2))
    with pytest.raises(ValueError, match="trained for other data"):
        translation_task.translation_tokenizer(tmp_path / "unused", other, 300, source=folder)
    assert not (tmp_path / "unused").exists()


def peer_record(
    tmp_path, system: str, seed: int, value: float, speed: float, cpu_model: str | None = None, task="translation",
    date="", **extra
):  # fmt: skip
    """A peer record of `task` as `python -m benchmarks.peers` writes it, its decoding speed speed / 100, on a machine
    of `cpu_model`, its file named with `date` as records are."""
    device = {"processor": "x86_64", "threads": 2, "cpu_count": 2, **({"cpu_model": cpu_model} if cpu_model else {})}
    metric = {"translation": "sacrebleu", "summarization": "rouge1", "parsing": "f1"}[task]
    record = {"task": task, "system": system, "seed": seed, "quality": {"metric": metric,
              "value": value}, "train_tokens_per_s": speed, "decode_sentences_per_s": speed / 100, "wall_s": 600.0,
              "peak_rss_mb": 500.0, "device": device, **extra}  # fmt: skip
    settings = extra.get("resolved_settings", {})
    name = system + (f"-lr_scale{settings['peer_lr_scale']}" if "peer_lr_scale" in settings else "")
    name += f"-{settings['max_steps']}-updates" if "max_steps" in settings else ""
    (tmp_path / f"peers-{task}-{name}-seed{seed}-{date}-{cpu_model}.json").write_text(json.dumps(record))


def verdict_rows(render_tables, task: str = "translation") -> list[list[str]]:
    """The verdict table's rows of `task`, each a list of its cells."""
    lines = render_tables.verdict_block(task).splitlines()
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:] if line.startswith("|")]


def test_the_verdict_table_is_each_systems_mean_and_spread_over_its_seeds(tmp_path, monkeypatch):
    """`render_tables.verdict_block`: one row a system, hf_vanilla's first, quality as mean ± sd (least-greatest) over
    the seeds, speeds as the idle runs' mean and its ratio to hf_vanilla's; a short check is no figure, a run on a
    shared machine gives its quality, not its speeds, and a peer's own learning-rate scale is a row of its own."""
    from runs import benchmark

    render_tables = benchmark("render_tables")
    monkeypatch.setattr(render_tables, "RESULTS", tmp_path)
    assert render_tables.verdict_block("translation") == "No full run is recorded yet.\n"
    peer_record(tmp_path, "fairseq", 1, 20.0, 1800.0)
    peer_record(tmp_path, "fairseq", 2, 21.0, 2200.0)
    peer_record(tmp_path, "hf_vanilla", 1, 22.5, 1000.0)
    peer_record(tmp_path, "hf_vanilla", 2, 99.0, 1.0, short_check=True)
    peer_record(tmp_path, "sockeye", 1, 18.0, 5.0, machine_shared=True)
    peer_record(tmp_path, "sockeye", 1, 19.0, 500.0, resolved_settings={"peer_lr_scale": 0.25})
    where = "2-core x86_64 (model not recorded), 2 threads"
    assert [row[:6] for row in verdict_rows(render_tables)] == [
        ["hf_vanilla", where, "1", "22.50", "1,000.0 (1.00)", "10.00 (1.00)"],
        ["fairseq", where, "1-2", "20.50 ± 0.71 (20.00-21.00)", "2,000.0 (2.00)", "20.00 (2.00)"],
        ["sockeye", where, "1", "18.00", "shared machine", "shared machine"],
        ["sockeye (lr_scale 0.25)", where, "1", "19.00", "500.0 (0.50)", "5.00 (0.50)"],
    ]


def test_the_verdict_table_keeps_each_machines_speeds_apart(tmp_path, monkeypatch):
    """Runs of one system on two CPU models are two rows (today's machine, the newest records', first; a row on
    another says so), each speed a ratio to hf_vanilla on its own machine: qualities and speeds are never averaged
    across machines."""
    from runs import benchmark

    render_tables = benchmark("render_tables")
    monkeypatch.setattr(render_tables, "RESULTS", tmp_path)
    peer_record(tmp_path, "hf_vanilla", 1, 21.0, 1000.0, "Intel Xeon", date="2026-11-27")
    peer_record(tmp_path, "hf_vanilla", 2, 22.0, 1000.0, "Intel Xeon", date="2026-11-27")
    peer_record(tmp_path, "fairseq", 1, 20.0, 500.0, "Intel Xeon", date="2026-11-27")
    peer_record(tmp_path, "hf_vanilla", 3, 23.0, 2000.0, "AMD EPYC", date="2026-11-28")
    peer_record(tmp_path, "fairseq", 3, 24.0, 3000.0, "AMD EPYC", date="2026-11-28")
    xeon = "Intel Xeon (2-core x86_64), 2 threads, not today's machine"
    assert [row[:5] for row in verdict_rows(render_tables)] == [
        ["hf_vanilla", "AMD EPYC (2-core x86_64), 2 threads", "3", "23.00", "2,000.0 (1.00)"],
        ["fairseq", "AMD EPYC (2-core x86_64), 2 threads", "3", "24.00", "3,000.0 (1.50)"],
        ["hf_vanilla", xeon, "1-2", "21.50 ± 0.71 (21.00-22.00)", "1,000.0 (1.00)"],
        ["fairseq", xeon, "1", "20.00", "500.0 (0.50)"],
    ]
    assert "Today's machine (the newest records'): AMD EPYC (2-core x86_64), 2 threads." in " ".join(
        render_tables.verdict_block("translation").split()
    )


def test_a_machines_boots_pool_their_seeds_and_each_speed_ratio_stays_within_its_boot(tmp_path, monkeypatch):
    """Two boots of one CPU model run at different speeds: a row pools its seeds over both (a seed run on both counts
    once, its newest run), names both boots, and takes each run's speed ratio to hf_vanilla on its own boot only."""
    from runs import benchmark

    render_tables = benchmark("render_tables")
    monkeypatch.setattr(render_tables, "RESULTS", tmp_path)
    host = {"cpu_model": "AMD EPYC", "processor": "x86_64", "cores": 2, "gpu": None}

    def on(boot_id: str, date: str) -> dict:
        return dict(date=date, environment={"machine": host | {"boot_id": boot_id}, "date": f"{date}T10:00:00+00:00"})

    fast, slow = on("aaaaaaaa-1", "2026-11-29"), on("bbbbbbbb-2", "2026-11-30")
    peer_record(tmp_path, "hf_vanilla", 1, 20.0, 2000.0, **fast)
    peer_record(tmp_path, "fairseq", 1, 19.0, 1000.0, **fast)  # 0.5x on the fast boot
    peer_record(tmp_path, "hf_vanilla", 2, 22.0, 1000.0, **slow)
    peer_record(tmp_path, "hf_vanilla", 1, 21.0, 1000.0, **slow)  # seed 1 again: its newest run stands
    peer_record(tmp_path, "fairseq", 2, 23.0, 1500.0, **slow)  # 1.5x on the slow boot
    rows = verdict_rows(render_tables)
    where = "AMD EPYC (2-core x86_64), boots aaaaaaaa, bbbbbbbb"
    assert [row[:5] for row in rows] == [
        ["hf_vanilla", where, "1-2", "21.50 ± 0.71 (21.00-22.00)", "1,333.3 (1.00)"],
        ["fairseq", where, "1-2", "21.00 ± 2.83 (19.00-23.00)", "1,250.0 (1.00)"],
    ]
    groups = render_tables.verdict_groups("translation")
    assert render_tables.peer_cell("translation", groups, "fairseq") == (
        "21.50 vs 21.00 (2 seeds each); speed 1.00× / 1.00×"
    )
    unbooted = {"machine": host, "date": "2026-11-28T10:00:00+00:00"}  # no boot: no reference to take a ratio to
    peer_record(tmp_path, "fairseq", 3, 20.0, 900.0, date="2026-11-28", environment=unbooted)
    assert verdict_rows(render_tables)[1][1:5] == [f"{where}, not recorded", "1-3", "20.67 ± 2.08 (19.00-23.00)",
                                                   "1,133.3 (1.00)"]  # fmt: skip
    peer_record(tmp_path, "sockeye", 1, 17.0, 5.0, machine_shared=True, date="2026-11-28", environment=unbooted)
    peer_record(tmp_path, "sockeye", 1, 18.0, 700.0, **on("cccccccc-3", "2026-11-30"))  # a boot without hf_vanilla
    # the shared run, its seed run again, gives the row no figure: its boot is not the row's
    assert verdict_rows(render_tables)[-1][1:5] == ["AMD EPYC (2-core x86_64), boot cccccccc", "1", "18.00", "700.0"]
    cell = render_tables.peer_cell("translation", render_tables.verdict_groups("translation"), "sockeye")
    assert cell == "21.50 vs 18.00 (2 and 1 seed); speeds: no hf_vanilla run alone on its boots"


def test_a_row_at_a_former_preset_names_its_budget_and_is_timed_beside_hf_vanilla_at_the_same(tmp_path, monkeypatch):
    """A record whose budget is not its recipe's preset's of today (`hf_vanilla.training.presets`) is a row of its
    own that names the budget it ran, its speeds beside hf_vanilla's at that budget; a record of today's is plain."""
    from runs import benchmark

    render_tables = benchmark("render_tables")
    monkeypatch.setattr(render_tables, "RESULTS", tmp_path)
    today = WMT_PRESETS["demo"]["max_steps"]
    for steps, speed in ((today, 1000.0), (today // 2, 4000.0)):
        settings = {"preset": "demo", "max_steps": steps}
        peer_record(tmp_path, "hf_vanilla", 1, 22.0, speed, resolved_settings=settings)
        peer_record(tmp_path, "fairseq", 1, 20.0, speed / 2, resolved_settings=settings)
    former = f"{today // 2:,} updates: a former preset"
    assert [[row[0], row[4]] for row in verdict_rows(render_tables)] == [
        ["hf_vanilla", "1,000.0 (1.00)"],
        [f"hf_vanilla, {former}", "4,000.0 (1.00)"],
        ["fairseq", "500.0 (0.50)"],
        [f"fairseq, {former}", "2,000.0 (0.50)"],
    ]
    assert render_tables.former_preset("translation", {"resolved_settings": {"preset": "demo"}}) == ""


def test_a_row_never_above_the_trivial_baseline_is_no_measurement_of_its_toolkit(tmp_path, monkeypatch):
    """Summarization's trivial baseline (lead-k, `benchmarks/lead_baseline.py`'s record): a row none of whose seeds
    beats it says that it measures nothing of its toolkit, in the table and in the README's cell of its peer; a row
    with one seed above it is a measurement."""
    from runs import benchmark

    render_tables = benchmark("render_tables")
    monkeypatch.setattr(render_tables, "RESULTS", tmp_path)
    baseline = {"task": "summarization", "baseline": "lead-14", "quality": {"metric": "rouge1", "value": 15.0}}
    (tmp_path / render_tables.TRIVIAL_BASELINES["summarization"]).write_text(json.dumps(baseline))
    task = dict(task="summarization", cpu_model="AMD EPYC")
    peer_record(tmp_path, "hf_vanilla", 1, 20.0, 1000.0, **task)
    peer_record(tmp_path, "fairseq", 1, 14.0, 1000.0, **task)
    peer_record(tmp_path, "fairseq", 2, 16.0, 1000.0, **task)
    peer_record(tmp_path, "fairseq-no-copy", 1, 15.0, 1000.0, **task)  # level with the baseline: not above it
    peer_record(tmp_path, "opennmt-py-force-copy-unpatched", 1, 3.9, 500.0, **task, relabelled="the old opennmt-py")
    monkeypatch.setattr(render_tables, "UNDER_BASELINE_WHY", {})  # no cause found yet
    assert [row[3] for row in verdict_rows(render_tables, "summarization")] == [
        "20.00",
        "15.00 ± 1.41 (14.00-16.00)",
        "15.00: never above lead-14 (15.00), not a measurement of fairseq",
        "3.90: never above lead-14 (15.00), not a measurement of OpenNMT-py",
    ]
    notes = " ".join(render_tables.verdict_block("summarization").split())
    assert "lead-14 (`benchmarks/results/lead-baseline-summarization.json`), scores 15.00 on the same" in notes
    assert "`opennmt-py-force-copy-unpatched`: the old opennmt-py." in notes
    assert "stays under the baseline" not in notes
    monkeypatch.setattr(render_tables, "UNDER_BASELINE_WHY", {"fairseq-no-copy": "its reason", "fairseq": "none"})
    notes = " ".join(render_tables.verdict_block("summarization").split())
    assert "`fairseq-no-copy` stays under the baseline: its reason." in notes and "none." not in notes
    groups = render_tables.verdict_groups("summarization")
    assert render_tables.peer_cell("summarization", groups, "opennmt-py") == (
        "not a measurement: 3.90 at best, never above lead-14 (15.00)"
    )
    assert render_tables.peer_cell("summarization", groups, "fairseq").startswith("20.00 vs 15.00 (1 and 2 seeds);")


def test_decoding_in_turn_is_set_beside_the_verdict_speeds_of_its_own_machine(tmp_path, monkeypatch):
    """`benchmarks.studies.opennmt_beam_stop`'s records (hf_vanilla and a peer decoding in turn): their ratios, the
    newest of each seed on today's machine (any of its boots: each ratio is taken within one), in a sentence under the
    verdict table and in the README's cell; another machine's record is never set beside today's."""
    from runs import benchmark

    render_tables = benchmark("render_tables")
    monkeypatch.setattr(render_tables, "RESULTS", tmp_path)
    host = {"cpu_model": "AMD EPYC", "processor": "x86_64", "cores": 2, "gpu": None, "boot_id": "d4efcd9a-0"}
    env = {"machine": host, "date": "2026-11-29T20:00:00+00:00"}
    for seed in (1, 2):
        peer_record(tmp_path, "hf_vanilla", seed, 22.0, 1000.0, date="2026-11-29", environment=env)
        peer_record(tmp_path, "opennmt-py", seed, 18.0, 1100.0, date="2026-11-29", environment=env)

    def together(seed: int, own: float, four: float, environment: dict) -> Path:
        figures = {"n_best 1": {"median_vs_hf_vanilla": own}, "n_best 4": {"median_vs_hf_vanilla": four},
                   "hf_vanilla": {"median_vs_hf_vanilla": 1.0}}  # fmt: skip
        record = {"task": "translation", "system": "opennmt-py", "seed": seed, "repeats": 5, "figures": figures,
                  "as_run": "n_best 1", "labels": study.LABELS, "environment": environment}  # fmt: skip
        return study.write_record(record, tmp_path)

    together(1, 1.03, 0.91, env)
    together(2, 1.5, 1.5, env)
    later = together(2, 0.97, 0.87, {**env, "date": "2026-11-29T21:00:00+00:00"})
    assert later.name == "decoding-together-opennmt-py-seed2-2026-11-29-2.json"  # the first is kept
    together(3, 2.0, 2.0, {**env, "machine": {**host, "cpu_model": "Intel Xeon"}})
    notes = " ".join(render_tables.verdict_block("translation").split())
    assert (
        "Decoding in turn with hf_vanilla (`benchmarks.studies.opennmt_beam_stop`, seeds 1-2, medians of 5), "
        "`opennmt-py` is at 0.97-1.03× as run, 0.87-0.91× keeping four hypotheses, as hf_vanilla."
    ) in notes
    groups = render_tables.verdict_groups("translation")
    cell = render_tables.peer_cell("translation", groups, "opennmt-py")
    assert cell.endswith("speed 1.10× / 1.10× (0.97-1.03× decoding in turn)"), cell
    assert "in turn" not in render_tables.peer_cell("translation", groups, "fairseq")
    assert "In turn: the two decoding alternately, timed together." in render_tables.readme_verdict_block()
    peer_record(tmp_path, "hf_vanilla", 1, 20.0, 1000.0, task="summarization", date="2026-11-29", environment=env)
    peer_record(tmp_path, "opennmt-py", 1, 16.0, 1100.0, task="summarization", date="2026-11-29", environment=env)
    summarization = render_tables.verdict_groups("summarization")
    assert render_tables.peer_cell("summarization", summarization, "opennmt-py").endswith("speed 1.10× / 1.10×")


def test_a_peers_control_is_timed_beside_the_recipes_own_control_on_todays_machine(tmp_path, monkeypatch):
    """`render_tables.control_notes`: a peer system named for an hf_vanilla variant (`fairseq-no-copy` for
    `hf_vanilla-no-copy`) gets a sentence with its speeds beside that variant's, like model beside like, on today's
    machine only; its row's ratios stay beside the recipe's full model, and a peer's full model gets no such line."""
    from runs import benchmark

    render_tables = benchmark("render_tables")
    monkeypatch.setattr(render_tables, "RESULTS", tmp_path)
    amd, xeon = dict(task="summarization", date="2026-11-30"), dict(task="summarization", date="2026-11-27")
    peer_record(tmp_path, "hf_vanilla", 1, 20.0, 1000.0, "AMD EPYC", **amd)
    peer_record(tmp_path, "hf_vanilla-no-copy", 1, 18.0, 2000.0, "AMD EPYC", **amd)
    peer_record(tmp_path, "fairseq", 1, 17.0, 900.0, "AMD EPYC", **amd)
    peer_record(tmp_path, "fairseq-no-copy", 1, 14.0, 1500.0, "AMD EPYC", **amd)
    peer_record(tmp_path, "hf_vanilla-no-copy", 1, 18.0, 1000.0, "Intel Xeon", **xeon)
    peer_record(tmp_path, "opennmt-py-no-copy", 1, 5.0, 3000.0, "Intel Xeon", **xeon)
    assert ["fairseq-no-copy", "1,500.0 (1.50)"] in [
        [row[0], row[4]] for row in verdict_rows(render_tables, "summarization")
    ]
    notes = " ".join(render_tables.verdict_block("summarization").split())
    assert (
        "Beside `hf_vanilla-no-copy` on the same boots (training / decoding speed): `fairseq-no-copy` 0.75× / 0.75×."
        in notes
    )
    assert "`opennmt-py-no-copy`" not in notes and "`fairseq` 0.45×" not in notes  # another machine; a full model
    assert "Beside `hf_vanilla" not in render_tables.verdict_block("translation")


def test_the_lead_baseline_record_holds_the_recipes_lead_baseline_of_the_test_split(monkeypatch):
    """`python -m benchmarks.lead_baseline`: k chosen on the validation split (here 2 words: "meeting moved" is a
    subject), the test split scored with it, and its ROUGE-1 as the record's quality, as `render_tables` reads it."""
    from runs import benchmark

    lead = benchmark("lead_baseline")
    monkeypatch.setattr(lead, "environment", lambda: {"machine": {"cpu_model": None}})
    validation = {"text": ["the deal is signed today", "meeting moved to monday at noon"]}
    test = {"text": ["contract signed by both parties", "lunch on friday"]}
    corpus = {
        "validation": Dataset.from_dict(validation | {"references": [["deal signed"], ["meeting moved"]]}),
        "test": Dataset.from_dict(test | {"references": [["contract signed"], ["lunch friday"]]}),
    }
    record = lead.lead_record(corpus, str(lead.ROOT.parent / "shared" / "data" / "aeslc"))
    assert (record["baseline"], record["lead_baseline"]["k"]) == ("lead-2", 2)
    assert record["dataset"] == "../shared/data/aeslc"  # beside the repository, as the records name it
    assert record["quality"] == {"metric": "rouge1", "value": 75.0} and record["lead_baseline"]["eval_items"] == 2


def test_the_rows_issue_63_asks_for_are_owed_until_three_seeds_ran_alone_on_todays_machine(tmp_path, monkeypatch):
    from runs import benchmark

    render_tables = benchmark("render_tables")
    monkeypatch.setattr(render_tables, "RESULTS", tmp_path)
    for seed in (1, 2, 3):
        peer_record(tmp_path, "hf_vanilla", seed, 22.0, 1000.0, "AMD EPYC", date="2026-11-28")
        peer_record(tmp_path, "fairseq", seed, 22.0, 1000.0, "AMD EPYC", date="2026-11-28", machine_shared=seed == 3)
        peer_record(tmp_path, "opennmt-py", seed, 18.0, 1000.0, "Intel Xeon", date="2026-11-27")
    assert render_tables.owed_rows("translation") == ["fairseq (2)", "opennmt-py (0)", "sockeye (0)"]
    assert (
        "Owed by issue 63 on AMD EPYC (2-core x86_64), 2 threads, 3 seeds each run alone at today's preset"
        in " ".join(render_tables.verdict_block("translation").split())
    )


def test_a_peer_run_at_two_learning_rates_names_the_rate_its_validation_chooses(tmp_path, monkeypatch):
    """Issue 63's sweep: a peer system run at more than one rate on one machine gets a sentence under its table with
    each rate's peak, seeds and mean validation perplexity (OpenNMT-py's and fairseq's `valid_ppl`, Sockeye's
    `validation_perplexity`) and the rate of the lowest; a rate whose runs recorded none leaves no choice. Test
    quality chooses nothing: here the rate validation picks scores lower on test."""
    from runs import benchmark

    render_tables = benchmark("render_tables")
    monkeypatch.setattr(render_tables, "RESULTS", tmp_path)
    preset, amd = {"lr_scale": 1.0, "peak_lr": 0.004}, dict(cpu_model="AMD EPYC", date="2026-11-29")
    for seed, ppl in ((1, 30.0), (2, 34.0)):
        peer_record(tmp_path, "opennmt-py", seed, 19.0, 1e3, **amd, task="summarization",
                    resolved_settings=preset, train_stats={"valid_ppl": ppl})  # fmt: skip
    peer_record(tmp_path, "opennmt-py", 1, 21.0, 1e3, **amd, task="summarization",
                resolved_settings=preset | {"peer_lr_scale": 0.25}, train_stats={"valid_ppl": 40.0})  # fmt: skip
    peer_record(tmp_path, "sockeye", 1, 20.0, 1e3, **amd, resolved_settings=preset,
                train_stats={"validation_perplexity": 9.0})  # fmt: skip
    for scale in (1.0, 0.5):  # another machine's sweep: its rows say so, the sentence is today's machine's only
        settings = preset | {"peer_lr_scale": scale}
        peer_record(tmp_path, "sockeye", 1, 20.0, 1e3, "Intel Xeon", date="2026-11-01", resolved_settings=settings,
                    train_stats={"validation_perplexity": 9.0})  # fmt: skip
    notes = " ".join(render_tables.verdict_block("summarization").split())
    assert (
        "`opennmt-py` on today's machine by lr_scale, validation perplexity: 1 (peak 0.004, seeds 1-2) 32.00, 0.25 "
        "(peak 0.001, seed 1) 40.00: validation chooses 1." in notes
    )
    assert "by lr_scale" not in render_tables.verdict_block("translation")
    peer_record(tmp_path, "opennmt-py", 3, 19.0, 1e3, **amd, task="summarization", resolved_settings=preset)
    notes = " ".join(render_tables.verdict_block("summarization").split())
    assert "1 (peak 0.004, seeds 1-3) none, 0.25 (peak 0.001, seed 1) 40.00: no choice by validation." in notes


def test_the_readme_verdict_is_each_peers_best_row_beside_hf_vanilla_on_its_machine(tmp_path, monkeypatch):
    """`render_tables.readme_verdict_block`: a line a task, a cell a peer: its best row (on today's machine before
    another, whatever their qualities), against hf_vanilla's mean on that machine, and its speeds × hf_vanilla's; a
    labelled variant, another machine or a reference other than hf_vanilla says so; a peer asked for and never run
    is owed."""
    from runs import benchmark

    render_tables = benchmark("render_tables")
    monkeypatch.setattr(render_tables, "RESULTS", tmp_path)
    assert render_tables.readme_verdict_block() == "No full run is recorded yet.\n"
    peer_record(tmp_path, "hf_vanilla-normal-init", 1, 21.0, 1000.0, "Intel Xeon", date="2026-11-27")
    peer_record(tmp_path, "fairseq", 1, 25.0, 500.0, "Intel Xeon", date="2026-11-27")
    peer_record(tmp_path, "sockeye-post-norm", 1, 18.0, 900.0, "Intel Xeon", date="2026-11-27")
    peer_record(tmp_path, "hf_vanilla", 2, 22.0, 2000.0, "AMD EPYC", date="2026-11-28")
    peer_record(tmp_path, "fairseq", 2, 20.0, 1000.0, "AMD EPYC", date="2026-11-28")
    lines = render_tables.readme_verdict_block().splitlines()
    assert lines[:3] == [
        "| task | fairseq | OpenNMT-py | Sockeye |",
        "|---|---|---|---|",
        "| translation, sacreBLEU | 22.00 vs 20.00 (1 seed each); speed 0.50× / 0.50× | owed | 21.00 vs 18.00 "
        "(post-norm; beside hf_vanilla-normal-init; 1 seed each; not today's machine); speed 0.90× / 0.90× |",
    ]
    legend = " ".join(lines[4:])
    assert "Today's machine: AMD EPYC (2-core x86_64), 2 threads." in legend and "Owed: asked by issue 63" in legend
    # A relabelled record ran a setting the runner no longer runs: never the peer's best row, whatever its score.
    peer_record(tmp_path, "fairseq-old-kernels", 3, 30.0, 100.0, "AMD EPYC", date="2026-11-28", relabelled="former")
    assert render_tables.readme_verdict_block().splitlines()[2].startswith("| translation, sacreBLEU | 22.00 vs 20.00")
    # Of a learning-rate sweep, the rate validation chooses is the peer's row, though another scores higher on test.
    preset, amd = {"lr_scale": 1.0, "peak_lr": 0.004}, dict(cpu_model="AMD EPYC", date="2026-11-28")
    peer_record(tmp_path, "opennmt-py", 1, 19.0, 1000.0, **amd, resolved_settings=preset,
                train_stats={"valid_ppl": 30.0})  # fmt: skip
    peer_record(tmp_path, "opennmt-py", 1, 21.0, 1000.0, **amd, resolved_settings=preset | {"peer_lr_scale": 0.25},
                train_stats={"valid_ppl": 40.0})  # fmt: skip
    cells = render_tables.readme_verdict_block().splitlines()[2].split(" | ")
    assert cells[2] == "22.00 vs 19.00 (1 seed each); speed 0.50× / 0.50×"
    # Off today's machine, the peer's row is on the machine with the most runs (here the AMD's), not the best mean.
    peer_record(tmp_path, "hf_vanilla", 1, 23.0, 900.0, "Intel Sapphire", date="2026-11-29")
    cells = render_tables.readme_verdict_block().splitlines()[2].split(" | ")
    assert cells[1] == "22.00 vs 20.00 (1 seed each; not today's machine); speed 0.50× / 0.50×"


def test_a_run_beside_other_work_is_marked_shared(monkeypatch):
    monkeypatch.setattr(records.os, "getloadavg", lambda: (5.0, 4.0, 2.7))
    assert records.machine_load(2) == {"load_average": [5.0, 4.0, 2.7], "machine_shared": True}
    assert records.machine_load(4)["machine_shared"] is False


def test_the_ct2_row_decodes_with_length_normalization_and_one_limit_the_recipe_s_beam_otherwise():
    """CTranslate2 cannot express GNMT's penalty or a per-source limit: its row's options say what it runs instead
    (the demo's beam and alpha, one limit of the longest source + the offset), and its table names both."""
    from hf_vanilla.configuration_vanilla import VanillaGenerationConfig, VanillaTransformerConfig
    from hf_vanilla.ct2 import translate_options

    generation = VanillaGenerationConfig.from_model_config(VanillaTransformerConfig.from_size("demo"))
    tokens = [f"t{i}" for i in range(generation.eos_token_id + 1)]
    with pytest.raises(ValueError, match="length_penalty_style"):
        translate_options(generation, tokens)
    options = translate_options(generation, tokens, **ct2.ct2_settings(longest_source=17, offset=50))
    assert (options["beam_size"], options["length_penalty"], options["max_decoding_length"]) == (4, 0.6, 67)
    assert [row.setting for row in recipe_runs.ct2_rows() if not row.matched] == ["length penalty", "maximum output"]


def test_the_ct2_row_needs_the_hf_vanilla_run_of_its_seed_and_variant(tmp_path, capsys):
    with pytest.raises(SystemExit, match="holds no finished hf_vanilla run: run --system hf_vanilla first"):
        peers_main.main(["--system", "hf_vanilla-ct2", "--seed", "3", "--work-dir", str(tmp_path), "--results-dir",
                  str(tmp_path)])  # fmt: skip
    assert not list(tmp_path.glob("peers-*.json"))
    args = peers_main.parse_args(["--system", "hf_vanilla-ct2-normal-init", "--seed", "3"])
    assert comparison.work_folder(args, comparison.run_settings(args)) == Path(
        "/tmp/peers/translation-hf_vanilla-normal-init-3"
    )
    args = peers_main.parse_args(["--system", "hf_vanilla-ct2", "--seed", "3"])
    assert comparison.work_folder(args, comparison.run_settings(args)) == Path("/tmp/peers/translation-hf_vanilla-3")
    with pytest.raises(
        SystemExit, match="no finished hf_vanilla-normal-init run: run --system hf_vanilla-normal-init"
    ):
        peers_main.main(["--system", "hf_vanilla-ct2-normal-init", "--seed", "3", "--work-dir", str(tmp_path)])


def test_the_settled_sentences_benchmark_pairs_both_loops_and_refuses_different_outputs(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr("sys.argv", ["settled_sentences.py"])
    with pytest.raises(SystemExit):
        settled_sentences.parse_args(["--task", "parsing", "--model", str(tmp_path), "--repeats", "0"])
    refusal = "settled_sentences.py: error: --repeats must be at least 1, got 0"
    assert capsys.readouterr().err.splitlines()[-1] == refusal
    with pytest.raises(SystemExit):
        settled_sentences.parse_args(["--task", "parsing", "--model", str(tmp_path)])
    assert "no config.json there" in capsys.readouterr().err
    (tmp_path / "config.json").write_text("{}")
    asked = []

    def fake_decoder(outputs):
        def decode(drop_finished_sentences):
            asked.append(drop_finished_sentences)
            return outputs[drop_finished_sentences]

        return lambda *args: (["a", "b"], decode)

    monkeypatch.setattr(settled_sentences, "recipe_decoding", fake_decoder({False: ["x", "y"], True: ["x", "y"]}))
    speeds = settled_sentences.main(["--task", "parsing", "--model", str(tmp_path), "--repeats", "3"])
    # A warm-up of each, then the repeats alternating which loop goes first.
    assert asked == [False, True, False, True, True, False, False, True]
    assert [len(s) for s in speeds.values()] == [3, 3] and "ratio of medians" in capsys.readouterr().out
    monkeypatch.setattr(settled_sentences, "recipe_decoding", fake_decoder({False: ["x", "y"], True: ["x", "z"]}))
    with pytest.raises(SystemExit, match="decoded 1 of 2 outputs differently"):
        settled_sentences.main(["--task", "parsing", "--model", str(tmp_path)])


def test_the_split_decoding_benchmark_prints_its_speed_and_a_digest_of_the_outputs(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr("sys.argv", ["decode_split.py"])
    with pytest.raises(SystemExit):
        decode_split.parse_args(["--task", "parsing", "--model", str(tmp_path), "--test-limit", "0"])
    assert capsys.readouterr().err.splitlines()[-1] == "decode_split.py: error: --test-limit must be at least 1, got 0"
    with pytest.raises(SystemExit):
        decode_split.parse_args(["--task", "parsing", "--model", str(tmp_path)])
    assert "no config.json there" in capsys.readouterr().err
    (tmp_path / "config.json").write_text("{}")
    decoded = {"outputs": ["(S x )S", "(S y )S"]}
    monkeypatch.setattr(decode_split, "recipe_decoding", lambda *args: (["x", "y"], lambda: decoded["outputs"]))
    speed, digest = decode_split.main(["--task", "parsing", "--model", str(tmp_path)])
    assert speed > 0 and f"outputs {digest}" in capsys.readouterr().out
    decoded["outputs"] = ["(S x )S", "(S z )S"]
    assert decode_split.main(["--task", "parsing", "--model", str(tmp_path)])[1] != digest


def test_of_one_seeds_runs_the_newest_stands_by_day_then_by_the_headers_time():
    """`render_tables.newest_per_seed`: one run a seed, the newest; two runs of one day are ordered by their headers'
    times (a file's name gives only the day), whatever order they are read in."""
    from runs import benchmark

    render_tables = benchmark("render_tables")

    def run(seed: int, when: str) -> dict:
        return {"seed": seed, "environment": {"date": when}}

    late, early = run(1, "2026-11-30T05:00:00+00:00"), run(1, "2026-11-30T03:00:00+00:00")
    older, other = run(1, "2026-11-29T23:00:00+00:00"), run(2, "2026-11-28T10:00:00+00:00")
    for runs in ([late, early, older, other], [other, early, older, late]):
        assert render_tables.newest_per_seed(runs) == [late, other]
