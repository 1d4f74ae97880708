"""Shared fixtures: the real data in ../shared/data (skipped with a reason where it is absent) and tiny models."""

import os
from pathlib import Path

import pytest
import torch

import hf_vanilla

SHARED_DATA = Path(os.environ.get("HF_VANILLA_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
WMT_SAMPLE = SHARED_DATA / "wmt14-ende-sample"
NLTK_DATA = SHARED_DATA / "nltk_data"


def require(path: Path) -> Path:
    """Skips the calling test when the shared data at `path` is absent (a user's fresh clone)."""
    if not path.exists():
        pytest.skip(f"shared test data not found at {path} (set HF_VANILLA_SHARED_DATA to ../shared/data)")
    return path


@pytest.fixture
def wmt_sample() -> Path:
    return require(WMT_SAMPLE)


@pytest.fixture
def treebank_dir() -> Path:
    return require(NLTK_DATA / "corpora" / "treebank" / "combined")


def tiny_model(**overrides) -> hf_vanilla.VanillaTransformerForConditionalGeneration:
    torch.manual_seed(0)
    config = hf_vanilla.VanillaTransformerConfig.from_preset("tiny", **overrides)
    return hf_vanilla.VanillaTransformerForConditionalGeneration(config).eval()


RECIPES = Path(__file__).resolve().parents[1] / "recipes"


def _recipe(name: str):
    import importlib
    import sys

    if str(RECIPES) not in sys.path:
        sys.path.insert(0, str(RECIPES))
    return importlib.import_module(name)


@pytest.fixture(scope="session")
def wmt_run(tmp_path_factory) -> tuple[Path, dict]:
    """A real 4-step run of the WMT recipe on the shared WMT sample: its output folder and results."""
    wmt_ende = _recipe("wmt_ende")
    output_dir = tmp_path_factory.mktemp("wmt_run")
    args = wmt_ende.Arguments(
        preset="demo", dataset=str(require(WMT_SAMPLE)), moses_detokenize=True, output_dir=str(output_dir), max_steps=4,
        max_tokens=1500, eval_split="validation", eval_sentences=4, save_every=2, log_every=1,
    )
    return output_dir, wmt_ende.main(args)


@pytest.fixture(scope="session")
def parse_run(tmp_path_factory) -> tuple[Path, dict]:
    """A real 3-step run of the parsing recipe on NLTK's WSJ sample (greedy, 3 test sentences)."""
    require(NLTK_DATA)
    os.environ["NLTK_DATA"] = str(NLTK_DATA)
    import nltk

    if str(NLTK_DATA) not in nltk.data.path:
        nltk.data.path.insert(0, str(NLTK_DATA))
    ptb_parse = _recipe("ptb_parse")
    output_dir = tmp_path_factory.mktemp("parse_run")
    args = ptb_parse.Arguments(
        preset="demo", treebank="nltk", output_dir=str(output_dir), max_steps=3, max_tokens=3000, num_beams=1,
        eval_sentences=3, save_every=3, log_every=1,
    )
    return output_dir, ptb_parse.main(args)
