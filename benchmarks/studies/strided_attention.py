"""Why a beam reorder lays the decoding cache out contiguous (`VanillaDecodingCacheLayer.reorder_cache`): one decoding
step's self-attention (one query a row, `scaled_dot_product_attention`) over cached keys and values held contiguous,
and held as views of buffers with room to grow (`--rooms`: the buffers' positions over the cached ones), in one
process with the same values. Defaults are a parsing step's shapes on a CPU: 768 beam rows (`CPU_BEAM_ROWS`), the
demo's 4 heads of 32, 80 cached positions.

    python -m benchmarks.studies.strided_attention
    python -m benchmarks.studies.strided_attention --rows 256 --heads 8 --head-dim 64 --positions 40

Each repeat times every layout once, in turns that rotate, so a machine's drift falls on all; figures are
milliseconds a step, min / median / max over `--repeats` (each the mean of `--steps` steps), and each layout's median
over the contiguous one's. The outputs must be the same, bit for bit.
"""

import argparse
import statistics
import time

import torch
from tqdm.auto import tqdm

from hf_vanilla.errors import user_exit

from benchmarks.flag_checks import require_at_least


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=768, help="Beam rows in the batch (sentences x beams).")
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--head-dim", type=int, default=32)
    parser.add_argument("--positions", type=int, default=80, help="Positions cached.")
    parser.add_argument("--rooms", type=float, nargs="+", default=[1.2, 2.0], help="Buffer positions / cached ones.")
    parser.add_argument("--steps", type=int, default=20, help="Steps timed in one measurement.")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    least = {"rows": 1, "heads": 1, "head_dim": 1, "positions": 1, "steps": 1, "repeats": 1}
    require_at_least(parser, args, least)
    if min(args.rooms) < 1:
        parser.error(f"--rooms must each be at least 1 (a buffer holds the cached positions), got {min(args.rooms)}")
    return args


def layouts(args: argparse.Namespace) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """The same cached keys and values, contiguous and as views of buffers with each room."""
    shape = (args.rows, args.heads, args.positions, args.head_dim)
    keys, values = torch.randn(shape), torch.randn(shape)
    held = {"contiguous": (keys, values)}
    for room in args.rooms:
        capacity = max(args.positions, round(args.positions * room))
        buffers = [torch.empty(*shape[:2], capacity, args.head_dim) for _ in range(2)]
        for buffer, cached in zip(buffers, (keys, values), strict=True):
            buffer[:, :, : args.positions] = cached
        held[f"buffer of {capacity} positions"] = tuple(buffer[:, :, : args.positions] for buffer in buffers)
    return held


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    torch.manual_seed(0)
    held = layouts(args)
    # The query as the decoder projects it: (rows, 1, heads x dim) viewed per head.
    query = torch.randn(args.rows, 1, args.heads, args.head_dim).transpose(1, 2)
    attend = torch.nn.functional.scaled_dot_product_attention
    outputs = {name: attend(query, *cached) for name, cached in held.items()}
    if not all(torch.equal(out, outputs["contiguous"]) for out in outputs.values()):
        raise user_exit("strided_attention", "the layouts attended to different outputs")
    names, times = list(held), {name: [] for name in held}
    for repeat in tqdm(range(args.repeats), desc="repeats"):
        for name in names[repeat % len(names) :] + names[: repeat % len(names)]:
            start = time.perf_counter()
            for _ in range(args.steps):
                attend(query, *held[name])
            times[name].append((time.perf_counter() - start) / args.steps * 1e3)
    base = statistics.median(times["contiguous"])
    print(f"{args.rows} rows x {args.heads} heads x {args.head_dim}, {args.positions} positions cached, "
          f"{torch.get_num_threads()} threads; ms a step: min / median / max")  # fmt: skip
    for name, figures in times.items():
        median = statistics.median(figures)
        print(f"{name:>28}: {min(figures):.3f} / {median:.3f} / {max(figures):.3f}  ({median / base:.2f}x)")


if __name__ == "__main__":
    main()
