"""supar's CRF constituency parser on the parsing demo's own WSJ splits: the chart-parsing peer that sets the ceiling
for the seq2seq parsers (the recipe's Transformer under its tree grammar, fairseq's Transformer).

    NLTK_DATA=/work/shared/data/nltk_data python -m benchmarks.peers.supar.crf_con --seed 1 \
        --venv /work/peer_venvs/supar --work /tmp/peers/parsing-supar-crf-1

Steps, each a command of the peer's own environment (`INSTALL`, outside the repository; never a dependency of
hf_vanilla): the recipe's splits (`treebank_splits`, cleaned by `hf_vanilla.parsing.cleanup`) written one bracketed
tree a line under a TOP root as supar's reader takes them (`write_splits`); `crf-con train` from scratch with supar's
documented settings (`CONFIG`, `-f char`, no pretrained embeddings, one thread), its epochs bounded by wall time
(`--clock cpu`: by the process's CPU time; `train_bounded`: supar's 5000 epochs / patience 100 are for the full PTB)
and its model the dev-best epoch as supar selects it; `crf-con evaluate` (supar's own F1, for reference) and
`crf-con predict` on the test words; the predicted trees scored by the recipe's own EVALB (`score_predictions`:
`score_parses`, as the fairseq peer is scored); one record a seed (`build_record`,
`benchmarks/results/peers-parsing-supar-crf-seed<S>-<date>-<cpu>.json`).
"""

import argparse
import datetime
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from hf_vanilla.parsing.linearization import linearize_leaves
from hf_vanilla.parsing.trees import parse_tree

SYSTEM = "supar-crf"
# The pinned install: supar 1.1.4 (PyPI's newest) in a virtual environment that sees the system's torch 2.13,
# transformers and nltk (supar asks for torch>=1.7.1, transformers>=4.0.0, nltk, stanza, dill; pip adds stanza,
# emoji, protobuf, udapi and their like).
INSTALL = ["supar==1.1.4"]
INSTALL_LINE = (
    "python -m venv --system-site-packages /work/peer_venvs/supar && "
    "/work/peer_venvs/supar/bin/pip install supar==1.1.4"
)
DEFAULT_VENV = Path(os.environ.get("HF_VANILLA_SUPAR_VENV", "/work/peer_venvs/supar"))
RESULTS = Path(__file__).resolve().parents[2] / "results"
# supar's documented optimizer and run settings for its LSTM parsers (the repository's config.ini, the file `-c`
# reads: its release configs are downloads, out of reach here), in the key names supar 1.1.4 reads. epochs and
# patience stay as documented: the time bound (`train_bounded`) is what ends a run on this small treebank.
CONFIG = {
    "lr": 2e-3,
    "mu": 0.9,
    "nu": 0.9,
    "eps": 1e-12,
    "weight_decay": 0,
    "clip": 5.0,
    "decay": 0.75,
    "decay_steps": 5000,
    "batch_size": 5000,
    "epochs": 5000,
    "patience": 100,
    "min_freq": 2,
    "fix_len": 20,
}
# Files of a run's folder: the splits as supar reads them, the test words alone (gold structure and tags withheld
# from `predict`), the model, and the predictions.
SPLIT_FILES = {"train": "train.pid", "validation": "dev.pid", "test": "test.pid"}
TEST_WORDS, CONFIG_FILE, MODEL, PREDICTIONS = "test.words.pid", "crf-con.ini", "model", "pred.pid"
# supar's log lines: an epoch's end (after its dev-best checkpoint, if any, is saved), a SpanMetric, a speed.
EPOCH_END = re.compile(r"(\d+):(\d+):(\d+(?:\.\d+)?)s elapsed( \(saved\))?\s*$")
METRIC = re.compile(
    r"(?:(dev|test):\s+)?loss: ([\d.]+) - UCM:\s*([\d.]+)% LCM:\s*([\d.]+)% UP:\s*([\d.]+)% UR:\s*([\d.]+)% "
    r"UF:\s*([\d.]+)% LP:\s*([\d.]+)% LR:\s*([\d.]+)% LF:\s*([\d.]+)%"
)
SPEED = re.compile(r"(\d+):(\d+):(\d+(?:\.\d+)?)s elapsed, ([\d.]+) Sents/s")


