"""What dropping settled sentences from beam search's batch saves (`drop_finished_sentences`, on by default): a trained
model decodes its demo's test split with transformers' loop (off) and with the dropping loop (on), back to back in one
process, as `python -m benchmarks.peers` times a run's decoding (`recipe_decoding`: the recipe's inputs and settings,
parsing under its grammar); the outputs must be the same.

    python -m benchmarks.studies.settled_sentences --task parsing --model /tmp/peers/parsing-hf_vanilla-1/run/final

Each repeat decodes with both loops, the first alternating, so a machine's drift falls on both; figures are
sentences a second, min / median / max over `--repeats`, and the ratio of the medians.
"""

import argparse
import statistics
import time

from hf_vanilla.errors import user_exit

from benchmarks.peers.recipe.decoding import decoding_args, recipe_decoding

LOOPS = {"transformers' loop": False, "dropping settled sentences": True}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return decoding_args(__doc__, argv, repeats=2)


def main(argv: list[str] | None = None) -> dict[str, list[float]]:
    args = parse_args(argv)
    sources, decode = recipe_decoding(args.model, args.test_limit, args.task)
    outputs = {
        name: decode(drop_finished_sentences=drop) for name, drop in LOOPS.items()
    }  # warm-up, and the check of the outputs
    different = sum(a != b for a, b in zip(*outputs.values()))
    if different:
        raise user_exit(
            "settled_sentences", f"the two loops decoded {different} of {len(sources)} outputs differently"
        )
    speeds: dict[str, list[float]] = {name: [] for name in LOOPS}
    for repeat in range(args.repeats):
        for name in LOOPS if repeat % 2 == 0 else list(LOOPS)[::-1]:
            start = time.perf_counter()
            decode(drop_finished_sentences=LOOPS[name])
            speeds[name].append(len(sources) / (time.perf_counter() - start))
    print(f"\n{args.task}, {args.model}: {len(sources)} test items, the same outputs; {args.repeats} paired repeats")
    print(f"| {' | '.join(LOOPS)} | ratio of medians |")
    print("|---|---|---|")
    cells = " | ".join(f"{min(s):.2f} / {statistics.median(s):.2f} / {max(s):.2f}" for s in speeds.values())
    medians = [statistics.median(s) for s in speeds.values()]
    print(f"| {cells} | {medians[1] / medians[0]:.2f} |")
    return speeds


if __name__ == "__main__":
    main()
