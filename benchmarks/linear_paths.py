"""One decoding or training workload at Transformer-base size, as a whole process, for paired timing of three engines:

    python benchmarks/linear_paths.py --engine vanilla  --setting greedy-b16   # hf_vanilla as shipped (VanillaLinear)
    python benchmarks/linear_paths.py --engine plain    --setting greedy-b16   # the same model, nn.Linear's GEMM
    python benchmarks/linear_paths.py --engine marian   --setting greedy-b16   # MarianMTModel with the same weights

Settings: greedy-b1, beam4-b1, greedy-b16, beam4-b16 (32 new tokens for each of the sentences, real English from
newstest2014 cut to 32 tokens of a random-id vocabulary as in compare_marian.py) and train-b16 (forward, backward and
Adam on 16 x 32 + 32 tokens). Run it under a whole-process timer, A against B in alternation, so that the machine's
drift falls on both; the process also prints its own tokens/s for the timed part.
"""

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_marian import english_batches, generation_speed, train_step, vanilla_model  # noqa: E402

from hf_vanilla.convert import to_marian  # noqa: E402
from hf_vanilla.linear_vanilla import VanillaLinear  # noqa: E402

SETTINGS = {"greedy-b1": (1, 1), "beam4-b1": (4, 1), "greedy-b16": (1, 16), "beam4-b16": (4, 16), "train-b16": (0, 16)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engine", choices=["vanilla", "plain", "marian"], required=True)
    parser.add_argument("--setting", choices=sorted(SETTINGS), required=True)
    parser.add_argument("--repeats", type=int, default=3, help="Timed generate() calls or training steps.")
    args = parser.parse_args()
    torch.set_num_threads(torch.get_num_threads())
    if args.engine == "plain":
        VanillaLinear.forward = torch.nn.Linear.forward
    model = vanilla_model()
    if args.engine == "marian":
        model = to_marian(model)
    beams, batch = SETTINGS[args.setting]
    source = english_batches(32, batch)
    if beams:
        speed = generation_speed(model, source, torch.device("cpu"), torch.float32, beams, 32, args.repeats)
    else:
        target = source.roll(1, 0)
        model.train()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
        train_step(model, source, target, optimizer, args.engine != "marian")
        start = time.perf_counter()
        for _ in range(args.repeats):
            train_step(model, source, target, optimizer, args.engine != "marian")
        speed = round(2 * source.numel() * args.repeats / (time.perf_counter() - start), 1)
    print(f"{args.engine} {args.setting} tokens/s {speed}")


if __name__ == "__main__":
    main()
