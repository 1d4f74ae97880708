"""hf_vanilla's beam search: the loop `generate()` runs for beam search and beam sampling, handed to transformers as
its public `custom_generate` callable (transformers prepares the encoder output, the beams' repeated inputs, the cache,
the logits processors and stopping criteria, then calls it), so that no private member of transformers' generation
code is overridden or called.

It makes the choices of transformers' own beam search (top 2 x num_beams continuations a step, finished hypotheses kept
apart, its early-stop heuristic and its output), and adds:
- the GNMT length penalty (`length_penalty_style="gnmt"`): finished beams are ranked by log P / ((5 + |Y|) / 6)^alpha;
- a sentence's beams sharing one row of its encoder output and cross-attention cache (`share_source_rows`);
- the self-attention cache in buffers with room (`VanillaDecodingCacheLayer`): a step writes one position;
- a sentence that no later step can change leaves the batch (`_Beams.settled`), as fairseq drops it.

A flat file with single-dot imports: `save_pretrained` copies it beside `modeling_vanilla.py` as Hub remote code.
"""

import math
from dataclasses import dataclass, fields

import torch
from transformers.cache_utils import Cache, DynamicCache, DynamicLayer, EncoderDecoderCache
from transformers.generation import GenerateBeamEncoderDecoderOutput, LogitsProcessorList, logits_process
from transformers.generation.stopping_criteria import (
    EosTokenCriteria,
    MaxLengthCriteria,
    MaxTimeCriteria,
    StopStringCriteria,
)
from transformers.utils import ModelOutput

# The model keyword arguments of `generate()` that hold one value for the whole vocabulary, not one row per sentence.
VOCABULARY_KWARGS = ("word_continuation_mask",)
# Where `generate()` keeps the cache among the model keyword arguments: "past_key_values" up to transformers 5.23,
# "cache" from 5.24 (which still reads the old name, with a deprecation warning).
CACHE_NAMES = ("cache", "past_key_values")


def gnmt_length_penalty(length: int, alpha: float) -> float:
    """lp(Y) = ((5 + |Y|) / 6)^alpha (Wu et al., 2016, eq. 14), as used by the paper's beam search."""
    return ((5.0 + length) / 6.0) ** alpha


def length_normalizer(length: int, alpha: float, style: str) -> float:
    """What a hypothesis' log P is divided by: lp(Y) with the GNMT style, |Y|^alpha (transformers') otherwise."""
    return gnmt_length_penalty(length, alpha) if style == "gnmt" else length**alpha


