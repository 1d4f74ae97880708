"""hf_vanilla: the Transformer of "Attention Is All You Need" as a transformers model.

Importing the package registers the model with the Auto classes, and marks its classes for Hub remote code so that
`save_pretrained` writes `auto_map` and the model's source files beside the weights.
"""

from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM

from .configuration_vanilla import PRESETS, SIZES, TASKS, VanillaTransformerConfig
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

__all__ = [
    "DECODING",
    "PRESETS",  # SIZES under its former name
    "SIZES",
    "TASKS",
    "VanillaPreTrainedModel",
    "VanillaTransformerConfig",
    "VanillaTransformerForConditionalGeneration",
    "VanillaTransformerModel",
]
