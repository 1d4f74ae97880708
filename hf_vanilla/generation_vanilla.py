"""The paper's decoding rules beside the model, for `generate()`: the GNMT length penalty, each sentence's own maximum
output length (source length + an offset), a summarizer's rule against sub-word stutters and a pointer-generator's
whole-word copying. `VanillaGenerationMixin.generate()` reads each setting from its keyword arguments or the
generation config and hands it on as an argument, never as state left on the model, through transformers' public
extension points only: logits processors, model keyword arguments that transformers passes to `forward` at every
step, and, for beam search, `custom_generate` with hf_vanilla's own loop (`beam_search_vanilla.beam_search`: the GNMT
penalty, the beams of a sentence sharing its encoder rows, the contiguous cache, settled sentences dropped). A flat
file with single-dot imports: `save_pretrained` copies it beside `modeling_vanilla.py` as Hub remote code.
"""


import copy
import functools
import math

import torch
from transformers import GenerationMixin
from transformers.generation import LogitsProcessor, LogitsProcessorList
from transformers.integrations.deepspeed import is_deepspeed_zero3_enabled
from transformers.integrations.fsdp import is_fsdp_managed_module
from transformers.utils import is_torchdynamo_compiling

from .beam_search_vanilla import BeamOptions, beam_search, rows_a_source


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
        mask = kwargs.pop("word_continuation_mask", mask)
        source_ids = inputs if inputs is not None else kwargs.get("input_ids")
        if source_ids is not None:  # its range is checked once, by the encoder
            check_token_ids(source_ids, self.config.vocab_size, "input_ids", check_range=False)
            if self.config.pointer_generator:  # every step's copy reads them (`prepare_inputs_for_generation`)
                kwargs["source_ids"] = source_ids
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
        if rules or logits_processor is not None:
            logits_processor = rules
        setting = functools.partial(self._resolved_setting, generation_config, kwargs)
        beams = (setting("num_beams") or 1) > 1 and (setting("num_beam_groups") or 1) == 1
        beams &= setting("constraints") is None and setting("force_words_ids") is None
        if beams and kwargs.get("assistant_model") is None and kwargs.get("custom_generate") is None:
            if kwargs.get("streamer") is not None:
                raise ValueError("Beam search cannot stream its output: pass num_beams=1 with a streamer.")
            options = BeamOptions(
                length_penalty_style=style,
                word_continuation_mask=mask,
                own_cache=kwargs.get("past_key_values", kwargs.get("cache")) is None,
                synced_gpus=self._synced_gpus(kwargs.pop("synced_gpus", None)),
            )
            kwargs["custom_generate"] = functools.partial(beam_search, options=options)
        elif mask is not None:
            if rows_a_source(setting("num_beams"), setting("num_return_sequences")) > 1:
                raise ValueError(
                    "Whole-word copying (word_continuation_ids) decodes one row a source or beams: sample one "
                    "sequence a call, or decode with num_beams > 1."
                )
            kwargs["word_continuation_mask"] = mask  # one value for the whole vocabulary: transformers repeats nothing
        return super().generate(
            inputs, generation_config=generation_config, logits_processor=logits_processor, **kwargs
        )

    def _resolved_setting(self, generation_config, kwargs: dict, name: str):
        """Generation setting `name` as transformers resolves it for this call: the keyword's, else the passed
        config's, else (where that is None) the model's generation config's."""
        if name in kwargs:
            return kwargs[name]
        value = getattr(generation_config, name, None) if generation_config is not None else None
        return value if value is not None else getattr(self.generation_config, name, None)

    def _synced_gpus(self, asked: bool | None) -> bool:
        """Whether every process must run each decoding step (as transformers decides it): asked, else where
        DeepSpeed ZeRO-3 or FSDP shards the model over several processes."""
        if asked is not None:
            return asked
        several = torch.distributed.is_available() and torch.distributed.is_initialized()
        several = several and torch.distributed.get_world_size() > 1
        return several and (is_deepspeed_zero3_enabled() or is_fsdp_managed_module(self))

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

    def prepare_inputs_for_generation(self, *args, source_ids: torch.LongTensor | None = None, **kwargs) -> dict:
        """transformers' inputs of one decoding step, with a pointer-generator's source ids as `input_ids`."""
        model_inputs = super().prepare_inputs_for_generation(*args, **kwargs)
        if source_ids is not None:
            model_inputs["input_ids"] = source_ids
        return model_inputs

__all__ = ["SourceLengthLimitLogitsProcessor", "SourceLicensedStutterLogitsProcessor", "VanillaGenerationMixin"]
