"""hf_vanilla <-> transformers' `MarianMTModel` (the architecture of the OPUS-MT models), exactly.

Both are the post-norm encoder-decoder with sinusoidal positions and one shared embedding matrix. They differ in:

- the sinusoid layout: the paper interleaves sin and cos over d_model (sin on even, cos on odd dimensions); Marian puts
  all sines first, then all cosines, and recomputes that table on load (it never saves it, but loads one that a
  checkpoint holds: `from_marian` refuses a table that is not the sinusoids). The conversion permutes
  the d_model axis of every weight that reads or writes the residual stream (embeddings, layer norms, projection
  inputs and outputs): the permuted model adds its embeddings to Marian's table exactly where the original added them
  to the paper's, and everything in between is permutation-equivariant. A configuration option in hf_vanilla could not
  serve the other direction, since a Marian checkpoint's layout is fixed by Marian's code.
- hf_vanilla fuses Q/K/V (and cross-attention K/V) into one matrix: split or stacked here.
- Marian's `final_logits_bias`: hf_vanilla's `config.final_logits_bias` gives its output projection the same bias.
- Marian's decoding (start from pad, pad never generated, forced </s> at max_length, plain length penalty): a converted
  model keeps Marian's generation config, with `length_penalty_style="power"` and no per-source length limit.
"""

from pathlib import Path

import torch
from transformers import GenerationConfig, MarianConfig, MarianMTModel
from transformers.utils import logging

from .configuration_vanilla import VanillaGenerationConfig, VanillaTransformerConfig, activation_problem
from .errors import error_line
from .modeling_vanilla import VanillaTransformerForConditionalGeneration, sinusoidal_positions

logger = logging.get_logger(__name__)


class ConversionError(ValueError):
    """A model that the other architecture cannot represent exactly; the message names the field."""


def marian_order(d_model: int) -> torch.Tensor:
    """Marian's position of each feature as indices into hf_vanilla's: the even (sine) features, then the odd ones."""
    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)])


# Weights by which of their axes lie along d_model (the residual stream), for hf_vanilla's names.
_RESIDUAL_INPUT = ("qkv_proj.weight", "q_proj.weight", "kv_proj.weight", "fc1.weight")  # (out, d_model)
_RESIDUAL_OUTPUT = ("out_proj.weight", "fc2.weight")  # (d_model, in)
_RESIDUAL_VECTOR = ("out_proj.bias", "fc2.bias", "layer_norm.weight", "layer_norm.bias")  # (d_model,)


