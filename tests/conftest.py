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
