"""The run's model configuration, decided once (`training.model_config.run_config`): the preset's with the recipe's
fields and the flags, or --init-from's with the flags it allows; what a loaded model keeps is refused in one line."""

import pytest
import torch

from hf_vanilla import VanillaTransformerConfig, VanillaTransformerForConditionalGeneration
from hf_vanilla.training.arguments import resolve
from hf_vanilla.training.model_config import run_config
from hf_vanilla.training.preflight import PreflightError
from hf_vanilla.training.presets import PARSING_PRESETS, SUMMARIZATION_PRESETS, tokenizer_fields

from runs import recipe

COPYING = dict(pointer_generator=True, pointer_smoothing="vocabulary", force_copy=True)  # the recipe's presets'


def summarize_settings(**flags):
    return resolve(recipe("summarize").Arguments(**flags), SUMMARIZATION_PRESETS)


@pytest.fixture()
def saved_copier(tmp_path):
    """A saved configuration of a model with the copy mechanism and words as tree leaves (config.json only)."""
    config = VanillaTransformerConfig.from_preset("tiny", pointer_generator=True, tree_leaves="words", dropout=0.2)
    config.save_pretrained(tmp_path)
    return str(tmp_path)


def test_a_new_models_configuration_is_the_preset_with_the_recipes_fields_and_the_flags():
    config = run_config(summarize_settings(preset="tiny", dropout=0.25), decoding="summarization")
    expected = VanillaTransformerConfig.from_preset("tiny", decoding="summarization", dropout=0.25, **COPYING)
    assert config.to_dict() == expected.to_dict()
    # The copy mechanism is the preset's (the flag's default is None) unless the flag says otherwise.
    assert run_config(summarize_settings(preset="demo")).pointer_generator is True
    assert run_config(summarize_settings(preset="demo", pointer_generator=False)).pointer_generator is False
    with pytest.raises(
        PreflightError, match="^--preset tiny.s model with these flags: .*pointer_generator needs attention_dropout=0"
    ):
        run_config(summarize_settings(preset="tiny", attention_dropout=0.1))


def test_a_loaded_model_keeps_its_architecture_and_takes_the_training_flags(saved_copier):
    config = run_config(summarize_settings(preset="tiny", init_from=saved_copier, label_smoothing=0.0))
    assert (config.pointer_generator, config.dropout, config.label_smoothing) == (True, 0.2, 0.0)
    # The recipe's fields for a new model (its decoding row) do not touch a loaded model.
    loaded = run_config(summarize_settings(preset="tiny", init_from=saved_copier), decoding="parsing")
    assert loaded.decoding == VanillaTransformerConfig.from_pretrained(saved_copier).decoding == "translation"
    message = (
        "^--no-pointer-generator: --init-from's model has pointer_generator=True, which it keeps "
        r"\(give --pointer-generator or leave the flag out\)$"
    )
    with pytest.raises(PreflightError, match=message):
        run_config(summarize_settings(preset="tiny", init_from=saved_copier, pointer_generator=False))
    parse = recipe("ptb_parse").Arguments(preset="demo", init_from=saved_copier, tree_leaves="pos")
    with pytest.raises(PreflightError, match="^--tree-leaves pos: --init-from's model has tree_leaves='words'"):
        run_config(resolve(parse, PARSING_PRESETS))
    with pytest.raises(PreflightError, match="with these flags: .*pointer_generator needs attention_dropout=0"):
        run_config(summarize_settings(preset="tiny", init_from=saved_copier, attention_dropout=0.1))
    with pytest.raises(PreflightError, match="^--init-from /no/such/model: "):
        run_config(summarize_settings(preset="tiny", init_from="/no/such/model"))


def test_build_models_new_model_is_new_model_of_the_same_fields_weight_for_weight(tmp_path):
    """`build_model` fills the tokenizer's fields into `run.config`; the result equals a model of the preset's config
    built at once with those fields, at the same seed."""
    from types import SimpleNamespace

    from hf_vanilla.training.run import build_model

    class Tokenizer:
        pad_token_id, bos_token_id, eos_token_id, unk_token_id = 0, 1, 2, 3

        def __len__(self) -> int:
            return 300

    tokenizer, settings = Tokenizer(), summarize_settings(preset="tiny")
    config = run_config(settings, decoding="summarization")
    run = SimpleNamespace(settings=settings, tokenizer=tokenizer, config=config)
    torch.manual_seed(0)
    built = build_model(run)
    torch.manual_seed(0)
    fields = dict(decoding="summarization", **COPYING, **tokenizer_fields(tokenizer))  # the preset's config at once
    reference = VanillaTransformerForConditionalGeneration(VanillaTransformerConfig.from_preset("tiny", **fields))
    reference.generation_config.update(**settings.decoding)  # the preset's decoding flags, which build_model sets
    assert built.config.to_dict() == reference.config.to_dict()
    assert built.generation_config.to_dict() == reference.generation_config.to_dict()
    for (name, weight), (_, expected) in zip(built.state_dict().items(), reference.state_dict().items(), strict=True):
        assert torch.equal(weight, expected), name
