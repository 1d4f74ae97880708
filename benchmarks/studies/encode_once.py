"""Encoding the training split once for all processes (the recipes' `encoded_split`: the main process encodes into a
cache file, the others read it) against every process encoding it itself, under a real multi-process launch:

    accelerate launch --cpu --num_processes 2 -m benchmarks.studies.encode_once              # the shared WMT sample
    accelerate launch --cpu --num_processes 2 -m benchmarks.studies.encode_once --repeat 20  # 20 copies (200k pairs)

Prints, for both ways, the wall-clock seconds from the first process starting to the last one holding the token ids,
and each process's own seconds; the token ids are checked identical.
"""

import argparse
import json
import os
import shutil
import time
from pathlib import Path

import datasets
from accelerate import Accelerator
from accelerate.utils import gather_object

from hf_vanilla.data.corpora import load_translation_corpus
from hf_vanilla.data.encoding import encode_pairs
from hf_vanilla.training.run import encoded_split, prepare_shared_tokenizer

SHARED_DATA = Path(os.environ.get("HF_VANILLA_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
LANGUAGES = ("en", "de")


def timed(accelerator: Accelerator, work) -> tuple[float, list[float], object]:
    """Wall-clock seconds of `work()` from a barrier to the last process's end, each process's own seconds, and the
    result of this process."""
    accelerator.wait_for_everyone()
    start = time.perf_counter()
    result = work()
    own = time.perf_counter() - start
    accelerator.wait_for_everyone()
    return time.perf_counter() - start, gather_object([own]), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default=str(SHARED_DATA / "wmt14-ende-sample"))
    parser.add_argument("--repeat", type=int, default=1, help="Copies of the training split to encode.")
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--output-dir", default="runs/encode_once")
    args = parser.parse_args()

    accelerator = Accelerator(cpu=True)
    output_dir = Path(args.output_dir)
    if accelerator.is_main_process:
        shutil.rmtree(output_dir, ignore_errors=True)
    accelerator.wait_for_everyone()
    train = load_translation_corpus(args.dataset, *LANGUAGES, moses_detokenize=True)["train"]
    train = datasets.concatenate_datasets([train] * args.repeat)
    tokenizer = prepare_shared_tokenizer(accelerator, output_dir, train, LANGUAGES, args.vocab_size, args.dataset)

    datasets.disable_caching()  # every process really encodes, as the recipes did before `encoded_split`
    each_wall, each_own, each = timed(accelerator, lambda: encode_pairs(train, tokenizer, *LANGUAGES))
    datasets.enable_caching()
    once_wall, once_own, once = timed(
        accelerator, lambda: encoded_split(accelerator, train, tokenizer, LANGUAGES, output_dir, "train")[0]
    )
    arrays = ("source_ids", "source_offsets", "target_ids", "target_offsets")
    same = all(gather_object([all((getattr(each, a) == getattr(once, a)).all() for a in arrays)]))
    if accelerator.is_main_process:
        figures = {
            "processes": accelerator.num_processes,
            "pairs": len(train),
            "every_process_encodes": {"wall_seconds": round(each_wall, 2), "process_seconds": each_own},
            "encoded_once": {"wall_seconds": round(once_wall, 2), "process_seconds": once_own},
            "same_token_ids": same,
        }
        print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
