"""A run's model, built in one place: its configuration decided once, before any data is read (`run_config`: the
recipe preset's model size with the recipe's task and the command line's, or --init-from's saved one with what a
loaded model lets change), then the model itself once the tokenizer is there (`build_model`: a new model with the
tokenizer's vocabulary and special tokens, `new_model`, or --init-from's weights)."""

from ..configuration_vanilla import VanillaTransformerConfig
from ..errors import error_line
from ..modeling_vanilla import VanillaTransformerForConditionalGeneration
from .arguments import RunSettings
from .context import RunContext
from .preflight import PreflightError

# Fields that decide what a trained model's parameters compute: a loaded model keeps its own.
KEPT_BY_LOADED_MODEL = ("pointer_generator", "tree_leaves", "linearization")


def flag_text(name: str, value) -> str:
    """How the command line spells `name` set to `value`: --pointer-generator / --no-pointer-generator, --tree-leaves
    pos."""
    flag = name.replace("_", "-")
    if isinstance(value, bool):
        return f"--{flag}" if value else f"--no-{flag}"
    return f"--{flag} {value}"


def run_config(settings: RunSettings, task: str) -> VanillaTransformerConfig:
    """The configuration `build_model` builds: for a new model, the size `settings.model_size` trained for the
    recipe's `task` (and so decoding with its row) with the command line's model settings over it; with --init-from,
    its saved configuration (its own task and decoding) with the command line's training settings (dropout, label
    smoothing, ...) over it. A `PreflightError` in one line where the flags ask what cannot be built, or change a field
    that the loaded model keeps (`KEPT_BY_LOADED_MODEL`). The vocabulary and special tokens are the tokenizer's, set
    later (`new_model`)."""
    given = settings.model_overrides
    if settings.init_from is None:
        try:
            return VanillaTransformerConfig.from_size(settings.model_size, **{"task": task, **given})
        except ValueError as error:
            problem = error_line(error)
            raise PreflightError(f"--preset {settings.preset}'s model with these flags: {problem}") from error
    try:
        saved = VanillaTransformerConfig.from_pretrained(settings.init_from)
    except OSError as error:
        raise PreflightError(f"--init-from {settings.init_from}: {error_line(error)}") from error
    changed = [name for name in KEPT_BY_LOADED_MODEL if name in given and given[name] != getattr(saved, name)]
    if changed:
        raise PreflightError(
            "; ".join(
                f"{flag_text(name, given[name])}: --init-from's model has {name}={getattr(saved, name)!r}, which it "
                f"keeps (give {flag_text(name, getattr(saved, name))} or leave the flag out)"
                for name in changed
            )
        )
    try:
        return VanillaTransformerConfig.from_dict({**saved.to_dict(), **given})
    except ValueError as error:
        raise PreflightError(f"--init-from {settings.init_from} with these flags: {error_line(error)}") from error


def tokenizer_fields(tokenizer, decoder_start: str = "bos") -> dict:
    """The configuration fields that a model takes from its tokenizer: vocabulary, special tokens, and the decoder's
    first input, <s> (`decoder_start="bos"`) or </s> (`"eos"`, fairseq's)."""
    return dict(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        unk_token_id=tokenizer.unk_token_id,
        decoder_start_token_id={"bos": tokenizer.bos_token_id, "eos": tokenizer.eos_token_id}[decoder_start],
    )


def new_model(
    config: VanillaTransformerConfig, tokenizer, decoder_start: str = "bos"
) -> VanillaTransformerForConditionalGeneration:
    """A freshly initialised model of `config` (a run's, `run_config`) whose vocabulary and special tokens are
    `tokenizer`'s, its decoder starting from `decoder_start` (`tokenizer_fields`)."""
    config = VanillaTransformerConfig.from_dict({**config.to_dict(), **tokenizer_fields(tokenizer, decoder_start)})
    return VanillaTransformerForConditionalGeneration(config)


def build_model(run: RunContext) -> VanillaTransformerForConditionalGeneration:
    """`run.model`: `--init-from`'s weights, or a new model, of the run's configuration (`run.config`: the size's or
    the loaded model's, with the command line's model settings), with the vocabulary and special tokens of
    `run.tokenizer` and the command line's decoding settings."""
    settings = run.settings
    if settings.init_from is not None:
        try:
            model = VanillaTransformerForConditionalGeneration.from_pretrained(settings.init_from, config=run.config)
        except OSError as error:
            raise PreflightError(f"--init-from {settings.init_from}: {error_line(error)}") from error
        if model.config.vocab_size != len(run.tokenizer):
            raise PreflightError(
                f"--init-from {settings.init_from}: its tokenizer and model disagree on the vocabulary"
            )
    else:
        model = new_model(run.config, run.tokenizer, settings.decoder_start)
    model.generation_config.update(**settings.decoding)
    if model.generation_config.num_beams == 1:  # greedy: the beam-search settings would make the config invalid
        model.generation_config.update(early_stopping=False, length_penalty=1.0)
    run.model = model
    return model
