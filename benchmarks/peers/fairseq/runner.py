"""fairseq 0.12 (`fairseq-fixed`) on the exported pieces: binarize, train, average the last checkpoints, decode the
test split. Every step is a command of the peer's own environment; the figures come from its logs. The same steps run
every task: translation's `transformer`, summarization's `transformer_pointer_generator` (its
`examples/pointer_generator`, loaded with `--user-dir`) or, without copying, `transformer`, and parsing's
`transformer` on the recipe's linearized trees."""

import json
import re
from pathlib import Path

from benchmarks.peers.common.jobs import PeerJob, PeerRun, environment, run_logged
from benchmarks.peers.common.settings import Row
from benchmarks.peers.fairseq.parsing_table import (
    fairseq_parse_generate_flags,
    fairseq_parse_rows,
    fairseq_parse_train_flags,
)
from benchmarks.peers.fairseq.summarization_table import (
    POINTER_GENERATOR_SRC,
    fairseq_summary_generate_flags,
    fairseq_summary_rows,
    fairseq_summary_train_flags,
)
from benchmarks.peers.fairseq.translation_table import fairseq_generate_flags, fairseq_rows, fairseq_train_flags

# fairseq's averaging script, from its repository (scripts/average_checkpoints.py), is not in every installed
# package: where the environment lacks it, this does what it does for --num-update-checkpoints (the mean of each
# parameter over the newest N checkpoint_*_<updates>.pt, the first checkpoint's other fields kept).
AVERAGE_FALLBACK = r"""
import collections, re, sys, torch
from pathlib import Path
folder, n, output = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
matches = [(re.fullmatch(r"checkpoint_\d+_(\d+)\.pt", p.name), p) for p in folder.iterdir()]
found = sorted((int(m.group(1)), p) for m, p in matches if m)
paths = [p for _, p in found[-n:]]
if len(paths) < n:
    sys.exit(f"found {len(paths)} update checkpoints, expected {n}")
state, total = None, collections.OrderedDict()
for path in paths:
    state = torch.load(path, map_location="cpu", weights_only=False)
    for key, value in state["model"].items():
        total[key] = total.get(key, 0) + value.double()
state["model"] = collections.OrderedDict((k, (v / len(paths)).to(state["model"][k].dtype)) for k, v in total.items())
torch.save(state, output)
print("averaged", *[p.name for p in paths])
"""

# fairseq 0.12's n-gram ban without its CUDA extension (`NGramRepeatBlock._no_repeat_ngram`) compares the last n-1
# slots of the padded token buffer, not the hypothesis' own, and so blocks nothing on a CPU (fairseq issues 4709,
# 5206). This is the method as fairseq's CUDA kernel behaves: the hypothesis' tokens up to `step`, its start symbol
# in slot 0 included.
NGRAM_BAN = r"""
def _no_repeat_ngram(self, tokens, lprobs, bsz: int, beam_size: int, step: int):
    n = self.no_repeat_ngram_size
    if step + 2 - n < 0:
        return lprobs
    for row, prefix in enumerate(tokens[:, : step + 1].cpu().tolist()):
        last = prefix[step + 2 - n :]
        banned = [prefix[i + n - 1] for i in range(step + 2 - n) if prefix[i : i + n - 1] == last]
        if banned:
            lprobs[row, banned] = float("-inf")
    return lprobs
"""
# fairseq-generate with `NGRAM_BAN` in place of fairseq's method (its arguments follow as fairseq-generate's).
GENERATE_WITH_NGRAM_BAN = (
    NGRAM_BAN
    + r"""
import sys
from fairseq.ngram_repeat_block import NGramRepeatBlock
from fairseq_cli.generate import cli_main
NGramRepeatBlock._no_repeat_ngram = _no_repeat_ngram
sys.argv[0] = "fairseq-generate"
cli_main()
"""
)

# How `PeerRun.train_tokens_per_s` is derived from fairseq's log.
TOKENS_BASIS = (
    "fairseq's target tokens over its training seconds (every epoch's train_wpb x updates / the sum of "
    "train_train_wall: validation and checkpoint saving left out) x (1 + source/target tokens of the split)"
)


def logged_json(text: str) -> list[dict]:
    """The JSON objects fairseq's --log-format json writes, one a line after its logging prefix."""
    found = []
    for line in text.splitlines():
        match = re.search(r"\{.*\}\s*$", line)
        if match:
            try:
                found.append(json.loads(match.group(0)))
            except json.JSONDecodeError:
                continue
    return found