class VanillaDecodingCacheLayer(DynamicLayer):
    """The decoder self-attention cache of one layer during beam search: keys and values live in a buffer with room to
    grow (doubled when full, never past `max_length` positions), so that a step writes its one position instead of
    copying the whole cache (`DynamicLayer` concatenates). Beam search's reorder gathers them into a spare storage laid
    out for exactly one more position, so that after the next step's write the keys and values are contiguous again:
    attention read a strided view of a buffer with room about 1.6 times as slowly on the CPU measured
    (`benchmarks/studies/strided_attention.py`), and the gather copies every row anyway. Keys and values read the same
    as `DynamicLayer`'s (views of the buffer), and an operation of `DynamicLayer` that replaces them (crop, batch
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


def reorder_cache(cache: Cache, beam_idx: torch.LongTensor) -> None:
    """Beam search's step to the chosen beams: only the self-attention cache is gathered. `beam_idx` maps each beam to
    a beam of the same sentence, whose cross-attention keys and values are the same (cached once for the sentence,
    `share_source_rows`, or repeated num_beams times), so gathering them (what `EncoderDecoderCache.reorder_cache`
    does, 12 copies of the whole cross-attention cache a step for Transformer-base) would change nothing."""
    (cache.self_attention_cache if isinstance(cache, EncoderDecoderCache) else cache).reorder_cache(beam_idx)


def use_decoding_cache_layers(cache, max_length: int) -> None:
    """Makes the self-attention layers of transformers' new dynamic cache `VanillaDecodingCacheLayer`s (same keys and
    values, without a copy of the whole cache a step); any other cache is left as it is."""
    if not isinstance(cache, EncoderDecoderCache) or type(cache.self_attention_cache) is not DynamicCache:
        return
    layers = cache.self_attention_cache.layers
    if all(type(layer) is DynamicLayer and not layer.is_initialized for layer in layers):
        cache.self_attention_cache.layers = [VanillaDecodingCacheLayer(max_length) for _ in layers]


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
    generation_config, logits_processor, stopping_criteria, synced_gpus: bool, cache
) -> bool:
    """Whether beam search may drop a settled sentence from the batch: `drop_finished_sentences` is on, the output is
    the sequences alone (`return_dict_in_generate` would want every step's full batch), beams are not sampled (a
    smaller batch would draw other random numbers), one process decodes alone (with `synced_gpus` every process runs
    each step), the cache is the dynamic one, and each logits processor and stopping criterion reads rows on its own
    or can follow the kept sentences (`for_sentences`)."""
    if not getattr(generation_config, "drop_finished_sentences", True):
        return False
    if synced_gpus or generation_config.return_dict_in_generate or generation_config.do_sample:
        return False
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
    name = cache_name(model_kwargs)
    picks = {sentences: kept, sentences * num_beams: sentence_rows(kept, num_beams)}  # the same where num_beams is 1
    for layer in model_kwargs[name].cross_attention_cache.layers:
        layer.reorder_cache(picks[layer.keys.shape[0]])
    model_kwargs = {
        key: value if key in VOCABULARY_KWARGS or key == name else _select(value, picks)
        for key, value in model_kwargs.items()
    }
    processors = LogitsProcessorList(
        processor.for_sentences(kept) if hasattr(processor, "for_sentences") else processor for processor in processors
    )
    return model_kwargs, processors


def cache_name(model_kwargs: dict) -> str:
    """The name the cache has among `generate()`'s model keyword arguments (`CACHE_NAMES`; the newer one when none
    is there)."""
    return next((name for name in CACHE_NAMES if name in model_kwargs), CACHE_NAMES[0])


def _gather(tensor: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    """The beams `indices` (batch, k) picks from `tensor` (batch, beams, ...)."""
    while indices.dim() < tensor.dim():
        indices = indices.unsqueeze(-1)
    return torch.take_along_dim(tensor, indices, dim=1)


@dataclass
class _Beams:
    """The beam-search tensors of the sentences still decoded (first dimension: sentence): the running beams, their
    scores and beam indices, the finished hypotheses, theirs, whether each is finished, and whether the sentence may
    still improve (`open`). The token rows (and their beam indices) may be narrower than `max_length` (`widen`): a
    step gathers whole rows, and those positions past the present step hold nothing yet."""

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
        """The tensors a beam search starts from, for the batch `input_ids` (beams repeated), token rows `width` long,
        `fill` where nothing is written."""
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

    def best(self, prompt: int, num_return_sequences: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The best `num_return_sequences` finished hypotheses of each sentence (cut after the longest's last token),
        their scores and beam indices (cut alike)."""
        sequences = self.sequences[:, :num_return_sequences].flatten(0, 1)
        indices = self.indices[:, :num_return_sequences].flatten(0, 1)
        generated = int((indices + 1).bool().sum(dim=1).max())
        scores = self.scores[:, :num_return_sequences].flatten(0, 1)
        return sequences[:, : prompt + generated], scores, indices[:, :generated]

    def settled(self, early_stopping) -> torch.Tensor:
        """The sentences no later step can change: none may improve, or (`early_stopping=True`) every beam is
        finished. The loop adds -1e9 to any new hypothesis of theirs."""
        return ~self.open[:, 0] | (self.finished.all(-1) & (early_stopping is True))


@dataclass
class _Search:
    """A beam search's fixed settings."""

    num_beams: int
    prompt: int
    max_length: int
    early_stopping: bool | str
    length_penalty: float
    style: str
    do_sample: bool
    top_num_beam_mask: torch.Tensor  # which of a step's candidates may finish: the top num_beams


