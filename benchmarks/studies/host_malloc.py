"""What the recipes' `--host-malloc reuse` saves on a CPU (`hf_vanilla.training.host_memory`): training updates of the
demos' models on batches of their shapes (`profile_demo_step.SHAPES`), with glibc's malloc keeping freed memory
(reuse) and with its defaults (system), each choice in a fresh process (malloc's settings cannot be undone inside
one), the two alternating, so a machine's drift falls on both. Prints, per demo, milliseconds an update, page faults
an update and the process's peak resident memory, min / median / max over `--repeats`, and the ratio of the medians.

    python -m benchmarks.studies.host_malloc                               # parsing and summarization, 30 updates
    python -m benchmarks.studies.host_malloc --demos parsing --updates 50 --repeats 5
"""

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

import torch

from hf_vanilla.training.host_memory import HOST_MALLOC_CHOICES, apply_host_malloc

from benchmarks.flag_checks import require_at_least
from benchmarks.studies.profile_demo_step import SHAPES, demo_update

WARMUP = 10  # updates before the timed ones: malloc's heap grows to its steady size in the first few


def measure(demo: str, choice: str, updates: int) -> dict:
    """In this process: `updates` timed updates of `demo` after `WARMUP`, under allocation `choice`."""
    in_force = apply_host_malloc(choice, "cpu")
    update = demo_update(demo)
    for _ in range(WARMUP):
        update()
    before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    for _ in range(updates):
        update()
    seconds, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
    return {
        "in_force": in_force,
        "ms": 1000 * seconds / updates,
        "faults": (after.ru_minflt - before.ru_minflt) / updates,
        "peak_mib": after.ru_maxrss / 1024,
    }


def measure_in_child(demo: str, choice: str, updates: int) -> dict:
    command = [sys.executable, "-m", __spec__.name, "--child", choice, "--demos", demo, "--updates", str(updates)]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demos", nargs="+", choices=list(SHAPES), default=["parsing", "summarization"])
    parser.add_argument("--updates", type=int, default=30, help=f"Timed updates a process (after {WARMUP}).")
    parser.add_argument("--repeats", type=int, default=3, help="Processes of each choice, per demo.")
    parser.add_argument("--child", choices=HOST_MALLOC_CHOICES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    require_at_least(parser, args, {"updates": 1, "repeats": 1})
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.demos[0], args.child, args.updates)))
        return
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {args.repeats} paired repeats of")
    print(f"{args.updates} updates; min / median / max\n")
    print("| demo | allocation | ms an update | page faults an update | peak MiB |\n|---|---|---|---|---|")
    for demo in args.demos:
        runs: dict[str, list[dict]] = {choice: [] for choice in HOST_MALLOC_CHOICES}
        for repeat in range(args.repeats):
            for choice in HOST_MALLOC_CHOICES if repeat % 2 == 0 else HOST_MALLOC_CHOICES[::-1]:
                runs[choice].append(measure_in_child(demo, choice, args.updates))
        for choice, results in runs.items():
            cells = []
            for key, digits in (("ms", 1), ("faults", 0), ("peak_mib", 0)):
                values = [result[key] for result in results]
                spread = (min(values), statistics.median(values), max(values))
                cells.append(" / ".join(f"{v:.{digits}f}" for v in spread))
            in_force = {result["in_force"] for result in results}
            print(f"| {demo} | {choice} (in force: {', '.join(sorted(in_force))}) | {' | '.join(cells)} |")
        medians = {choice: statistics.median(r["ms"] for r in results) for choice, results in runs.items()}
        print(f"| {demo} | ratio of the medians, reuse / system | {medians['reuse'] / medians['system']:.3f} | | |")


if __name__ == "__main__":
    main()
