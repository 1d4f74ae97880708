"""`benchmarks/peers/` on the summarization task: the AESLC demo's splits exported as its own (lower-cased, cut)
pieces, the demo preset's settings and fairseq's pointer-generator flags derived from them, the project's ROUGE on the
peer's outputs, and a run through `python -m benchmarks.peers` with a stand-in peer. Tiny AESLC-shaped folders made
here; no peer's environment is needed."""

import json
import shlex
from pathlib import Path

import pytest

from hf_vanilla.configuration_vanilla import SIZES
from hf_vanilla.data.summaries import SIDES
from hf_vanilla.evaluation.rouge import compute_rouge
from hf_vanilla.tokenization import reads_lowercase, truncate_ids
from hf_vanilla.training.presets import SUMMARIZATION_PRESETS

from benchmarks.peers import __main__ as peers_main
from benchmarks.peers import comparison, systems
from benchmarks.peers import summarization as summarization_task
from benchmarks.peers import translation as translation_task
from benchmarks.peers.common import jobs as peer_jobs
from benchmarks.peers.common import pieces as common_pieces
from benchmarks.peers.common import settings as common_settings
from benchmarks.peers.common.recipes import recipe_module
from benchmarks.peers.fairseq import runner as fairseq_runner
from benchmarks.peers.fairseq import summarization_table as fairseq_summary
from benchmarks.peers.fairseq import translation_table as fairseq_table
from benchmarks.peers.recipe import runs as recipe_runs

USER_DIR = "/venv/lib/python3.11/site-packages/fairseq/examples/pointer_generator/pointer_generator_src"
BODY_WORDS = "Please Review the Gas Contract for Tuesday and send Comments to Phillip before the Meeting".split()


def write_aeslc(root: Path, counts: dict[str, int]) -> Path:
    """`root/enron_subject_line/{train,dev,test}/*.subject` in AESLC's layout: a body of several lines (every fifth
    one long, so that it is cut), `@subject`, and on dev and test three annotators' subjects."""
    for folder, count in counts.items():
        (root / "enron_subject_line" / folder).mkdir(parents=True)
        for i in range(count):
            words = BODY_WORDS[i % 5 :] + BODY_WORDS[: i % 5] + (BODY_WORDS * 3 if i % 5 == 0 else [])
            body = " ".join(words[:6]) + f" item {i}.\n" + " ".join(words[6:]) + "\nThanks,"
            text = f"{body}\n\n@subject\nGas Contract {i} Review\n"
            if folder != "train":
                text += "".join(f"\n@ann{n}\ncontract review number {n}\n" for n in range(3))
            (root / "enron_subject_line" / folder / f"mail_{i:03d}.subject").write_text(text, encoding="utf-8")
    return root / "enron_subject_line"


@pytest.fixture(scope="module")
def aeslc(tmp_path_factory) -> Path:
    return write_aeslc(tmp_path_factory.mktemp("aeslc"), {"train": 40, "dev": 3, "test": 6})


SMALL = {"preset": "demo", "vocab_size": 1000, "lowercase": True, "max_source_tokens": 12, "max_target_tokens": 8}
SMALL |= {"max_length": None, "max_length_ratio": None}


@pytest.fixture(scope="module")
def exported(aeslc, tmp_path_factory):
    corpus, dataset = summarization_task.summary_corpus(SMALL, str(aeslc))
    folder = tmp_path_factory.mktemp("summ")
    tokenizer = summarization_task.summary_tokenizer(folder / "tokenizer", corpus["train"], SMALL, dataset)
    return (
        summarization_task.export_summaries(corpus, tokenizer, folder / "data", SMALL, test_limit=4),
        tokenizer,
        corpus,
    )