# -- data ------------------------------------------------------------------------------------------------------------


def bracket_line(tree: str) -> str:
    """One recipe tree (cleaned, no TOP root, on one line) as a line of supar's tree files: under a TOP root, as
    supar's PTB files are (its reader takes the first tree's root label as every tree's root)."""
    return f"(TOP {' '.join(tree.split())})"


def words_line(tree: str) -> str:
    """The tree's words alone, as supar's `Tree.totree` writes a sentence to parse (`(TOP ( (_ w1)) ( (_ w2)) ..)`):
    the words are all `predict` sees of the test split."""
    words = parse_tree(tree).words()
    return "(TOP " + " ".join(f"( (_ {word}))" for word in words) + ")"


def read_bracket_file(path: Path) -> list[str]:
    """The trees of a bracket file as the recipe writes trees: the TOP root dropped where it has one child."""
    return [recipe_tree(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def recipe_tree(line: str) -> str:
    """A bracketed tree as the recipe's trees are written (`str` of `parse_tree`), a unary TOP root dropped."""
    tree = parse_tree(line)
    while tree.label in ("TOP", "") and len(tree.children) == 1 and not tree.is_preterminal:
        tree = tree.children[0]
    return str(tree)


def demo_splits(treebank: str = "nltk") -> dict[str, list[str]]:
    """The parsing demo's splits of `treebank`, as the recipe reads them (`treebank_splits(treebank_path(...))`)."""
    from hf_vanilla.data.treebank import treebank_path, treebank_splits

    return treebank_splits(treebank_path(treebank))


def write_splits(splits: dict[str, list[str]], folder: Path) -> dict[str, int]:
    """Writes `folder/{train,dev,test}.pid` (`bracket_line`, one tree a line) and `folder/test.words.pid`
    (`words_line`); returns the trees written per split."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, name in SPLIT_FILES.items():
        (folder / name).write_text("".join(bracket_line(t) + "\n" for t in splits[split]), encoding="utf-8")
    (folder / TEST_WORDS).write_text("".join(words_line(t) + "\n" for t in splits["test"]), encoding="utf-8")
    return {split: len(splits[split]) for split in SPLIT_FILES}


def write_config(path: Path, config: dict = CONFIG) -> Path:
    """supar's `-c` file: one [Run] section of `config` (its reader takes Python literals)."""
    path.write_text("[Run]\n" + "".join(f"{key} = {value!r}\n" for key, value in config.items()))
    return path


# -- commands --------------------------------------------------------------------------------------------------------


def environment_variables() -> dict[str, str]:
    """The peer's environment: one thread (the other cores are others'), and torch's pre-2.6 `torch.load` (supar
    1.1.4 pickles its models and loads them without `weights_only=False`)."""
    return {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1",
        "PYTHONWARNINGS": "ignore",
    }


def train_command(venv: Path, folder: Path, seed: int) -> list[str]:
    """`crf-con train` from scratch: char features (`-f char`, supar's English CRF parser's), no pretrained embeddings
    (`--embed ''`), MBR decoding (`--mbr`, the default of supar's evaluate and predict), CPU (`-d -1`), one thread."""
    return [
        str(venv / "bin" / "crf-con"), "--mbr", "train", "-b", "-d", "-1", "-t", "1", "-s", str(seed),
        "-c", str(folder / CONFIG_FILE), "-p", str(folder / MODEL), "-f", "char", "--embed", "",
        "--train", str(folder / SPLIT_FILES["train"]), "--dev", str(folder / SPLIT_FILES["validation"]),
        "--test", str(folder / SPLIT_FILES["test"]),
    ]  # fmt: skip


def evaluate_command(venv: Path, folder: Path, split: str) -> list[str]:
    """`crf-con evaluate` of the trained model on `split`'s gold trees: supar's own span F1."""
    return [
        str(venv / "bin" / "crf-con"), "--mbr", "evaluate", "-d", "-1", "-t", "1",
        "-p", str(folder / MODEL), "--data", str(folder / SPLIT_FILES[split]),
    ]  # fmt: skip


def predict_command(venv: Path, folder: Path) -> list[str]:
    """`crf-con predict` of the test words (`TEST_WORDS`) into `PREDICTIONS`."""
    return [
        str(venv / "bin" / "crf-con"), "--mbr", "predict", "-d", "-1", "-t", "1", "-p", str(folder / MODEL),
        "--data", str(folder / TEST_WORDS), "--pred", str(folder / PREDICTIONS),
    ]  # fmt: skip


def shown(command: list[str]) -> str:
    """A command as a shell line (the empty `--embed` argument quoted)."""
    return " ".join(part if part and " " not in part else repr(part) for part in command)


def seconds(hours: str, minutes: str, secs: str) -> float:
    """supar's `H:MM:SS.ffffff` as seconds."""
    return int(hours) * 3600 + int(minutes) * 60 + float(secs)


@dataclass
class Training:
    """What `train_bounded` saw: the epochs run, the seconds, whether the bound stopped it, the dev-best epoch, each
    epoch's dev and test figures and seconds as supar logged them, and the training process's CPU seconds."""

    epochs: int = 0
    seconds: float = 0.0
    stopped_by_bound: bool = False
    best_epoch: int | None = None
    per_epoch: list[dict] = field(default_factory=list)
    cpu_seconds: float = 0.0


def epochs_of(log: str) -> list[dict]:
    """Each finished epoch of a supar training log: its dev and test figures, seconds, and whether it was saved."""
    epochs, current = [], {}
    for line in log.splitlines():
        if match := METRIC.search(line):
            if match.group(1):
                current[match.group(1)] = metric_figures(match)
        elif match := EPOCH_END.search(line):
            current.update(seconds=round(seconds(*match.groups()[:3]), 1), saved=bool(match.group(4)))
            epochs.append(current)
            current = {}
    return epochs


def metric_figures(match: re.Match) -> dict:
    """A SpanMetric line's figures (percentages) and loss."""
    names = ("loss", "ucm", "lcm", "up", "ur", "uf", "lp", "lr", "lf")
    return {name: float(value) for name, value in zip(names, match.groups()[1:])}


def cpu_seconds(pid: int) -> float:
    """A live process's CPU seconds so far (user + system, Linux's /proc/PID/stat); 0 where it cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def train_bounded(
    command: list[str], log_path: Path, budget_s: float, clock: str = "wall", poll_s: float = 5.0
) -> Training:
    """Runs supar's training, stopping it (SIGTERM) at the end of the epoch after which another would pass
    `budget_s` of `clock`: `wall` seconds (another epoch taking as long as the last: a shared machine's pace changes),
    or the process's `cpu` seconds (at the mean epoch's; the same training on a busy machine as on an idle one).
    supar has saved its dev-best model by the time it logs an epoch's end, so the model the run leaves is the one
    supar selects (never before one is saved: an epoch whose dev F1 is 0 saves none). Its own end (patience,
    epochs) ends it sooner."""
    start = time.monotonic()
    training = Training()
    with open(log_path.with_suffix(".stdout"), "w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=environment_variables())
        supar_log = Path(command[command.index("-p") + 1] + ".train.log")
        while process.poll() is None:
            time.sleep(poll_s)
            training.cpu_seconds = round(cpu_seconds(process.pid) or training.cpu_seconds, 1)
            done = epochs_of(supar_log.read_text(errors="replace")) if supar_log.exists() else []
            if done and len(done) > training.epochs:
                training.epochs = len(done)
                used = training.cpu_seconds if clock == "cpu" else time.monotonic() - start
                pace = used / len(done) if clock == "cpu" else done[-1]["seconds"]
                if used + pace > budget_s and any(epoch["saved"] for epoch in done):
                    process.send_signal(signal.SIGTERM)
                    process.wait()
                    training.stopped_by_bound = True
                    break
        if not training.stopped_by_bound and process.returncode != 0:
            raise subprocess.CalledProcessError(process.returncode, command)
    training.seconds = round(time.monotonic() - start, 1)
    log = supar_log.read_text(errors="replace")
    log_path.write_text(log)
    training.per_epoch = epochs_of(log)
    training.epochs = len(training.per_epoch)
    saved = [number for number, epoch in enumerate(training.per_epoch, 1) if epoch["saved"]]
    training.best_epoch = saved[-1] if saved else None
    return training


def run_logged(command: list[str], log_path: Path) -> str:
    """Runs a peer command to the end, its output into `log_path`; returns the output."""
    completed = subprocess.run(command, capture_output=True, text=True, env=environment_variables())
    log_path.write_text(completed.stdout + completed.stderr)
    if completed.returncode != 0:
        raise subprocess.CalledProcessError(completed.returncode, command, completed.stdout, completed.stderr)
    return completed.stdout + completed.stderr


def supar_figures(output: str) -> dict:
    """supar's own span figures from an `evaluate` output (its last SpanMetric line): LP/LR/LF, UF, complete match,
    as percentages."""
    matches = list(METRIC.finditer(output))
    if not matches:
        raise ValueError("no SpanMetric line in supar's output")
    return metric_figures(matches[-1])


def decode_speed(output: str) -> tuple[float, float]:
    """`predict`'s own seconds and sentences per second."""
    match = SPEED.search(output)
    if match is None:
        raise ValueError("no speed line in supar's predict output")
    return round(seconds(*match.groups()[:3]), 2), float(match.group(4))


# -- scoring ---------------------------------------------------------------------------------------------------------


def score_predictions(predicted: list[str], gold: list[str]) -> dict:
    """The recipe's EVALB figures of supar's trees (`recipe_tree` lines) against `gold`: each tree linearized with its
    words (`linearize_leaves(..., "words")`) and scored by `score_parses`, the scoring of the recipe's evaluate and of
    the fairseq peer (`delinearize` repair, which a chart parser's well-formed trees never need: `repaired_share`
    says so). Raises ValueError where a predicted tree's words are not its gold tree's."""
    from hf_vanilla.evaluation.parsing import score_parses

    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predicted trees for {len(gold)} gold trees")
    sentences = []
    for number, (pred, ref) in enumerate(zip(predicted, gold), 1):
        words = parse_tree(ref).words()
        if parse_tree(pred).words() != words:
            raise ValueError(f"test tree {number}: the predicted tree's words are not the gold tree's")
        sentences.append(" ".join(words))
    outputs = [linearize_leaves(tree, "words") for tree in predicted]
    return score_parses(outputs, sentences, gold, "words").figures


# -- the record ------------------------------------------------------------------------------------------------------

# The side-by-side settings: (setting, the recipe's demo, supar's, note, matched).
SETTINGS = [
    ("treebank and splits", "NLTK's WSJ sample, files 1-159 / 160-179 / 180-199 (3,396 / 273 / 245 trees)",
     "the same trees (train.pid / dev.pid / test.pid)", "", True),
    ("tree clean-up", "hf_vanilla.parsing.cleanup: no -NONE-, no function tags or indices, no TOP",
     "the same trees under a TOP root (supar's PTB format)", "", True),
    ("model", "seq2seq Transformer, 3 + 3 layers, d_model 128, 4 heads, d_ff 512",
     "3-layer BiLSTM, 400 units a direction; biaffine span (500) and label (100) scorers; tree CRF (supar defaults)",
     "a span chart parser: every output is a tree over the input words", False),
    ("input features", "the words as whole-piece BPE tokens (4000 shared pieces)",
     "lower-cased words (min_freq 2) + CharLSTM (-f char, 50 / 100)", "no POS tags, no pretrained embeddings", False),
    ("pretrained", "none", "none (--embed '', no BERT)", "", True),
    ("decoding", "beam 21 under the tree grammar, delinearize repair",
     "MBR: CKY over the CRF's span marginals (--mbr)", "", False),
    ("optimizer", "Adam (0.9, 0.98), eps 1e-9, inverse-sqrt warm-up, peak 0.0011",
     "Adam (0.9, 0.9), eps 1e-12, lr 2e-3 x 0.75^(step/5000), clip 5", "supar's documented config.ini", False),
    ("batches", "2000 tokens", "5000 tokens, 32 length buckets", "supar's default", False),
    ("budget", "2400 updates (demo preset)",
     "supar's epochs, stopped by a time bound (the epoch after which another would pass it)",
     "supar's 5000 epochs / patience 100 are for the full PTB", False),
    ("model selection", "the last 3 checkpoints averaged", "the dev-best epoch (supar's own, by LF)",
     "", False),
    ("scoring", "EVALB (in-process, COLLINS.prm rules) of the repaired trees against the gold test trees",
     "the same EVALB (score_parses) of supar's predicted trees", "supar's own span F1 recorded beside it", True),
    ("threads", "2 (the demo's launch)", "1 (OMP_NUM_THREADS=1, -t 1)", "speeds are not comparable", False),
]  # fmt: skip


def settings_rows() -> list[dict]:
    """`SETTINGS` as the records' rows."""
    keys = ("setting", "hf_vanilla", "peer", "note", "matched")
    return [dict(zip(keys, row)) for row in SETTINGS]


def settings_table() -> str:
    """`SETTINGS` as the records' markdown table."""
    lines = ["| setting | hf_vanilla | supar | note |", "|---|---|---|---|"]
    lines += [f"| {s}{'' if m else ' (not matched)'} | {h} | {p} | {n} |" for s, h, p, n, m in SETTINGS]
    return "\n".join(lines)


def versions(venv: Path) -> dict:
    """The peer environment's versions of supar, torch, nltk and Python."""
    code = (
        "import json, sys, importlib.metadata as m, torch; "
        "print(json.dumps({'supar': m.version('supar'), 'torch': torch.__version__, 'nltk': m.version('nltk'), "
        "'python': sys.version.split()[0]}))"
    )
    completed = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, check=True)
    return json.loads(completed.stdout.strip().splitlines()[-1])


def run_device(header: dict) -> dict:
    """The record's `device`: the CPU on one thread, with the machine's CPU model, architecture and cores beside it
    (as the older peer records name the machine, which the docs' tables group runs by)."""
    machine = header.get("machine", {})
    return {"kind": "cpu", "processor": machine.get("processor"), "cpu_model": machine.get("cpu_model"),
            "threads": 1, "cpu_count": machine.get("cores")}  # fmt: skip


def record_path(folder: Path, seed: int, cpu_model: str | None, day: datetime.date | None = None) -> Path:
    """`folder/peers-parsing-supar-crf-seed<S>-<date>[-<cpu model>].json`, as the other peers' records are named."""
    day = day or datetime.date.today()
    model = re.sub(r"[^a-z0-9]+", "-", (cpu_model or "").lower()).strip("-")
    name = f"peers-parsing-{SYSTEM}-seed{seed}-{day.isoformat()}" + (f"-{model}" if model else "")
    return Path(folder) / f"{name}.json"


# -- the run ---------------------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What one seed's run produced: the commands run, the training, supar's own figures (`validation`, `test`),
    `predict`'s seconds and speed, the recipe's EVALB figures, the trees written a split and the training words."""

    commands: list[list[str]]
    training: Training
    own: dict
    decode: tuple[float, float]
    figures: dict
    counts: dict[str, int]
    train_words: int


def run_seed(
    venv: Path, folder: Path, seed: int, budget_minutes: float, clock: str = "wall", treebank: str = "nltk"
) -> Outcome:
    """Splits, bounded training, supar's evaluation of dev and test, prediction of the test words, the recipe's
    EVALB of the predicted trees (also written as `predictions.mrg`, the recipe's file name)."""
    splits = demo_splits(treebank)
    counts = write_splits(splits, folder)
    write_config(folder / CONFIG_FILE)
    for stale in (folder / MODEL, folder / PREDICTIONS):
        stale.unlink(missing_ok=True)
    commands = [train_command(venv, folder, seed)]
    print(f"[supar] seed {seed}: training in {folder} (bound {budget_minutes} {clock} min)", file=sys.stderr)
    training = train_bounded(commands[0], folder / "train.log", budget_minutes * 60, clock)
    own = {}
    for split in ("validation", "test"):
        commands.append(evaluate_command(venv, folder, split))
        own[split] = supar_figures(run_logged(commands[-1], folder / f"evaluate-{split}.log"))
    commands.append(predict_command(venv, folder))
    decode = decode_speed(run_logged(commands[-1], folder / "predict.log"))
    predicted = read_bracket_file(folder / PREDICTIONS)
    (folder / "predictions.mrg").write_text("".join(t + "\n" for t in predicted))
    figures = score_predictions(predicted, splits["test"])
    train_words = sum(len(parse_tree(t).words()) for t in splits["train"])
    return Outcome(commands, training, own, decode, figures, counts, train_words)


def build_record(outcome: Outcome, seed: int, budget_minutes: float, clock: str, header: dict, extra: dict) -> dict:
    """The seed's record, shaped as the other peers' (`benchmarks.peers.common.records.REQUIRED` and their figures);
    `header` is `benchmarks.environment.environment()`, `extra` the run's own keys (`versions`, `wall_s`,
    `peak_rss_mb`, `command`, load)."""
    training, figures = outcome.training, outcome.figures
    train_s = sum(epoch["seconds"] for epoch in training.per_epoch)
    return {
        "task": "parsing",
        "system": SYSTEM,
        "seed": seed,
        "quality": {"metric": "f1", "value": figures["evalb_f1"]},
        "evalb": figures,
        "supar_own": {
            "note": "supar's SpanMetric (its EVALB-like rules: TOP, S1, -NONE- and punctuation deleted, ADVP = PRT) "
            "of `crf-con evaluate` with the dev-best model; percentages",
            "dev": outcome.own["validation"],
            "test": outcome.own["test"],
        },
        "train_tokens_per_s": round(outcome.train_words * training.epochs / train_s, 1) if train_s else 0.0,
        "train_tokens_per_s_basis": "training words x epochs / the epochs' seconds as supar logs them (each epoch's "
        "dev and test evaluation included), on one thread",
        "decode_sentences_per_s": outcome.decode[1],
        "train_s": training.seconds,
        "decode_s": outcome.decode[0],
        "train_stats": {
            "epochs": training.epochs,
            "best_epoch": training.best_epoch,
            "stopped_by_bound": training.stopped_by_bound,
            "bound_minutes": budget_minutes,
            "bound_clock": clock,
            "train_cpu_s": training.cpu_seconds,
            "per_epoch": training.per_epoch,
        },
        "data": {"trees": {"train": outcome.counts["train"], "valid": outcome.counts["validation"],
                           "test": outcome.counts["test"]}, "train_words": outcome.train_words},
        "install": INSTALL_LINE,
        "peer_commands": [shown(c) for c in outcome.commands],
        "peer_environment": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"},
        "resolved_settings": {**CONFIG, "feat": ["char"], "encoder": "lstm", "embed": None, "mbr": True,
                              "buckets": 32, "threads": 1, "seed": seed,
                              "epochs_note": "as documented; the time bound (train_stats) ends the run"},
        "settings_table": settings_table(),
        "settings": settings_rows(),
        "environment": header,
        "device": run_device(header),
        "short_check": False,
        **extra,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> Path:
    """One seed: `run_seed`, then its record (`build_record`) under `--results-dir`; returns the record's path."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="supar's environment (INSTALL_LINE).")
    parser.add_argument("--work", type=Path, help="The run's folder (default /tmp/peers/parsing-supar-crf-<seed>).")
    parser.add_argument("--budget-minutes", type=float, default=22.0, help="The bound of training, in minutes.")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="What the bound counts.")
    parser.add_argument("--treebank", default="nltk")
    parser.add_argument("--results-dir", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    from benchmarks.environment import environment
    from benchmarks.peers.common.records import machine_load, peak_child_rss_mb

    started = time.monotonic()
    folder = args.work or Path(f"/tmp/peers/parsing-{SYSTEM}-{args.seed}")
    outcome = run_seed(args.venv, folder, args.seed, args.budget_minutes, args.clock, args.treebank)
    header = environment()
    extra = {
        "versions": versions(args.venv),
        "wall_s": round(time.monotonic() - started, 1),
        "peak_rss_mb": peak_child_rss_mb(),
        **machine_load(1),
        "command": "python -m benchmarks.peers.supar.crf_con " + " ".join(sys.argv[1:] if argv is None else argv),
    }
    record = build_record(outcome, args.seed, args.budget_minutes, args.clock, header, extra)
    record["resolved_settings"]["treebank"] = args.treebank
    path = record_path(args.results_dir, args.seed, header["machine"].get("cpu_model"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n")
    print(f"[supar] seed {args.seed}: EVALB F1 {outcome.figures['evalb_f1']} -> {path}", file=sys.stderr)
    return path


if __name__ == "__main__":
    main()