def train_figures(log_text: str) -> dict:
    """The last end-of-epoch training figures (`train_wps`: target tokens a second, `train_wall`, ...) as numbers,
    with the last validation's perplexity (`valid_ppl`, fairseq's 2 ** valid_nll_loss) where it validated."""
    entries = logged_json(log_text)
    epochs = [entry for entry in entries if "train_wps" in entry]
    if not epochs:
        raise ValueError("fairseq-train logged no end-of-epoch figures")
    figures = {key: float(value) for key, value in epochs[-1].items() if _is_number(value)}
    validations = [entry for entry in entries if _is_number(entry.get("valid_ppl"))]
    return figures | ({"valid_ppl": float(validations[-1]["valid_ppl"])} if validations else {})


def target_tokens_per_second(log_text: str) -> dict:
    """Target tokens a second over the whole run, training only: every epoch's target tokens (its `train_wpb` times
    its updates) over the sum of its `train_train_wall` (fairseq's training meter, without validation and checkpoint
    saving; logged in whole seconds, so within half a second an epoch). The last epoch's `train_wps` alone would time
    only its own updates."""
    epochs = [entry for entry in logged_json(log_text) if "train_wps" in entry]
    if not epochs:
        raise ValueError("fairseq-train logged no end-of-epoch figures")
    tokens, seconds, updates_before = 0.0, 0.0, 0
    for entry in epochs:
        updates = int(float(entry["train_num_updates"]))
        tokens += float(entry["train_wpb"]) * (updates - updates_before)
        seconds += float(entry["train_train_wall"])
        updates_before = updates
    return {"target_tokens": round(tokens), "seconds": seconds, "target_tokens_per_s": round(tokens / seconds, 1)}


def _is_number(value) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def hypotheses_in_order(generate_output: str) -> list[str]:
    """fairseq-generate's `H-<id>\\t<score>\\t<pieces>` lines as a list in test-set order."""
    found = {}
    for line in generate_output.splitlines():
        if line.startswith("H-"):
            head, _, pieces = line.split("\t", 2)
            found[int(head[2:])] = pieces.strip()
    missing = sorted(set(range(max(found, default=-1) + 1)) - set(found))
    if missing:
        raise ValueError(f"fairseq-generate wrote no hypothesis for test sentences {missing}")
    return [found[i] for i in range(len(found))]


def decoding_speed(generate_output: str) -> float:
    """The sentences a second of fairseq-generate's `Translated N sentences (...) in Xs (Y sentences/s, ...)` line."""
    match = re.search(r"Translated [\d,]+ sentences .*\(([\d.]+) sentences/s", generate_output)
    if not match:
        raise ValueError("fairseq-generate printed no 'Translated ... sentences/s' line")
    return float(match.group(1))


def find_average_script(bin_folder: Path) -> Path | None:
    """fairseq's scripts/average_checkpoints.py where the environment installed it."""
    found = sorted(bin_folder.parent.glob("lib/python*/site-packages/fairseq/scripts/average_checkpoints.py"))
    found += sorted(bin_folder.parent.glob("lib/python*/site-packages/scripts/average_checkpoints.py"))
    return found[0] if found else None