def test_the_exported_pieces_are_the_recipe_s_ids_and_decode_to_its_lower_cased_cut_text(exported):
    export, tokenizer, corpus = exported
    assert reads_lowercase(tokenizer)
    uncut = 0
    for split, stem in (("train", "train"), ("validation", "valid"), ("test", "test")):
        items = corpus[split].select(range(4)) if split == "test" else corpus[split]
        for side, limit in zip(SIDES, (SMALL["max_source_tokens"], SMALL["max_target_tokens"])):
            lines = (export.folder / f"{stem}.{side}").read_text(encoding="utf-8").splitlines()
            assert len(lines) == len(items), (stem, side)
            for line, text in zip(lines, items[side]):
                expected = truncate_ids(tokenizer(text)["input_ids"], limit)  # the recipe's cut, </s> kept
                assert tokenizer.convert_tokens_to_ids(line.split()) + [tokenizer.eos_token_id] == expected
                assert common_pieces.text_from_pieces(line, tokenizer) == tokenizer.decode(
                    expected, skip_special_tokens=True
                )
                if len(tokenizer(text)["input_ids"]) <= limit:  # uncut: the whole text, lower-cased, one space a gap
                    assert common_pieces.text_from_pieces(line, tokenizer) == " " + " ".join(text.lower().split())
                    uncut += 1
    assert uncut >= 40  # the subjects
    assert export.counts == {"train": 40, "valid": 3, "test": 4}
    assert export.details["truncated"]["train"]["sources_truncated"] == 40  # every body is over 12 tokens
    assert export.details["unk_pieces"] == 0  # byte-level BPE: fairseq needs no <unk-N> position markers
    references = [json.loads(line) for line in (export.folder / "test.references.jsonl").read_text().splitlines()]
    assert references == [list(r) for r in corpus["test"].select(range(4))["references"]]
    assert references[0][0] == "Gas Contract 0 Review" and len(references[0]) == 4  # @subject first, then ann0-2


def test_the_settings_are_the_demo_preset_s_with_and_without_copying():
    preset, model = SUMMARIZATION_PRESETS["demo"], SIZES["demo_summarization"]
    copy, plain = summarization_task.summarization_settings(), summarization_task.summarization_settings(copy=False)
    for name in ("encoder_layers", "decoder_layers", "d_model", "num_attention_heads", "d_ff", "dropout"):
        assert copy[name] == plain[name] == model[name]
    for name in ("vocab_size", "tokens_per_step", "warmup_steps", "max_steps", "average_last", "save_every"):
        assert copy[name] == plain[name] == preset[name]
    for name in ("eval_every", "max_source_tokens", "max_target_tokens", "length_penalty", "force_copy"):
        assert copy[name] == preset[name]
    assert (copy["pointer_generator"], plain["pointer_generator"]) == (True, False)
    assert (copy["lr_scale"], plain["lr_scale"]) == (1.0, preset["variants"]["pointer_generator"][False]["lr_scale"])
    assert copy["peak_lr"] == pytest.approx(128**-0.5 * 400**-0.5)
    assert (copy["num_beams"], copy["no_repeat_ngram_size"], copy["no_stutter_span_size"]) == (4, 3, 4)
    assert (copy["min_new_tokens"], copy["max_new_tokens"], copy["attention_dropout"]) == (1, 64, 0.0)
    short = summarization_task.summarization_settings(max_steps=20, save_every=5, eval_every=10)
    assert (short["max_steps"], short["save_every"], short["eval_every"]) == (20, 5, 10)
    with pytest.raises(ValueError, match="not overridable"):
        summarization_task.summarization_settings(dropout=0.3)


def row_flags(rows) -> list[tuple[str, str | None]]:
    """The (flag, value) pairs a table's rows say fairseq is given: each row whose peer side starts with a flag, up to
    its first ": " (prose after it); `--encoder/decoder-x` stands for both flags; a value in parentheses that does
    not close is prose."""
    found = []
    for row in rows:
        if not row.peer.startswith("--"):
            continue
        tokens = shlex.split(row.peer.split(": ")[0])
        for index, token in enumerate(tokens):
            if not token.startswith("--"):
                continue
            value = tokens[index + 1] if index + 1 < len(tokens) else None
            if value is not None and (value.startswith("--") or (value.startswith("(") and not value.endswith(")"))):
                value = None
            names = [token.replace("encoder/decoder", side) for side in ("encoder", "decoder")]
            found += [(name, value) for name in dict.fromkeys(names)]
    return found


