r"""Every GPU measurement the project still owes, in one command, within 25 minutes of a lent GPU.

    python -m benchmarks.gpu_suite --dry-run          # the plan: each step, its command and time budget (no GPU)
    python -m benchmarks.gpu_suite                    # all steps, results in benchmarks/results/
    python -m benchmarks.gpu_suite --out DIR --only train-base,decode --budget-minutes 10

Steps, the most wanted first (so that a session cut short keeps them), each a subprocess of its own (`STEPS`):

- `cuda-tests`: `pytest tests/test_cuda.py` (the CPU's function and tokens on the GPU, bf16 close to fp32 and
  training); figures: the counts of passed, failed, skipped and erroring tests, and the failing tests' names.
- `train-base`, `train-base-compiled`, `train-big`, `train-big-compiled`: `compare_marian.py --parts train` in bf16
  autocast at batch 256 x 32 + 32 tokens, eager or `torch.compile`d (inductor): tokens/s, MFU, peak memory and
  warm-up (compilation) seconds of hf_vanilla, of hf_vanilla with the chunked loss (4,096 positions a chunk) and of
  MarianMTModel with hf_vanilla's very weights.
- `decode`, `decode-static`: `compare_marian.py --parts decode`: greedy and beam 4 at batch 1 and 16, 32 new tokens,
  hf_vanilla against MarianMTModel, with the dynamic cache, then the static one (which transformers compiles on
  CUDA; the graphs and graph breaks are counted).
- `loss-curves`: `loss_curves.py`: 200 updates of the base model in fp32 and in bf16 autocast, same seed, same
  dropout masks, same batches of a fixed synthetic task (that script's docstring says why not a corpus).

Each step has a time budget (`Step.budget_s`; they add up to at most 25 minutes) and the suite one
(`--budget-minutes`): a step gets the smaller of its own and what is left of the suite's, and is skipped when less
than `MIN_STEP_S` seconds are left. A step that runs past its budget is killed with its process group; a step that
fails or times out is recorded as such and the suite goes on. The figures a step wrote before it was killed are kept
(compare_marian.py rewrites its JSON after each model).

Results, in `--out` (default benchmarks/results/): `<date>-gpu-suite-<device slug>.json` (`-2`, `-3`, ... when the
name is taken), rewritten after every step (so a session cut off mid-suite keeps what finished), and `<same>.log`,
every step's raw output. The JSON:

    {
      "schema": 2,
      "environment": {...},                       # benchmarks/environment.py's header: the machine (its GPU's
                                                  # name), versions, commit (or --commit), when the suite started
      "transformers_meets_pin": true,             # pyproject.toml's transformers requirement holds
      "budget_s": 1500,
      "finished": false,                          # true once the last step has ended
      "steps": {
        "train-base": {
          "what": "...", "command": ["python", "-m", "benchmarks.compare_marian", ...], "budget_s": 120,
          "status": "ok",                         # ok | failed | timed out | skipped
          "returncode": 0, "seconds": 48.2,
          "figures": {...},                       # the step's own JSON: per model for compare_marian.py, the
                                                  # curves and summary for loss_curves.py, counts for pytest
          "log_tail": "..."                       # the last lines of its output
        },
        ...
      }
    }

On the lent machine a command may run 10 minutes at most, so the suite starts detached and is read back in later
calls; its transformers (5.17) is older than the pin, so carry a wheel. Here:

    python -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d .whl transformers==5.23.0 regex==2026.5.9

then, in a `run` carrying `.whl` (HASH: `git rev-parse HEAD`, here):

    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
    PYTHONPATH=/tmp/site setsid nohup python3 -m benchmarks.gpu_suite --out /tmp/suite --commit HASH \
      >/tmp/suite.out 2>&1 </dev/null & sleep 60; cat /tmp/suite.out

and `run` `sleep 500; cat /tmp/suite.out; cp /tmp/suite/* $OUT/` until it prints `gpu_suite: done`; keep the files.
"""

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

from benchmarks.environment import environment
from benchmarks.record_paths import unused_stem

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = Path(__file__).resolve().parent
SCHEMA = 2  # 1: the suite's own header (device, versions, date, commit); 2: benchmarks/environment.py's
BUDGET_MINUTES = 25
MIN_STEP_S = 30  # a step is not started with less than this left of the suite's budget
LOG_TAIL_CHARS = 3000
PYTHON = "{python}"  # placeholders in a step's command
JSON = "{json}"


