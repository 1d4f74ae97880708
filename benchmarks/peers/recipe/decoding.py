"""A finished recipe run's final model decoding its demo's test split as the recipe decodes it (`recipe_decoding`:
the task's inputs and keywords, parsing under its grammar), timed (`timed_decoding`), and the arguments of the
studies that decode so (`decoding_args`: `benchmarks.studies.settled_sentences`, `decode_split`)."""

import argparse
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.peers.tasks import TASKS


def recipe_decoding(
    model_folder: Path, test_limit: int | None, task: str = "translation", settings: dict | None = None
) -> tuple[list, Callable[..., list[str]]]:
    """The task's test split (its first `test_limit` items, read as the recipe does: `Task.test_inputs`) and a function
    decoding it with the final model's beam search (its generation config: the demo's beam) and the recipe's keywords
    (`Task.keywords`: parsing's grammar where the settings have it), any `generate()` keywords passed to it added."""
    from hf_vanilla import VanillaTransformerForConditionalGeneration
    from hf_vanilla.batch_decoding import generate_texts
    from hf_vanilla.tokenization import load_tokenizer

    settings = settings or TASKS[task].settings("demo", True, {})
    sources, keywords = TASKS[task].test_inputs(settings, test_limit)
    model = VanillaTransformerForConditionalGeneration.from_pretrained(model_folder)
    tokenizer = load_tokenizer(model_folder)
    keywords = {**keywords, **TASKS[task].keywords(settings, tokenizer)}

    def decode(**generate_kwargs) -> list[str]:
        return generate_texts(model, tokenizer, sources, progress=False, **keywords, **generate_kwargs)

    return sources, decode


def decoding_args(description: str, argv: list[str] | None, repeats: int | None = None) -> argparse.Namespace:
    """The arguments of a benchmark that decodes a run's final model over its demo's test split (`recipe_decoding`):
    `--task`, `--model` (a folder holding config.json), `--test-limit`, and `--repeats` (default `repeats`) where
    `repeats` is given; each count at least 1."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", choices=TASKS, required=True)
    parser.add_argument("--model", type=Path, required=True, help="A run's final model folder (its demo's).")
    parser.add_argument("--test-limit", type=int, help="Decode the test split's first N items only.")
    if repeats is not None:
        parser.add_argument("--repeats", type=int, default=repeats)
    args = parser.parse_args(argv)
    for flag, value in (("--repeats", getattr(args, "repeats", None)), ("--test-limit", args.test_limit)):
        if value is not None and value < 1:
            parser.error(f"{flag} must be at least 1, got {value}")
    if not (args.model / "config.json").is_file():
        parser.error(f"--model {args.model}: no config.json there (a run's final model folder is needed)")
    return args


def timed_decoding(
    model_folder: Path,
    test_limit: int | None,
    threads: int | None,
    task: str = "translation",
    settings: dict | None = None,
) -> float:
    """Sentences a second of `recipe_decoding` over the task's test split, on `threads` CPU threads."""
    import torch

    sources, decode = recipe_decoding(model_folder, test_limit, task, settings)
    if threads:
        torch.set_num_threads(threads)
    return sentences_per_second(len(sources), decode)


def sentences_per_second(sentences: int, decode: Callable[[], object]) -> float:
    """`sentences` over the wall seconds of one call of `decode`, as the peers' records give hf_vanilla's decoding."""
    start = time.perf_counter()
    decode()
    return round(sentences / (time.perf_counter() - start), 2)