def given_pairs(flags: list[str]) -> set[tuple[str, str | None]]:
    """The (flag, value) pairs of a command line (a value normalised as a number where it is one)."""
    pairs = set()
    for index, flag in enumerate(flags):
        if flag.startswith("--"):
            value = flags[index + 1] if index + 1 < len(flags) and not flags[index + 1].startswith("--") else None
            pairs.add((flag, _number(value)))
    return pairs


def _number(value: str | None) -> str | None:
    try:
        return f"{float(value):.6g}"
    except (TypeError, ValueError):
        return value


def check_rows_against_flags(rows, flags: list[str]) -> None:
    given = given_pairs(flags)
    for flag, value in row_flags(rows):
        if value is not None and value.startswith("<site-packages>/"):  # the environment's path, found at run time
            assert any(f == flag and v.endswith(value.split("/", 1)[1]) for f, v in given if v), flag
        elif value is None:
            assert any(f == flag for f, _ in given), flag
        else:
            assert (flag, _number(value)) in given, (flag, value)


@pytest.mark.parametrize("copy", [True, False])
def test_every_row_s_flag_is_passed_with_its_value(copy):
    s = summarization_task.summarization_settings(copy=copy)
    rows = fairseq_summary.fairseq_summary_rows(s)
    train = fairseq_summary.fairseq_summary_train_flags(s, seed=2, user_dir=USER_DIR)
    generate = fairseq_summary.fairseq_summary_generate_flags(s, USER_DIR)
    check_rows_against_flags(rows, train + generate)
    given = dict(zip(train, train[1:]))
    assert given["--arch"] == ("transformer_pointer_generator" if copy else "transformer")
    assert (given["--max-tokens"], given["--max-update"], given["--seed"]) == ("6000", "3000", "2")
    if copy:
        assert {k: given[k] for k in ("--user-dir", "--alignment-layer", "--alignment-heads")} == {
            "--user-dir": USER_DIR, "--alignment-layer": "2", "--alignment-heads": "4"
        }  # fmt: skip
        assert given["--source-position-markers"] == "0"  # its default would turn 1,024 pieces into <unk>
    else:
        assert not {"--user-dir", "--alignment-layer", "--source-position-markers"} & set(train + generate)
    decoding = dict(zip(generate[::2], generate[1::2]))
    assert decoding.pop("--user-dir", None) == (USER_DIR if copy else None)
    assert decoding == {
        "--beam": "4", "--lenpen": "3.0", "--no-repeat-ngram-size": "3", "--min-len": "1", "--max-len-a": "0",
        "--max-len-b": "64", "--max-tokens": "4000", "--batch-size": "192", "--required-batch-size-multiple": "1",
    }  # fmt: skip
    unmatched = common_settings.render(rows, "fairseq").splitlines()[-1]
    copying = "p_gen inputs, copied positions, force copy, pointer smoothing, " if copy else ""
    tail = "length penalty, stutter ban" + (", whole-word copy" if copy else "")
    assert unmatched == (
        f"fairseq cannot match: {copying}learning rate, batching, validation, initialisation, decoder start, {tail}."
    )


def test_translation_s_rows_and_flags_pass_the_same_check():
    s = translation_task.demo_settings()
    flags = fairseq_table.fairseq_train_flags(s, 1) + fairseq_table.fairseq_generate_flags(s)
    check_rows_against_flags(fairseq_table.fairseq_rows(s), flags)
    assert fairseq_table.fairseq_train_flags(s, 1, {}) == fairseq_table.fairseq_train_flags(s, 1)