def _permute(name: str, tensor: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    if name.endswith("shared.weight") or name.endswith(_RESIDUAL_INPUT):
        return tensor.index_select(1, order)
    if name.endswith(_RESIDUAL_OUTPUT) or name.endswith(_RESIDUAL_VECTOR):
        return tensor.index_select(0, order)
    return tensor


def _refuse(field: str, value, why: str) -> None:
    raise ConversionError(f"{field}={value!r}: {why}")


def _check_vanilla(config: VanillaTransformerConfig) -> None:
    if config.norm_style != "post":
        _refuse("norm_style", config.norm_style, "MarianMTModel is post-norm only")
    if config.position_embedding_type != "sinusoidal":
        _refuse("position_embedding_type", config.position_embedding_type, "MarianMTModel has sinusoidal positions")
    if not config.tie_word_embeddings:
        _refuse("tie_word_embeddings", False, "the conversion keeps one matrix for both embeddings and the output")
    if config.layer_norm_eps != 1e-5:
        _refuse("layer_norm_eps", config.layer_norm_eps, "MarianMTModel's layer norms use 1e-5")
    if config.pointer_generator:
        _refuse("pointer_generator", True, "MarianMTModel has no copy mechanism")


def _check_marian(config: MarianConfig) -> None:
    if not config.share_encoder_decoder_embeddings:
        _refuse("share_encoder_decoder_embeddings", False, "hf_vanilla has one vocabulary for source and target")
    if config.decoder_vocab_size not in (None, config.vocab_size):
        _refuse("decoder_vocab_size", config.decoder_vocab_size, f"hf_vanilla has one vocabulary, {config.vocab_size}")
    if not getattr(config, "tie_word_embeddings", True):
        _refuse("tie_word_embeddings", False, "hf_vanilla's output projection is the shared embedding matrix")
    for field in ("normalize_before", "normalize_embedding", "add_final_layer_norm"):
        if getattr(config, field, False):
            _refuse(field, True, "hf_vanilla is the paper's post-norm model without extra layer norms")
    if not getattr(config, "static_position_embeddings", True):
        _refuse("static_position_embeddings", False, "hf_vanilla converts sinusoidal positions only")
    problem = activation_problem(config.activation_function)
    if problem:
        _refuse("activation_function", config.activation_function, problem)
    if config.encoder_attention_heads != config.decoder_attention_heads:
        _refuse("decoder_attention_heads", config.decoder_attention_heads, "hf_vanilla has one head count")
    if config.encoder_ffn_dim != config.decoder_ffn_dim:
        _refuse("decoder_ffn_dim", config.decoder_ffn_dim, "hf_vanilla has one feed-forward width")
    for field in ("encoder_layerdrop", "decoder_layerdrop"):
        if getattr(config, field, 0.0):
            _refuse(field, getattr(config, field), "hf_vanilla has no layer drop")


def _check_positions(marian: MarianMTModel) -> None:
    """Marian's position tables must hold the sinusoids hf_vanilla computes, in Marian's layout: Marian recomputes them
    when it builds a model, but a checkpoint that holds the tables loads them, edited or not. Both are computed in
    float64 and rounded to float32 (then to the table's dtype), so they agree to one float32 epsilon plus the
    table's own (every value lies in [-1, 1])."""
    state = marian.state_dict()
    for name in ("model.encoder.embed_positions.weight", "model.decoder.embed_positions.weight"):
        table = state[name].detach().cpu()
        length, d_model = table.shape
        expected = sinusoidal_positions(0, length, d_model, "cpu")[:, marian_order(d_model)]
        difference = (table.double() - expected.double()).abs().max().item()
        tolerance = torch.finfo(torch.float32).eps + torch.finfo(table.dtype).eps
        if not difference <= tolerance:  # (a NaN is refused too)
            raise ConversionError(
                f"{name} is not Marian's sinusoid table (max difference {difference:.3g}, more than float rounding's "
                f"{tolerance:.2g}): hf_vanilla computes the sinusoids and cannot carry an edited table"
            )


def _layer_names(side: str, index: int) -> list[tuple[str, str]]:
    """(hf_vanilla name, Marian name) of one layer's unfused weights, without .weight/.bias."""
    ours, theirs = f"model.{side}.layers.{index}.", f"model.{side}.layers.{index}."
    names = [
        (f"{ours}self_attn.out_proj", f"{theirs}self_attn.out_proj"),
        (f"{ours}self_attn_layer_norm", f"{theirs}self_attn_layer_norm"),
        (f"{ours}feed_forward.fc1", f"{theirs}fc1"),
        (f"{ours}feed_forward.fc2", f"{theirs}fc2"),
        (f"{ours}final_layer_norm", f"{theirs}final_layer_norm"),
    ]
    if side == "decoder":
        names += [
            (f"{ours}encoder_attn.q_proj", f"{theirs}encoder_attn.q_proj"),
            (f"{ours}encoder_attn.out_proj", f"{theirs}encoder_attn.out_proj"),
            (f"{ours}encoder_attn_layer_norm", f"{theirs}encoder_attn_layer_norm"),
        ]
    return names


def _fused(side: str, index: int) -> list[tuple[str, list[str]]]:
    """(hf_vanilla's fused projection, the Marian projections stacked in it) of one layer."""
    prefix = f"model.{side}.layers.{index}."
    fused = [(f"{prefix}self_attn.qkv_proj", [f"{prefix}self_attn.{p}_proj" for p in "qkv"])]
    if side == "decoder":
        fused.append((f"{prefix}encoder_attn.kv_proj", [f"{prefix}encoder_attn.{p}_proj" for p in "kv"]))
    return fused


def to_marian(model: VanillaTransformerForConditionalGeneration) -> MarianMTModel:
    """A `MarianMTModel` computing the same function as `model` (logits equal to rounding), with the same special
    tokens and decoding settings transformers can express (beam size, length penalty exponent, early stopping)."""
    config = model.config
    _check_vanilla(config)
    marian_config = MarianConfig(
        vocab_size=config.vocab_size,
        decoder_vocab_size=config.vocab_size,
        d_model=config.d_model,
        encoder_layers=config.encoder_layers,
        decoder_layers=config.decoder_layers,
        encoder_attention_heads=config.num_attention_heads,
        decoder_attention_heads=config.num_attention_heads,
        encoder_ffn_dim=config.d_ff,
        decoder_ffn_dim=config.d_ff,
        activation_function=config.activation_function,
        dropout=config.dropout,
        attention_dropout=config.attention_dropout,
        activation_dropout=config.activation_dropout,
        max_position_embeddings=config.max_position_embeddings,
        init_std=config.init_std,
        scale_embedding=config.scale_embedding,
        share_encoder_decoder_embeddings=True,
        pad_token_id=config.pad_token_id,
        eos_token_id=config.eos_token_id,
        bos_token_id=config.bos_token_id,
        decoder_start_token_id=config.decoder_start_token_id,
        forced_eos_token_id=None,
    )
    marian = MarianMTModel(marian_config)
    order = marian_order(config.d_model)
    ours = {name: _permute(name, tensor, order) for name, tensor in model.state_dict().items()}
    state = {"model.shared.weight": ours["model.shared.weight"]}
    if config.final_logits_bias:
        state["final_logits_bias"] = ours["lm_head.bias"][None, :]
    for side in ("encoder", "decoder"):
        for index in range(getattr(config, f"{side}_layers")):
            for kind in ("weight", "bias"):
                for vanilla_name, marian_name in _layer_names(side, index):
                    state[f"{marian_name}.{kind}"] = ours[f"{vanilla_name}.{kind}"]
                for vanilla_name, marian_names in _fused(side, index):
                    parts = ours[f"{vanilla_name}.{kind}"].chunk(len(marian_names))
                    for marian_name, part in zip(marian_names, parts, strict=True):
                        state[f"{marian_name}.{kind}"] = part
    missing, unexpected = marian.load_state_dict(state, strict=False)
    ignored = ("embed_tokens.weight", "lm_head.weight", "embed_positions.weight", "final_logits_bias")
    left = [name for name in missing if not name.endswith(ignored)]
    if left or unexpected:
        raise RuntimeError(f"weight mapping incomplete: missing {left}, unexpected {unexpected}")
    marian.tie_weights()
    marian.generation_config = _marian_generation_config(model)
    return marian.to(model.dtype).train(model.training)


def _marian_generation_config(model: VanillaTransformerForConditionalGeneration) -> GenerationConfig:
    """`model`'s generation config without the settings transformers lacks. The GNMT length penalty becomes
    transformers' |Y|^alpha with the same alpha, a per-source length limit becomes a fixed `max_length` (Marian's
    position table size), and a summarizer's rule against stutters is dropped: each is said in a warning, since the
    Marian model then decodes differently."""
    generation = model.generation_config.to_dict()
    style = generation.pop("length_penalty_style", "power")
    offset = generation.pop("max_length_offset", None)
    stutter = generation.pop("no_stutter_span_size", 0)
    for field in ("transformers_version", "_from_model_config"):
        generation.pop(field, None)
    if style != "power":
        logger.warning(
            f"length_penalty_style={style!r} has no MarianMTModel equivalent: the Marian model ranks beams by "
            f"log P / |Y|^{generation.get('length_penalty')} instead"
        )
    if offset is not None:
        generation["max_length"] = model.config.max_position_embeddings
        logger.warning(
            f"max_length_offset={offset} (a per-source length limit) has no MarianMTModel equivalent: the Marian "
            f"model stops at max_length={generation['max_length']} instead"
        )
    if stutter:
        logger.warning(
            f"no_stutter_span_size={stutter} has no MarianMTModel equivalent: the Marian model may write a span "
            "twice in a row that its source does not hold so"
        )
    return GenerationConfig(**generation)


def from_marian(marian: MarianMTModel) -> VanillaTransformerForConditionalGeneration:
    """An hf_vanilla model computing the same function as `marian` (e.g. an OPUS-MT model), decoding as Marian does.
    A Marian model hf_vanilla cannot represent exactly is a `ConversionError` naming the field."""
    c = marian.config
    _check_marian(c)
    _check_positions(marian)
    bias = marian.final_logits_bias.detach().reshape(-1)
    config = VanillaTransformerConfig(
        vocab_size=c.vocab_size,
        d_model=c.d_model,
        encoder_layers=c.encoder_layers,
        decoder_layers=c.decoder_layers,
        num_attention_heads=c.encoder_attention_heads,
        d_ff=c.encoder_ffn_dim,
        dropout=c.dropout,
        attention_dropout=c.attention_dropout,
        activation_dropout=c.activation_dropout,
        max_position_embeddings=c.max_position_embeddings,
        init_std=c.init_std,
        scale_embedding=c.scale_embedding,
        activation_function=c.activation_function,
        final_logits_bias=bool(bias.any()),
        pad_token_id=c.pad_token_id,
        eos_token_id=c.eos_token_id,
        bos_token_id=c.bos_token_id,
        decoder_start_token_id=c.decoder_start_token_id,
    )
    with torch.device("meta"):
        model = VanillaTransformerForConditionalGeneration(config)
    theirs = marian.state_dict()
    state = {"model.shared.weight": theirs["model.shared.weight"]}
    if config.final_logits_bias:
        state["lm_head.bias"] = bias
    for side in ("encoder", "decoder"):
        for index in range(getattr(c, f"{side}_layers")):
            for kind in ("weight", "bias"):
                for vanilla_name, marian_name in _layer_names(side, index):
                    state[f"{vanilla_name}.{kind}"] = theirs[f"{marian_name}.{kind}"]
                for vanilla_name, marian_names in _fused(side, index):
                    state[f"{vanilla_name}.{kind}"] = torch.cat([theirs[f"{n}.{kind}"] for n in marian_names])
    back = torch.argsort(marian_order(c.d_model))
    state = {name: _permute(name, tensor, back).clone() for name, tensor in state.items()}
    model.load_state_dict(state, strict=False, assign=True)
    model.tie_weights()
    missing = [n for n, p in model.named_parameters() if p.is_meta]
    if missing:
        raise RuntimeError(f"weight mapping incomplete: {missing}")
    generation = marian.generation_config.to_dict()
    for field in ("transformers_version", "_from_model_config"):
        generation.pop(field, None)
    model.generation_config = VanillaGenerationConfig(
        **generation, length_penalty_style="power", max_length_offset=None
    )
    return model.to(marian.dtype).train(marian.training)


def _check_tokenizer(tokenizer, config) -> None:
    """The tokenizer's special tokens must be the model's: a mismatch would decode with the wrong ids."""
    for name in ("pad_token_id", "eos_token_id"):
        ours, theirs = getattr(tokenizer, name), getattr(config, name)
        if ours is not None and theirs is not None and ours != theirs:
            raise ConversionError(f"{name}: the tokenizer has {ours}, the model {theirs}")


def import_marian(source: str, output: str | Path) -> Path:
    """Converts a `MarianMTModel` folder or Hub id (e.g. an OPUS-MT model) into an hf_vanilla model folder at
    `output`: weights, config with `auto_map` and the model's code (loadable as remote code), generation config and
    the source's tokenizer."""
    from transformers import AutoConfig, AutoTokenizer

    config = AutoConfig.from_pretrained(source)
    if config.model_type != "marian":
        raise ConversionError(f"model_type={config.model_type!r}: {source} is not a MarianMTModel")
    _check_marian(config)  # before loading weights that the configuration may not even fit
    model = from_marian(MarianMTModel.from_pretrained(source))
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
    except (OSError, ValueError, TypeError) as error:  # a Marian folder without its spm files is a TypeError
        raise OSError(f"cannot load its tokenizer: {error_line(error)}") from error
    _check_tokenizer(tokenizer, model.config)
    output = Path(output)
    model.save_pretrained(output)
    tokenizer.save_pretrained(output)
    return output


def export_marian(model_path: str | Path, output: str | Path) -> Path:
    """Converts an hf_vanilla model folder (or Hub id) into a `MarianMTModel` folder at `output`, with its tokenizer
    when the folder has one (loadable with transformers alone)."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    model = AutoModelForSeq2SeqLM.from_pretrained(model_path)
    if not isinstance(model, VanillaTransformerForConditionalGeneration):
        raise ConversionError(f"model_type={model.config.model_type!r}: {model_path} is not an hf_vanilla model")
    marian = to_marian(model)
    output = Path(output)
    marian.save_pretrained(output)
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_path)
    except (OSError, ValueError):
        logger.warning(f"{model_path} has no tokenizer: {output} holds the model only")
    else:
        tokenizer.save_pretrained(output)
    return output


__all__ = ["ConversionError", "export_marian", "from_marian", "import_marian", "marian_order", "to_marian"]