def _step(beams: _Beams, log_probs: torch.Tensor, cur_len: int, stopping_criteria, search: _Search):
    """One step from the processed log-probabilities of the running beams: the beams after it, the beam reorder
    (`beam_idx`) and whether any sentence goes on (a 0-d bool tensor)."""
    sentences, num_beams, prompt = beams.running.shape[0], search.num_beams, search.prompt
    candidates = search.top_num_beam_mask.shape[0]
    accumulated = (log_probs.view(sentences, num_beams, -1) + beams.running_scores[..., None]).view(sentences, -1)
    # The top `candidates` continuations over all beams (sampled without replacement for beam sampling, then ranked,
    # as transformers 5.24 ranks them: only the best num_beams of them may finish a hypothesis).
    if search.do_sample:
        top = torch.multinomial(torch.softmax(accumulated, dim=-1), num_samples=candidates)
        top_scores, order = torch.gather(accumulated, 1, top).sort(dim=-1, descending=True)
        top = top.gather(-1, order)
    else:
        top_scores, top = torch.topk(accumulated, k=candidates)
    vocab_size = accumulated.shape[-1] // num_beams
    from_beam = top // vocab_size
    top_indices = _gather(beams.running_indices, from_beam)
    top_sequences = _gather(beams.running, from_beam)
    top_sequences[:, :, cur_len] = top % vocab_size
    top_indices[:, :, cur_len - prompt] = from_beam + torch.arange(sentences, device=top.device)[:, None] * num_beams
    hits = stopping_criteria(top_sequences[:, :, : cur_len + 1].flatten(0, 1), None).view(sentences, candidates)

    # The running beams: the best candidates that did not finish.
    running_scores_all = top_scores + hits.to(torch.float32) * -1.0e9
    best = torch.topk(running_scores_all, k=num_beams)[1]
    running = _gather(top_sequences, best)
    running_scores = _gather(running_scores_all, best)
    running_indices = _gather(top_indices, best)

    # The finished hypotheses: the best of those kept and this step's finished top num_beams, length-normalized.
    just_finished = hits & search.top_num_beam_mask[None, :]
    finished_scores = top_scores / length_normalizer(cur_len + 1 - prompt, search.length_penalty, search.style)
    full = torch.all(beams.finished, dim=-1, keepdim=True) & (search.early_stopping is True)
    finished_scores += full.to(torch.float32) * -1.0e9
    finished_scores += (~beams.open).to(torch.float32) * -1.0e9
    finished_scores += (~just_finished) * -1.0e9
    merged = torch.topk(torch.cat((beams.scores, finished_scores), dim=1), k=num_beams)[1]
    sequences = _gather(torch.cat((beams.sequences, top_sequences), dim=1), merged)
    scores = _gather(torch.cat((beams.scores, finished_scores), dim=1), merged)
    indices = _gather(torch.cat((beams.indices, top_indices), dim=1), merged)
    finished = _gather(torch.cat((beams.finished, just_finished), dim=1), merged)

    # Whether a running beam may still beat the worst finished one (transformers' heuristic, with the length
    # normalization the finished hypotheses got).
    length = cur_len + 1 - prompt
    if search.early_stopping == "never" and search.length_penalty > 0.0:
        length = search.max_length - prompt
    best_running = running_scores[:, :1] / length_normalizer(length, search.length_penalty, search.style)
    worst_finished = torch.where(finished, torch.min(scores, dim=1, keepdim=True)[0], -1.0e9)
    still_open = beams.open & torch.any(best_running > worst_finished, dim=-1, keepdim=True)

    goes_on = torch.any(still_open) & ~(torch.all(finished) & (search.early_stopping is True)) & ~torch.all(hits)
    beam_idx = running_indices[..., cur_len - prompt].flatten()
    beams = _Beams(running, running_scores, running_indices, sequences, scores, indices, finished, still_open)
    return beams, beam_idx, goes_on


def _fill_token(generation_config) -> int:
    """What the rows hold where nothing is written: the pad id (pad or, if it is 0 or unset, the first eos id) where
    there is an eos id, else -1, as transformers' beam search fills them."""
    pad, eos = generation_config.pad_token_id, generation_config.eos_token_id
    first_eos = eos[0] if isinstance(eos, (list, tuple)) else eos
    return (pad or first_eos) if eos is not None else -1


def _eos_count(generation_config) -> int:
    eos = generation_config.eos_token_id
    return 0 if eos is None else len(eos) if isinstance(eos, (list, tuple)) else 1


def _all_finished(this_peer_finished: bool, synced_gpus: bool, device: torch.device) -> bool:
    """Whether the loop ends: this process is done, and with `synced_gpus` every process is."""
    if not synced_gpus:
        return this_peer_finished
    flag = torch.tensor(0.0 if this_peer_finished else 1.0, device=device)
    torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.SUM)
    return flag.item() == 0.0


def _next_kwargs(outputs, model_kwargs: dict) -> dict:
    """The model keyword arguments of the next step: the cache the model returned, a decoder attention mask one
    position longer."""
    name = cache_name(model_kwargs)
    for field in CACHE_NAMES:
        if field in outputs:
            model_kwargs[name] = outputs[field]
            break
    if (mask := model_kwargs.get("decoder_attention_mask")) is not None:
        model_kwargs["decoder_attention_mask"] = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=-1)
    return model_kwargs


