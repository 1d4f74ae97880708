"""One timed decoding of a demo's test split by the hf_vanilla that Python imports, as `python -m benchmarks.peers`
times a run's decoding (`recipe_decoding`: the recipe's inputs and settings, parsing under its grammar): sentences a
second and a digest of the outputs, to compare two checkouts on the same model, alternated as whole processes (the
working directory comes first on Python's path, so each checkout decodes with its own hf_vanilla):

    cd CHECKOUT && python -m benchmarks.studies.decode_split --task parsing --model FOLDER

The same digest means the same outputs, one per line, in test-split order.
"""

import argparse
import hashlib
import time
from pathlib import Path

import hf_vanilla

from benchmarks.peers.recipe.decoding import decoding_args, recipe_decoding


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return decoding_args(__doc__, argv)


def main(argv: list[str] | None = None) -> tuple[float, str]:
    args = parse_args(argv)
    sources, decode = recipe_decoding(args.model, args.test_limit, args.task)
    start = time.perf_counter()
    outputs = decode()
    seconds = time.perf_counter() - start
    digest = hashlib.sha256("\n".join(outputs).encode()).hexdigest()[:12]
    checkout = Path(hf_vanilla.__file__).resolve().parent.parent
    print(f"{checkout} {args.task}: {len(sources) / seconds:.2f} sentences/s ({seconds:.1f} s), outputs {digest}")
    return len(sources) / seconds, digest


if __name__ == "__main__":
    main()
