"""A run's model, built in one module (`training.model_building`): its configuration decided once (`run_config`):
the recipe preset's model size with the recipe's task and the flags, or --init-from's with the flags it allows; what
a loaded model keeps is refused in one line; then the model of it with the tokenizer's fields (`build_model`)."""

import json
from pathlib import Path

import pytest
import torch

from hf_vanilla import VanillaTransformerConfig, VanillaTransformerForConditionalGeneration
from hf_vanilla.training.arguments import resolve
from hf_vanilla.training.model_building import build_model, run_config, tokenizer_fields
from hf_vanilla.training.preflight import PreflightError
from hf_vanilla.training.presets import PARSING_PRESETS, SUMMARIZATION_PRESETS, WMT_PRESETS

from runs import recipe

COPYING = dict(pointer_generator=True, pointer_smoothing="vocabulary", force_copy=True)  # the recipe's presets'
# Each recipe's task and presets; its presets' model configs as built before the task was a field of its own and the
# copy mechanism was set in the sizes alone (git a507f4a's `run_config`): "RECIPE PRESET[ FLAG=VALUE]" -> fields.
RECIPES = {
    "wmt_ende": ("translation", WMT_PRESETS),
    "ptb_parse": ("parsing", PARSING_PRESETS),
    "summarize": ("summarization", SUMMARIZATION_PRESETS),
}
BUILT_BEFORE = json.loads((Path(__file__).with_name("recipe_preset_models.json")).read_text())


def summarize_settings(**flags):
    return resolve(recipe("summarize").Arguments(**flags), SUMMARIZATION_PRESETS)


@pytest.fixture()
def saved_copier(tmp_path):
    """A saved configuration of a model with the copy mechanism and words as tree leaves (config.json only)."""
    config = VanillaTransformerConfig.from_size("tiny", pointer_generator=True, tree_leaves="words", dropout=0.2)
    config.save_pretrained(tmp_path)
    return str(tmp_path)


def test_a_new_models_configuration_is_the_size_with_the_recipes_task_and_the_flags():
    config = run_config(summarize_settings(preset="tiny", dropout=0.25), "summarization")
    expected = VanillaTransformerConfig.from_size("tiny", task="summarization", dropout=0.25, **COPYING)
    assert config.to_dict() == expected.to_dict()
    # The copy mechanism is the size's (the flag's default is None) unless the flag says otherwise.
    assert run_config(summarize_settings(preset="demo"), "summarization").pointer_generator is True
    assert (
        run_config(summarize_settings(preset="demo", pointer_generator=False), "summarization").pointer_generator
        is False
    )
    with pytest.raises(
        PreflightError, match="^--preset tiny.s model with these flags: .*pointer_generator needs attention_dropout=0"
    ):
        run_config(summarize_settings(preset="tiny", attention_dropout=0.1), "summarization")


@pytest.mark.parametrize("case", sorted(BUILT_BEFORE))
def test_every_recipe_presets_model_is_the_one_built_before_and_trained_for_the_recipes_task(case):
    """Moving the copy mechanism into the sizes and the task into its own field changed no recipe preset's model:
    every field as before (the copy flag's override included), `task` the recipe's."""
    name, preset, *flags = case.split()
    task, presets = RECIPES[name]
    settings = resolve(
        recipe(name).Arguments(preset=preset, **{f.split("=")[0]: f.endswith("True") for f in flags}), presets
    )
    built = run_config(settings, task).to_dict()
    assert {field: built[field] for field in BUILT_BEFORE[case]} == BUILT_BEFORE[case]
    assert built["task"] == task


