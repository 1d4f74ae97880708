"""hf_vanilla -> CTranslate2 (the CPU/GPU inference engine), through CTranslate2's own `TransformerSpec` and
`Converter`, and the `translate_batch` options that decode as `generate()` does.

The spec is filled from hf_vanilla's weights as they are (CTranslate2 fuses Q/K/V the same way), with the position
table written out explicitly: CTranslate2's built-in sinusoids are neither the paper's interleaved layout nor Marian's.
Every hf_vanilla variant has a CTranslate2 equivalent (post- or pre-norm, sinusoidal or learned positions, tied or
untied embeddings, `final_logits_bias`, with or without embedding scaling), with the activations of
`CT2_ACTIVATIONS` (the others are refused).

Decoding: CTranslate2's beam search ranks finished hypotheses by log P / |Y|^length_penalty with |Y| counting </s>
(it strips </s> only after ranking), keeps 2 x beam candidates a step, and stops a sentence once beam_size hypotheses
have finished (patience 1): transformers' beam search with `early_stopping=True` and `length_penalty_style="power"`.
It cannot express the GNMT penalty ((5 + |Y|) / 6)^alpha, a per-source length limit (`max_length_offset`: one
`max_decoding_length` per call), a forced </s> at the length limit (a hypothesis cut there keeps its best token), nor a
summarizer's rule against stutters (`no_stutter_span_size`). `translate_options` maps a generation config to
`translate_batch` options and refuses those settings.
"""

import copy
from pathlib import Path

import torch
from transformers import GenerationConfig

from .modeling_vanilla import VanillaTransformerForConditionalGeneration, sinusoidal_positions

# transformers' activations (`config.activation_function`) that CTranslate2 computes, by its name for each: the exact
# GELU, its tanh approximation (five names for one formula), x * sigmoid(1.702 x), swish/SiLU, ReLU, tanh, sigmoid.
CT2_ACTIVATIONS = {
    "relu": "RELU",
    "swish": "SWISH",
    "silu": "SWISH",
    "gelu": "GELU",
    "gelu_python": "GELU",
    "gelu_new": "GELUTanh",
    "gelu_fast": "GELUTanh",
    "gelu_accurate": "GELUTanh",
    "gelu_pytorch_tanh": "GELUTanh",
    "gelu_python_tanh": "GELUTanh",
    "quick_gelu": "GELUSigmoid",
    "tanh": "Tanh",
    "sigmoid": "Sigmoid",
}
CT2_MISSING = "CTranslate2 is not installed: pip install 'hf-vanilla[ct2]'"


def _ctranslate2():
    try:
        import ctranslate2
    except ImportError as error:
        raise ImportError(CT2_MISSING) from error
    return ctranslate2


def vocabulary(tokenizer, vocab_size: int) -> list[str]:
    """The token of each id 0 .. vocab_size-1, as CTranslate2 maps tokens to ids. Ids the tokenizer lacks (a model
    vocabulary padded beyond it) get unique placeholders; two ids with one token would make the mapping ambiguous."""
    tokens = tokenizer.convert_ids_to_tokens(list(range(min(vocab_size, len(tokenizer)))))
    tokens += [f"<madeupword{i}>" for i in range(len(tokens), vocab_size)]
    seen: dict[str, int] = {}
    for index, token in enumerate(tokens):
        if token is None:
            raise ValueError(f"the tokenizer has no token for id {index}")
        if token in seen:
            raise ValueError(f"ids {seen[token]} and {index} are both the token {token!r}: CTranslate2 needs one each")
        seen[token] = index
    return tokens


def _copy(tensor: torch.Tensor) -> torch.Tensor:
    """A float32 copy: CTranslate2's quantization rewrites the arrays it is given, which would be the model's own."""
    return tensor.detach().to(torch.float32, copy=True)


def _linear(spec, linear: torch.nn.Module) -> None:
    spec.weight = _copy(linear.weight)
    if linear.bias is not None:
        spec.bias = _copy(linear.bias)


def _layer_norm(spec, norm: torch.nn.LayerNorm) -> None:
    spec.gamma = _copy(norm.weight)
    spec.beta = _copy(norm.bias)


def _stack(spec, stack, config, max_positions: int) -> None:
    """Embeddings, scale, positions and the final layer norm (pre-norm) of an encoder or decoder stack."""
    embeddings = spec.embeddings[0] if isinstance(spec.embeddings, list) else spec.embeddings
    embeddings.weight = _copy(stack.embed_tokens.weight)
    spec.scale_embeddings = float(stack.embed_scale)
    table = stack.embed_positions.table
    if table is None:
        spec.position_encodings.encodings = sinusoidal_positions(0, max_positions, config.d_model, "cpu")
    else:
        spec.position_encodings.encodings = _copy(table.weight)
    if stack.layer_norm is not None:
        _layer_norm(spec.layer_norm, stack.layer_norm)


