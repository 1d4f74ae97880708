"""Layout: a test about one module of a subpackage sits in the folder that mirrors it (`training/test_checkpoints.py`
tests `hf_vanilla/training/checkpoints.py`; `test_layering.py` checks it); a top-level module's tests are named for it
(`test_modeling.py`, `test_cli.py`, ...); guarantees that span the package have their own files (`test_kills.py`,
`test_no_pickle.py`, `test_wheel.py`, `test_hostile_input.py`, `test_remote_code.py`, `test_mutations.py`, ...), and
the recipes' runs are `test_recipes.py` and `test_summarize_recipe.py`.

Shared fixtures: the real data in ../shared/data (skipped with a reason where it is absent), the reversal model,
and short real runs of both recipes. The functions behind them are in `runs.py`, `reversal.py` and the other
modules beside it."""

import os
from pathlib import Path

import pytest
from hypothesis import settings

from marian_checkout import random_marian, write_opus_tokenizer
from reversal import reversal_tokenizer, train_reversal_model
from runs import NLTK_DATA, WMT_SAMPLE, recipe, require, wmt_args

# Property tests draw new inputs on every run (a failure prints the seed and a @reproduce_failure blob);
# HYPOTHESIS_PROFILE=ci draws the same inputs on every run, for a CI whose result must not change without a commit.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("default", print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


# The fixtures that train a model (for seconds, or a recipe's few updates): what they decode depends on the rounding of
# the machine's kernels. Every test that uses one, directly or through another fixture, is marked `trained_fixture`,
# and `.ci/run` runs them all again under two other kernel paths (ATEN_CPU_CAPABILITY=avx2 and default).
TRAINED_FIXTURES = {
    "reversal_model", "pointer_reversal_model", "decoding_model", "wmt_run", "parse_run", "summary_run"
}


# HF_VANILLA_TEST_FIXTURE_SEED=N trains the reversal models from another seed: models that get other sequences wrong,
# as another CPU's rounding would make them, far more often. How the tests that assume one fixture's outputs are found.
FIXTURE_SEED = int(os.environ.get("HF_VANILLA_TEST_FIXTURE_SEED", "0"))


def pytest_collection_modifyitems(config, items):
    for item in items:
        if TRAINED_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.trained_fixture)


def pytest_configure(config):
    """HF_VANILLA_TEST_NO_MKLDNN=1 turns oneDNN off in the test process (not in the processes tests start): with
    OMP_NUM_THREADS and ATEN_CPU_CAPABILITY, another kernel path, as on another CPU, for the float tolerances."""
    if os.environ.get("HF_VANILLA_TEST_NO_MKLDNN") == "1":
        import torch

        torch.backends.mkldnn.enabled = False


@pytest.fixture
def wmt_sample() -> Path:
    return require(WMT_SAMPLE)


@pytest.fixture
def treebank_dir() -> Path:
    return require(NLTK_DATA / "corpora" / "treebank" / "combined")


@pytest.fixture(scope="session")
def reversal_model():
    """A tiny model trained for seconds to reverse its input (see `reversal.train_reversal_model`). Tests must not
    change it."""
    return train_reversal_model(seed=FIXTURE_SEED)


@pytest.fixture(scope="session")
def reversal_model_dir(reversal_model, tmp_path_factory) -> Path:
    """The reversal model saved with `save_pretrained` (weights, config with auto_map, model code)."""
    folder = tmp_path_factory.mktemp("reversal_model")
    reversal_model.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def reversal_folder(reversal_model, tmp_path_factory) -> Path:
    """The reversal model saved with its word-level tokenizer (`reversal.reversal_tokenizer`)."""
    folder = tmp_path_factory.mktemp("reversal_folder")
    reversal_model.save_pretrained(folder)
    reversal_tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def pointer_reversal_model():
    """The reversal model with the copy mechanism (`config.pointer_generator`), trained the same way, under
    translation's decoding. Tests must not change it."""
    return train_reversal_model(pointer_generator=True, seed=FIXTURE_SEED)


@pytest.fixture(params=["plain", "copy"])
def decoding_model(request):
    """Both trained reversal models, for the decoding tests that run on each: the paper's (`reversal_model`) and the
    one with the copy mechanism (`pointer_reversal_model`), whose steps also carry the source ids to the copy."""
    return request.getfixturevalue("reversal_model" if request.param == "plain" else "pointer_reversal_model")


@pytest.fixture(scope="session")
def summarization_model(pointer_reversal_model):
    """A tiny pointer-generator trained for seconds to reverse its input (a copy task: outputs depend on inputs, see
    `reversal.train_reversal_model`), then made a summarizer: `config.task` and `config.decoding` "summarization",
    and the generation config of that row (`DECODING["summarization"]`). Tests must not change it."""
    import copy

    from hf_vanilla.configuration_vanilla import VanillaGenerationConfig

    model = copy.deepcopy(pointer_reversal_model)  # trained and checked under translation's decoding
    model.config.task = model.config.decoding = "summarization"
    model.generation_config = VanillaGenerationConfig.from_model_config(model.config)
    return model


@pytest.fixture(scope="session")
def summarization_folder(summarization_model, tmp_path_factory) -> Path:
    """The summarization model saved with the reversal model's word-level tokenizer (`reversal.reversal_tokenizer`),
    which records no input limit (model_max_length)."""
    folder = tmp_path_factory.mktemp("summarization_folder")
    summarization_model.save_pretrained(folder)
    reversal_tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def opus_folder(tmp_path_factory) -> Path:
    """A folder shaped like an OPUS-MT checkout: a `MarianMTModel` saved with `save_pretrained` (untrained:
    `marian_checkout.random_marian` with weights of std 0.15, whose greedy outputs differ from sentence to sentence),
    beside OPUS-MT's tokenizer files (source.spm, target.spm, vocab.json; SentencePiece models trained here on the
    shared WMT sample)."""
    pytest.importorskip("sentencepiece", reason="OPUS-MT's MarianTokenizer needs sentencepiece (the marian extra)")
    folder = tmp_path_factory.mktemp("opus_mt")
    vocab_size = write_opus_tokenizer(folder)
    random_marian(vocab_size, init_std=0.15).save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def wmt_run(tmp_path_factory) -> tuple[Path, dict]:
    """A real 4-step run of the WMT recipe on the shared WMT sample, validating every 2 updates (loss and the BLEU of
    2 sentences): its output folder and results."""
    output_dir = tmp_path_factory.mktemp("wmt_run")
    args = wmt_args(output_dir, max_steps=4, eval_sentences=4, eval_every=2, eval_metric_sentences=2, num_beams=None)
    return output_dir, recipe("wmt_ende").main(args)


@pytest.fixture(scope="session")
def parse_run(tmp_path_factory) -> tuple[Path, dict]:
    """A real 3-step run of the parsing recipe on NLTK's WSJ sample (greedy, 3 test sentences)."""
    require(NLTK_DATA)
    os.environ["NLTK_DATA"] = str(NLTK_DATA)
    import nltk

    if str(NLTK_DATA) not in nltk.data.path:
        nltk.data.path.insert(0, str(NLTK_DATA))
    ptb_parse = recipe("ptb_parse")
    output_dir = tmp_path_factory.mktemp("parse_run")
    args = ptb_parse.Arguments(
        preset="demo",
        treebank="nltk",
        output_dir=str(output_dir),
        max_steps=3,
        max_tokens=3000,
        num_beams=1,
        eval_sentences=3,
        save_every=3,
        log_every=1,
    )
    return output_dir, ptb_parse.main(args)