def test_every_recipe_preset_is_compared_and_the_sizes_alone_set_the_copy_mechanism():
    """`BUILT_BEFORE` holds every preset of every recipe; no recipe preset sets `pointer_generator` (only its size
    does, and the user's flag)."""
    assert {case.rsplit(" ", 1)[0] if "=" in case else case for case in BUILT_BEFORE} == {
        f"{name} {preset}" for name, (_, presets) in RECIPES.items() for preset in presets
    }
    assert [
        (name, preset)
        for name, (_, presets) in RECIPES.items()
        for preset, values in presets.items()
        if "pointer_generator" in values
    ] == []


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_the_translation_presets_start_a_model_as_fairseq_and_the_others_as_before(name):
    """Every translation preset draws a new model with fairseq's initialisation and starts its decoder from </s>;
    the parsing and summarization presets keep N(0, 0.02) and <s>; the flags override either."""
    task, presets = RECIPES[name]
    expected = ("fairseq", "eos") if task == "translation" else ("normal", "bos")
    for preset in presets:
        settings = resolve(recipe(name).Arguments(preset=preset), presets)
        assert (run_config(settings, task).init_scheme, settings.decoder_start) == expected, preset
    other = {"fairseq": "normal", "normal": "fairseq", "eos": "bos", "bos": "eos"}
    flipped = dict(init_scheme=other[expected[0]], decoder_start=other[expected[1]])
    settings = resolve(recipe(name).Arguments(preset="smoke", **flipped), presets)
    assert (run_config(settings, task).init_scheme, settings.decoder_start) == tuple(flipped.values())


def test_a_loaded_model_keeps_its_architecture_and_takes_the_training_flags(saved_copier):
    config = run_config(
        summarize_settings(preset="tiny", init_from=saved_copier, label_smoothing=0.0), "summarization"
    )
    assert (config.pointer_generator, config.dropout, config.label_smoothing) == (True, 0.2, 0.0)
    # The recipe's task, for a new model (and so its decoding row), does not touch a loaded model: it keeps its own.
    loaded = run_config(summarize_settings(preset="tiny", init_from=saved_copier), "parsing")
    assert (loaded.task, loaded.decoding) == ("translation", "translation")
    message = (
        "^--no-pointer-generator: --init-from's model has pointer_generator=True, which it keeps "
        r"\(give --pointer-generator or leave the flag out\)$"
    )
    with pytest.raises(PreflightError, match=message):
        run_config(summarize_settings(preset="tiny", init_from=saved_copier, pointer_generator=False), "summarization")
    parse = recipe("ptb_parse").Arguments(preset="demo", init_from=saved_copier, tree_leaves="pos")
    with pytest.raises(PreflightError, match="^--tree-leaves pos: --init-from's model has tree_leaves='words'"):
        run_config(resolve(parse, PARSING_PRESETS), "parsing")
    parse = recipe("ptb_parse").Arguments(preset="demo", init_from=saved_copier, linearization="in-order")
    with pytest.raises(PreflightError, match="^--linearization in-order: --init-from's model has linearization='top"):
        run_config(resolve(parse, PARSING_PRESETS), "parsing")
    with pytest.raises(PreflightError, match="with these flags: .*pointer_generator needs attention_dropout=0"):
        run_config(summarize_settings(preset="tiny", init_from=saved_copier, attention_dropout=0.1), "summarization")
    with pytest.raises(PreflightError, match="^--init-from /no/such/model: "):
        run_config(summarize_settings(preset="tiny", init_from="/no/such/model"), "summarization")


def test_build_models_new_model_is_new_model_of_the_same_fields_weight_for_weight(tmp_path):
    """`build_model` fills the tokenizer's fields into `run.config`; the result equals a model of the preset's config
    built at once with those fields, at the same seed."""
    from types import SimpleNamespace

    class Tokenizer:
        pad_token_id, bos_token_id, eos_token_id, unk_token_id = 0, 1, 2, 3

        def __len__(self) -> int:
            return 300

    tokenizer, settings = Tokenizer(), summarize_settings(preset="tiny")
    config = run_config(settings, "summarization")
    run = SimpleNamespace(settings=settings, tokenizer=tokenizer, config=config)
    torch.manual_seed(0)
    built = build_model(run)
    torch.manual_seed(0)
    fields = dict(task="summarization", **COPYING, **tokenizer_fields(tokenizer))  # the preset's config at once
    reference = VanillaTransformerForConditionalGeneration(VanillaTransformerConfig.from_size("tiny", **fields))
    reference.generation_config.update(**settings.decoding)  # the preset's decoding flags, which build_model sets
    assert built.config.to_dict() == reference.config.to_dict()
    assert built.generation_config.to_dict() == reference.generation_config.to_dict()
    for (name, weight), (_, expected) in zip(built.state_dict().items(), reference.state_dict().items(), strict=True):
        assert torch.equal(weight, expected), name
