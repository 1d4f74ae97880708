"""The Transformer of "Attention Is All You Need" (Vaswani et al., 2017), section 3, in transformers' house style.

Post-norm encoder-decoder: every sub-layer computes LayerNorm(x + Dropout(Sublayer(x))) (section 5.4), token
embeddings are multiplied by sqrt(d_model) and summed with sinusoidal positions (section 3.5), and one weight matrix
is shared by the encoder embeddings, the decoder embeddings and the pre-softmax projection (section 3.4).

Weight initialisation (the paper gives none): token embeddings N(0, d_model^-0.5) with the padding row at zero, so that
embeddings scaled by sqrt(d_model) have unit variance like the sinusoids they are added to; every projection matrix
N(0, init_std = 0.02) as in transformers' Marian, BART and FSMT; biases zero; LayerNorm gain one and bias zero
(`docs/experiments.md` compares it with Glorot-uniform projections and N(0, 0.02) embeddings). `init_scheme="fairseq"`
draws the projections as fairseq's `transformer` does instead (the config's docstring); the translation recipe's
presets take it. With `config.pointer_generator`, the copy mechanism of `pointer_generator_vanilla.py` on top.
"""

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, fields

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.activations import ACT2FN
from transformers.cache_utils import Cache, DynamicCache, EncoderDecoderCache
from transformers.masking_utils import create_bidirectional_mask, create_causal_mask
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import (
    BaseModelOutput,
    BaseModelOutputWithPastAndCrossAttentions,
    Seq2SeqLMOutput,
    Seq2SeqModelOutput,
)
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.processing_utils import Unpack
from transformers.utils import TransformersKwargs, can_return_tuple, is_torchdynamo_compiling
from transformers.utils.deprecation import deprecate_kwarg
from transformers.utils.generic import merge_with_config_defaults
from transformers.utils.output_capturing import OutputRecorder, capture_outputs

from .configuration_vanilla import VanillaGenerationConfig, VanillaTransformerConfig
from .generation_vanilla import VanillaGenerationMixin, check_continuation_mask, check_token_ids
from .pointer_generator_vanilla import (
    CopyMixture,
    VanillaPointerGenerator,
    dense_pointer_generator_log_probs,
    per_item_loss,
    pointer_generator_loss,
    whole_word_copy_positions,
)

# The name under which transformers' outputs hold the cache and `generate()` hands it to `forward`: `cache` from
# transformers 5.24 on, `past_key_values` before it (5.24 reads the old name with a deprecation warning until 5.40).
# `forward` takes either; the outputs hold it under the installed release's name.
CACHE_NAME = "cache" if "cache" in {field.name for field in fields(Seq2SeqModelOutput)} else "past_key_values"


def takes_cache_keyword(forward: Callable) -> Callable:
    """`forward` deprecating `past_key_values` for `cache` as transformers' own models do where the installed release
    has renamed it (5.24 on: a warning, and the cache passed on as `cache`); before it, `generate()` passes
    `past_key_values`, which stays silent."""
    if CACHE_NAME == "cache":
        return deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")(forward)
    return forward


def passed_cache(cache: Cache | None, past_key_values: Cache | None) -> Cache | None:
    """The cache a `forward` was given, as `cache` (transformers 5.24's name) or as `past_key_values`."""
    if cache is not None and past_key_values is not None:
        raise ValueError("Pass the cache once: as cache or as past_key_values, not both.")
    return cache if cache is not None else past_key_values


def shift_tokens_right(labels: torch.Tensor, pad_token_id: int, decoder_start_token_id: int) -> torch.Tensor:
    """Decoder inputs for teacher forcing: the labels shifted one position right, starting with the start token."""
    shifted = labels.new_full(labels.shape, pad_token_id)
    shifted[:, 1:] = labels[:, :-1]
    shifted[:, 0] = decoder_start_token_id
    return shifted.masked_fill_(shifted == -100, pad_token_id)


