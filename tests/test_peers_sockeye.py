"""`benchmarks/peers/sockeye/`: every row of Sockeye's side of the table is a flag
really passed with its value, the vocabulary JSON is the tokenizer's, Sockeye's logs are read back, and a run's steps
(faked here by scripts: no test needs Sockeye's environment) give a record's figures or a clear error."""

import json
import re
import sys
from pathlib import Path

import pytest
from datasets import Dataset

from hf_vanilla.beam_search_vanilla import gnmt_length_penalty
from hf_vanilla.training.schedule import inverse_sqrt_lr

from benchmarks.peers import __main__ as peers_main
from benchmarks.peers import comparison, systems
from benchmarks.peers import translation as translation_task
from benchmarks.peers.common import jobs as peer_jobs
from benchmarks.peers.common import pieces as common_pieces
from benchmarks.peers.common import settings as common_settings
from benchmarks.peers.fairseq import translation_table as fairseq_table
from benchmarks.peers.sockeye import runner as sockeye_runner
from benchmarks.peers.sockeye import translation_table as sockeye_table

LONGEST = 30  # the test split's longest source in tokens, </s> counted, of the commands built below
# A flag of a row's Sockeye column and its value (absent for a switch such as --shared-vocab).
FLAG = re.compile(r"(--[a-z][\w-]*)(?: (?!--)(\S+))?")

# Lines as sockeye-train and sockeye-translate 3.1.34 logged them in the short check (console format; paths cut).
TRAIN_LOG = """[INFO:sockeye.data_io] Tokens: source 666441 target 698625
[INFO:root] Saved params/state_dict to "model/params.00000"
[INFO:sockeye.training] Training started.
[INFO:sockeye.training] Checkpoint [1]\tUpdates=5 Epoch=0 Samples=330 Time-cost=3.309 Updates/sec=1.511
[INFO:sockeye.training] Checkpoint [1]\tTrain-ppl=4076.662292
[INFO:sockeye.training] Checkpoint [1]\tValidation-ppl=3994.077225
[INFO:sockeye.training] Validation-perplexity improved to 3994.077225 (delta=inf).
[INFO:sockeye.training] Checkpoint [1]\tLearning-rate=0.000028
[INFO:root] Saved params/state_dict to "model/params.00001"
[INFO:sockeye.training] 'model/params.best' now points to 'params.00001'
[INFO:sockeye.training] Checkpoint [2]\tUpdates=10 Epoch=0 Samples=675 Time-cost=1.581 Updates/sec=3.162
[INFO:sockeye.training] Checkpoint [2]\tTrain-ppl=3839.359068
[INFO:sockeye.training] Checkpoint [2]\tValidation-ppl=3683.178572
[INFO:sockeye.training] Validation-perplexity improved to 3683.178572 (delta=310.898654).
[INFO:sockeye.training] Checkpoint [2]\tLearning-rate=0.000055
[INFO:sockeye.training] Maximum # of updates (10) reached.
[INFO:sockeye.training] Training finished, can be continued later. Best checkpoint: 2.
"""
TRANSLATE_LOG = (
    "[INFO:sockeye.translate] Processed 20 lines. Total time: 10.4308, sec/sent: 0.5215, sent/sec: 1.9174\n"
)


def flags_of(text: str) -> list[tuple[str, str | None]]:
    """The `--flag value` pairs of a row's Sockeye column."""
    return [(flag, value or None) for flag, value in FLAG.findall(text)]


