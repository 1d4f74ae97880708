"""Configuration of the Transformer of "Attention Is All You Need" (Vaswani et al., 2017), and its decoding."""

import warnings

from huggingface_hub.dataclasses import strict
from transformers import GenerationConfig, PreTrainedConfig
from transformers.activations import ACT2CLS, ACT2FN

from .decoding_settings import DECODING  # the paper's decoding rows, beside the settings a user may change

# Model sizes. `base` and `big` are the rows of Table 3 of the paper (`big_enfr`: big for English-French);
# `parsing` is the section 6.3 parser (4 layers, d_model 1024); `summarization` is Transformer-base with the
# pointer-generator's copy mechanism (See et al., 2017), `summarization_small` a smaller one for small corpora;
# `demo`/`demo_parsing`/`demo_summarization` fit the 15-minute CPU demos; `tiny` is for tests, `tiny_summarization`
# the same with the copy mechanism. A size written for one task names it (`task`), and with it its decoding row.
# The sizes are the one place a recipe's preset gets the copy mechanism (COPYING); only a user's flag overrides it.
# The paper's base model (Table 3), from which every other size is written as what differs.
BASE = dict(d_model=512, encoder_layers=6, decoder_layers=6, num_attention_heads=8, d_ff=2048, dropout=0.1)
BIG = dict(BASE, d_model=1024, num_attention_heads=16, d_ff=4096, dropout=0.3)
DEMO = dict(BASE, d_model=128, encoder_layers=3, decoder_layers=3, num_attention_heads=4, d_ff=512)
TINY = dict(BASE, vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=2, num_attention_heads=4, d_ff=128)
COPYING = dict(pointer_generator=True, task="summarization")  # a summarizer: the copy mechanism, its task
SIZES: dict[str, dict] = {
    "base": BASE,
    "big": BIG,
    # Section 6.1: the big English-French model used dropout 0.1 instead of 0.3.
    "big_enfr": dict(BIG, dropout=0.1),
    "parsing": dict(BIG, encoder_layers=4, decoder_layers=4, task="parsing"),
    "summarization": dict(BASE, **COPYING),
    # For corpora of a few million tokens (AESLC's e-mails): base's width, 4 + 4 layers, dropout 0.3, copying.
    "summarization_small": dict(BASE, encoder_layers=4, decoder_layers=4, dropout=0.3, **COPYING),
    "demo": DEMO,
    "demo_parsing": dict(DEMO, task="parsing", tree_leaves="words"),
    "demo_summarization": dict(DEMO, **COPYING),
    "tiny": TINY,
    "tiny_summarization": dict(TINY, **COPYING),
}
# `PRESETS`, the sizes' former name, is `SIZES` with a FutureWarning (`__getattr__` below): in hf_vanilla "preset"
# means a recipe's `--preset` (training settings and a size).
PRESETS_DEPRECATION = "PRESETS is deprecated and will be removed: use SIZES, the same dict of model sizes."

# What a model is trained for (`config.task`): the recipes' three tasks, each with a decoding row of its name.
TASKS = ("translation", "parsing", "summarization")
TREE_LEAVES = ("placeholder", "pos", "words")
LINEARIZATIONS = ("top-down", "in-order")
POINTER_SMOOTHING = ("mixture", "vocabulary")
INIT_SCHEMES = ("normal", "fairseq")


def activation_problem(name: str) -> str | None:
    """Why the feed-forward cannot use the activation `name` (None when it can): it must be one of transformers'
    `ACT2FN` (as Marian's is), without learned parameters (the feed-forward's weights are fc1 and fc2 alone)."""
    if name not in ACT2CLS:
        return f"not one of transformers' activations ({', '.join(sorted(ACT2CLS))})"
    if any(True for _ in ACT2FN[name].parameters()):
        return "it has learned parameters, which hf_vanilla's feed-forward does not hold"
    return None