def test_fairseq_s_steps_take_the_task_s_files_and_flags(tmp_path):
    source = tmp_path / "venv/lib/python3.11/site-packages/fairseq/examples/pointer_generator/pointer_generator_src"
    source.mkdir(parents=True)
    (source / "transformer_pg.py").write_text("")
    bin_folder = tmp_path / "venv" / "bin"
    summary = summarization_task.summarization_settings()
    job = peer_jobs.PeerJob(tmp_path, tmp_path / "w", bin_folder, summary, 1, None, 4, {}, "summarization", SIDES)
    train, generate = fairseq_runner.task_flags(job)
    assert train[train.index("--user-dir") + 1] == generate[generate.index("--user-dir") + 1] == str(source)
    command = fairseq_runner.preprocess_command(tmp_path, tmp_path / "bin", bin_folder, SIDES)
    assert command[1:5] == ["--source-lang", "text", "--target-lang", "summary"]
    assert fairseq_runner.fairseq_table(summary)[0].setting == "encoder layers"
    translation = translation_task.demo_settings()
    job = peer_jobs.PeerJob(tmp_path, tmp_path / "w", bin_folder, translation, 1, None, 4, {})  # translation's default
    expected = fairseq_table.fairseq_train_flags(translation, 1), fairseq_table.fairseq_generate_flags(translation)
    assert fairseq_runner.task_flags(job) == expected
    assert fairseq_runner.preprocess_command(tmp_path, tmp_path / "bin", bin_folder)[1:5] == [
        "--source-lang", "en", "--target-lang", "de"
    ]  # fmt: skip


class NGramBlock:
    """What fairseq's `NGramRepeatBlock` holds that its `_no_repeat_ngram` reads."""

    no_repeat_ngram_size = 3


def test_fairseq_s_n_gram_ban_blocks_the_hypothesis_own_repeats():
    import torch

    found = {}
    exec(fairseq_runner.NGRAM_BAN, found)
    ban = found["_no_repeat_ngram"]
    # fairseq's buffer: the start symbol (2) in slot 0, the hypothesis up to `step`, then padding (1) to its end.
    tokens = torch.tensor([[2, 5, 6, 7, 5, 6, 1, 1, 1], [2, 8, 8, 8, 9, 8, 1, 1, 1], [2, 4, 4, 4, 4, 4, 1, 1, 1]])
    lprobs = ban(NGramBlock(), tokens, torch.zeros(3, 10), bsz=1, beam_size=3, step=5)
    # Row 0 ends with 5 6, which 7 followed: 7 is banned. Row 1's 9 8 came before nothing. Row 2's 4 4 came before 4.
    assert [torch.isinf(row).nonzero().flatten().tolist() for row in lprobs] == [[7], [], [4]]
    early = ban(NGramBlock(), tokens, torch.zeros(3, 10), bsz=1, beam_size=3, step=0)
    assert not torch.isinf(early).any()  # one token: no 3-gram can repeat yet


def test_fairseq_generate_runs_with_the_ban_fixed_only_where_it_bans(tmp_path):
    flags = fairseq_summary.fairseq_summary_generate_flags(summarization_task.summarization_settings(), USER_DIR)
    fixed = [str(tmp_path / "python"), "-c", fairseq_runner.GENERATE_WITH_NGRAM_BAN]
    assert fairseq_runner.generate_program(tmp_path, flags) == fixed
    translation = fairseq_table.fairseq_generate_flags(translation_task.demo_settings())
    assert fairseq_runner.generate_program(tmp_path, translation) == [str(tmp_path / "fairseq-generate")]
    assert fairseq_runner.generate_program(tmp_path, ["--no-repeat-ngram-size", "0"]) == [
        str(tmp_path / "fairseq-generate")
    ]


def test_the_scorer_gives_the_project_s_rouge_on_a_known_pair(tmp_path):
    (tmp_path / "test.references.jsonl").write_text(json.dumps(["Meeting Tomorrow", "meeting on tuesday"]) + "\n")
    scored = summarization_task.score_summary_file([" the meetings tomorrow"], tmp_path)
    # stemmed: meetings = meeting; ROUGE-1 P 2/3, R 1 -> F 0.8; ROUGE-2 P 1/2, R 1 -> F 2/3; the first reference best
    assert scored["quality"] == {"metric": "rouge1", "value": 80.0}
    assert (scored["rouge"]["rouge2"], scored["rouge"]["rouge1_multi_reference"]) == (66.67, 80.0)
    independent = compute_rouge([" the meetings tomorrow"], ["Meeting Tomorrow"])
    assert scored["rouge"]["rougeL"] == round(independent["rougeL"], 2) == 80.0
    assert scored["rouge"]["eval_items"] == 1
    with pytest.raises(ValueError, match="2 hypotheses for 1 test items"):
        summarization_task.score_summary_file(["a", "b"], tmp_path)
    results = {"rouge1": 30.1, "rouge2": 12.0, "rougeL": 29.0, "rougeLsum": 29.0, "eval_items": 1906, "bleu": 1}
    assert summarization_task.summary_results(results) == {
        "quality": {"metric": "rouge1", "value": 30.1},
        "rouge": {k: v for k, v in results.items() if k != "bleu"},
    }


