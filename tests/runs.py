"""The shared test data's location (tests that need it skip where it is absent), the recipe scripts as modules,
and the tiny model and runs many tests start from."""

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import hf_vanilla

SHARED_DATA = Path(os.environ.get("HF_VANILLA_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
WMT_SAMPLE = SHARED_DATA / "wmt14-ende-sample"
NLTK_DATA = SHARED_DATA / "nltk_data"
RECIPES = Path(__file__).resolve().parents[1] / "recipes"
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def require(path: Path) -> Path:
    """Skips the calling test when the shared data at `path` is absent (a user's fresh clone)."""
    if not path.exists():
        pytest.skip(f"shared test data not found at {path} (set HF_VANILLA_SHARED_DATA to ../shared/data)")
    return path


def benchmark(name: str):
    """`benchmarks.NAME` (`benchmarks/NAME.py`, a dotted NAME for a sub-package's module), imported as
    `python -m benchmarks.NAME` imports it: the benchmarks are a package of the repository's root, which
    `python -m pytest` puts on sys.path."""
    return importlib.import_module(f"benchmarks.{name}")


def recipe(name: str):
    """A recipe script (`recipes/NAME.py`) as a module, its folder on sys.path as when it runs (for its sibling
    imports)."""
    if str(RECIPES) not in sys.path:
        sys.path.insert(0, str(RECIPES))
    return importlib.import_module(name)


def run_settings(**overrides):
    """Settings for loop tests: the tiny preset's, with small batches, frequent logs, checkpoints every 2 updates and
    validation off, unless `overrides` say otherwise."""
    from hf_vanilla.training.arguments import RunSettings, resolve
    from hf_vanilla.training.presets import WMT_PRESETS

    defaults = dict(preset="tiny", max_steps=6, max_tokens=64, update_freq=2, warmup_steps=4, seed=0, log_every=1)
    defaults.update(save_every=2, keep_last=3, average_last=3, eval_every=0)
    return resolve(RunSettings(**{**defaults, **overrides}), WMT_PRESETS)


def wmt_args(output_dir: Path, **overrides):
    """Arguments of a short WMT-sample run of the translation recipe."""
    defaults = dict(
        preset="demo",
        dataset=str(require(WMT_SAMPLE)),
        moses_detokenize=True,
        output_dir=str(output_dir),
        max_steps=2,
        max_tokens=1500,
        eval_split="validation",
        eval_sentences=2,
        save_every=2,
        log_every=1,
        eval_every=0,
        num_beams=1,
    )
    return recipe("wmt_ende").Arguments(**{**defaults, **overrides})


def tiny_recipe_flags(output_dir: Path, *flags: str) -> list[str]:
    """The translation recipe's flags for the tiny preset on the shared WMT sample, writing into `output_dir`."""
    return [
        *("--preset", "tiny", "--dataset", str(require(WMT_SAMPLE)), "--moses-detokenize"),
        *("--eval-split", "validation", "--output-dir", str(output_dir)),
        *flags,
    ]


def tiny_recipe(output_dir: Path, *flags: str) -> subprocess.Popen:
    """The translation recipe run directly (one process, one thread) with the tiny preset on the shared WMT sample,
    writing into `output_dir`, its stderr in `output_dir`.log."""
    command = [sys.executable, str(RECIPES / "wmt_ende.py"), *tiny_recipe_flags(output_dir, *flags)]
    with output_dir.with_suffix(".log").open("w") as log:
        return subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=log, env={**os.environ, "OMP_NUM_THREADS": "1"}
        )


def tiny_examples():
    """120 random pairs (3-11 ids + </s>), each target its source reversed."""
    from hf_vanilla.data.encoding import EncodedPairs

    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(3, 12, (120,), generator=g).tolist()
    ids = [torch.randint(4, 1000, (n,), generator=g).tolist() + [2] for n in lengths]
    return EncodedPairs.from_lists(ids, [list(reversed(x[:-1])) + [2] for x in ids])


def run_loop(
    output_dir: Path,
    max_steps: int | None,
    resume: bool = False,
    dynamo_backend: str | None = None,
    model_overrides: dict | None = None,
    **settings,
):
    """The training loop on `tiny_examples` (checkpoints every 2 updates unless `settings` say otherwise), the model
    compiled with `dynamo_backend` when given: (TrainingResult, trained model)."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState
    from accelerate.utils import set_seed

    from hf_vanilla.training.context import RunContext
    from hf_vanilla.training.loop import train

    set_seed(0)
    AcceleratorState._reset_state()  # the state is a per-process singleton: each run gets its own dynamo backend
    accelerator = Accelerator(cpu=True, dynamo_backend=dynamo_backend)
    model = tiny_model(**(model_overrides or {})).train()
    settings = run_settings(max_steps=max_steps, resume=resume, **settings)
    result = train(RunContext("test", settings, accelerator, Path(output_dir), model=model), tiny_examples())
    return result, model


def tiny_model(**overrides) -> hf_vanilla.VanillaTransformerForConditionalGeneration:
    """The `tiny` size, untrained, seeded, in eval mode."""
    torch.manual_seed(0)
    config = hf_vanilla.VanillaTransformerConfig.from_size("tiny", **overrides)
    return hf_vanilla.VanillaTransformerForConditionalGeneration(config).eval()


def batch(seed: int = 1, lengths=(7, 4, 6), vocab: int = 1000) -> tuple[torch.Tensor, torch.Tensor]:
    """A right-padded batch of random source sentences, each ending with </s> (id 2)."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.zeros(len(lengths), max(lengths), dtype=torch.long)
    for row, length in enumerate(lengths):
        ids[row, : length - 1] = torch.randint(4, vocab, (length - 1,), generator=generator)
        ids[row, length - 1] = 2
    return ids, (ids != 0).long()
