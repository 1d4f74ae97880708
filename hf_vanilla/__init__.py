"""hf_vanilla: the Transformer of "Attention Is All You Need" as a transformers model.

Importing the package registers the model with the Auto classes, and marks its classes for Hub remote code so that
`save_pretrained` writes `auto_map` and the model's source files beside the weights.
"""

import warnings

from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM

from .configuration_vanilla import PRESETS_DEPRECATION, SIZES, TASKS, VanillaTransformerConfig
from .decoding_settings import DECODING
from .modeling_vanilla import (
    VanillaPreTrainedModel,
    VanillaTransformerForConditionalGeneration,
    VanillaTransformerModel,
)

AutoConfig.register(VanillaTransformerConfig.model_type, VanillaTransformerConfig, exist_ok=True)
AutoModel.register(VanillaTransformerConfig, VanillaTransformerModel, exist_ok=True)
AutoModelForSeq2SeqLM.register(VanillaTransformerConfig, VanillaTransformerForConditionalGeneration, exist_ok=True)
VanillaTransformerConfig.register_for_auto_class()
VanillaTransformerModel.register_for_auto_class("AutoModel")
VanillaTransformerForConditionalGeneration.register_for_auto_class("AutoModelForSeq2SeqLM")

__version__ = "0.1.0"


def __getattr__(name: str) -> dict[str, dict]:
    """`PRESETS`, the sizes' former name: `SIZES` itself, with a FutureWarning naming it."""
    if name == "PRESETS":
        warnings.warn(PRESETS_DEPRECATION, FutureWarning, stacklevel=2)
        return SIZES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DECODING",
    "SIZES",
    "TASKS",
    "VanillaPreTrainedModel",
    "VanillaTransformerConfig",
    "VanillaTransformerForConditionalGeneration",
    "VanillaTransformerModel",
]