def test_the_command_line_runs_summarization_s_systems_and_their_no_copy_variants(tmp_path, monkeypatch, capsys):
    args = peers_main.parse_args(["--task", "summarization", "--system", "fairseq-no-copy", "--max-updates", "20"])
    settings = comparison.run_settings(args)
    assert (settings["task"], settings["pointer_generator"], settings["lr_scale"], settings["max_steps"]) == (
        "summarization", False, 0.25, 20
    )  # fmt: skip
    args = peers_main.parse_args(["--task", "summarization", "--system", "hf_vanilla-no-copy", "--test-limit", "20"])
    command = recipe_runs.recipe_command(args, tmp_path)
    assert command[6] == "recipes/summarize.py" and "--no-pointer-generator" in command
    assert command[command.index("--eval-sentences") + 1] == "20"
    args = peers_main.parse_args(["--task", "summarization", "--system", "hf_vanilla"])
    assert "--no-pointer-generator" not in recipe_runs.recipe_command(args, tmp_path)
    assert recipe_runs.recipe_command(peers_main.parse_args(["--system", "hf_vanilla"]), tmp_path) == [
        "accelerate", "launch", "--quiet", "--cpu", "--num_processes", "1", "recipes/wmt_ende.py", "--preset", "demo",
        "--seed", "1", "--output-dir", str(tmp_path), "--overwrite-output-dir",
    ]  # fmt: skip
    with pytest.raises(SystemExit):
        peers_main.parse_args(["--task", "translation", "--system", "fairseq-no-copy"])
    error = capsys.readouterr().err.splitlines()[-1]
    assert error == (
        "python -m benchmarks.peers: error: translation has no variant without a copy mechanism: --system fairseq, "
        "without -no-copy"
    )


def test_a_summarization_run_exports_runs_the_peer_and_scores_its_output(aeslc, tmp_path, monkeypatch):
    """`systems.run_peer` with a stand-in peer that writes the test split's exported subjects back: the job it is given
    is summarization's, and its output, decoded by the demo's tokenizer, scores ROUGE-1 100 against @subject."""
    monkeypatch.setattr(recipe_module("summarize"), "default_dataset", lambda preset: str(aeslc))
    monkeypatch.setattr(systems, "ensure_venv", lambda venv, root: tmp_path / "venv" / "bin")
    jobs = []

    def echo(job):
        jobs.append(job)
        lines = (job.data / f"test.{job.sides[1]}").read_text(encoding="utf-8").splitlines()
        return peer_jobs.PeerRun(lines, 1.0, 10.0, "stand-in", {}, 1.0, 4.0)

    stand_in = systems.Peer("fairseq", systems.PEERS["fairseq"].rows, echo, ("summarization",))
    monkeypatch.setitem(systems.PEERS, "fairseq", stand_in)
    args = peers_main.parse_args(
        ["--task", "summarization", "--system", "fairseq", "--test-limit", "5", "--seed", "3"]
    )
    figures = systems.run_peer(args, comparison.run_settings(args), tmp_path / "work")
    (job,) = jobs
    assert (job.task, job.sides, job.test_pairs, job.seed, job.settings["pointer_generator"]) == (
        "summarization", SIDES, 5, 3, True
    )  # fmt: skip
    assert figures["quality"] == {"metric": "rouge1", "value": 100.0} and figures["rouge"]["eval_items"] == 5
    assert figures["data"]["unk_pieces"] == 0 and figures["data"]["pairs"] == {"train": 40, "valid": 3, "test": 5}
    assert "fairseq cannot match: p_gen inputs" in figures["settings_table"]
    hypotheses = (tmp_path / "work" / "fairseq" / "hypotheses.txt").read_text().splitlines()
    assert hypotheses[0] == " gas contract 0 review"