@dataclass(frozen=True)
class BeamOptions:
    """What `generate()` hands the beam search beside transformers' arguments: the length penalty's style, whole-word
    copying's vocabulary-wide mask (kept out of the model keyword arguments, which transformers repeats for beams),
    whether the cache is transformers' new one (not one the caller passed), and whether every process runs each
    step (`synced_gpus`)."""

    length_penalty_style: str = "power"
    word_continuation_mask: torch.Tensor | None = None
    own_cache: bool = True
    synced_gpus: bool = False


def _search(config, input_ids: torch.Tensor, style: str) -> _Search:
    """The fixed settings of a beam search over `input_ids` (num_beams rows a sentence) under generation `config`."""
    candidates = max(2, 1 + _eos_count(config)) * config.num_beams
    return _Search(
        num_beams=config.num_beams,
        prompt=input_ids.shape[1],
        max_length=config.max_length,
        early_stopping=config.early_stopping,
        length_penalty=float(config.length_penalty if config.length_penalty is not None else 1.0),
        style=style,
        do_sample=bool(config.do_sample),
        top_num_beam_mask=torch.arange(candidates, device=input_ids.device) < config.num_beams,
    )


def _prepared_kwargs(config, options: BeamOptions, model_kwargs: dict) -> tuple[dict, Cache | None]:
    """The model keyword arguments with whole-word copying's mask, and transformers' new cache with decoding cache
    layers and (where it is dynamic) one encoder row a sentence (`share_source_rows`); and the cache."""
    if options.word_continuation_mask is not None:
        model_kwargs["word_continuation_mask"] = options.word_continuation_mask
    cache = model_kwargs.get(cache_name(model_kwargs))
    if options.own_cache:
        use_decoding_cache_layers(cache, config.max_length - 1)
        cross = cache.cross_attention_cache if isinstance(cache, EncoderDecoderCache) else None
        if type(cross) is DynamicCache and not config.return_dict_in_generate:
            share_source_rows(model_kwargs, rows_a_source(config.num_beams, config.num_return_sequences))
    return model_kwargs, cache


@dataclass
class _Batch:
    """The sentences a beam search still decodes (`sentences`: their places in the passed batch), their beams, model
    keyword arguments and logits processors, and (`kept_aside`, where settled sentences are dropped) every sentence's
    finished hypotheses."""

    beams: _Beams
    sentences: torch.Tensor
    model_kwargs: dict
    processors: LogitsProcessorList
    kept_aside: _Beams | None

    def drop_settled(self, done: torch.Tensor, beam_idx: torch.Tensor) -> torch.Tensor | None:
        """Keeps the `done` sentences' hypotheses aside and drops their rows: the beam reorder of the rows kept, None
        when no sentence is left. The one read on the host a step, as transformers' loop reads whether to go on."""
        if not done.any():
            return beam_idx
        self.kept_aside.keep(self.beams, self.sentences, done)
        kept = (~done).nonzero()[:, 0]
        if not len(kept):
            return None
        num_beams = self.beams.running.shape[1]
        beam_idx = beam_idx.view(len(self.sentences), num_beams)[kept].flatten()
        self.model_kwargs, self.processors = select_sentences(
            self.model_kwargs, self.processors, kept, len(self.sentences), num_beams
        )
        self.beams, self.sentences = self.beams.select(kept), self.sentences[kept]
        return beam_idx


