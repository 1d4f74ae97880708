"""Sockeye 3.1.34 on the exported pieces: a vocabulary JSON of the tokenizer's pieces, train, average the newest
checkpoints, decode the test split. Every step is a command of the peer's own environment; the figures come from its
logs. The table and the flags are `translation_table`'s."""

import json
import re
from pathlib import Path

from benchmarks.peers.common.jobs import PeerJob, PeerRun, environment, newest_numbered, run_logged
from benchmarks.peers.common.pieces import longest_source, read_dictionary
from benchmarks.peers.sockeye.translation_table import (
    SPECIALS,
    sockeye_rows,
    sockeye_train_flags,
    sockeye_translate_flags,
)

__all__ = ["run_sockeye", "sockeye_rows"]

# sockeye.training's lines at each checkpoint (console format "[INFO:sockeye.training] Checkpoint [N]\t...").
CHECKPOINT = re.compile(
    r"Checkpoint \[(\d+)\]\tUpdates=(\d+) Epoch=(\d+) Samples=(\d+) Time-cost=([\d.]+) Updates/sec=([\d.]+)"
)
PERPLEXITY = re.compile(r"Checkpoint \[(\d+)\]\t(Train|Validation)-ppl=(\S+)")
LEARNING_RATE = re.compile(r"Checkpoint \[(\d+)\]\tLearning-rate=(\S+)")
# sockeye.translate's last line.
TRANSLATED = re.compile(r"Processed (\d+) lines\. Total time: ([\d.]+), sec/sent: ([\d.]+), sent/sec: ([\d.]+)")
# Sockeye 3.1.34 needs torch < 1.14, whose wheels link MKL 2020.0: on a CPU not made by Intel that MKL runs its generic
# kernels (a 2000x128 by 128x512 product: 27 GFLOP/s against 94 on one AMD EPYC core) unless this variable, which only
# MKL up to 2020.0 reads, sends it to its AVX2 ones (`mkl_fast_path`). Without it an AMD CPU times MKL's vendor check.
MKL_FAST_PATH = {"MKL_DEBUG_CPU_TYPE": "5"}
PARAMS = re.compile(r"params\.(\d{5})")  # sockeye.constants.PARAMS_NAME, one a checkpoint (00000: the start)
TOKENS_BASIS = (
    "Sockeye's checkpoint lines: Samples (pairs trained) / the sum of their Time-cost (training seconds, validation "
    "and saving left out) x (source + target tokens / pairs of the training split, </s> counted); Sockeye's own "
    "tok/sec counts padded source tokens"
)


def vocabulary(pieces: list[str]) -> dict[str, int]:
    """Sockeye's vocabulary of `pieces` (dict.txt's, in id order): its four specials at ids 0-3, then the pieces."""
    clash = sorted(set(pieces) & set(SPECIALS))
    if clash:
        raise ValueError(f"pieces {clash} are Sockeye's special symbols")
    if len(set(pieces)) != len(pieces):
        raise ValueError("the pieces hold a duplicate: Sockeye's vocabulary needs each once")
    return {token: index for index, token in enumerate((*SPECIALS, *pieces))}


def write_vocabulary(dictionary: Path, path: Path) -> dict[str, int]:
    """Writes the vocabulary JSON of `dictionary` (dict.txt's `piece 1` lines) to `path`, as sockeye.vocab does."""
    vocab = vocabulary([piece for piece in read_dictionary(dictionary) if piece])
    path.write_text(json.dumps(vocab, indent=4, ensure_ascii=False), encoding="utf-8")
    return vocab


def checkpoints(log_text: str) -> list[dict]:
    """Each checkpoint's figures from sockeye-train's log: updates, epoch, samples (pairs so far), time_cost (training
    seconds since the previous checkpoint) and, where logged, train and validation perplexity and learning rate."""
    found = {}
    for match in CHECKPOINT.finditer(log_text):
        found[int(match[1])] = {"updates": int(match[2]), "epoch": int(match[3]), "samples": int(match[4]),
                                "time_cost": float(match[5])}  # fmt: skip
    for match in PERPLEXITY.finditer(log_text):
        if int(match[1]) in found:
            found[int(match[1])][f"{match[2].lower()}_perplexity"] = float(match[3])
    for match in LEARNING_RATE.finditer(log_text):
        if int(match[1]) in found:
            found[int(match[1])]["learning_rate"] = float(match[2])
    return [found[number] for number in sorted(found)]


def train_figures(log_text: str) -> dict:
    """The last checkpoint's figures, with the checkpoints counted, their training seconds summed and the pairs and
    updates a second over them."""
    points = checkpoints(log_text)
    if not points:
        raise ValueError("sockeye-train logged no 'Checkpoint [N]\\tUpdates=... Time-cost=...' line")
    seconds = sum(point["time_cost"] for point in points)
    last = points[-1]
    rates = {
        "samples_per_s": round(last["samples"] / seconds, 3),
        "updates_per_s": round(last["updates"] / seconds, 4),
    }
    return {**last, "checkpoints": len(points), "train_seconds": round(seconds, 3), **rates}