def ct2_spec(model: VanillaTransformerForConditionalGeneration, tokens: list[str], max_positions: int | None = None):
    """A `ctranslate2.specs.TransformerSpec` computing `model`'s function, with vocabulary `tokens` (id order) and
    the model's special tokens. Sinusoidal positions are tabulated for `max_positions` (default: the config's
    `max_position_embeddings`), the longest source or output CTranslate2 can then handle."""
    _ctranslate2()
    from ctranslate2.specs import common_spec, transformer_spec

    config = model.config
    if len(tokens) != config.vocab_size:
        raise ValueError(f"{len(tokens)} tokens for a vocabulary of {config.vocab_size}")
    if config.activation_function not in CT2_ACTIVATIONS:
        raise ValueError(
            f"activation_function={config.activation_function!r}: CTranslate2 computes only "
            f"{', '.join(sorted(CT2_ACTIVATIONS))}"
        )
    spec = transformer_spec.TransformerSpec.from_config(
        (config.encoder_layers, config.decoder_layers),
        config.num_attention_heads,
        pre_norm=config.norm_style == "pre",
        activation=getattr(common_spec.Activation, CT2_ACTIVATIONS[config.activation_function]),
    )
    max_positions = max_positions or config.max_position_embeddings
    encoder, decoder = model.model.encoder, model.model.decoder
    _stack(spec.encoder, encoder, config, max_positions)
    for layer_spec, layer in zip(spec.encoder.layer, encoder.layers, strict=True):
        _linear(layer_spec.self_attention.linear[0], layer.self_attn.qkv_proj)
        _linear(layer_spec.self_attention.linear[1], layer.self_attn.out_proj)
        _layer_norm(layer_spec.self_attention.layer_norm, layer.self_attn_layer_norm)
        _linear(layer_spec.ffn.linear_0, layer.feed_forward.fc1)
        _linear(layer_spec.ffn.linear_1, layer.feed_forward.fc2)
        _layer_norm(layer_spec.ffn.layer_norm, layer.final_layer_norm)
    _stack(spec.decoder, decoder, config, max_positions)
    for layer_spec, layer in zip(spec.decoder.layer, decoder.layers, strict=True):
        _linear(layer_spec.self_attention.linear[0], layer.self_attn.qkv_proj)
        _linear(layer_spec.self_attention.linear[1], layer.self_attn.out_proj)
        _layer_norm(layer_spec.self_attention.layer_norm, layer.self_attn_layer_norm)
        _linear(layer_spec.attention.linear[0], layer.encoder_attn.q_proj)
        _linear(layer_spec.attention.linear[1], layer.encoder_attn.kv_proj)
        _linear(layer_spec.attention.linear[2], layer.encoder_attn.out_proj)
        _layer_norm(layer_spec.attention.layer_norm, layer.encoder_attn_layer_norm)
        _linear(layer_spec.ffn.linear_0, layer.feed_forward.fc1)
        _linear(layer_spec.ffn.linear_1, layer.feed_forward.fc2)
        _layer_norm(layer_spec.ffn.layer_norm, layer.final_layer_norm)
    _linear(spec.decoder.projection, model.lm_head)

    spec.register_source_vocabulary(tokens)
    spec.register_target_vocabulary(tokens)
    special = {
        "bos_token": config.bos_token_id,
        "eos_token": config.eos_token_id,
        "decoder_start_token": config.decoder_start_token_id,
    }
    for name, token_id in special.items():
        if token_id is not None:
            setattr(spec.config, name, tokens[token_id if isinstance(token_id, int) else token_id[0]])
    unk = [token for token in tokens if token in ("<unk>", "<UNK>", "[UNK]")]
    spec.config.unk_token = unk[0] if unk else spec.config.unk_token
    spec.config.layer_norm_epsilon = config.layer_norm_eps
    return spec


def _converter_class():
    ctranslate2 = _ctranslate2()

    class VanillaConverter(ctranslate2.converters.Converter):
        """CTranslate2's converter interface (validation, quantization, saving) around `ct2_spec`."""

        def __init__(self, model, tokens: list[str], max_positions: int | None = None):
            self.model, self.tokens, self.max_positions = model, tokens, max_positions

        def _load(self):
            return ct2_spec(self.model, self.tokens, self.max_positions)

    return VanillaConverter