def beam_search(
    model,
    input_ids: torch.LongTensor,
    logits_processor: LogitsProcessorList,
    stopping_criteria,
    generation_config,
    options: BeamOptions = BeamOptions(),  # noqa: B008 (frozen: never changed)
    **model_kwargs,
):
    """The beam search (or beam sampling) of `generate()`, as transformers' `custom_generate` callable: `input_ids`
    are the decoder's start rows, num_beams a sentence; `model_kwargs` hold the encoder output, its attention mask,
    the cache transformers made and whatever else `forward` reads. Returns the sequences, or with
    `return_dict_in_generate` transformers' `GenerateBeamEncoderDecoderOutput`."""
    config, device = generation_config, input_ids.device
    search = _search(config, input_ids, options.length_penalty_style)
    model_kwargs, cache = _prepared_kwargs(config, options, model_kwargs)
    drop = drops_finished_sentences(config, logits_processor, stopping_criteria, options.synced_gpus, cache)
    record = _Record(config, model_kwargs) if config.return_dict_in_generate else None
    fill, prompt = _fill_token(config), search.prompt
    # The running beams' token rows start short and double when a step needs more, as a step's gathers copy them
    # whole (rows `max_length` long at every step would be parsing's longest source + 300).
    beams = _Beams.start(input_ids, search.num_beams, min(config.max_length, 2 * prompt + 16), fill)
    kept_aside = _Beams.start(input_ids, search.num_beams, config.max_length, fill) if drop else None
    batch = _Batch(beams, torch.arange(len(beams.running), device=device), model_kwargs, logits_processor, kept_aside)
    cached = model_kwargs.get("use_cache", True) and cache is not None
    past = cache.get_seq_length() if cached else 0
    inputs = model.prepare_inputs_for_generation(
        input_ids, next_sequence_length=prompt - past if past else None, is_first_iteration=True, **model_kwargs
    )
    outputs = model(**inputs, return_dict=True)
    cur_len, flat, finished = prompt, input_ids, False
    while True:
        batch.model_kwargs = _next_kwargs(outputs, batch.model_kwargs)
        if not finished:
            logits = outputs.logits[:, -1, :].to(copy=True, dtype=torch.float32, device=device)
            log_probs = batch.processors(flat, torch.log_softmax(logits, dim=-1))
            if record is not None:
                record.step(logits, log_probs, outputs)
            del outputs
            if cur_len >= batch.beams.running.shape[-1]:
                batch.beams = batch.beams.widen(min(config.max_length, 2 * cur_len + 1), fill)
            batch.beams, beam_idx, goes_on = _step(batch.beams, log_probs, cur_len, stopping_criteria, search)
            cur_len += 1
            if drop:
                beam_idx = batch.drop_settled(batch.beams.settled(search.early_stopping) | ~goes_on, beam_idx)
                if beam_idx is None:
                    break
            if cached:
                reorder_cache(batch.model_kwargs[cache_name(batch.model_kwargs)], beam_idx)
            finished = not drop and not bool(goes_on)
        if _all_finished(finished, options.synced_gpus, device):
            break
        flat = batch.beams.running[:, :, :cur_len].flatten(0, 1)
        step = 1 if cached else None  # the new position alone, or the whole prefix again without a cache
        inputs = model.prepare_inputs_for_generation(flat, next_sequence_length=step, **batch.model_kwargs)
        outputs = model(**inputs, return_dict=True)
    sequences, scores, indices = (kept_aside if drop else batch.beams).best(prompt, config.num_return_sequences)
    if record is None:
        return sequences
    return record.output(sequences, scores, indices, batch.model_kwargs.get(cache_name(batch.model_kwargs)))


class _Record:
    """What `return_dict_in_generate` asks for, step by step, in transformers' `GenerateBeamEncoderDecoderOutput`."""

    def __init__(self, config, model_kwargs: dict):
        self.config = config
        self.scores, self.logits, self.attentions, self.cross, self.hidden = (), (), (), (), ()
        encoder = model_kwargs["encoder_outputs"]
        self.encoder_attentions = encoder.get("attentions") if config.output_attentions else None
        self.encoder_hidden_states = encoder.get("hidden_states") if config.output_hidden_states else None

    def step(self, logits: torch.Tensor, log_probs: torch.Tensor, outputs) -> None:
        config = self.config
        if config.output_logits:
            self.logits += (logits.clone(),)
        if config.output_scores:
            self.scores += (log_probs.clone(),)
        if config.output_attentions:
            self.attentions += (outputs.decoder_attentions,)
            self.cross += (outputs.cross_attentions,)
        if config.output_hidden_states:
            self.hidden += (outputs.decoder_hidden_states,)

    def output(self, sequences, scores, indices, cache) -> GenerateBeamEncoderDecoderOutput:
        config = self.config
        return GenerateBeamEncoderDecoderOutput(
            sequences=sequences,
            sequences_scores=scores if config.output_scores else None,
            scores=self.scores if config.output_scores else None,
            logits=self.logits if config.output_logits else None,
            beam_indices=indices,
            encoder_attentions=self.encoder_attentions,
            encoder_hidden_states=self.encoder_hidden_states,
            decoder_attentions=self.attentions if config.output_attentions else None,
            cross_attentions=self.cross if config.output_attentions else None,
            decoder_hidden_states=self.hidden if config.output_hidden_states else None,
            **{_output_cache_field(): cache},
        )


def _output_cache_field() -> str:
    """The cache's field in transformers' generate outputs: "cache" from 5.24, "past_key_values" before."""
    return next(name for name in CACHE_NAMES if name in GenerateBeamEncoderDecoderOutput.__dataclass_fields__)


__all__ = ["BeamOptions", "VanillaDecodingCacheLayer", "beam_search", "gnmt_length_penalty"]