def tokens_per_second(figures: dict, train_tokens: dict, train_pairs: int) -> float:
    """Source + target tokens a second (`TOKENS_BASIS`): pairs a second x the split's tokens a pair."""
    return round(figures["samples_per_s"] * (train_tokens["source"] + train_tokens["target"]) / train_pairs, 1)


def translation_speed(log_text: str) -> float:
    """The sentences a second of sockeye-translate's `Processed N lines. ... sent/sec: X` line."""
    match = TRANSLATED.search(log_text)
    if not match:
        raise ValueError("sockeye-translate logged no 'Processed N lines. ... sent/sec: X' line")
    return float(match[4])


def hypotheses(output: str, expected: int | None) -> list[str]:
    """sockeye-translate's output, one line a test sentence in order (an empty source gives an empty line), checked
    against the `expected` count."""
    lines = output.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if expected is not None and len(lines) != expected:
        raise ValueError(f"sockeye-translate wrote {len(lines)} hypotheses for {expected} test sentences")
    return [line.strip() for line in lines]


def average_command(bin_folder: Path, params: list[Path], output: Path) -> list[str]:
    """sockeye-average of the named `params` files into `output`. One input would be read as a model folder (its
    automatic selection), so a single file is named twice: the same mean."""
    inputs = [str(path) for path in params] * (2 if len(params) == 1 else 1)
    return [str(bin_folder / "sockeye-average"), *inputs, "--output", str(output)]


def use_average(model: Path, averaged: Path) -> None:
    """Points `model/params.best` (what sockeye-translate loads) at the averaged parameters: the link is replaced,
    never written through (it points at a checkpoint's file)."""
    best = model / "params.best"
    if best.is_symlink() or best.exists():
        best.unlink()
    best.symlink_to(averaged.name)


def train_command(job: PeerJob, vocab: Path, model: Path) -> list[str]:
    """sockeye-train on the job's exported splits with the vocabulary JSON `vocab`, into `model` (made afresh)."""
    data = job.data
    return [
        str(job.bin_folder / "sockeye-train"),
        *("--source", str(data / "train.en"), "--target", str(data / "train.de")),
        *("--validation-source", str(data / "valid.en"), "--validation-target", str(data / "valid.de")),
        *("--source-vocab", str(vocab), "--target-vocab", str(vocab), "--shared-vocab"),
        *("--output", str(model), "--overwrite-output", "--use-cpu"),
        *sockeye_train_flags(job.settings, job.seed),
    ]


def translate_command(job: PeerJob, model: Path, output: Path) -> list[str]:
    """sockeye-translate of the job's test sources with `model`'s params.best into `output`."""
    source = job.data / "test.en"
    return [
        str(job.bin_folder / "sockeye-translate"),
        *("--models", str(model), "--input", str(source), "--output", str(output), "--use-cpu"),
        *("--seed", str(job.seed)),
        *sockeye_translate_flags(job.settings, longest_source(source)),
    ]


def mkl_fast_path(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict[str, str]:
    """`MKL_FAST_PATH` on a CPU whose vendor is not Intel (an Intel CPU keeps MKL's own choice, AVX-512 included);
    nothing where the vendor cannot be read."""
    vendor = re.search(r"^vendor_id\s*:\s*(\S+)", cpuinfo.read_text(), re.M) if cpuinfo.is_file() else None
    return MKL_FAST_PATH if vendor and vendor[1] != "GenuineIntel" else {}


def run_sockeye(job: PeerJob) -> PeerRun:
    """Writes the vocabulary JSON, trains with the settings' flags, averages the newest checkpoints and decodes the
    test split (every pair, checked) at the demo's beam; logs in the job's folder."""
    work = job.work
    work.mkdir(parents=True, exist_ok=True)
    env, commands = environment(job.threads, **mkl_fast_path()), []
    vocab, model, output = work / "vocab.json", work / "model", work / "test.hyp"
    write_vocabulary(job.data / "dict.txt", vocab)
    train_seconds = run_logged(train_command(job, vocab, model), work / "train.log", env, commands)
    stats = train_figures((work / "train.log").read_text())
    params = newest_numbered(model, PARAMS, job.settings["average_last"], "sockeye-train")
    averaged = model / "params.averaged"
    run_logged(average_command(job.bin_folder, params, averaged), work / "average.log", env, commands)
    use_average(model, averaged)
    decode_seconds = run_logged(translate_command(job, model, output), work / "translate.log", env, commands)
    pairs = len((job.data / "train.en").read_text(encoding="utf-8").splitlines())
    return PeerRun(
        hypotheses=hypotheses(output.read_text(encoding="utf-8"), job.test_pairs),
        train_seconds=train_seconds,
        train_tokens_per_s=tokens_per_second(stats, job.train_tokens, pairs),
        train_tokens_basis=TOKENS_BASIS,
        train_stats=stats,
        decode_seconds=decode_seconds,
        decode_sentences_per_s=translation_speed((work / "translate.log").read_text()),
        averaged=[path.name for path in params],
        commands=commands,
    )