def export_ct2(
    model,
    output: str | Path,
    tokenizer=None,
    quantization: str | None = None,
    force: bool = False,
    max_positions: int | None = None,
) -> Path:
    """Converts an hf_vanilla model (a folder or Hub id, or a loaded model with its `tokenizer`) into a CTranslate2
    model folder at `output` (model.bin, config.json, shared_vocabulary.json) with the tokenizer's files beside it.
    `quantization`: one of CTranslate2's weight types (int8, int8_float32, int8_float16, int8_bfloat16, int16,
    float16, bfloat16, float32; default: float32, the weights as they are)."""
    _ctranslate2()
    from ctranslate2.specs.model_spec import ACCEPTED_MODEL_TYPES
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    if quantization is not None and quantization not in ACCEPTED_MODEL_TYPES:
        raise ValueError(f"quantization {quantization!r} is not one of {', '.join(ACCEPTED_MODEL_TYPES)}")
    output = Path(output)
    if output.exists() and not force:
        raise FileExistsError(f"{output} already exists (force=True, or --force, replaces it)")
    if isinstance(model, (str, Path)):
        tokenizer = tokenizer or AutoTokenizer.from_pretrained(model)
        model = AutoModelForSeq2SeqLM.from_pretrained(model)
    if not isinstance(model, VanillaTransformerForConditionalGeneration):
        raise ValueError(f"model_type={model.config.model_type!r}: not an hf_vanilla model")
    if model.config.pointer_generator:
        raise ValueError("pointer_generator=True: CTranslate2 has no copy mechanism")
    if tokenizer is None:
        raise ValueError("export_ct2 needs the model's tokenizer: CTranslate2 maps tokens, not ids")
    tokens = vocabulary(tokenizer, model.config.vocab_size)
    _converter_class()(model, tokens, max_positions).convert(str(output), quantization=quantization, force=True)
    tokenizer.save_pretrained(output)
    return output


def translate_options(generation_config: GenerationConfig, tokens: list[str], **overrides) -> dict:
    """`translate_batch` keyword arguments that decode as `generate()` does under `generation_config` updated with
    `overrides` (e.g. `model.generation_config`, `num_beams=4`). Raises ValueError, naming the setting, for what
    CTranslate2 cannot express (see the module's docstring)."""
    config = copy.deepcopy(generation_config)
    unused = config.update(**overrides)
    for name in ("length_penalty_style", "max_length_offset", "no_stutter_span_size"):
        if name in unused:
            setattr(config, name, unused.pop(name))
    if unused:
        raise ValueError(f"unknown generation settings: {sorted(unused)}")
    beams = config.num_beams or 1
    style = getattr(config, "length_penalty_style", "power")

    def refuse(name: str, why: str) -> None:
        raise ValueError(f"{name}={getattr(config, name)!r}: {why}")

    if config.do_sample:
        refuse("do_sample", "compare deterministic decodings")
    if beams > 1 and style != "power":
        refuse("length_penalty_style", "CTranslate2 divides by |Y|^alpha only; use length_penalty_style='power'")
    if beams > 1 and config.early_stopping is not True:
        refuse("early_stopping", "CTranslate2 stops once beam_size hypotheses have finished (early_stopping=True)")
    if config.max_new_tokens is None and getattr(config, "max_length_offset", None) is not None:
        refuse("max_length_offset", "CTranslate2 has one max_decoding_length per call; pass max_new_tokens")
    if config.forced_eos_token_id is not None:
        refuse("forced_eos_token_id", "CTranslate2 keeps a length-limited hypothesis' own last token")
    if config.bad_words_ids and beams > 1 and not config.renormalize_logits:
        refuse("renormalize_logits", "CTranslate2 suppresses tokens before its softmax; set renormalize_logits=True")
    unmapped = (
        ("repetition_penalty", 1.0),
        ("min_new_tokens", None),
        ("num_beam_groups", 1),
        ("no_stutter_span_size", 0),
    )
    for name, neutral in unmapped:
        if getattr(config, name, neutral) not in (neutral, None):
            refuse(name, "not mapped to CTranslate2")
    max_new_tokens = config.max_new_tokens if config.max_new_tokens is not None else config.max_length - 1
    options = dict(
        beam_size=beams,
        patience=1,
        length_penalty=config.length_penalty if beams > 1 else 0.0,
        max_decoding_length=max_new_tokens,
        min_decoding_length=0,
        num_hypotheses=1,
        return_end_token=False,
        no_repeat_ngram_size=config.no_repeat_ngram_size or 0,
        max_input_length=0,
    )
    if config.bad_words_ids:
        options["suppress_sequences"] = [[tokens[i] for i in ids] for ids in config.bad_words_ids]
    return options


__all__ = ["CT2_MISSING", "ct2_spec", "export_ct2", "translate_options", "vocabulary"]
