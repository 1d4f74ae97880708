"""The paper's decoding rules beside the model, for `generate()`: the GNMT length penalty, each sentence's own maximum
output length (source length + an offset), a summarizer's rule against sub-word stutters, a pointer-generator's
whole-word copying, the decoder's self-attention cache while decoding, a sentence's beams sharing one row of its
encoder output (and its cross-attention keys and values), and a beam search that drops a sentence from the batch once
no later step can change it (the sequences of transformers' loop, from fewer rows).

`VanillaGenerationMixin` is transformers' `GenerationMixin` with them: its `generate()` reads each setting from its
keyword arguments or the generation config and hands it on as an argument (a logits processor, a model keyword
argument that transformers passes to `forward` at every step, the length penalty that transformers passes to its
beam-search hooks), never as state left on the model. A flat file with single-dot imports: `save_pretrained` copies it
beside `modeling_vanilla.py` as Hub remote code.
"""

import copy
import math
from dataclasses import dataclass, fields

import torch
from transformers import GenerationMixin
from transformers.cache_utils import DynamicCache, DynamicLayer, EncoderDecoderCache
from transformers.generation import LogitsProcessor, LogitsProcessorList, logits_process
from transformers.generation.stopping_criteria import (
    EosTokenCriteria,
    MaxLengthCriteria,
    MaxTimeCriteria,
    StopStringCriteria,
)
from transformers.utils import ModelOutput, is_torchdynamo_compiling

# The model keyword arguments of `generate()` that hold one value for the whole vocabulary, not one row per sentence:
# transformers would hand them to the encoder and repeat them for beams, so they are kept aside for both.
VOCABULARY_KWARGS = ("word_continuation_mask",)


def check_token_ids(ids: torch.Tensor, vocab_size: int, name: str, check_range: bool = True) -> None:
    """A clear ValueError for token ids that are not a non-empty (batch, length) batch inside the vocabulary (on a GPU
    an id outside it would be a device-side assert). The range check reads one boolean back from the device, a host
    sync: `check_range=False` skips it where the ids are the model's own choices, and in training (the recipes check
    their whole corpus once instead), so that a training step never waits for the device."""
    if ids.dim() != 2:
        raise ValueError(f"{name} must have shape (batch_size, sequence_length), got {tuple(ids.shape)}.")
    if ids.numel() == 0:
        raise ValueError(f"{name} is empty (shape {tuple(ids.shape)}): there is nothing to encode or decode.")
    if check_range and not is_torchdynamo_compiling() and bool(((ids < 0) | (ids >= vocab_size)).any()):
        raise ValueError(
            f"{name} holds token ids outside the vocabulary [0, {vocab_size}): "
            f"min {int(ids.min())}, max {int(ids.max())}."
        )


def gnmt_length_penalty(length: int, alpha: float) -> float:
    """lp(Y) = ((5 + |Y|) / 6)^alpha (Wu et al., 2016, eq. 14), as used by the paper's beam search."""
    return ((5.0 + length) / 6.0) ** alpha


class GNMTAlpha(float):
    """The GNMT length penalty's alpha: `generate()` hands it to transformers' beam search as `length_penalty`, which
    passes it on to the two hooks that score beams (`_update_finished_beams`, `_check_early_stop_heuristic`); a float
    of this type tells them to divide by lp(Y) = `gnmt_length_penalty` instead of |Y|^alpha."""


def check_continuation_mask(mask: torch.Tensor, vocab_size: int, copies: bool) -> None:
    """A `word_continuation_mask` must be one bool a vocabulary id, for a model that `copies` (a pointer-generator)."""
    if not copies:
        raise ValueError(
            "Whole-word copying (word_continuation_ids, word_continuation_mask) is a pointer-generator's: this "
            "model has no copy mechanism."
        )
    if mask.dtype != torch.bool or tuple(mask.shape) != (vocab_size,):
        raise ValueError(
            f"word_continuation_mask must be a bool tensor of shape ({vocab_size},) (one value a "
            f"vocabulary id), got {mask.dtype} of shape {tuple(mask.shape)}."
        )


def continuation_mask(ids, vocab_size: int, copies: bool, device: torch.device) -> torch.Tensor:
    """The mask of `word_continuation_ids` (a list of vocabulary ids), checked as a mask given to forward is."""
    if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
        raise ValueError(f"word_continuation_ids must be a list of vocabulary ids, got {ids!r}")
    ids = list(ids)
    wrong = [i for i in ids if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < vocab_size]
    if wrong:
        raise ValueError(f"word_continuation_ids must be ids below the vocabulary size {vocab_size}, got {wrong[:5]}")
    mask = torch.zeros(vocab_size, dtype=torch.bool, device=device)
    mask[ids] = True
    check_continuation_mask(mask, vocab_size, copies)
    return mask


def source_length_limits(
    source_ids: torch.Tensor, attention_mask: torch.Tensor | None, pad_token_id: int | None, offset: int
) -> torch.Tensor:
    """Each sentence's maximum output length: its source length (the tokens `attention_mask` keeps, else those that
    are not padding) + `offset`."""
    source_lengths = attention_mask.sum(-1) if attention_mask is not None else (source_ids != pad_token_id).sum(-1)
    return source_lengths.long() + int(offset)


