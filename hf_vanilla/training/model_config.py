"""The run's model configuration, decided once, before any data is read: the preset's with the recipe's fields and
the command line's, or --init-from's saved one with what a loaded model lets change."""

from ..configuration_vanilla import VanillaTransformerConfig
from ..errors import error_line
from .arguments import RunSettings
from .preflight import PreflightError

# Fields that decide what a trained model's parameters compute: a loaded model keeps its own.
KEPT_BY_LOADED_MODEL = ("pointer_generator", "tree_leaves")


def flag_text(name: str, value) -> str:
    """How the command line spells `name` set to `value`: --pointer-generator / --no-pointer-generator, --tree-leaves
    pos."""
    flag = name.replace("_", "-")
    if isinstance(value, bool):
        return f"--{flag}" if value else f"--no-{flag}"
    return f"--{flag} {value}"


def run_config(settings: RunSettings, **new_model_fields) -> VanillaTransformerConfig:
    """The configuration `build_model` builds: for a new model, the preset `settings.model_preset` with
    `new_model_fields` (the recipe's, e.g. its decoding row) and the command line's model settings over it; with
    --init-from, its saved configuration with the command line's training settings (dropout, label smoothing, ...)
    over it. A `PreflightError` in one line where the flags ask what cannot be built, or change a field that the
    loaded model keeps (`KEPT_BY_LOADED_MODEL`). The vocabulary and special tokens are the tokenizer's, set later."""
    given = settings.model_overrides
    if settings.init_from is None:
        try:
            return VanillaTransformerConfig.from_preset(settings.model_preset, **{**new_model_fields, **given})
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