def run_fairseq(job: PeerJob) -> PeerRun:
    """Binarizes the job's pieces (with their dict.txt), trains with the flags of the job's task (`task_flags`),
    averages the last checkpoints and decodes the test split (every pair, checked) at the demo's beam; logs in the
    job's folder."""
    work, bin_folder, settings = job.work, job.bin_folder, job.settings
    work.mkdir(parents=True, exist_ok=True)
    env, commands = environment(job.threads, TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1"), []
    binarized, checkpoints = work / "bin", work / "checkpoints"
    run_logged(preprocess_command(job.data, binarized, bin_folder, job.sides), work / "preprocess.log", env, commands)
    train_flags, generate_flags = task_flags(job)
    train = [
        str(bin_folder / "fairseq-train"),
        str(binarized),
        "--cpu",
        *("--save-dir", str(checkpoints), "--log-format", "json", "--log-interval", "10"),
        *train_flags,
    ]
    train_seconds = run_logged(train, work / "train.log", env, commands)
    stats = train_figures((work / "train.log").read_text())
    speed = target_tokens_per_second((work / "train.log").read_text())
    averaged = checkpoints / "averaged.pt"
    run_logged(average_command(bin_folder, checkpoints, settings["average_last"], averaged), work / "average.log",
               env, commands)  # fmt: skip
    generate = [
        *generate_program(bin_folder, generate_flags),
        str(binarized),
        "--cpu",
        *("--path", str(averaged), "--gen-subset", "test", "--seed", str(job.seed)),
        *generate_flags,
    ]
    decode_seconds = run_logged(generate, work / "generate.log", env, commands)
    output = (work / "generate.log").read_text()
    decoded = len(re.findall(r"^H-", output, flags=re.M))
    if job.test_pairs is not None and decoded != job.test_pairs:
        raise ValueError(f"fairseq-generate decoded {decoded} of {job.test_pairs} test sentences, see {work}")
    # fairseq counts target tokens (</s> included); hf_vanilla's tokens/s counts source and target tokens: scaled by
    # the training split's source-to-target ratio, over the epochs fairseq ran (whole or nearly).
    both_sides = 1 + job.train_tokens["source"] / job.train_tokens["target"]
    return PeerRun(
        hypotheses=hypotheses_in_order(output),
        train_seconds=train_seconds,
        train_tokens_per_s=round(speed["target_tokens_per_s"] * both_sides, 1),
        train_tokens_basis=TOKENS_BASIS,
        train_stats={**stats, "whole_run": speed},
        decode_seconds=decode_seconds,
        decode_sentences_per_s=decoding_speed(output),
        averaged=re.findall(r"checkpoint_\d+_\d+\.pt", (work / "average.log").read_text()),
        commands=commands,
    )


def generate_program(bin_folder: Path, flags: list[str]) -> list[str]:
    """fairseq-generate, or, where `flags` ban repeated n-grams, fairseq-generate with that ban fixed (`NGRAM_BAN`)."""
    if "--no-repeat-ngram-size" in flags and int(flags[flags.index("--no-repeat-ngram-size") + 1]) > 0:
        return [str(bin_folder / "python"), "-c", GENERATE_WITH_NGRAM_BAN]
    return [str(bin_folder / "fairseq-generate")]


def task_flags(job: PeerJob) -> tuple[list[str], list[str]]:
    """fairseq-train's flags (after the data folder and its own) and fairseq-generate's for the job's task:
    translation's (`translation_table`), parsing's (`parsing_table`), or summarization's (`summarization_table`; the
    pointer-generator's code from the environment's fairseq package where the settings copy)."""
    settings = job.settings
    if job.task == "translation":
        return fairseq_train_flags(settings, job.seed), fairseq_generate_flags(settings)
    if job.task == "parsing":
        return fairseq_parse_train_flags(settings, job.seed), fairseq_parse_generate_flags(settings)
    if job.task != "summarization":
        raise ValueError(f"fairseq runs translation, summarization and parsing, not {job.task}")
    user_dir = str(pointer_generator_source(job.bin_folder)) if settings["pointer_generator"] else None
    train = fairseq_summary_train_flags(settings, job.seed, user_dir)
    return train, fairseq_summary_generate_flags(settings, user_dir)


def pointer_generator_source(bin_folder: Path) -> Path:
    """fairseq's `examples/pointer_generator/pointer_generator_src` in the environment of `bin_folder` (installed with
    the package by fairseq-fixed), the folder `--user-dir` loads `transformer_pointer_generator` from."""
    found = sorted(bin_folder.parent.glob(f"lib/python*/site-packages/{POINTER_GENERATOR_SRC}/transformer_pg.py"))
    if not found:
        raise FileNotFoundError(f"no {POINTER_GENERATOR_SRC} in the environment of {bin_folder}")
    return found[0].parent


def fairseq_table(settings: dict) -> list[Row]:
    """fairseq's side of the settings table for the task of `settings`: `fairseq_rows` (translation),
    `fairseq_summary_rows` or `fairseq_parse_rows`."""
    task = settings.get("task", "translation")
    if task == "summarization":
        return fairseq_summary_rows(settings)
    return fairseq_parse_rows(settings) if task == "parsing" else fairseq_rows(settings)


def preprocess_command(
    data: Path, binarized: Path, bin_folder: Path, sides: tuple[str, str] = ("en", "de")
) -> list[str]:
    """fairseq-preprocess of the exported splits (files suffixed by `sides`, source and target) into `binarized`, with
    the tokenizer's dictionary on both sides (the same dictionary: a pointer-generator needs it joined)."""
    dictionary = str(data / "dict.txt")
    return [
        str(bin_folder / "fairseq-preprocess"),
        *("--source-lang", sides[0], "--target-lang", sides[1]),
        *("--trainpref", str(data / "train"), "--validpref", str(data / "valid"), "--testpref", str(data / "test")),
        *("--srcdict", dictionary, "--tgtdict", dictionary, "--destdir", str(binarized), "--workers", "1"),
    ]


def average_command(bin_folder: Path, checkpoints: Path, last: int, output: Path) -> list[str]:
    """fairseq's averaging of the newest `last` update checkpoints into `output` (`AVERAGE_FALLBACK` where the
    environment lacks the script)."""
    script = find_average_script(bin_folder)
    if script is not None:
        return [str(bin_folder / "python"), str(script), "--inputs", str(checkpoints),
                "--num-update-checkpoints", str(last), "--output", str(output)]  # fmt: skip
    return [str(bin_folder / "python"), "-c", AVERAGE_FALLBACK, str(checkpoints), str(last), str(output)]