def sinusoidal_positions(start: int | torch.Tensor, length: int, d_model: int, device: torch.device) -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)) (section 3.5),
    for positions start .. start+length-1, computed for any length. Returns float32 of shape (length, d_model).
    `start` may be a 0-d tensor (a static cache's length), read without a host sync.

    The angles are computed in float64 (float32 where the device has none, e.g. Apple's MPS): in float32, an angle of
    position 3,000 is off by ~2e-4 radians."""
    dtype = torch.float32 if torch.device(device).type == "mps" else torch.float64
    positions = torch.arange(length, device=device, dtype=dtype) + start
    inverse_frequencies = torch.exp(
        torch.arange(0, d_model, 2, device=device, dtype=dtype) * (-math.log(10000.0) / d_model)
    )
    angles = positions[:, None] * inverse_frequencies[None, :]
    # Interleave: sin on even dimensions, cos on odd dimensions.
    return torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(1)[:, :d_model].float()


class VanillaPositionalEncoding(nn.Module):
    """Sinusoidal positions (the paper's choice, any length) or a learned table (Table 3, row E)."""

    def __init__(self, config: VanillaTransformerConfig):
        super().__init__()
        self.d_model = config.d_model
        self.max_positions = config.max_position_embeddings
        self.table = (
            nn.Embedding(config.max_position_embeddings, config.d_model)
            if config.position_embedding_type == "learned"
            else None
        )

    def forward(self, start: int | torch.Tensor, length: int, device: torch.device) -> torch.Tensor:
        """The encodings of positions start .. start+length-1; `start` is a 0-d tensor under a static cache."""
        if self.table is None:
            return sinusoidal_positions(start, length, self.d_model, device)
        if not is_torchdynamo_compiling() and int(start) + length > self.max_positions:
            raise ValueError(
                f"Learned position embeddings cover {self.max_positions} positions, but position "
                f"{int(start) + length - 1} was requested; use position_embedding_type='sinusoidal' for inputs of any "
                "length."
            )
        return self.table(torch.arange(length, device=device) + start)


def eager_attention_forward(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float,
    dropout: float = 0.0,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention, softmax(Q K^T / sqrt(d_k)) V (section 3.2.1), returning the weights too."""
    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value).transpose(1, 2).contiguous()
    return attn_output, attn_weights


def share_source(hidden_states: torch.Tensor, sources: int) -> torch.Tensor:
    """A decoder batch of k consecutive rows a source (beams, or sequences returned per input, as `generate()` repeats
    them) as `sources` rows of k times the positions: cross-attention treats each query position on its own, so the k
    rows of one source attend over its keys and values, computed and cached once, as one query of k x target length
    positions. Returns `hidden_states` itself where there is one row a source. The rows must divide among the sources
    (`VanillaDecoder` checks it)."""
    if hidden_states.shape[0] == sources:
        return hidden_states
    return hidden_states.reshape(sources, -1, hidden_states.shape[-1])


class VanillaAttention(nn.Module):
    """Multi-head attention (section 3.2.2) with h heads of d_k = d_model / h. Self-attention projects Q, K and V
    with one fused matrix; cross-attention projects Q from the decoder and K, V (fused) once from the encoder output,
    which the cache keeps for every later decoding step, and which a source's consecutive decoder rows (its beams)
    share (`share_source`). With `returns_weights`, it always computes its attention weights (eager attention, whatever
    the model's implementation): a pointer-generator copies with them."""

    def __init__(
        self,
        config: VanillaTransformerConfig,
        is_cross_attention: bool,
        is_causal: bool,
        layer_idx: int,
        returns_weights: bool = False,
    ):
        super().__init__()
        self.config = config
        self.d_model = config.d_model
        self.head_dim = config.d_model // config.num_attention_heads
        self.scaling = self.head_dim**-0.5
        self.dropout = config.attention_dropout
        self.is_cross_attention = is_cross_attention
        self.is_causal = is_causal
        self.layer_idx = layer_idx
        self.returns_weights = returns_weights
        if is_cross_attention:
            self.q_proj = nn.Linear(config.d_model, config.d_model)
            self.kv_proj = nn.Linear(config.d_model, 2 * config.d_model)  # W^K, W^V in one matmul
        else:
            self.qkv_proj = nn.Linear(config.d_model, 3 * config.d_model)  # W^Q, W^K, W^V in one matmul
        self.out_proj = nn.Linear(config.d_model, config.d_model)

    def _split_heads(self, states: torch.Tensor) -> torch.Tensor:
        return states.view(*states.shape[:-1], -1, self.head_dim).transpose(1, 2)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        key_value_states: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        input_shape = hidden_states.shape[:-1]
        if self.is_cross_attention:
            cache = past_key_values.cross_attention_cache if past_key_values is not None else None
            if cache is not None and past_key_values.is_updated.get(self.layer_idx):
                key_states = cache.layers[self.layer_idx].keys
                value_states = cache.layers[self.layer_idx].values
            else:
                key_states, value_states = self.kv_proj(key_value_states).chunk(2, dim=-1)
                key_states, value_states = self._split_heads(key_states), self._split_heads(value_states)
                if cache is not None:
                    key_states, value_states = cache.update(key_states, value_states, self.layer_idx)
                    past_key_values.is_updated[self.layer_idx] = True
            # The rows of one source (its beams) attend as one longer query over its keys and values (`share_source`).
            hidden_states = share_source(hidden_states, key_states.shape[0])
            query_states = self._split_heads(self.q_proj(hidden_states))
        else:
            query_states, key_states, value_states = (
                self._split_heads(states) for states in self.qkv_proj(hidden_states).chunk(3, dim=-1)
            )
            if past_key_values is not None:
                cache = (
                    past_key_values.self_attention_cache
                    if isinstance(past_key_values, EncoderDecoderCache)
                    else past_key_values
                )
                key_states, value_states = cache.update(key_states, value_states, self.layer_idx)

        # Only eager attention computes the weights: a call that asks for them runs eager (its masks too, see
        # `_mask_config`) rather than returning none.
        wants_weights = self.returns_weights or _wants_attention_weights(self.config, kwargs)
        implementation = "eager" if wants_weights else self.config._attn_implementation
        attention_interface: Callable = ALL_ATTENTION_FUNCTIONS.get_interface(implementation, eager_attention_forward)
        attn_output, attn_weights = attention_interface(
            self,
            query_states,
            key_states,
            value_states,
            attention_mask,
            dropout=self.dropout if self.training else 0.0,
            scaling=self.scaling,
            **kwargs,
        )
        attn_output = self.out_proj(attn_output.reshape(*hidden_states.shape[:-1], -1).contiguous())
        if attn_weights is not None and attn_weights.shape[0] != input_shape[0]:  # sources' rows back to the batch's
            sources, heads, _, keys = attn_weights.shape
            attn_weights = attn_weights.view(sources, heads, -1, input_shape[1], keys).transpose(1, 2)
            attn_weights = attn_weights.reshape(input_shape[0], heads, input_shape[1], keys)
        return attn_output.view(*input_shape, -1), attn_weights


class VanillaFeedForward(nn.Module):
    """FFN(x) = max(0, x W1 + b1) W2 + b2 (section 3.3), inner width d_ff; another of transformers' activations
    instead of max(0, .) when `config.activation_function` names one (e.g. `"swish"`, OPUS-MT's models)."""

    def __init__(self, config: VanillaTransformerConfig):
        super().__init__()
        self.fc1 = nn.Linear(config.d_model, config.d_ff)
        self.fc2 = nn.Linear(config.d_ff, config.d_model)
        self.activation = ACT2FN[config.activation_function]
        self.activation_dropout = config.activation_dropout

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        hidden_states = self.activation(self.fc1(hidden_states))
        hidden_states = nn.functional.dropout(hidden_states, p=self.activation_dropout, training=self.training)
        return self.fc2(hidden_states)


class VanillaSublayerConnection(nn.Module):
    """The residual connection around each sub-layer (section 5.4): LayerNorm(x + Dropout(Sublayer(x))) after it
    (post-norm, the paper), or x + Dropout(Sublayer(LayerNorm(x))) before it when `norm_style="pre"`. It holds no
    weights: each layer keeps its own LayerNorm (`self_attn_layer_norm`, ...) and hands it in with the sub-layer."""

    def __init__(self, config: VanillaTransformerConfig):
        super().__init__()
        self.pre_norm = config.norm_style == "pre"
        self.dropout = config.dropout

    def forward(
        self, hidden_states: torch.Tensor, norm: nn.LayerNorm, sublayer: Callable
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(the connection's output, the attention weights `sublayer` returned beside its output, or None)."""
        output = sublayer(norm(hidden_states) if self.pre_norm else hidden_states)
        output, weights = output if isinstance(output, tuple) else (output, None)
        hidden_states = hidden_states + nn.functional.dropout(output, p=self.dropout, training=self.training)
        return (hidden_states if self.pre_norm else norm(hidden_states)), weights


class VanillaEncoderLayer(GradientCheckpointingLayer):
    """Self-attention then feed-forward, each wrapped by the residual connection (`VanillaSublayerConnection`)."""

    def __init__(self, config: VanillaTransformerConfig, layer_idx: int):
        super().__init__()
        self.residual = VanillaSublayerConnection(config)
        self.self_attn = VanillaAttention(config, is_cross_attention=False, is_causal=False, layer_idx=layer_idx)
        self.self_attn_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.feed_forward = VanillaFeedForward(config)
        self.final_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None, **kwargs) -> torch.Tensor:
        hidden_states, _ = self.residual(
            hidden_states,
            self.self_attn_layer_norm,
            lambda x: self.self_attn(x, attention_mask=attention_mask, **kwargs),
        )
        hidden_states, _ = self.residual(hidden_states, self.final_layer_norm, self.feed_forward)
        return hidden_states


class VanillaDecoderLayer(GradientCheckpointingLayer):
    """Masked self-attention, attention over the encoder output, then feed-forward (section 3.1), each sub-layer
    wrapped by the residual connection. The last layer of a pointer-generator also returns its attention weights over
    the encoder output (batch, heads, target, source), which the copy distribution reads."""

    def __init__(self, config: VanillaTransformerConfig, layer_idx: int):
        super().__init__()
        self.residual = VanillaSublayerConnection(config)
        self.returns_copy_attention = config.pointer_generator and layer_idx == config.decoder_layers - 1
        self.self_attn = VanillaAttention(config, is_cross_attention=False, is_causal=True, layer_idx=layer_idx)
        self.self_attn_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.encoder_attn = VanillaAttention(
            config,
            is_cross_attention=True,
            is_causal=False,
            layer_idx=layer_idx,
            returns_weights=self.returns_copy_attention,
        )
        self.encoder_attn_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.feed_forward = VanillaFeedForward(config)
        self.final_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None,
        encoder_hidden_states: torch.Tensor,
        encoder_attention_mask: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        def self_attention(x: torch.Tensor):
            return self.self_attn(x, attention_mask=attention_mask, past_key_values=past_key_values, **kwargs)

        def encoder_attention(x: torch.Tensor):
            return self.encoder_attn(
                x,
                attention_mask=encoder_attention_mask,
                key_value_states=encoder_hidden_states,
                past_key_values=past_key_values,
                **kwargs,
            )

        hidden_states, _ = self.residual(hidden_states, self.self_attn_layer_norm, self_attention)
        hidden_states, cross_attn_weights = self.residual(
            hidden_states, self.encoder_attn_layer_norm, encoder_attention
        )
        hidden_states, _ = self.residual(hidden_states, self.final_layer_norm, self.feed_forward)
        if self.returns_copy_attention:
            return hidden_states, cross_attn_weights
        return hidden_states


class VanillaPreTrainedModel(PreTrainedModel):
    config: VanillaTransformerConfig
    config_class = VanillaTransformerConfig
    base_model_prefix = "model"
    main_input_name = "input_ids"
    supports_gradient_checkpointing = True
    _no_split_modules = ["VanillaEncoderLayer", "VanillaDecoderLayer"]
    _supports_sdpa = True
    _supports_flash_attn = True
    _supports_flex_attn = True
    _can_compile_fullgraph = True

    def tie_weights(self, *args, **kwargs) -> None:
        """transformers' tying of the matrices `_tied_weights_keys` names, then the encoder and decoder share the
        embedding module (`VanillaTransformerModel.share_embedding_module`). transformers ties after `from_pretrained`
        has loaded the checkpoint, never while it builds the model: a checkpoint without the embedding matrix then
        reports it missing and initialises it, as it would were the modules shared from the start."""
        super().tie_weights(*args, **kwargs)
        if isinstance(self.base_model, VanillaTransformerModel):
            self.base_model.share_embedding_module()

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """The initialisation described in this module's docstring, or fairseq's (`config.init_scheme`)."""
        fairseq = self.config.init_scheme == "fairseq"
        if isinstance(module, nn.Linear) and fairseq:
            xavier = self._fairseq_xavier()
            if module is getattr(self, "lm_head", None):  # untied (tied, it is the embedding matrix)
                init.normal_(module.weight, mean=0.0, std=self.config.d_model**-0.5)
            elif module in xavier:  # an attention projection
                gain, zero_bias = xavier[module]
                bound = gain * math.sqrt(6 / (2 * module.in_features))  # Xavier-uniform of each d x d block
                init.uniform_(module.weight, -bound, bound)
                if zero_bias:
                    init.zeros_(module.bias)
                else:
                    _linear_default(module.bias, module.in_features)
            else:
                _linear_default(module.weight, module.in_features)
                if module.bias is not None:
                    _linear_default(module.bias, module.in_features)
        elif isinstance(module, nn.Linear):
            init.normal_(module.weight, mean=0.0, std=self.config.init_std)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=self.config.d_model**-0.5)
            if module.padding_idx is not None and not getattr(module.weight, "_is_hf_initialized", False):
                init.zeros_(module.weight[module.padding_idx])
        elif isinstance(module, nn.LayerNorm):
            init.ones_(module.weight)
            init.zeros_(module.bias)

    def _fairseq_xavier(self) -> dict[nn.Module, tuple[float, bool]]:
        """The projections that fairseq's MultiheadAttention draws Xavier-uniform, each with its (gain, zero bias):
        W^Q, W^K, W^V at gain 1/sqrt(2) with PyTorch's default bias, W^O at gain 1 with a zero bias."""
        xavier = {}
        for attention in (module for module in self.modules() if isinstance(module, VanillaAttention)):
            inputs = (attention.q_proj, attention.kv_proj) if attention.is_cross_attention else (attention.qkv_proj,)
            xavier |= dict.fromkeys(inputs, (2**-0.5, False))
            xavier[attention.out_proj] = (1.0, True)
        return xavier


def _linear_default(tensor: torch.Tensor, fan_in: int) -> None:
    """PyTorch's `nn.Linear` initialisation of a weight or bias, U(+-fan_in^-0.5) (kaiming_uniform_ at a=sqrt(5) has
    that bound), which fairseq keeps for most projections."""
    init.uniform_(tensor, -(fan_in**-0.5), fan_in**-0.5)


def _wants_attention_weights(config: VanillaTransformerConfig, kwargs: dict) -> bool:
    """Whether this call returns attention weights (`output_attentions` passed, or set in the config)."""
    return bool(kwargs.get("output_attentions", config.output_attentions))


def _mask_config(config: VanillaTransformerConfig, kwargs: dict) -> VanillaTransformerConfig:
    """The config the attention masks are built for: a copy set to eager when the call asks for attention weights
    and the model's implementation (e.g. SDPA, whose masks eager attention cannot read) returns none."""
    if config._attn_implementation == "eager" or not _wants_attention_weights(config, kwargs):
        return config
    return _eager_config(config)


def _eager_config(config: VanillaTransformerConfig) -> VanillaTransformerConfig:
    """A copy of `config` set to eager attention, to build masks that eager attention reads (additive floats)."""
    if config._attn_implementation == "eager":
        return config
    eager = copy.copy(config)
    eager._attn_implementation = "eager"
    return eager


class VanillaStack(VanillaPreTrainedModel):
    """What the encoder and decoder stacks share: token embeddings * sqrt(d_model) (section 3.4) + positions (3.5),
    dropout, N layers of `layer_class`, and under `norm_style="pre"` a final LayerNorm. Its modules are the stacks'
    checkpoint keys, in this order (`embed_tokens`, `embed_positions`, `layers`, `layer_norm`)."""

    def __init__(self, config: VanillaTransformerConfig, layer_class: type[nn.Module], num_layers: int):
        super().__init__(config)
        self.embed_scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0
        self.dropout = config.dropout
        self.embed_tokens = nn.Embedding(config.vocab_size, config.d_model, config.pad_token_id)
        self.embed_positions = VanillaPositionalEncoding(config)
        self.layers = nn.ModuleList([layer_class(config, i) for i in range(num_layers)])
        self.layer_norm = (
            nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if config.norm_style == "pre" else None
        )
        self.gradient_checkpointing = False
        self.post_init()

    def embed(self, inputs_embeds: torch.Tensor, start: int | torch.Tensor) -> torch.Tensor:
        """The first layer's input: the embeddings scaled, plus the positions from `start` on, after dropout."""
        positions = self.embed_positions(start, inputs_embeds.shape[1], inputs_embeds.device)
        hidden_states = inputs_embeds * self.embed_scale + positions.to(inputs_embeds.dtype)
        return nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)


class VanillaEncoder(VanillaStack):
    """The encoder stack: embeddings * sqrt(d_model) + positions, dropout, then N encoder layers."""

    _can_record_outputs = {"hidden_states": VanillaEncoderLayer, "attentions": VanillaAttention}

    def __init__(self, config: VanillaTransformerConfig):
        super().__init__(config, VanillaEncoderLayer, config.encoder_layers)

    @merge_with_config_defaults
    @capture_outputs
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> BaseModelOutput:
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("Pass exactly one of input_ids or inputs_embeds to the encoder.")
        if input_ids is not None:
            check_token_ids(input_ids, self.config.vocab_size, "input_ids", check_range=not self.training)
            inputs_embeds = self.embed_tokens(input_ids)
        elif inputs_embeds.dim() != 3 or inputs_embeds.shape[1] == 0:
            raise ValueError(
                f"inputs_embeds must be a non-empty (batch, length, d_model) tensor, got {tuple(inputs_embeds.shape)}."
            )
        if attention_mask is not None and tuple(attention_mask.shape) != tuple(inputs_embeds.shape[:2]):
            raise ValueError(
                f"attention_mask has shape {tuple(attention_mask.shape)} but the input has shape "
                f"{tuple(inputs_embeds.shape[:2])}: they must match."
            )
        hidden_states = self.embed(inputs_embeds, 0)

        attention_mask = create_bidirectional_mask(
            config=_mask_config(self.config, kwargs), inputs_embeds=hidden_states, attention_mask=attention_mask
        )
        for layer in self.layers:
            hidden_states = layer(hidden_states, attention_mask, **kwargs)
        if self.layer_norm is not None:
            hidden_states = self.layer_norm(hidden_states)
        return BaseModelOutput(last_hidden_state=hidden_states)


@dataclass
class VanillaDecoderOutput(BaseModelOutputWithPastAndCrossAttentions):
    r"""
    The decoder's outputs, with what a pointer-generator's copy reads (both `None` for other models):

    copy_attention: a_t, the last layer's attention weights over the encoder output averaged over heads, of shape
        (batch, target length, source length); padding positions get none.
    embeddings: x_t, the decoder input as fed to its first layer, of shape (batch, target length, d_model).
    """

    copy_attention: torch.FloatTensor | None = None
    embeddings: torch.FloatTensor | None = None


class VanillaDecoder(VanillaStack):
    """The decoder stack: shifted target embeddings * sqrt(d_model) + positions, dropout, then N decoder layers."""

    _can_record_outputs = {
        "hidden_states": VanillaDecoderLayer,
        "attentions": OutputRecorder(VanillaAttention, index=1, layer_name="self_attn"),
        "cross_attentions": OutputRecorder(VanillaAttention, index=1, layer_name="encoder_attn"),
    }

    def __init__(self, config: VanillaTransformerConfig):
        super().__init__(config, VanillaDecoderLayer, config.decoder_layers)

    @merge_with_config_defaults
    @capture_outputs
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        encoder_hidden_states: torch.Tensor | None = None,
        encoder_attention_mask: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        use_cache: bool | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> VanillaDecoderOutput:
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("Pass exactly one of decoder_input_ids or decoder_inputs_embeds to the decoder.")
        if encoder_hidden_states is None:
            raise ValueError("The decoder attends over the encoder output: encoder_hidden_states is required.")
        past_length = past_key_values.get_seq_length() if past_key_values is not None else 0
        if input_ids is not None:
            # Continuing from a cache, the ids are generate()'s own choices: no host sync per step to check them.
            # A static cache's length is a tensor: compiled, no check (a graph break); eager, one host read a step.
            check_range = not self.training and not is_torchdynamo_compiling() and bool(past_length == 0)
            check_token_ids(input_ids, self.config.vocab_size, "decoder_input_ids", check_range=check_range)
            inputs_embeds = self.embed_tokens(input_ids)
        if encoder_attention_mask is not None and tuple(encoder_attention_mask.shape) != tuple(
            encoder_hidden_states.shape[:2]
        ):
            raise ValueError(
                f"attention_mask has shape {tuple(encoder_attention_mask.shape)} but the encoder input has shape "
                f"{tuple(encoder_hidden_states.shape[:2])}: they must match."
            )
        if inputs_embeds.shape[0] % encoder_hidden_states.shape[0]:
            raise ValueError(
                f"The decoder's {inputs_embeds.shape[0]} rows do not divide among the encoder output's "
                f"{encoder_hidden_states.shape[0]}: pass one encoder row a decoder row, or k consecutive decoder rows "
                "a source (its beams)."
            )
        if use_cache and past_key_values is None:
            past_key_values = EncoderDecoderCache(DynamicCache(config=self.config), DynamicCache(config=self.config))
        hidden_states = self.embed(inputs_embeds, past_length)

        causal_mask, cross_attention_mask, copy_attention_mask = self._masks(
            hidden_states, attention_mask, encoder_hidden_states, encoder_attention_mask, past_key_values, kwargs
        )
        # x_t of the pointer-generator: See et al. (2017) feed it the decoder input; here that is the input to the
        # first decoder layer, the token embedding * sqrt(d_model) + its position (after the embedding dropout).
        embeddings, copy_attention = hidden_states, None
        for layer in self.layers:
            hidden_states = layer(
                hidden_states,
                causal_mask,
                encoder_hidden_states,  # positional, for gradient checkpointing
                encoder_attention_mask=copy_attention_mask if layer.returns_copy_attention else cross_attention_mask,
                past_key_values=past_key_values,
                **kwargs,
            )
            if layer.returns_copy_attention:
                hidden_states, cross_attn_weights = hidden_states
                copy_attention = cross_attn_weights.mean(dim=1)  # a_t: averaged over the heads
        if self.layer_norm is not None:
            hidden_states = self.layer_norm(hidden_states)
        return VanillaDecoderOutput(
            last_hidden_state=hidden_states,
            **{CACHE_NAME: past_key_values},
            copy_attention=copy_attention,
            embeddings=embeddings if self.config.pointer_generator else None,
        )

    def _masks(self, hidden_states, attention_mask, encoder_hidden_states, encoder_attention_mask, cache, kwargs):
        """The decoder's three masks: causal self-attention (with the cache's past), cross-attention over the
        source, and the last layer's of a pointer-generator, which computes its attention weights with eager
        attention, whose mask (additive floats) is not SDPA's or flash attention's."""
        mask_config = _mask_config(self.config, kwargs)
        # The cache by position, the fourth as in every release: transformers 5.24 renamed the parameter
        # (`past_key_values`, deprecated until 5.40, is now `cache`).
        self_attention_cache = cache.self_attention_cache if cache is not None else None
        causal_mask = create_causal_mask(mask_config, hidden_states, attention_mask, self_attention_cache)
        source = dict(  # the queries as cross-attention sees them (`share_source`)
            inputs_embeds=share_source(hidden_states, encoder_hidden_states.shape[0]),
            attention_mask=encoder_attention_mask,
            encoder_hidden_states=encoder_hidden_states,
        )
        cross_attention_mask = create_bidirectional_mask(config=mask_config, **source)
        copy_attention_mask = cross_attention_mask
        if self.config.pointer_generator and mask_config._attn_implementation != "eager":
            copy_attention_mask = create_bidirectional_mask(config=_eager_config(mask_config), **source)
        return causal_mask, cross_attention_mask, copy_attention_mask


@dataclass
class VanillaSeq2SeqModelOutput(Seq2SeqModelOutput):
    r"""
    `Seq2SeqModelOutput` with what a pointer-generator's copy reads from the decoder (both `None` for other models):

    copy_attention: a_t, the last decoder layer's attention weights over the encoder output averaged over heads, of
        shape (batch, target length, source length).
    decoder_embeddings: x_t, the decoder input as fed to its first layer, of shape (batch, target length, d_model).
    """

    copy_attention: torch.FloatTensor | None = None
    decoder_embeddings: torch.FloatTensor | None = None


class VanillaTransformerModel(VanillaPreTrainedModel):
    """The bare encoder-decoder, returning the decoder's last hidden states."""

    def __init__(self, config: VanillaTransformerConfig):
        super().__init__(config)
        # One matrix for both embeddings (and, in the head, the pre-softmax projection): section 3.4.
        self.shared = nn.Embedding(config.vocab_size, config.d_model, config.pad_token_id)
        self._tied_weights_keys = {
            "encoder.embed_tokens.weight": "shared.weight",
            "decoder.embed_tokens.weight": "shared.weight",
        }
        self.encoder = VanillaEncoder(config)
        self.decoder = VanillaDecoder(config)
        self.post_init()  # ties the embeddings (`VanillaPreTrainedModel.tie_weights`)

    def share_embedding_module(self) -> None:
        """Once transformers has tied the encoder's and decoder's embedding matrices to the shared one, the encoder and
        decoder take the shared module itself, not only its matrix: FSDP2 refuses a matrix shared by modules in two
        groups. Untied (`tie_word_embeddings=False`, or while `from_pretrained` builds the model: it ties after
        loading), each keeps its own."""
        shared = self.shared.weight
        if self.encoder.embed_tokens.weight is shared and self.decoder.embed_tokens.weight is shared:
            self.encoder.embed_tokens = self.decoder.embed_tokens = self.shared

    def get_input_embeddings(self) -> nn.Embedding:
        return self.shared

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.shared = value
        self.encoder.embed_tokens = value
        self.decoder.embed_tokens = value

    @can_return_tuple
    @takes_cache_keyword
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: tuple[torch.Tensor] | BaseModelOutput | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        decoder_inputs_embeds: torch.Tensor | None = None,
        use_cache: bool | None = None,
        cache: Cache | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> VanillaSeq2SeqModelOutput:
        r"""
        cache: the decoder's cache, transformers 5.24's name for `past_key_values` (either may be passed).
        """
        if encoder_outputs is None:
            encoder_outputs = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, inputs_embeds=inputs_embeds, **kwargs
            )
        elif not isinstance(encoder_outputs, BaseModelOutput):
            encoder_outputs = BaseModelOutput(
                last_hidden_state=encoder_outputs[0],
                hidden_states=encoder_outputs[1] if len(encoder_outputs) > 1 else None,
                attentions=encoder_outputs[2] if len(encoder_outputs) > 2 else None,
            )
        decoder_outputs = self.decoder(
            input_ids=decoder_input_ids,
            attention_mask=decoder_attention_mask,
            encoder_hidden_states=encoder_outputs.last_hidden_state,
            encoder_attention_mask=attention_mask,
            past_key_values=passed_cache(cache, past_key_values),
            inputs_embeds=decoder_inputs_embeds,
            use_cache=use_cache,
            **kwargs,
        )
        return VanillaSeq2SeqModelOutput(
            last_hidden_state=decoder_outputs.last_hidden_state,
            **{CACHE_NAME: getattr(decoder_outputs, CACHE_NAME)},
            decoder_hidden_states=decoder_outputs.hidden_states,
            decoder_attentions=decoder_outputs.attentions,
            cross_attentions=decoder_outputs.cross_attentions,
            encoder_last_hidden_state=encoder_outputs.last_hidden_state,
            encoder_hidden_states=encoder_outputs.hidden_states,
            encoder_attentions=encoder_outputs.attentions,
            copy_attention=decoder_outputs.copy_attention,
            decoder_embeddings=decoder_outputs.embeddings,
        )


def label_smoothed_cross_entropy(
    logits: torch.Tensor,
    labels: torch.Tensor,
    epsilon: float,
    pad_token_id: int,
    num_items_in_batch: int | torch.Tensor | None = None,
    normalized: bool = False,
) -> torch.Tensor:
    """Cross-entropy against the smoothed target (1 - epsilon) * one_hot + epsilon / vocab_size, averaged over the
    non-padding label tokens of the batch, or summed and divided by `num_items_in_batch` when the Trainer counts the
    tokens of a whole gradient-accumulation step. `normalized`: the logits are already log-probabilities (a
    pointer-generator's), so the cross-entropy reads them as they are instead of through another log-softmax."""
    labels = labels.masked_fill(labels == pad_token_id, -100)
    if normalized:
        log_probs = logits.float().reshape(-1, logits.shape[-1])
        flat = labels.reshape(-1).to(logits.device)
        kept = flat != -100
        target = log_probs.gather(-1, flat.clamp_min(0)[:, None]).squeeze(-1)
        # A sum, then one division per token: the mean's backward would divide every (token, vocab) gradient.
        per_token = -(1 - epsilon) * target - epsilon * log_probs.sum(-1) / log_probs.shape[-1]
        return per_item_loss(per_token.masked_fill(~kept, 0).sum(), labels, num_items_in_batch)
    loss = nn.functional.cross_entropy(
        logits.float().reshape(-1, logits.shape[-1]),
        labels.reshape(-1).to(logits.device),
        ignore_index=-100,
        reduction="sum",
        label_smoothing=epsilon,
    )
    return per_item_loss(loss, labels, num_items_in_batch)


def chunked_label_smoothed_cross_entropy(
    hidden_states: torch.Tensor,
    head: nn.Linear,
    labels: torch.Tensor,
    epsilon: float,
    pad_token_id: int,
    chunk_tokens: int,
    num_items_in_batch: int | torch.Tensor | None = None,
) -> torch.Tensor:
    """`label_smoothed_cross_entropy` of the logits `head(hidden_states)`, `chunk_tokens` positions at a
    time: each chunk's logits are recomputed in the backward pass (activation checkpointing), so at most one chunk's
    logits exist at once. Reads nothing back from the device."""
    hidden = hidden_states.reshape(-1, hidden_states.shape[-1])
    labels = labels.masked_fill(labels == pad_token_id, -100).reshape(-1).to(hidden.device)
    total = hidden.new_zeros((), dtype=torch.float32)
    for start in range(0, hidden.shape[0], chunk_tokens):
        chunk = slice(start, start + chunk_tokens)
        total = total + checkpoint(
            _chunk_loss,
            hidden[chunk],
            head.weight,
            head.bias,
            labels[chunk],
            epsilon,
            pad_token_id,
            use_reentrant=False,
        )
    return per_item_loss(total, labels, num_items_in_batch)


def _chunk_loss(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    labels: torch.Tensor,
    epsilon: float,
    pad_token_id: int,
) -> torch.Tensor:
    """The summed label-smoothed loss of one chunk's logits."""
    logits = nn.functional.linear(hidden, weight, bias)
    return label_smoothed_cross_entropy(logits, labels, epsilon, pad_token_id, num_items_in_batch=1)


def _kept_positions(logits_to_keep: int | torch.Tensor) -> slice | torch.Tensor:
    """The decoder positions whose logits are computed: all (0), the last `logits_to_keep`, or those listed."""
    if isinstance(logits_to_keep, torch.Tensor):
        return logits_to_keep
    return slice(-logits_to_keep, None) if logits_to_keep > 0 else slice(None)


@dataclass
class VanillaSeq2SeqLMOutput(Seq2SeqLMOutput):
    r"""
    `Seq2SeqLMOutput` with, for a pointer-generator (whose `logits` are the log-probabilities of its final
    distribution):

    p_gen: the probability of generating from the vocabulary rather than copying, of shape (batch, target length).
    copy_attention: a'_t, the distribution it copies with (the last decoder layer's cross-attention averaged over
        heads, renormalized over the source tokens it may copy), of shape (batch, target length, source length).
    """

    p_gen: torch.FloatTensor | None = None
    copy_attention: torch.FloatTensor | None = None


class VanillaTransformerForConditionalGeneration(VanillaPreTrainedModel, VanillaGenerationMixin):
    """The encoder-decoder with the pre-softmax projection tied to the shared embeddings, the label-smoothed loss and
    the paper's decoding (beam search with the GNMT length penalty and a per-source maximum output length); with
    `config.pointer_generator`, the copy mechanism of `VanillaPointerGenerator` on top."""

    _tied_weights_keys = {"lm_head.weight": "model.shared.weight"}
    # A new model's generation config is the paper's decoding for `config.decoding` (the public hook of
    # `PreTrainedModel.__init__`); a saved model's is its generation_config.json.
    generation_config_class = VanillaGenerationConfig

    def __init__(self, config: VanillaTransformerConfig):
        super().__init__(config)
        self.model = VanillaTransformerModel(config)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=config.final_logits_bias)
        self.pointer_generator = VanillaPointerGenerator(config) if config.pointer_generator else None
        self.post_init()

    def adjust_generation_fn(self, generation_config, *args, **kwargs) -> None:
        """After transformers loads the saved generation config (as a plain `GenerationConfig`), it is made a
        `VanillaGenerationConfig` with the same values: `update()` then knows hf_vanilla's settings, and a model saved
        before a setting existed gets its default (the decoding it had)."""
        super().adjust_generation_fn(generation_config, *args, **kwargs)
        if not isinstance(self.generation_config, self.generation_config_class):
            self.generation_config = self.generation_config_class.from_dict(self.generation_config.to_dict())

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def set_output_embeddings(self, new_embeddings: nn.Linear) -> None:
        self.lm_head = new_embeddings

    def get_encoder(self) -> VanillaEncoder:
        return self.model.encoder

    def prepare_decoder_input_ids_from_labels(self, labels: torch.Tensor) -> torch.Tensor:
        return shift_tokens_right(labels, self.config.pad_token_id, self.config.decoder_start_token_id)

    @can_return_tuple
    @takes_cache_keyword
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: tuple[torch.Tensor] | BaseModelOutput | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        decoder_inputs_embeds: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        logits_to_keep: int | torch.Tensor = 0,
        word_continuation_mask: torch.Tensor | None = None,
        cache: Cache | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> VanillaSeq2SeqLMOutput:
        r"""
        input_ids: the source token ids. A pointer-generator copies from them, so it needs them with
            `encoder_outputs` too (`generate()` passes them at every step).
        labels: target token ids (padding or -100 is ignored). Without `decoder_input_ids`, the decoder reads the
            labels shifted right behind `decoder_start_token_id`. The loss is the label-smoothed cross-entropy of
            `config.label_smoothing` (the paper: 0.1).
        logits_to_keep: compute the pre-softmax projection only for the last `logits_to_keep` positions (0: all).
        word_continuation_mask: a pointer-generator's whole-word copying (`whole_word_copy_positions`): True for each
            vocabulary id that continues a word; `generate()` passes its generation config's `word_continuation_ids`.
        cache: the decoder's cache, transformers 5.24's name for `past_key_values` (either may be passed).

        A pointer-generator's `logits` are log P(w) of its final distribution, normalized (a softmax of them is
        themselves), and `p_gen` its probability of generating from the vocabulary.
        """
        if self.pointer_generator is not None and input_ids is None:
            raise ValueError("A pointer-generator copies source tokens: pass input_ids (with encoder_outputs too).")
        if word_continuation_mask is not None:
            check_continuation_mask(word_continuation_mask, self.config.vocab_size, self.pointer_generator is not None)
        num_items_in_batch = kwargs.pop("num_items_in_batch", None)
        if labels is not None:
            use_cache = False
            if decoder_input_ids is None and decoder_inputs_embeds is None:
                decoder_input_ids = self.prepare_decoder_input_ids_from_labels(labels)
        outputs: Seq2SeqModelOutput = self.model(
            input_ids,
            attention_mask=attention_mask,
            decoder_input_ids=decoder_input_ids,
            decoder_attention_mask=decoder_attention_mask,
            encoder_outputs=encoder_outputs,
            inputs_embeds=inputs_embeds,
            decoder_inputs_embeds=decoder_inputs_embeds,
            use_cache=use_cache,
            **{CACHE_NAME: passed_cache(cache, past_key_values)},
            **kwargs,
        )
        kept = _kept_positions(logits_to_keep)
        hidden_states = outputs.last_hidden_state[:, kept, :]
        mixture = loss = None
        if labels is not None and self.training and self.config.loss_chunk_tokens:
            logits, loss = None, self._chunked_loss(hidden_states, labels, num_items_in_batch)
        else:
            logits = self.lm_head(hidden_states)
            if self.pointer_generator is not None:
                mixture = self.pointer_generator.final_distribution(
                    logits, outputs, kept, input_ids, decoder_input_ids, word_continuation_mask
                )
                logits = mixture.log_probs
            if labels is not None:
                loss = self._loss(logits, mixture, labels, num_items_in_batch)
        return VanillaSeq2SeqLMOutput(
            loss=loss,
            logits=logits,
            **{CACHE_NAME: getattr(outputs, CACHE_NAME)},
            decoder_hidden_states=outputs.decoder_hidden_states,
            decoder_attentions=outputs.decoder_attentions,
            cross_attentions=outputs.cross_attentions,
            encoder_last_hidden_state=outputs.encoder_last_hidden_state,
            encoder_hidden_states=outputs.encoder_hidden_states,
            encoder_attentions=outputs.encoder_attentions,
            p_gen=mixture.p_gen if mixture is not None else None,
            copy_attention=mixture.copy_attention if mixture is not None else None,
        )

    def _chunked_loss(self, hidden_states: torch.Tensor, labels: torch.Tensor, num_items_in_batch) -> torch.Tensor:
        """The label-smoothed loss computed `config.loss_chunk_tokens` positions at a time (no whole logits)."""
        config = self.config
        return chunked_label_smoothed_cross_entropy(
            hidden_states,
            self.lm_head,
            labels,
            config.label_smoothing,
            config.pad_token_id,
            config.loss_chunk_tokens,
            num_items_in_batch,
        )

    def _loss(
        self, logits: torch.Tensor, mixture: CopyMixture | None, labels: torch.Tensor, num_items_in_batch
    ) -> torch.Tensor:
        """The paper's label-smoothed cross-entropy, or a pointer-generator's (`pointer_generator_loss`)."""
        config = self.config
        if mixture is None:
            return label_smoothed_cross_entropy(
                logits, labels, config.label_smoothing, config.pad_token_id, num_items_in_batch
            )
        return pointer_generator_loss(
            mixture,
            labels,
            config.label_smoothing,
            config.pad_token_id,
            num_items_in_batch,
            smoothing=config.pointer_smoothing,
            force_copy=config.force_copy,
        )


__all__ = [
    "VanillaPreTrainedModel",
    "VanillaTransformerModel",
    "VanillaTransformerForConditionalGeneration",
    "label_smoothed_cross_entropy",
    "sinusoidal_positions",
    # The copy mechanism, at home in pointer_generator_vanilla.py: importable from here as before.
    "CopyMixture",
    "VanillaPointerGenerator",
    "dense_pointer_generator_log_probs",
    "pointer_generator_loss",
    "whole_word_copy_positions",
]
