"""A torchrun worker in which the main process alone fails in a step that the other processes wait on, for
tests/training/test_collectives.py:

    torchrun --nproc_per_node 2 tests/failing_on_main.py SCENARIO OUTPUT_DIR [recipe flags]

- `average`: averaging the last checkpoints (`run.average_final`) meets a checkpoint without its weights;
- `tokenizer`: the shared tokenizer's folder (`run.prepare_shared_tokenizer`) holds a file that is no tokenizer;
- `publish`: the translation recipe (its flags follow) runs to its end and cannot upload (no Hugging Face token; the
  pre-flight check of the Hub is skipped so that the failure comes at the end).

Each process writes what stopped it to OUTPUT_DIR/stopped-RANK.json before exiting: the exception's type and message.
"""

import json
import os
import sys
from pathlib import Path

RANK = int(os.environ.get("RANK", "0"))


def recorded(main, output_dir: Path):
    """`main`, writing the exception that ends it on this process to OUTPUT_DIR/stopped-RANK.json."""

    def run(args):
        try:
            return main(args)
        except Exception as error:
            (output_dir / f"stopped-{RANK}.json").write_text(
                json.dumps({"type": type(error).__name__, "message": str(error)})
            )
            raise

    return run


def average(output_dir: Path):
    from accelerate import Accelerator

    from hf_vanilla.training.run import average_final

    accelerator = Accelerator(cpu=True)
    if accelerator.is_main_process:  # a checkpoint's state and model folder, without the weights
        (output_dir / "checkpoint-00000002" / "model").mkdir(parents=True)
        (output_dir / "checkpoint-00000002" / "trainer_state.json").write_text("{}")
    accelerator.wait_for_everyone()
    average_final(accelerator, output_dir, 5)


def tokenizer(output_dir: Path):
    from accelerate import Accelerator
    from datasets import Dataset

    from hf_vanilla.training.run import prepare_shared_tokenizer

    accelerator = Accelerator(cpu=True)
    if accelerator.is_main_process:
        (output_dir / "tokenizer").mkdir(parents=True)
        (output_dir / "tokenizer" / "notes.txt").write_text("not a tokenizer")
    accelerator.wait_for_everyone()
    pairs = Dataset.from_dict({"translation": [{"en": "a house", "de": "ein Haus"}] * 4})
    prepare_shared_tokenizer(accelerator, output_dir, pairs, ("en", "de"), 300, "toy")


if __name__ == "__main__":
    scenario, output_dir = sys.argv[1], Path(sys.argv[2])
    recipes = Path(__file__).resolve().parents[1] / "recipes"
    sys.path.insert(0, str(recipes))
    from hf_vanilla.training import run

    if scenario == "publish":
        import wmt_ende

        from hf_vanilla.training.flags import parse_settings

        run.check_hub = lambda repo_id, token=None: None
        arguments = parse_settings(wmt_ende.Arguments, sys.argv[3:])
        run.run_recipe(recorded(wmt_ende.main, output_dir), arguments, "wmt_ende")
    else:
        output_dir.mkdir(parents=True, exist_ok=True)
        work = {"average": average, "tokenizer": tokenizer}[scenario]
        run.run_recipe(recorded(work, output_dir), output_dir, "worker")