def expected_value(value: str) -> str:
    """A row's value with the test split's longest source L put in (`L+49`, `4000//L`, `min(4000//L,192)`)."""
    if value.startswith("L+"):
        return str(LONGEST + int(value[2:]))
    if value.endswith("//L"):
        return str(int(value[:-3]) // LONGEST)
    if value.startswith("min("):
        return str(min(int(expected_value(part)) for part in value[4:-1].split(",")))
    return value


@pytest.fixture
def job(tmp_path):
    """A PeerJob of the demo's settings on a tiny exported folder (two test sources, the longer LONGEST - 1
    pieces), its bin folder `tmp_path/bin`."""
    data = tmp_path / "data"
    data.mkdir()
    lines = {"train": ["Ġa Ġb", "Ġc"], "valid": ["Ġa"], "test": [" ".join(["Ġa"] * (LONGEST - 1)), "Ġb"]}
    for stem, sentences in lines.items():
        for side in ("en", "de"):
            (data / f"{stem}.{side}").write_text("".join(s + "\n" for s in sentences), encoding="utf-8")
    (data / "dict.txt").write_text("Ġa 1\nĠb 1\nĠc 1\n", encoding="utf-8")
    return peer_jobs.PeerJob(data, tmp_path / "work", tmp_path / "bin", translation_task.demo_settings(), 3, None, 2,
                           {"source": 5, "target": 7})  # fmt: skip


def test_every_row_s_flag_is_passed_with_its_value(job):
    peer, settings = sockeye_runner, job.settings
    train = peer.train_command(job, Path("vocab.json"), job.work / "model")
    translate = peer.translate_command(job, job.work / "model", job.work / "test.hyp")
    decoding = {row.setting for row in sockeye_table._decoding_rows(settings)}
    checked = 0
    for row in peer.sockeye_rows(settings):
        command = translate if row.setting in decoding else train
        for flag, value in flags_of(row.peer):
            assert command.count(flag) == 1, (row.setting, flag)
            if value is not None:
                assert command[command.index(flag) + 1] == expected_value(value), (row.setting, flag)
            checked += 1
    assert checked >= 40
    for flag in ("--shared-vocab", "--overwrite-output", "--use-cpu"):
        assert flag in train
    given = {flag: train[train.index(flag) + 1] for flag in ("--num-layers", "--transformer-preprocess",
             "--transformer-postprocess", "--batch-size", "--max-updates", "--checkpoint-interval",
             "--keep-last-params", "--seed")}  # fmt: skip
    assert given == {
        "--num-layers": "3:3", "--transformer-preprocess": "n:n", "--transformer-postprocess": "dr:dr",
        "--batch-size": "2000", "--max-updates": "2400", "--checkpoint-interval": "100", "--keep-last-params": "3",
        "--seed": "3"}  # fmt: skip
    assert translate[translate.index("--max-output-length") + 1] == "79"  # 30 + 50 with </s>: 79 + 1 in Sockeye
    assert translate[translate.index("--batch-size") + 1] == "133"


def test_sockeye_s_schedule_and_length_penalty_are_the_recipe_s():
    settings = translation_task.demo_settings()
    lr0, warmup = float(sockeye_table.initial_learning_rate(settings)), settings["warmup_steps"]
    assert lr0 == pytest.approx(0.5 * 128**-0.5)
    for update in (1, 2, 200, 399, 400, 401, 1000, 2400):
        # sockeye.lr_scheduler.LearningRateSchedulerInvSqrtDecay.get_lr at t = update (stepped before the update)
        sockeye_rate = lr0 * min(1.0, update / warmup) / max(update, warmup) ** 0.5
        assert sockeye_rate == pytest.approx(inverse_sqrt_lr(update, 128, warmup, 0.5))
    for length in (1, 7, 60):  # sockeye.beam_search.LengthPenalty with alpha 0.6, beta 5
        assert (5 + length) ** 0.6 / (5 + 1) ** 0.6 == pytest.approx(gnmt_length_penalty(length, 0.6))


def test_the_table_names_what_sockeye_cannot_match():
    rows = {row.setting: row for row in sockeye_table.sockeye_rows(translation_task.demo_settings())}
    fairseq = {row.setting for row in fairseq_table.fairseq_rows(translation_task.demo_settings())}
    assert fairseq <= set(rows)  # every setting of fairseq's table, and Sockeye's own differences
    assert common_settings.render(list(rows.values()), "sockeye").splitlines()[-1] == (
        "sockeye cannot match: layer norm, layer norm epsilon, attention biases, output bias, tokens per update, "
        "batching, validation, initialisation, decoder start, finished hypotheses, maximum output, decoding batches."
    )
    assert rows["length penalty"].matched and rows["learning rate"].matched and rows["label smoothing"].matched
    assert rows["layer norm"].peer.startswith("--transformer-preprocess n:n --transformer-postprocess dr:dr")
    assert "sockeye-post-norm" in rows["layer norm"].note


def test_sockeye_runs_in_its_own_layer_order_and_post_norm_only_as_its_labelled_variant(job):
    """`sockeye`: Sockeye 3.1.34's defaults (arguments.py: --transformer-preprocess n n, --transformer-postprocess dr
    dr; the final norm is the preprocess sequence once more); `sockeye-post-norm`: the paper's, matched."""
    own, variant = (comparison.run_settings(peers_main.parse_args(["--system", system, "--max-updates", "20"]))
                    for system in ("sockeye", "sockeye-post-norm"))  # fmt: skip
    assert variant == {**own, "peer_post_norm": True}
    assert systems.PEERS["sockeye-post-norm"].run is sockeye_runner.run_sockeye
    assert systems.PEERS["sockeye-post-norm"].venv == "sockeye"
    variant = peer_jobs.PeerJob(
        **{**vars(job), "settings": {**job.settings, **systems.PEERS["sockeye-post-norm"].settings}}
    )
    for each, order in ((job, ("n:n", "dr:dr")), (variant, (":", "drn:drn"))):
        train = sockeye_runner.train_command(each, Path("vocab.json"), each.work / "model")
        flags = ("--transformer-preprocess", "--transformer-postprocess")
        assert tuple(train[train.index(flag) + 1] for flag in flags) == order
        [row] = [row for row in sockeye_table.sockeye_rows(each.settings) if row.setting == "layer norm"]
        assert row.matched is (each is variant)
        for flag, value in flags_of(row.peer):
            assert train[train.index(flag) + 1] == value
    rows = sockeye_table.sockeye_rows(variant.settings)
    assert "layer norm," not in common_settings.render(rows, "sockeye-post-norm").splitlines()[-1]
    with pytest.raises(SystemExit):
        peers_main.parse_args(["--task", "summarization", "--system", "sockeye-post-norm"])


def test_the_vocabulary_json_is_the_tokenizer_s_pieces_after_sockeye_s_specials(tmp_path):
    pairs = [("The light was good.", "Das Licht war gut."), ("God saw the light.", "Gott sah das Licht.")]
    train = Dataset.from_list([{"translation": {"en": en, "de": de}} for en, de in pairs])
    tokenizer = translation_task.translation_tokenizer(tmp_path / "tokenizer", train, 300)
    pieces = common_pieces.write_dictionary(tokenizer, tmp_path / "dict.txt")
    written = sockeye_runner.write_vocabulary(tmp_path / "dict.txt", tmp_path / "vocab.json")
    vocab = json.loads((tmp_path / "vocab.json").read_text(encoding="utf-8"))
    assert vocab == written and list(vocab.values()) == list(range(len(tokenizer)))
    assert list(vocab)[:4] == ["<pad>", "<unk>", "<s>", "</s>"]  # sockeye.constants.VOCAB_SYMBOLS, ids 0-3
    assert list(vocab)[4:] == pieces == [p for p in tokenizer.convert_ids_to_tokens(list(range(len(tokenizer)))) if p
                                         not in ("<pad>", "<unk>", "<s>", "</s>")]  # fmt: skip
    assert set(vocab) == set(tokenizer.get_vocab())
    with pytest.raises(ValueError, match="Sockeye's special symbols"):
        sockeye_runner.vocabulary(["Ġa", "<unk>"])
    with pytest.raises(ValueError, match="duplicate"):
        sockeye_runner.vocabulary(["Ġa", "Ġa"])


def test_sockeye_s_logs_are_read_back():
    peer = sockeye_runner
    figures = peer.train_figures(TRAIN_LOG)
    assert figures == {"updates": 10, "epoch": 0, "samples": 675, "time_cost": 1.581, "train_perplexity": 3839.359068,
                       "validation_perplexity": 3683.178572, "learning_rate": 0.000055, "checkpoints": 2,
                       "train_seconds": 4.89, "samples_per_s": 138.037, "updates_per_s": 2.045}  # fmt: skip
    assert peer.checkpoints(TRAIN_LOG)[0]["validation_perplexity"] == 3994.077225
    assert peer.tokens_per_second(figures, {"source": 300, "target": 500}, 100) == 1104.3  # 138.037 pairs/s x 8
    assert peer.translation_speed(TRANSLATE_LOG) == 1.9174
    assert peer.hypotheses("Ġa Ġb\n\nĠc \n", 3) == ["Ġa Ġb", "", "Ġc"]
    with pytest.raises(ValueError, match="wrote 2 hypotheses for 3 test sentences"):
        peer.hypotheses("Ġa\nĠb\n", 3)
    with pytest.raises(ValueError, match="no 'Checkpoint"):
        peer.train_figures(TRAIN_LOG.replace("Time-cost", "Time"))
    with pytest.raises(ValueError, match="no 'Processed N lines"):
        peer.translation_speed("[INFO:sockeye.translate] Translating...\n")


FAKE_TRAIN = """
import os, pathlib, sys
print("MKL_DEBUG_CPU_TYPE", os.environ.get("MKL_DEBUG_CPU_TYPE"))
args = sys.argv[1:]
model = pathlib.Path(args[args.index("--output") + 1])
model.mkdir(parents=True)
for number in (0, 2, 3, 4):  # params.00001 removed by --keep-last-params 3
    (model / f"params.{number:05d}").write_text(f"checkpoint {number}")
(model / "params.best").symlink_to("params.00002")
print(open(sys.argv[0] + ".log").read())
"""
FAKE_AVERAGE = """
import pathlib, sys
args = sys.argv[1:]
output = pathlib.Path(args[args.index("--output") + 1])
inputs = args[:args.index("--output")]
output.write_text(" ".join(pathlib.Path(path).read_text() for path in inputs))
print("averaged", *inputs)
"""
FAKE_TRANSLATE = """
import os, pathlib, sys
print("MKL_DEBUG_CPU_TYPE", os.environ.get("MKL_DEBUG_CPU_TYPE"))
args = sys.argv[1:]
source = pathlib.Path(args[args.index("--input") + 1]).read_text().splitlines()
model = pathlib.Path(args[args.index("--models") + 1])
hypotheses = [f"Ġx{len(line.split())}" for line in source][:int(open(sys.argv[0] + ".count").read())]
pathlib.Path(args[args.index("--output") + 1]).write_text("".join(h + "\\n" for h in hypotheses))
print("loaded", (model / "params.best").read_text())
print(open(sys.argv[0] + ".log").read())
"""


def fake_environment(bin_folder: Path, translated: int = 2, train_exit: int = 0) -> None:
    """Scripts named as Sockeye's commands in `bin_folder`, doing what they do to files and logging their lines."""
    bin_folder.mkdir()
    for name, script in (("sockeye-train", FAKE_TRAIN), ("sockeye-average", FAKE_AVERAGE),
                         ("sockeye-translate", FAKE_TRANSLATE)):  # fmt: skip
        exit_line = f"\nsys.exit({train_exit})\n" if name == "sockeye-train" else ""
        (bin_folder / name).write_text(f"#!{sys.executable}\n{script}{exit_line}")
        (bin_folder / name).chmod(0o755)
    (bin_folder / "sockeye-train.log").write_text(TRAIN_LOG)
    (bin_folder / "sockeye-translate.log").write_text(TRANSLATE_LOG)
    (bin_folder / "sockeye-translate.count").write_text(str(translated))


def test_a_run_averages_the_newest_checkpoints_and_decodes_every_test_sentence(job):
    fake_environment(job.bin_folder)
    done = sockeye_runner.run_sockeye(job)
    assert done.hypotheses == [f"Ġx{LONGEST - 1}", "Ġx1"]
    assert done.averaged == ["params.00002", "params.00003", "params.00004"]
    model = job.work / "model"
    assert (model / "params.best").resolve() == (model / "params.averaged").resolve()
    assert (model / "params.00002").read_text() == "checkpoint 2"  # the link was replaced, not written through
    assert "loaded checkpoint 2 checkpoint 3 checkpoint 4" in (job.work / "translate.log").read_text()
    assert done.train_stats["updates"] == 10 and done.decode_sentences_per_s == 1.9174
    assert done.train_tokens_per_s == 828.2  # 138.037 pairs/s x (5 + 7) tokens / 2 pairs
    assert [command.split()[0].rsplit("/", 1)[-1] for command in done.commands] == [
        "sockeye-train", "sockeye-average", "sockeye-translate"]  # fmt: skip
    assert json.loads((job.work / "vocab.json").read_text())["Ġc"] == 6
    # Sockeye's torch 1.13.1 links MKL 2020.0, whose fast kernels an AMD CPU gets only by a variable (mkl_fast_path)
    expected = sockeye_runner.mkl_fast_path().get("MKL_DEBUG_CPU_TYPE")
    for log in ("train.log", "translate.log"):
        assert f"MKL_DEBUG_CPU_TYPE {expected}" in (job.work / log).read_text()


def test_an_amd_cpu_gets_mkl_2020_s_avx2_kernels_and_an_intel_cpu_keeps_mkl_s_choice(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\n")
    assert sockeye_runner.mkl_fast_path(cpuinfo) == {"MKL_DEBUG_CPU_TYPE": "5"}
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\n")
    assert sockeye_runner.mkl_fast_path(cpuinfo) == {}
    assert sockeye_runner.mkl_fast_path(tmp_path / "absent") == {}


def test_a_missing_hypothesis_or_a_failed_command_is_a_clear_error(job, tmp_path):
    fake_environment(job.bin_folder, translated=1)
    with pytest.raises(ValueError, match="wrote 1 hypotheses for 2 test sentences"):
        sockeye_runner.run_sockeye(job)
    failing = peer_jobs.PeerJob(**{**vars(job), "bin_folder": tmp_path / "failing", "work": tmp_path / "failing-work"})
    fake_environment(failing.bin_folder, train_exit=2)
    with pytest.raises(RuntimeError, match=r"sockeye-train failed \(2\), see .*train.log"):
        sockeye_runner.run_sockeye(failing)


def test_the_command_line_runs_sockeye():
    assert peers_main.parse_args(["--system", "sockeye"]).system == "sockeye"
    assert systems.PEERS["sockeye"].rows is sockeye_runner.sockeye_rows and systems.PEERS["sockeye"].venv == "sockeye"