class SourceLengthLimitLogitsProcessor(LogitsProcessor):
    """Forces end-of-sequence once a hypothesis reaches its own source's limit (the paper: source length + 50), so
    every sentence of a batch stops at its own maximum output length, whatever the longest source allows."""

    def __init__(self, max_new_tokens: torch.Tensor, eos_token_id: int, prompt_length: int = 1):
        self.max_new_tokens = max_new_tokens
        self.eos_token_id = eos_token_id
        self.prompt_length = prompt_length

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        limits = self.max_new_tokens.to(scores.device)
        limits = limits.repeat_interleave(scores.shape[0] // limits.shape[0])
        must_stop = (input_ids.shape[1] - self.prompt_length + 1) >= limits
        if not bool(must_stop.any()):
            return scores
        # Keep </s>'s own score (as fairseq does), so a forced ending is ranked by its real probability; a </s> that
        # another processor suppressed still ends the sentence, with a score of -1e9.
        forced = torch.full_like(scores, -math.inf)
        forced[:, self.eos_token_id] = scores[:, self.eos_token_id].clamp(min=-1e9)
        return torch.where(must_stop[:, None], forced, scores)

    def for_sentences(self, kept: torch.LongTensor) -> "SourceLengthLimitLogitsProcessor":
        """The same rule for the `kept` sentences only (indices into those it was made for), for a beam search that
        drops settled sentences from the batch."""
        limits = self.max_new_tokens[kept.to(self.max_new_tokens.device)]
        return SourceLengthLimitLogitsProcessor(limits, self.eos_token_id, self.prompt_length)


class SourceLicensedStutterLogitsProcessor(LogitsProcessor):
    """Blocks the token that would write a span of 1 to `span_size` tokens twice in a row (a sub-word stutter such as
    "mineral eral", "california ornia ornia": a copy attention resting on one source token twice), unless the
    hypothesis' own source holds that span twice in a row (a word the source spells with a repeated piece, "b an an
    as"). transformers' `no_repeat_ngram_size` cannot stop it: the stutter's n-grams are new until it has repeated
    n tokens. The source's tokens are those `attention_mask` keeps (else those that are not `pad_token_id`); what
    follows the decoder's start token, a forced prefix included, is what is written."""

    def __init__(
        self,
        source_ids: torch.Tensor,
        span_size: int,
        pad_token_id: int | None,
        attention_mask: torch.Tensor | None = None,
    ):
        if isinstance(span_size, bool) or not isinstance(span_size, int) or span_size < 1:
            raise ValueError(f"no_stutter_span_size must be a whole number of at least 1, got {span_size!r}")
        self.span_size = span_size
        keep = attention_mask.bool() if attention_mask is not None else source_ids != pad_token_id
        self.licensed = []  # per source: every run of 2L tokens (L = 1..span_size) whose halves are equal
        for row, kept in zip(source_ids.tolist(), keep.tolist()):
            ids = [token for token, k in zip(row, kept) if k]
            self.licensed.append(
                {
                    tuple(ids[start : start + 2 * size])
                    for size in range(1, span_size + 1)
                    for start in range(len(ids) - 2 * size + 1)
                    if ids[start : start + size] == ids[start + size : start + 2 * size]
                }
            )

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if scores.shape[0] % len(self.licensed):
            raise ValueError(f"{scores.shape[0]} hypotheses do not divide among {len(self.licensed)} sources")
        per_source = scores.shape[0] // len(self.licensed)
        rows, tokens = [], []
        for row, written in enumerate(input_ids[:, 1:].tolist()):  # after the decoder's start token
            licensed, length = self.licensed[row // per_source], len(written)
            for size in range(1, min(self.span_size, (length + 1) // 2) + 1):
                # The next token t ends X X (X of `size` tokens) when t == written[-size] and the first size - 1
                # tokens of the two halves already agree.
                if written[length - 2 * size + 1 : length - size] == written[length - size + 1 :]:
                    span = (*written[length - 2 * size + 1 :], written[-size])
                    if span not in licensed:
                        rows.append(row)
                        tokens.append(written[-size])
        if rows:
            scores = scores.clone()
            scores[rows, tokens] = -math.inf
        return scores

    def for_sentences(self, kept: torch.LongTensor) -> "SourceLicensedStutterLogitsProcessor":
        """The same rule for the `kept` sentences only (indices into those it was made for), for a beam search that
        drops settled sentences from the batch."""
        narrowed = copy.copy(self)
        narrowed.licensed = [self.licensed[i] for i in kept.tolist()]
        return narrowed


class VanillaDecodingCacheLayer(DynamicLayer):
    """The decoder self-attention cache of one layer during `generate`: keys and values live in a buffer with room to
    grow (doubled when full, never past `max_length` positions), so that a step writes its one position instead of
    copying the whole cache (`DynamicLayer` concatenates). Beam search's reorder gathers them into a spare storage laid
    out for exactly one more position, so that after the next step's write the keys and values are contiguous again:
    attention read a strided view of a buffer with room about 1.6 times as slowly on the CPU measured
    (`benchmarks/strided_attention.py`), and the gather copies every row anyway. Keys and values read the same as
    `DynamicLayer`'s (views of the buffer), and an operation of `DynamicLayer` that replaces them (crop, batch
    selection) is adopted at the next update."""

    def __init__(self, max_length: int | None = None):
        super().__init__()
        self.max_length = max_length
        self._buffers: list[torch.Tensor] = []  # keys and values: the buffers the cached ones are views of
        self._storage: list[torch.Tensor] = []  # the flat keys and values behind `_buffers`
        self._spare: list[torch.Tensor] = []  # flat keys and values a reorder writes into (then swapped)

    def _room(self, new: int) -> int | None:
        """The length cached when the keys are the buffer's own and `new` more positions fit; None otherwise."""
        if not self._buffers or self.keys.dim() != 4:
            return None
        buffer, length = self._buffers[0], self.keys.shape[-2]
        own = self.keys.data_ptr() == buffer.data_ptr() and self.keys.shape[:2] == buffer.shape[:2]
        return length if own and length + new <= buffer.shape[-2] else None

    def _lay_out(self, storage: list[torch.Tensor], shape: tuple[int, ...]) -> None:
        """Makes `storage` (flat keys and values, at least `shape`'s size) the buffers, viewed as `shape`."""
        self._storage = storage
        self._buffers = [flat[: math.prod(shape)].view(shape) for flat in storage]

    def _grow(self, key_states: torch.Tensor, value_states: torch.Tensor) -> int:
        """New buffers holding the cached keys and values with room for `key_states`; returns the length cached."""
        length = self.keys.shape[-2] if self.keys.dim() == 4 else 0
        needed = length + key_states.shape[-2]
        capacity = max(needed, 2 * needed if self.max_length is None else min(2 * needed, self.max_length))
        shape = (*key_states.shape[:-2], capacity, key_states.shape[-1])
        size = math.prod(shape)
        self._lay_out([key_states.new_empty(size), value_states.new_empty(size)], shape)
        if length:
            keys, values = self._buffers
            keys[:, :, :length], values[:, :, :length] = self.keys, self.values
        return length

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        length = self._room(key_states.shape[-2])
        if length is None:
            length = self._grow(key_states, value_states)
        end = length + key_states.shape[-2]
        keys, values = self._buffers
        keys[:, :, length:end], values[:, :, length:end] = key_states, value_states
        self.keys, self.values = keys[:, :, :end], values[:, :, :end]
        return self.keys, self.values

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        length = self._room(0)
        if length is None:  # not (or no longer) the buffer's own: DynamicLayer's reorder
            super().reorder_cache(beam_idx)
            return
        keys, values = self._buffers
        shape = (len(beam_idx), keys.shape[1], length + 1, keys.shape[-1])  # room for the next step's position
        size = math.prod(shape)
        if not self._spare or self._spare[0].numel() < size:  # allocated at twice the size: seldom
            self._spare = [keys.new_empty(2 * size), values.new_empty(2 * size)]
        storage, self._spare = self._spare, self._storage
        self._lay_out(storage, shape)
        spare_keys, spare_values = self._buffers
        beam_idx = beam_idx.to(keys.device)
        torch.index_select(keys[:, :, :length], 0, beam_idx, out=spare_keys[:, :, :length])
        torch.index_select(values[:, :, :length], 0, beam_idx, out=spare_values[:, :, :length])
        self.keys, self.values = spare_keys[:, :, :length], spare_values[:, :, :length]


# transformers' logits processors and stopping criteria that read each row on its own (its tokens, its scores), never
# its place in the batch: beam search may drop a settled sentence's rows under them. Others need `for_sentences`.
_ROW_WISE_PROCESSORS = tuple(
    getattr(logits_process, name)
    for name in (
        "MinLengthLogitsProcessor",
        "MinNewTokensLengthLogitsProcessor",
        "NoRepeatNGramLogitsProcessor",
        "RepetitionPenaltyLogitsProcessor",
        "NoBadWordsLogitsProcessor",
        "SequenceBiasLogitsProcessor",
        "ForcedBOSTokenLogitsProcessor",
        "ForcedEOSTokenLogitsProcessor",
        "SuppressTokensLogitsProcessor",
        "SuppressTokensAtBeginLogitsProcessor",
        "InfNanRemoveLogitsProcessor",
        "LogitNormalization",
        "TemperatureLogitsWarper",
        "TopKLogitsWarper",
        "TopPLogitsWarper",
    )
    if hasattr(logits_process, name)
)
_ROW_WISE_CRITERIA = (MaxLengthCriteria, EosTokenCriteria, MaxTimeCriteria, StopStringCriteria)


def drops_finished_sentences(
    generation_config, logits_processor, stopping_criteria, synced_gpus: bool, model_kwargs: dict
) -> bool:
    """Whether beam search may drop a settled sentence from the batch: `drop_finished_sentences` is on, the output is
    the sequences alone (`return_dict_in_generate` would want every step's full batch), beams are not sampled (a
    smaller batch would draw other random numbers than transformers' loop), one process decodes alone (with
    `synced_gpus` every process runs each step), the cache is the dynamic one, and each logits processor and stopping
    criterion reads rows on its own or can follow the kept sentences (`for_sentences`)."""
    if not getattr(generation_config, "drop_finished_sentences", True):
        return False
    if synced_gpus or generation_config.return_dict_in_generate or generation_config.do_sample:
        return False
    cache = model_kwargs.get("past_key_values")
    if not isinstance(cache, EncoderDecoderCache):
        return False
    layers = [*cache.self_attention_cache.layers, *cache.cross_attention_cache.layers]
    if not all(type(layer) in (DynamicLayer, VanillaDecodingCacheLayer) for layer in layers):
        return False
    followed = all(hasattr(rule, "for_sentences") or type(rule) in _ROW_WISE_PROCESSORS for rule in logits_processor)
    return followed and all(type(criterion) in _ROW_WISE_CRITERIA for criterion in stopping_criteria)


def sentence_rows(sentences: torch.LongTensor, num_beams: int) -> torch.LongTensor:
    """The rows of `sentences` in a batch of `num_beams` consecutive rows a sentence."""
    beams = torch.arange(num_beams, device=sentences.device)
    return (sentences[:, None] * num_beams + beams).flatten()


def _select(value, picks: dict[int, torch.LongTensor]):
    """`value` (a tensor, or a tuple or model output of them) cut to `picks[n]` where its first dimension is n (the
    batch's rows, or its sentences); anything else as it is."""
    if isinstance(value, torch.Tensor):
        picked = picks.get(value.shape[0]) if value.dim() else None
        return value if picked is None else value.index_select(0, picked.to(value.device))
    if isinstance(value, ModelOutput):
        return type(value)(**{name: _select(field, picks) for name, field in value.items()})
    if isinstance(value, tuple):
        return tuple(_select(item, picks) for item in value)
    return value


def rows_a_source(num_beams: int | None, num_return_sequences: int | None) -> int:
    """The rows `generate()` decodes for each source: its beams or its returned sequences, whichever is more
    (transformers' `expand_size`)."""
    return max(num_beams or 1, num_return_sequences or 1)


# `generate()`'s model keyword arguments that hold one row a source, repeated for each of its beams by transformers.
SOURCE_KWARGS = ("encoder_outputs", "attention_mask", "source_ids")


def share_source_rows(model_kwargs: dict, copies: int) -> None:
    """Keeps one row a source of the encoder's output, its attention mask and a pointer-generator's source ids, in
    place, where transformers repeated each source for its `copies` consecutive rows (beams, returned sequences): the
    decoder's cross-attention then computes and caches a source's keys and values once, and its rows attend over them
    together (`modeling_vanilla.share_source`), where each beam would have computed, cached and read its own copy."""
    if copies < 2:
        return
    rows = model_kwargs["encoder_outputs"][0].shape[0]
    firsts = {rows: torch.arange(0, rows, copies)}  # each source's first row (`_select`)
    for name in SOURCE_KWARGS:
        if name in model_kwargs:
            model_kwargs[name] = _select(model_kwargs[name], firsts)


def select_sentences(
    model_kwargs: dict, processors: LogitsProcessorList, kept: torch.LongTensor, sentences: int, num_beams: int
):
    """The model keyword arguments and logits processors of a beam search for the `kept` sentences only (indices
    into the batch's `sentences`): per-row tensors cut to the kept beams' rows, and those of one row a sentence (the
    encoder's output, its attention mask, a pointer-generator's source ids: `share_source_rows`, or a row a beam
    where they were not shared) and the cross-attention cache to the kept sentences' rows; each processor's
    `for_sentences` (or itself, when it reads rows on their own). The self-attention cache is left to the beam
    reorder, which gathers the kept beams anyway."""
    cache = model_kwargs["past_key_values"]
    picks = {sentences: kept, sentences * num_beams: sentence_rows(kept, num_beams)}  # the same where num_beams is 1
    for layer in cache.cross_attention_cache.layers:
        layer.reorder_cache(picks[layer.keys.shape[0]])
    model_kwargs = {
        name: value if name in VOCABULARY_KWARGS or name == "past_key_values" else _select(value, picks)
        for name, value in model_kwargs.items()
    }
    processors = LogitsProcessorList(
        processor.for_sentences(kept) if hasattr(processor, "for_sentences") else processor for processor in processors
    )
    return model_kwargs, processors


@dataclass
class _Beams:
    """transformers' beam-search tensors for the sentences still decoded (first dimension: sentence): the running
    beams, their scores and beam indices, the finished hypotheses, theirs, whether each is finished, and whether the
    sentence may still improve (transformers' `is_early_stop_heuristic_unsatisfied`). The token rows (and their beam
    indices) may be narrower than `max_length` (`widen`): a step gathers whole rows, and those positions past the
    present step hold nothing yet."""

    running: torch.Tensor
    running_scores: torch.Tensor
    running_indices: torch.Tensor
    sequences: torch.Tensor
    scores: torch.Tensor
    indices: torch.Tensor
    finished: torch.Tensor
    open: torch.Tensor

    @classmethod
    def start(cls, input_ids, num_beams: int, width: int, fill: int) -> "_Beams":
        """The tensors transformers' `_beam_search` starts from, for the batch `input_ids` (beams repeated), token
        rows `width` long (transformers': `max_length`), `fill` where nothing is written."""
        batch_size, prompt = input_ids.shape[0] // num_beams, input_ids.shape[1]
        device = input_ids.device
        running = torch.full((batch_size, num_beams, width), fill_value=fill, dtype=torch.int64, device=device)
        running[:, :, :prompt] = input_ids.view(batch_size, num_beams, prompt)
        running_scores = torch.zeros((batch_size, num_beams), dtype=torch.float, device=device)
        running_scores[:, 1:] = -1e9  # only the first beam's tokens count at the first step
        indices = torch.full((batch_size, num_beams, width - prompt), -1, dtype=torch.int32, device=device)
        return cls(
            running=running,
            running_scores=running_scores,
            running_indices=indices,
            sequences=running.clone(),
            scores=torch.full((batch_size, num_beams), -1e9, dtype=torch.float, device=device),
            indices=indices.clone(),
            finished=torch.zeros((batch_size, num_beams), dtype=torch.bool, device=device),
            open=torch.ones((batch_size, 1), dtype=torch.bool, device=device),
        )

    def select(self, kept: torch.LongTensor | slice) -> "_Beams":
        """These tensors for the `kept` sentences (indices into these), copies."""
        return _Beams(*(getattr(self, field.name)[kept].clone() for field in fields(self)))

    def widen(self, width: int, fill: int) -> "_Beams":
        """These tensors with token rows `width` long: `fill` (beam indices -1) in the new positions."""
        extra = width - self.running.shape[-1]
        pad = torch.nn.functional.pad
        running, sequences = (pad(tokens, (0, extra), value=fill) for tokens in (self.running, self.sequences))
        running_indices, indices = (pad(rows, (0, extra), value=-1) for rows in (self.running_indices, self.indices))
        return _Beams(
            running, self.running_scores, running_indices, sequences, self.scores, indices, self.finished, self.open
        )

    def keep(self, beams: "_Beams", sentences: torch.LongTensor, done: torch.Tensor) -> None:
        """Writes the finished hypotheses of `beams`' `done` sentences (`sentences`: their places here) in place;
        their rows may be narrower than these (the rest holds nothing written)."""
        places, width, steps = sentences[done], beams.sequences.shape[-1], beams.indices.shape[-1]
        self.sequences[places, :, :width], self.scores[places] = beams.sequences[done], beams.scores[done]
        self.indices[places, :, :steps] = beams.indices[done]

    def best(self, prompt: int, num_return_sequences: int) -> torch.LongTensor:
        """The best `num_return_sequences` finished hypotheses of each sentence, cut after the longest's last token
        (what transformers' `_beam_search` returns)."""
        sequences = self.sequences[:, :num_return_sequences].flatten(0, 1)
        indices = self.indices[:, :num_return_sequences].flatten(0, 1)
        return sequences[:, : prompt + int((indices + 1).bool().sum(dim=1).max())]

    def settled(self, early_stopping) -> torch.Tensor:
        """The sentences no later step can change: none may improve, or (`early_stopping=True`) every beam is
        finished. transformers' loop adds -1e9 to any new hypothesis of theirs."""
        return ~self.open[:, 0] | (self.finished.all(-1) & (early_stopping is True))


class VanillaGenerationMixin(GenerationMixin):
    """transformers' `GenerationMixin` with the paper's decoding (see the module's docstring): the model class that
    inherits it has a `config` (`vocab_size`, `pad_token_id`, `pointer_generator`) and a `generation_config` holding
    `VanillaGenerationConfig`'s settings."""

    @torch.no_grad()
    def generate(self, inputs: torch.Tensor | None = None, generation_config=None, logits_processor=None, **kwargs):
        """`GenerationMixin.generate` with the paper's two additions, read from the generation config (or passed as
        keyword arguments):

        - `length_penalty_style="gnmt"`: finished beams are ranked by log P(Y|X) / ((5 + |Y|) / 6)^alpha (Wu et al.,
          2016), alpha = `length_penalty`; `"power"` keeps transformers' log P / |Y|^alpha.
        - `max_length_offset=k`: each sentence stops at its own source length + k tokens (the paper: 50; parsing:
          300). Ignored when `max_new_tokens` or `max_length` is passed explicitly.

        And a summarizer's: `no_stutter_span_size=k` blocks any span of 1 to k tokens written twice in a row unless
        the sentence's source holds it twice in a row (`SourceLicensedStutterLogitsProcessor`; 0: no such rule). It
        needs the source ids: given as a keyword without them it is an error; from the generation config, it is left
        out of a call with `inputs_embeds` or `encoder_outputs` alone. A pointer-generator's `word_continuation_ids`
        (the pieces that continue a word) make its copying whole-word (`whole_word_copy_positions`; None or []: no
        such rule): `generate()` passes their mask to `forward` as `word_continuation_mask`, at every step. Given as
        a keyword to a model without the copy mechanism, it is an error.
        """
        config = generation_config if generation_config is not None else self.generation_config
        style = kwargs.pop("length_penalty_style", getattr(config, "length_penalty_style", "power"))
        if style not in ("gnmt", "power"):
            raise ValueError(f"length_penalty_style must be 'gnmt' or 'power', got {style!r}.")
        mask = self._whole_word_copy_mask(config, kwargs.pop("word_continuation_ids", None))
        if mask is not None:
            kwargs.setdefault("word_continuation_mask", mask)
        source_ids = inputs if inputs is not None else kwargs.get("input_ids")
        if source_ids is not None:  # its range is checked once, by the encoder
            check_token_ids(source_ids, self.config.vocab_size, "input_ids", check_range=False)
        rules = LogitsProcessorList(logits_processor or [])
        stutter = self._stutter_rule(config, source_ids, kwargs.pop("no_stutter_span_size", None), kwargs)
        if stutter is not None:
            rules.append(stutter)
        offset = kwargs.pop("max_length_offset", getattr(config, "max_length_offset", None))
        explicit_length = kwargs.get("max_new_tokens") is not None or kwargs.get("max_length") is not None
        if generation_config is not None:
            explicit_length |= generation_config.max_new_tokens is not None
        if offset is not None and not explicit_length:
            limits = self._source_length_limits(source_ids, offset, kwargs.get("attention_mask"))
            generation_config = self._with_setting(generation_config, kwargs, "max_new_tokens", int(limits.max()))
            eos = config.eos_token_id
            rules.append(SourceLengthLimitLogitsProcessor(limits, eos[0] if isinstance(eos, list) else eos))
        if style == "gnmt":
            alpha = GNMTAlpha(self._length_penalty(generation_config, kwargs))
            generation_config = self._with_setting(generation_config, kwargs, "length_penalty", alpha)
        if rules or logits_processor is not None:
            logits_processor = rules
        return super().generate(
            inputs, generation_config=generation_config, logits_processor=logits_processor, **kwargs
        )

    def _whole_word_copy_mask(self, config, asked: list[int] | None) -> torch.Tensor | None:
        """The `word_continuation_mask` of `word_continuation_ids` `asked` for as a keyword (an error where the model
        cannot copy), else of the generation config's (left out where it cannot); None without such ids."""
        ids = asked if asked is not None else getattr(config, "word_continuation_ids", None)
        copies = self.config.pointer_generator
        if asked is None and not (ids and copies):
            return None
        return continuation_mask(ids, self.config.vocab_size, copies, self.device)

    def _stutter_rule(self, config, source_ids, asked: int | None, kwargs: dict):
        """The `SourceLicensedStutterLogitsProcessor` of `no_stutter_span_size` `asked` for as a keyword (an error
        without source ids), else of the generation config's (left out without source ids); None for 0."""
        stutter = asked if asked is not None else getattr(config, "no_stutter_span_size", 0)
        if isinstance(stutter, bool) or not isinstance(stutter, int) or stutter < 0:
            raise ValueError(f"no_stutter_span_size must be a whole number of at least 0, got {stutter!r}")
        if stutter and source_ids is None and asked:
            raise ValueError("generate() needs input_ids (the source sentences) to apply no_stutter_span_size.")
        if not stutter or source_ids is None:
            return None
        attention_mask = kwargs.get("attention_mask")
        return SourceLicensedStutterLogitsProcessor(source_ids, stutter, self.config.pad_token_id, attention_mask)

    def _source_length_limits(self, source_ids, offset: int, attention_mask) -> torch.Tensor:
        """`source_length_limits` of the source ids, which `max_length_offset` needs."""
        if source_ids is None:
            raise ValueError("generate() needs input_ids (the source sentences) to apply max_length_offset.")
        return source_length_limits(source_ids, attention_mask, self.config.pad_token_id, offset)

    def _length_penalty(self, generation_config, kwargs: dict) -> float:
        """The `length_penalty` transformers decodes with: the keyword's, the passed config's, the model's, else its
        default 1.0."""
        for penalty in (
            kwargs.get("length_penalty"),
            getattr(generation_config, "length_penalty", None),
            getattr(self.generation_config, "length_penalty", None),
        ):
            if penalty is not None:
                return penalty
        return 1.0

    @staticmethod
    def _with_setting(generation_config, kwargs: dict, name: str, value):
        """Sets generation setting `name` for this call: in a copy of the passed generation config (so that
        transformers sees no keyword beside it), else as a keyword argument. Returns the generation config."""
        if generation_config is None or name in kwargs:
            kwargs[name] = value
            return generation_config
        generation_config = copy.deepcopy(generation_config)
        setattr(generation_config, name, value)
        return generation_config

    def _maybe_prepare_encoder_kwargs_for_generation(
        self, inputs_tensor: torch.Tensor, model_kwargs: dict, model_input_name: str | None, generation_config
    ) -> dict:
        """transformers' step of `generate()` that runs the encoder once. A pointer-generator keeps the source ids
        there too, as `source_ids`: transformers then expands them for beams (with the encoder output and the
        attention mask) and hands them to every decoding step, where `prepare_inputs_for_generation` passes them as
        `input_ids`. The beams of one sentence share its source, so beam reordering leaves them as they are. The
        decoder's vocabulary-wide arguments (`VOCABULARY_KWARGS`) are not the encoder's."""
        kept = {name: model_kwargs.pop(name) for name in VOCABULARY_KWARGS if name in model_kwargs}
        model_kwargs = super()._maybe_prepare_encoder_kwargs_for_generation(
            inputs_tensor, model_kwargs, model_input_name, generation_config
        )
        if self.config.pointer_generator and model_input_name == "input_ids":
            model_kwargs["source_ids"] = inputs_tensor
        return {**model_kwargs, **kept}

    def _expand_inputs_for_generation(
        self, expand_size: int = 1, is_encoder_decoder: bool = False, input_ids=None, **kwargs
    ):
        """transformers' repetition of each sentence's inputs for its beams, leaving `VOCABULARY_KWARGS` as they are
        (one value a vocabulary id, not a row a sentence)."""
        kept = {name: kwargs.pop(name) for name in VOCABULARY_KWARGS if name in kwargs}
        input_ids, kwargs = super()._expand_inputs_for_generation(expand_size, is_encoder_decoder, input_ids, **kwargs)
        return input_ids, {**kwargs, **kept}

    def prepare_inputs_for_generation(self, *args, source_ids: torch.LongTensor | None = None, **kwargs) -> dict:
        """transformers' inputs of one decoding step, with a pointer-generator's source ids as `input_ids`."""
        model_inputs = super().prepare_inputs_for_generation(*args, **kwargs)
        if source_ids is not None:
            model_inputs["input_ids"] = source_ids
        return model_inputs

    def _prepare_cache_for_generation(
        self, generation_config, model_kwargs, generation_mode, batch_size, max_cache_length
    ):
        """transformers' cache for `generate`; where that is its default dynamic cache, the decoder's self-attention
        layers are `VanillaDecodingCacheLayer`s (same keys and values, without a copy of the whole cache a step)."""
        user_cache = model_kwargs.get("past_key_values") is not None
        super()._prepare_cache_for_generation(
            generation_config, model_kwargs, generation_mode, batch_size, max_cache_length
        )
        cache = model_kwargs.get("past_key_values")
        if (
            user_cache
            or not isinstance(cache, EncoderDecoderCache)
            or type(cache.self_attention_cache) is not DynamicCache
        ):
            return
        # transformers makes it from the config, one layer per decoder layer (the config names every one).
        self_attention = cache.self_attention_cache
        if all(type(layer) is DynamicLayer for layer in self_attention.layers):
            self_attention.layers = [VanillaDecodingCacheLayer(max_cache_length) for _ in self_attention.layers]
        copies = rows_a_source(generation_config.num_beams, generation_config.num_return_sequences)
        if type(cache.cross_attention_cache) is DynamicCache and not generation_config.return_dict_in_generate:
            share_source_rows(model_kwargs, copies)

    def _beam_search(
        self, input_ids, logits_processor, stopping_criteria, generation_config, synced_gpus=False, **model_kwargs
    ):
        """transformers' beam search; where `drops_finished_sentences` allows it, `_beam_search_dropping_settled`."""
        if drops_finished_sentences(generation_config, logits_processor, stopping_criteria, synced_gpus, model_kwargs):
            return self._beam_search_dropping_settled(
                input_ids, logits_processor, stopping_criteria, generation_config, model_kwargs
            )
        return super()._beam_search(
            input_ids, logits_processor, stopping_criteria, generation_config, synced_gpus, **model_kwargs
        )

    def _beam_search_dropping_settled(
        self, input_ids, logits_processor, stopping_criteria, generation_config, model_kwargs: dict
    ) -> torch.LongTensor:
        """transformers' beam-search loop (its steps, through its own helpers), except that a sentence that no later
        step can change (`_Beams.settled`) leaves the batch: its finished hypotheses are kept in its place, and the
        next steps decode the other sentences' beams alone, where transformers' loop would go on computing its rows
        until the batch's last sentence ends (fairseq drops them too). Returns the sequences transformers returns."""
        num_beams, early_stopping = generation_config.num_beams, generation_config.early_stopping
        eos = generation_config._eos_token_tensor
        batch_size, prompt = input_ids.shape[0] // num_beams, input_ids.shape[1]
        # transformers' fill where nothing is written, its precedence kept (pad or eos, if there is an eos, else -1),
        # from the config's ids: its tensors would be read back from the device.
        pad, eos_ids = generation_config.pad_token_id, generation_config.eos_token_id
        first_eos = eos_ids[0] if isinstance(eos_ids, list) else eos_ids
        fill = pad or first_eos if eos is not None else -1
        max_length = generation_config.max_length
        kept_aside = _Beams.start(input_ids, num_beams, max_length, fill)  # each sentence's finished hypotheses
        # The running beams' token rows start short and double when a step needs more, as a step's gathers copy them
        # whole: transformers' rows are `max_length` long at every step (parsing's: the longest source + 300).
        beams = _Beams.start(input_ids, num_beams, min(max_length, 2 * prompt + 16), fill)
        sentences = torch.arange(batch_size, device=input_ids.device)  # the passed batch's sentences still decoded
        beams_to_keep = max(2, 1 + (eos.shape[0] if eos is not None else 0)) * num_beams
        search = dict(
            stopping_criteria=stopping_criteria,
            generation_config=generation_config,
            prompt=prompt,
            # which of the top-k candidates a step keeps are the top num_beams: made once, not a step
            top_num_beam_mask=torch.arange(beams_to_keep, device=input_ids.device) < num_beams,
        )
        first = not generation_config.is_assistant
        outputs = self._prefill(input_ids, generation_config, model_kwargs, is_first_iteration=first)
        cur_len, flat = prompt, input_ids  # `flat`: the running beams' tokens, the last step's input
        while True:
            model_kwargs = self._update_model_kwargs_for_generation(outputs, model_kwargs, is_encoder_decoder=True)
            logits = outputs.logits[:, -1, :].to(copy=True, dtype=torch.float32, device=input_ids.device)
            del outputs
            log_probs = logits_processor(flat, torch.log_softmax(logits, dim=-1))
            if cur_len >= beams.running.shape[-1]:
                beams = beams.widen(min(max_length, 2 * cur_len + 1), fill)
            beams, beam_idx, unfinished = self._beam_step(beams, log_probs, cur_len, **search)
            cur_len += 1
            done = beams.settled(early_stopping) | ~unfinished
            if done.any():  # the step's one read on the host, as transformers' loop reads whether to go on
                kept_aside.keep(beams, sentences, done)
                kept = (~done).nonzero()[:, 0]
                if not len(kept):
                    break
                beam_idx = beam_idx.view(len(sentences), num_beams)[kept].flatten()
                model_kwargs, logits_processor = select_sentences(
                    model_kwargs, logits_processor, kept, len(sentences), num_beams
                )
                beams, sentences = beams.select(kept), sentences[kept]
            model_kwargs["past_key_values"] = self._reorder_cache(model_kwargs["past_key_values"], beam_idx)
            flat = self._flatten_beam_dim(beams.running[:, :, :cur_len])
            outputs = self(**self.prepare_inputs_for_generation(flat, next_sequence_length=1, **model_kwargs))
        return kept_aside.best(prompt, generation_config.num_return_sequences)

    def _beam_step(
        self,
        beams: "_Beams",
        log_probs,
        cur_len: int,
        stopping_criteria,
        generation_config,
        prompt,
        top_num_beam_mask,
    ) -> tuple["_Beams", torch.LongTensor, torch.Tensor]:
        """One step of transformers' beam search from the processed log-probabilities of the running beams: the beams
        after it, the beam reorder (`beam_idx`) and whether transformers' loop would go on (a 0-d bool tensor)."""
        sentences, num_beams = beams.running.shape[0], generation_config.num_beams
        beams_to_keep = top_num_beam_mask.shape[0]  # candidates a step weighs: 2 * num_beams (one eos)
        early_stopping, length_penalty = generation_config.early_stopping, generation_config.length_penalty
        log_probs = self._unflatten_beam_dim(log_probs, sentences, num_beams) + beams.running_scores[..., None]
        topk_log_probs, topk_sequences, topk_indices = self._get_top_k_continuations(
            accumulated_log_probs=log_probs.reshape(sentences, -1),
            running_sequences=beams.running,
            running_beam_indices=beams.running_indices,
            cur_len=cur_len,
            decoder_prompt_len=prompt,
            do_sample=False,  # never sampled here (`drops_finished_sentences`)
            beams_to_keep=beams_to_keep,
            num_beams=num_beams,
            batch_size=sentences,
        )
        hits = stopping_criteria(self._flatten_beam_dim(topk_sequences[:, :, : cur_len + 1]), None)
        hits = self._unflatten_beam_dim(hits, sentences, beams_to_keep)
        running = self._get_running_beams_for_next_iteration(
            topk_log_probs=topk_log_probs,
            topk_running_sequences=topk_sequences,
            topk_running_beam_indices=topk_indices,
            next_token_hits_stopping_criteria=hits,
            num_beams=num_beams,
        )
        finished = self._update_finished_beams(
            sequences=beams.sequences,
            topk_running_sequences=topk_sequences,
            beam_scores=beams.scores,
            topk_log_probs=topk_log_probs,
            beam_indices=beams.indices,
            topk_running_beam_indices=topk_indices,
            is_early_stop_heuristic_unsatisfied=beams.open,
            is_sent_finished=beams.finished,
            next_token_hits_stopping_criteria=hits,
            top_num_beam_mask=top_num_beam_mask,
            num_beams=num_beams,
            cur_len=cur_len,
            decoder_prompt_len=prompt,
            length_penalty=length_penalty,
            early_stopping=early_stopping,
        )
        still_open = self._check_early_stop_heuristic(
            is_early_stop_heuristic_unsatisfied=beams.open,
            running_beam_scores=running[1],
            beam_scores=finished[1],
            is_sent_finished=finished[3],
            cur_len=cur_len + 1,
            max_length=generation_config.max_length,
            decoder_prompt_len=prompt,
            early_stopping=early_stopping,
            length_penalty=length_penalty,
        )
        unfinished = self._beam_search_has_unfinished_sequences(
            is_early_stop_heuristic_unsatisfied=still_open,
            is_sent_finished=finished[3],
            next_token_hits_stopping_criteria=hits,
            early_stopping=early_stopping,
        )
        beam_idx = self._flatten_beam_dim(running[2][..., cur_len - prompt])
        return _Beams(*running, *finished, still_open), beam_idx, unfinished

    def _reorder_cache(self, past_key_values: EncoderDecoderCache, beam_idx: torch.LongTensor) -> EncoderDecoderCache:
        """Beam search's step to the chosen beams: only the self-attention cache is gathered. `beam_idx` maps each
        beam to a beam of the same sentence, whose cross-attention keys and values are the same (cached once for the
        sentence, `share_source_rows`, or repeated num_beams times), so gathering them (what
        `EncoderDecoderCache.reorder_cache` does, 12 copies of the whole cross-attention cache a step for
        Transformer-base) would change nothing."""
        past_key_values.self_attention_cache.reorder_cache(beam_idx)
        return past_key_values

    def _update_finished_beams(self, **kwargs):
        # transformers divides finished scores by |Y|^length_penalty; with the GNMT style, divide by lp(Y) here and
        # hand transformers a zero exponent (|Y|^0 = 1).
        if isinstance(kwargs["length_penalty"], GNMTAlpha):
            length = kwargs["cur_len"] + 1 - kwargs["decoder_prompt_len"]
            kwargs["topk_log_probs"] = kwargs["topk_log_probs"] / gnmt_length_penalty(length, kwargs["length_penalty"])
            kwargs["length_penalty"] = 0.0
        return super()._update_finished_beams(**kwargs)

    def _check_early_stop_heuristic(self, **kwargs):
        if isinstance(kwargs["length_penalty"], GNMTAlpha):
            length = kwargs["cur_len"] - kwargs["decoder_prompt_len"]
            if kwargs["early_stopping"] == "never" and kwargs["length_penalty"] > 0.0:
                length = kwargs["max_length"] - kwargs["decoder_prompt_len"]
            kwargs["running_beam_scores"] = kwargs["running_beam_scores"] / gnmt_length_penalty(
                length, kwargs["length_penalty"]
            )
            kwargs["length_penalty"] = 0.0
        return super()._check_early_stop_heuristic(**kwargs)


__all__ = [
    "GNMTAlpha",
    "SourceLengthLimitLogitsProcessor",
    "SourceLicensedStutterLogitsProcessor",
    "VanillaDecodingCacheLayer",
    "VanillaGenerationMixin",
    "gnmt_length_penalty",
]