class VanillaGenerationConfig(GenerationConfig):
    """`GenerationConfig` with the paper's two decoding settings that transformers lacks (read by
    `VanillaTransformerForConditionalGeneration.generate`):

    - `length_penalty_style`: `"gnmt"` ranks finished beams by log P(Y|X) / ((5 + |Y|) / 6)^alpha (Wu et al., 2016),
      alpha = `length_penalty`; `"power"` keeps transformers' log P / |Y|^alpha.
    - `max_length_offset`: each sentence stops at its own source length + this many tokens (None: no such limit).

    And two for summarizers: `no_stutter_span_size`, no span of 1 to this many tokens twice in a row unless the
    source holds it twice in a row (0: no such rule); `word_continuation_ids`, for a pointer-generator, the ids of the
    vocabulary's pieces that continue a word (`hf_vanilla.tokenization.word_continuation_ids`): such a piece is
    copied only from a source position right after the token the hypothesis has just written, so that a copied word
    is copied whole, never spliced from pieces of other words ("phillments"); None: no such rule.

    And one of speed: `drop_finished_sentences` (on by default) lets beam search drop a sentence from the batch once
    no later step can change its hypotheses, instead of computing its beams until the batch's last sentence ends; the
    outputs are the same (see `beam_search_vanilla.beam_search`).

    A new model's generation config is the paper's decoding for its `config.decoding` (`DECODING`); it is saved as
    `generation_config.json` beside the weights and read back from there."""

    def __init__(
        self,
        length_penalty_style: str = "power",
        max_length_offset: int | None = None,
        no_stutter_span_size: int = 0,
        word_continuation_ids: list[int] | None = None,
        drop_finished_sentences: bool = True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.drop_finished_sentences = drop_finished_sentences
        self.length_penalty_style = length_penalty_style
        self.max_length_offset = max_length_offset
        self.no_stutter_span_size = no_stutter_span_size
        self.word_continuation_ids = word_continuation_ids

    @classmethod
    def from_model_config(cls, model_config) -> "VanillaGenerationConfig":
        """The paper's decoding for `model_config.decoding`, with the model's special tokens."""
        tokens = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id")
        return cls(
            **DECODING[model_config.decoding],
            early_stopping=True,
            **{name: getattr(model_config, name) for name in tokens},
        )


@strict
class VanillaTransformerConfig(PreTrainedConfig):
    r"""
    Configuration of [`VanillaTransformerModel`]: the post-norm encoder-decoder of Vaswani et al. (2017). The defaults
    are the paper's base model (Table 3): N=6, d_model=512, h=8, d_ff=2048, P_drop=0.1, epsilon_ls=0.1, with one
    37,000-token vocabulary shared by source and target.

    Args:
        vocab_size: size of the shared source/target vocabulary.
        d_model: width of every sub-layer output and embedding.
        encoder_layers / decoder_layers: N, the number of identical layers in each stack.
        num_attention_heads: h; d_k = d_v = d_model / h.
        d_ff: inner width of the position-wise feed-forward networks.
        dropout: P_drop, applied to each sub-layer output before the residual add and to the embedding+position sums.
        attention_dropout: dropout on attention weights (not used in the paper: 0).
        activation_dropout: dropout after the feed-forward ReLU (not used in the paper: 0).
        label_smoothing: epsilon_ls of the training loss.
        norm_style: `"post"` (the paper: LayerNorm(x + Sublayer(x))) or `"pre"` (x + Sublayer(LayerNorm(x)), with a
            final LayerNorm after each stack).
        position_embedding_type: `"sinusoidal"` (the paper, any length) or `"learned"` (Table 3 row E).
        max_position_embeddings: size of the learned position table; unused by sinusoidal positions.
        layer_norm_eps: epsilon of every LayerNorm.
        init_std: standard deviation of the normal initialisation of every projection matrix (embeddings:
            d_model^-0.5) under `init_scheme="normal"`.
        init_scheme: how a new model's projections are drawn (the paper gives no initialisation; embeddings are
            N(0, d_model^-0.5) under both): `"normal"`, N(0, init_std) weights and zero biases, or `"fairseq"`, fairseq
            0.12's `transformer`: W^Q, W^K, W^V Xavier-uniform at gain 1/sqrt(2), W^O Xavier-uniform with a zero
            bias, every other projection (feed-forward, pointer gate) and the attention input biases PyTorch's
            `nn.Linear` default U(+-fan_in^-0.5), an untied output layer N(0, d_model^-0.5) (the translation
            recipe's presets take it).
        task: what the model is trained for, one of `TASKS`: `"translation"`, `"parsing"` or `"summarization"`;
            `hf-vanilla translate`/`parse`/`summarize` and the app's tabs go by it. Default: the task of `decoding`
            when given (a config.json saved before `task` existed has only `decoding`, which named the task), else
            `"translation"` (a MarianMTModel, which has no `task`, translates too).
        decoding: which of the paper's decodings (`DECODING`) the model's `generation_config` starts from:
            `"translation"` (beam 4, alpha 0.6, source length + 50), `"parsing"` (beam 21, alpha 0.3, + 300) or
            `"summarization"` (beam 4, alpha 1.0, summaries of 1 to 64 tokens, no 3-gram twice, no unlicensed stutter
            of up to 4 tokens). Default: the row of `task`; another row decodes a model of one task as another's.
        tree_leaves: for parsers, what stands for each word in the linearized trees the model emits: `"placeholder"`
            (XX, Vinyals et al., 2015), `"pos"` (its POS tag) or `"words"` (the word itself, copied).
        linearization: for parsers, the order in which the linearized trees write a constituent's label: `"top-down"`
            (before its words, Vinyals et al., 2015, as the paper) or `"in-order"` (after its first child, Liu & Zhang,
            2017: `The (NP cat )NP (S sat (VP )VP )S`).
        tie_word_embeddings: share one matrix between the encoder embeddings, decoder embeddings and pre-softmax
            projection (section 3.4). `False` gives three independent matrices.
        scale_embedding: multiply token embeddings by sqrt(d_model) (section 3.4). `False` only for converted models
            trained without it.
        activation_function: the feed-forward activation, a name of transformers' `ACT2FN`: `"relu"` (the paper),
            `"swish"` (most OPUS-MT Marian models), `"gelu"` (MarianConfig's default), ...
        final_logits_bias: add a learned bias to the pre-softmax projection (Marian's `final_logits_bias`; the paper
            has none).
        loss_chunk_tokens: in training, compute the pre-softmax projection and the loss this many label positions
            at a time, each chunk's logits recomputed in the backward pass, so that the logits of the whole batch
            (25k x 37k floats for the base recipe) never exist; the output then holds no logits. 0: all at once.
        pointer_generator: add the copy mechanism of pointer-generator networks (See et al., 2017) on the last decoder
            layer's cross-attention (`VanillaPointerGenerator`): the output distribution mixes the vocabulary softmax
            with copying source tokens, and `logits` are its log-probabilities. `False`: the paper's model.
        pointer_smoothing: what a pointer-generator's label smoothing spreads epsilon over: `"mixture"`, the final
            distribution (which also pulls p_gen towards generating), or `"vocabulary"`, the vocabulary softmax alone
            (`pointer_generator_loss`).
        force_copy: a pointer-generator learns a target its source holds by copying it only (OpenNMT-py's
            `-copy_attn_force`).
        unk_token_id: the tokenizer's unknown token, which a pointer-generator never copies (nor </s>, <s>, <pad>).
    """

    model_type = "vanilla_transformer"
    keys_to_ignore_at_inference = ["past_key_values"]
    attribute_map = {"hidden_size": "d_model", "num_hidden_layers": "encoder_layers"}

    vocab_size: int = 37000
    d_model: int = 512
    encoder_layers: int = 6
    decoder_layers: int = 6
    num_attention_heads: int = 8
    d_ff: int = 2048
    dropout: float | int = 0.1
    attention_dropout: float | int = 0.0
    activation_dropout: float | int = 0.0
    label_smoothing: float | int = 0.1
    norm_style: str = "post"
    position_embedding_type: str = "sinusoidal"
    max_position_embeddings: int = 1024
    layer_norm_eps: float = 1e-5
    init_std: float = 0.02
    init_scheme: str = "normal"
    task: str | None = None  # set in __post_init__: never None after it
    decoding: str | None = None  # likewise
    tree_leaves: str = "placeholder"
    linearization: str = "top-down"
    use_cache: bool = True
    is_encoder_decoder: bool = True
    pad_token_id: int | None = 0
    bos_token_id: int | None = 1
    eos_token_id: int | list[int] | None = 2
    decoder_start_token_id: int | None = 1
    tie_word_embeddings: bool = True
    scale_embedding: bool = True
    activation_function: str = "relu"
    final_logits_bias: bool = False
    loss_chunk_tokens: int = 0
    pointer_generator: bool = False
    pointer_smoothing: str = "mixture"
    force_copy: bool = False
    unk_token_id: int | None = None

    def __post_init__(self, **kwargs):
        if self.task is None:  # saved before `task` existed: its decoding row was its task
            self.task = self.decoding if self.decoding in TASKS else "translation"
        if self.decoding is None:  # the task's row (an unknown task is refused below, once)
            self.decoding = self.task if self.task in DECODING else "translation"
        problems = []
        if self.d_model <= 0 or self.num_attention_heads <= 0 or self.d_ff <= 0 or self.vocab_size <= 0:
            problems.append("d_model, num_attention_heads, d_ff and vocab_size must be positive")
        elif self.d_model % self.num_attention_heads:
            problems.append(
                f"d_model ({self.d_model}) must be divisible by num_attention_heads ({self.num_attention_heads})"
            )
        if self.encoder_layers < 1 or self.decoder_layers < 1:
            problems.append(
                f"encoder_layers ({self.encoder_layers}) and decoder_layers ({self.decoder_layers}) must be at least 1"
            )
        for name in ("dropout", "attention_dropout", "activation_dropout", "label_smoothing"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                problems.append(f"{name} must be in [0, 1), got {value}")
        if self.loss_chunk_tokens < 0:
            problems.append(f"loss_chunk_tokens must not be negative, got {self.loss_chunk_tokens}")
        if self.pointer_generator and self.loss_chunk_tokens:
            problems.append("pointer_generator needs loss_chunk_tokens=0: its mixture is computed on whole logits")
        if self.pointer_generator and self.attention_dropout:
            problems.append("pointer_generator needs attention_dropout=0: it copies with the attention weights")
        if self.pointer_smoothing not in POINTER_SMOOTHING:
            problems.append(
                f"pointer_smoothing must be one of {list(POINTER_SMOOTHING)}, got {self.pointer_smoothing!r}"
            )
        if self.init_scheme not in INIT_SCHEMES:
            problems.append(f"init_scheme must be one of {list(INIT_SCHEMES)}, got {self.init_scheme!r}")
        if self.norm_style not in ("post", "pre"):
            problems.append(f"norm_style must be 'post' or 'pre', got {self.norm_style!r}")
        if self.position_embedding_type not in ("sinusoidal", "learned"):
            problems.append(
                f"position_embedding_type must be 'sinusoidal' or 'learned', got {self.position_embedding_type!r}"
            )
        if self.task not in TASKS:
            problems.append(f"task must be one of {list(TASKS)}, got {self.task!r}")
        if self.decoding not in DECODING:
            problems.append(f"decoding must be one of {sorted(DECODING)}, got {self.decoding!r}")
        if activation_problem(self.activation_function):
            problems.append(
                f"activation_function={self.activation_function!r}: {activation_problem(self.activation_function)}"
            )
        if self.tree_leaves not in TREE_LEAVES:
            problems.append(f"tree_leaves must be one of {list(TREE_LEAVES)}, got {self.tree_leaves!r}")
        if self.linearization not in LINEARIZATIONS:
            problems.append(f"linearization must be one of {list(LINEARIZATIONS)}, got {self.linearization!r}")
        if self.max_position_embeddings < 1:
            problems.append(f"max_position_embeddings must be positive, got {self.max_position_embeddings}")
        if self.pad_token_id is None:
            problems.append("pad_token_id must be set: padding is masked out of attention and of the loss")
        if problems:
            raise ValueError("Invalid VanillaTransformerConfig: " + "; ".join(problems) + ".")
        super().__post_init__(**kwargs)

    @classmethod
    def from_size(cls, name: str, **overrides) -> "VanillaTransformerConfig":
        """Builds a configuration of one of the model sizes `SIZES` (`base`, `big`, `big_enfr`, `parsing`,
        `summarization`, `summarization_small`, `demo`, `demo_parsing`, `demo_summarization`, `tiny`,
        `tiny_summarization`), with any field overridden by keyword. `from_preset` is its former name, the same
        method."""
        if name not in SIZES:
            raise ValueError(f"Unknown model size {name!r}; choose one of {sorted(SIZES)}.")
        return cls(**{**SIZES[name], **overrides})

    from_preset = from_size  # the former name, kept for code written against it (no warning)


def __getattr__(name: str) -> dict[str, dict]:
    """`PRESETS`, the sizes' former name: `SIZES` itself, with a FutureWarning naming it."""
    if name == "PRESETS":
        warnings.warn(PRESETS_DEPRECATION, FutureWarning, stacklevel=2)
        return SIZES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DECODING", "SIZES", "TASKS", "VanillaGenerationConfig", "VanillaTransformerConfig"]