@dataclass(frozen=True)
class Step:
    """One measurement: `command` (with `{python}` and `{json}`, the file its figures go to), run from the repository
    root within `budget_s` seconds; `kind` says how to read its figures and print them (compare, curves, pytest)."""

    name: str
    what: str
    budget_s: int
    command: tuple[str, ...]
    kind: str


def _compare(*extra: str) -> tuple[str, ...]:
    common = ("--device", "cuda", "--dtype", "bfloat16", "--skip-fsmt", "--json", JSON)
    return (PYTHON, "-m", "benchmarks.compare_marian", *common, *extra)


TRAIN = ("--parts", "train", "--batch-size", "256", "--length", "32", "--train-steps", "10")
CHUNK = ("--loss-chunk-tokens", "4096")
DECODE = ("--parts", "decode", "--repeats", "3", "--new-tokens", "32")

STEPS = (
    Step(
        "cuda-tests",
        "tests/test_cuda.py on the GPU",
        120,
        (PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_cuda.py", "--junitxml", JSON),
        "pytest",
    ),
    Step(
        "train-base",
        "base training, bf16, eager: hf_vanilla, its chunked loss, Marian",
        120,
        _compare("--model-size", "base", *TRAIN, *CHUNK),
        "compare",
    ),
    Step(
        "decode",
        "base decoding, bf16, dynamic cache: 4 settings, hf_vanilla vs Marian",
        120,
        _compare("--model-size", "base", *DECODE),
        "compare",
    ),
    Step(
        "loss-curves",
        "200 updates of base, fp32 and bf16, same seed and batches",
        150,
        (PYTHON, "-m", "benchmarks.loss_curves", "--device", "cuda", "--model-size", "base", "--steps", "200")
        + ("--json", JSON),
        "curves",
    ),
    Step(
        "train-base-compiled",
        "base training, bf16, torch.compile (inductor)",
        240,
        _compare("--model-size", "base", *TRAIN, *CHUNK, "--compile"),
        "compare",
    ),
    Step(
        "decode-static",
        "base decoding, bf16, static cache (compiled by transformers)",
        300,
        _compare("--model-size", "base", *DECODE, "--cache", "static"),
        "compare",
    ),
    Step(
        "train-big",
        "big training, bf16, eager",
        120,
        _compare("--model-size", "big", *TRAIN, *CHUNK),
        "compare",
    ),
    Step(
        "train-big-compiled",
        "big training, bf16, torch.compile (inductor)",
        270,
        _compare("--model-size", "big", *TRAIN, *CHUNK, "--compile"),
        "compare",
    ),
)


def command_line(step: Step, json_path: str = "FIGURES_FILE", python: str = "python") -> list[str]:
    """`step.command` with its placeholders filled in."""
    return [python if part == PYTHON else json_path if part == JSON else part for part in step.command]


def select(steps: tuple[Step, ...], only: str | None) -> list[Step]:
    """The steps named in `only` (comma-separated), in the suite's order; all when `only` is None. Raises ValueError
    naming the unknown ones."""
    if only is None:
        return list(steps)
    wanted = [name.strip() for name in only.split(",") if name.strip()]
    names = [step.name for step in steps]
    unknown = [name for name in wanted if name not in names]
    if unknown or not wanted:
        raise ValueError(f"unknown step(s) {', '.join(unknown) or repr(only)}; the steps are: {', '.join(names)}")
    return [step for step in steps if step.name in wanted]


def plan(steps: list[Step], budget_s: float) -> str:
    """The plan as --dry-run prints it: each step's name, budget and command, then the total."""
    lines = [f"{'step':22}{'budget':>8}  what / command"]
    used = 0
    for step in steps:
        used += step.budget_s
        cut = "" if used <= budget_s else "  (past the suite's budget: cut short or skipped)"
        lines.append(f"{step.name:22}{step.budget_s:>7}s  {step.what}{cut}")
        lines.append(f"{'':32}{shlex.join(command_line(step))}")
    total = sum(step.budget_s for step in steps)
    lines.append(f"total: {total} s = {total / 60:.1f} min of step budgets; suite budget {budget_s / 60:.1f} min")
    return "\n".join(lines)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown"


def device_name(header: dict) -> str:
    """The device a suite's record names its file for: the GPU's name, "cpu" where there was none."""
    return header["environment"]["machine"]["gpu"] or "cpu"


def transformers_meets_pin(version: str) -> bool | None:
    """Whether `version` satisfies pyproject.toml's transformers requirement (None: not known here)."""
    try:
        from packaging.requirements import Requirement

        text = (ROOT / "pyproject.toml").read_text()
        line = re.search(r'"(transformers[^"]*)"', text).group(1)
        return Requirement(line).specifier.contains(version, prereleases=True)
    except (ImportError, OSError, AttributeError, ValueError):
        return None


def suite_header(commit: str | None) -> dict:
    """The record's header: the schema, the environment (`benchmarks.environment`) and whether its transformers is
    the pinned one."""
    header = environment(commit)
    return {
        "schema": SCHEMA,
        "environment": header,
        "transformers_meets_pin": transformers_meets_pin(header["transformers"]),
    }


def read_figures(kind: str, path: Path) -> dict:
    """What a step wrote to its figures file: compare_marian.py's `results`, loss_curves.py's whole record, or
    pytest's counts from its JUnit XML. Empty when it wrote nothing (readable)."""
    if not path.is_file() or path.stat().st_size == 0:
        return {}
    try:
        if kind == "pytest":
            root = ElementTree.parse(path).getroot()
            suite = root if root.tag == "testsuite" else root.find("testsuite")
            counts = {key: int(suite.get(key, 0)) for key in ("tests", "failures", "errors", "skipped")}
            failing = [
                f"{case.get('classname')}::{case.get('name')}"
                for case in suite.iter("testcase")
                if case.find("failure") is not None or case.find("error") is not None
            ]
            counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
            return {**counts, "failing": failing}
        data = json.loads(path.read_text())
        return data.get("results", data) if kind == "compare" else data
    except (ValueError, ElementTree.ParseError, AttributeError) as error:
        return {"unreadable": f"{type(error).__name__}: {error}"}


def side_by_side(kind: str, figures: dict) -> list[str]:
    """The lines printed after a step: its figures with the peer measured in the same run."""
    if not figures or "unreadable" in figures:
        return [f"  figures: {figures.get('unreadable', 'none written')}"] if figures else []
    if kind == "pytest":
        line = ", ".join(f"{figures[key]} {key}" for key in ("passed", "failures", "errors", "skipped"))
        return [f"  tests: {line}"] + [f"  failing: {name}" for name in figures["failing"]]
    if kind == "curves":
        curves, lines = figures.get("curves", {}), [f"  {'update':>8}{'fp32':>10}{'bf16':>10}"]
        fp32, bf16 = curves.get("fp32", []), curves.get("bf16", [])
        for index in sorted({0, *range(49, len(fp32), 50), len(fp32) - 1} & set(range(len(bf16)))):
            lines.append(f"  {index + 1:>8}{fp32[index]:>10.4f}{bf16[index]:>10.4f}")
        return lines + [f"  summary: {figures.get('summary')}", f"  seconds: {figures.get('seconds')}"]
    models = [name for name, value in figures.items() if isinstance(value, dict)]
    keys = list(dict.fromkeys(key for name in models for key in figures[name]))
    peers = ("hf_vanilla", "MarianMTModel")
    ratio = all(name in figures for name in peers)
    heading = f"{'figure':30}" + "".join(f"{name:>20}" for name in models) + ("  vanilla/marian" if ratio else "")
    lines = ["  " + heading]
    for key in keys:
        if key == "max_logit_difference_vs_marian":
            continue
        line = "  " + f"{key:30}" + "".join(f"{figures[name].get(key, '-')!s:>20}" for name in models)
        ours, theirs = (figures[name].get(key) if ratio else None for name in peers)
        if isinstance(ours, (int, float)) and isinstance(theirs, (int, float)) and theirs:
            line += f"{ours / theirs:>16.2f}"
        lines.append(line)
    return lines


def _stop(process: subprocess.Popen) -> None:
    """Ends a step's whole process group: SIGTERM, then SIGKILL after 10 s."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_step(step: Step, budget_s: float, work: Path, log, python: str = sys.executable) -> dict:
    """Runs `step` for at most `budget_s` seconds from the repository root (its output appended to `log`): its
    entry of the record."""
    figures_path = work / f"{step.name}.{'xml' if step.kind == 'pytest' else 'json'}"
    command = command_line(step, str(figures_path), python)
    env = dict(os.environ, PYTHONUNBUFFERED="1", TOKENIZERS_PARALLELISM="false")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    output_path = work / f"{step.name}.log"
    start = time.monotonic()
    with output_path.open("wb") as output:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            returncode = process.wait(timeout=budget_s)
            status = "ok" if returncode == 0 else "failed"
        except subprocess.TimeoutExpired:
            _stop(process)
            returncode, status = process.returncode, "timed out"
    seconds = time.monotonic() - start
    text = output_path.read_text(errors="replace")
    log.write(f"===== {step.name}: {shlex.join(command)}\n{text}\n===== {step.name}: {status} after {seconds:.1f} s\n")
    log.flush()
    return {
        "what": step.what,
        "command": command,
        "budget_s": round(budget_s, 1),
        "status": status,
        "returncode": returncode,
        "seconds": round(seconds, 1),
        "figures": read_figures(step.kind, figures_path),
        "log_tail": text[-LOG_TAIL_CHARS:],
    }


def write_record(record: dict, path: Path) -> None:
    """Writes the record whole or not at all (a temporary file, then renamed)."""
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(record, indent=2) + "\n")
    temporary.replace(path)


def run_suite(steps: list[Step], out: Path, budget_s: float, header: dict, python: str = sys.executable) -> dict:
    """Runs `steps` in order within `budget_s` seconds, writing the record (`header` + steps) to
    OUT/<date>-gpu-suite-<device slug>.json (-2, -3, ... when taken) after every step and their output to the .log
    beside it."""
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{header['environment']['date'][:10]}-gpu-suite-{slug(device_name(header))}"
    stem = unused_stem(out, stem, (".json", ".log"))
    path, log_path = out / f"{stem}.json", out / f"{stem}.log"
    record = {**header, "budget_s": round(budget_s), "finished": False, "steps": {}}
    write_record(record, path)
    deadline = time.monotonic() + budget_s
    with tempfile.TemporaryDirectory(prefix="gpu-suite-") as work, log_path.open("w") as log:
        for step in steps:
            left = deadline - time.monotonic()
            print(f"== {step.name} ({step.what}; budget {min(step.budget_s, max(left, 0)):.0f} s)", flush=True)
            if left < MIN_STEP_S:
                entry = {
                    "what": step.what,
                    "command": command_line(step, python=python),
                    "budget_s": 0,
                    "status": "skipped",
                    "returncode": None,
                    "seconds": 0.0,
                    "figures": {},
                    "log_tail": f"not started: {left:.0f} s left of the suite's {budget_s:.0f} s",
                }
            else:
                entry = run_step(step, min(step.budget_s, left), Path(work), log, python)
            record["steps"][step.name] = entry
            write_record(record, path)
            print(f"   {entry['status']} after {entry['seconds']} s", flush=True)
            for line in side_by_side(step.kind, entry["figures"]):
                print(line, flush=True)
            if entry["status"] in ("failed", "timed out"):
                print("   " + entry["log_tail"][-600:].strip().replace("\n", "\n   "), flush=True)
    record["finished"] = True
    write_record(record, path)
    print(f"== gpu_suite: done; {path} and {log_path.name}", flush=True)
    for name, entry in record["steps"].items():
        print(f"   {name:22}{entry['status']:>10}{entry['seconds']:>9} s")
    return record


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dry-run", action="store_true", help="Print the plan and exit; needs no GPU.")
    parser.add_argument("--out", type=Path, default=BENCHMARKS / "results", help="Where the record and log go.")
    parser.add_argument("--only", help="Run only these steps (comma-separated names; see --dry-run).")
    parser.add_argument("--budget-minutes", type=float, default=BUDGET_MINUTES, help="The whole suite's time budget.")
    parser.add_argument("--commit", help="The commit to record (default: `git rev-parse HEAD`, if a git checkout).")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        steps = select(STEPS, args.only)
    except ValueError as error:
        print(f"gpu_suite: {error}", file=sys.stderr)
        return 2
    if not args.budget_minutes > 0:
        print(f"gpu_suite: --budget-minutes must be positive, got {args.budget_minutes}", file=sys.stderr)
        return 2
    budget_s = args.budget_minutes * 60
    if args.dry_run:
        print(plan(steps, budget_s))
        return 0
    import torch

    if not torch.cuda.is_available():
        print(
            f"gpu_suite: no CUDA device here (torch {torch.__version__} sees none); nothing run "
            "(--dry-run prints the plan)",
            file=sys.stderr,
        )
        return 1
    header = suite_header(args.commit)
    print(f"gpu_suite: {json.dumps(header)}", flush=True)
    if header["transformers_meets_pin"] is False:
        print(
            f"gpu_suite: warning: transformers {header['environment']['transformers']} is not the version "
            "pyproject.toml pins; the figures are recorded with it (docs/benchmarks.md, 'On a lent GPU', says how to "
            "carry the pinned one)",
            flush=True,
        )
    run_suite(steps, args.out, budget_s, header)
    return 0


if __name__ == "__main__":
    sys.exit(main())
