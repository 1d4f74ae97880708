"""The summarizers' rule against sub-word stutters (`no_stutter_span_size`, `SourceLicensedStutterLogitsProcessor`):
no span of 1 to k tokens twice in a row unless the hypothesis' own source holds it twice in a row."""

import random

import pytest
import torch

from hf_vanilla import VanillaTransformerConfig, VanillaTransformerForConditionalGeneration
from hf_vanilla.decoding_settings import DECODING
from hf_vanilla.generation_vanilla import SourceLicensedStutterLogitsProcessor

from reversal import decoded, reversal_batch


def stutters(tokens: list[int], size: int) -> set[tuple[int, ...]]:
    """Every run of 2L tokens (L = 1..size) in `tokens` whose two halves are equal."""
    return {
        tuple(tokens[i : i + 2 * n])
        for n in range(1, size + 1)
        for i in range(len(tokens) - 2 * n + 1)
        if tokens[i : i + n] == tokens[i + n : i + 2 * n]
    }


def holds(source: list[int], span: tuple[int, ...]) -> bool:
    """Whether `span` occurs in `source`, consecutively."""
    return any(tuple(source[i : i + len(span)]) == span for i in range(len(source) - len(span) + 1))


def blocked_by_brute_force(written: list[int], source: list[int], size: int, vocab: int) -> set[int]:
    """The tokens t for which written + [t] ends with a span of at most `size` tokens written twice in a row that the
    source does not hold."""
    blocked = set()
    for token in range(vocab):
        longer = written + [token]
        for n in range(1, min(size, len(longer) // 2) + 1):
            tail = tuple(longer[-2 * n :])
            if tail[:n] == tail[n:] and not holds(source, tail):
                blocked.add(token)
    return blocked


def test_the_processor_blocks_exactly_the_unlicensed_stutters_found_by_brute_force():
    rng = random.Random(0)
    vocab, size, pad = 7, 3, 0
    for trial in range(300):
        sources = [[rng.randrange(1, 4) for _ in range(rng.randrange(2, 12))] for _ in range(2)]
        width = max(map(len, sources))
        left = trial % 2 == 1  # left padding, told by the attention mask alone (its pad id is a real token then)
        pads = [[pad if not left else 1] * (width - len(s)) for s in sources]
        source_ids = torch.tensor([p + s if left else s + p for s, p in zip(sources, pads)])
        mask = torch.tensor(
            [[0] * len(p) + [1] * len(s) if left else [1] * len(s) + [0] * len(p) for s, p in zip(sources, pads)]
        )
        beams, length = 3, rng.randrange(0, 9)
        written = [[rng.randrange(1, 4) for _ in range(length)] for _ in range(2 * beams)]
        input_ids = torch.tensor([[9] + row for row in written])  # the decoder's start token first
        processor = SourceLicensedStutterLogitsProcessor(source_ids, size, pad, mask if left else None)
        scores = processor(input_ids, torch.zeros(2 * beams, vocab))
        for row in range(2 * beams):
            expected = blocked_by_brute_force(written[row], sources[row // beams], size, vocab)
            assert set(torch.nonzero(scores[row] == -torch.inf).flatten().tolist()) == expected


def test_generate_writes_no_unlicensed_stutter_where_it_otherwise_would():
    """An untrained model writes one token again and again: without the rule its outputs stutter, with it none of
    the returned outputs holds a stutter of at most 4 tokens (none is licensed: the sources repeat nothing)."""
    torch.manual_seed(0)
    config = VanillaTransformerConfig.from_size("tiny", vocab_size=40, task="summarization")
    model = VanillaTransformerForConditionalGeneration(config).eval()
    ids = torch.tensor([[5, 6, 7, 8, 9, 10, 2], [11, 12, 13, 14, 15, 16, 2]])
    settings = dict(num_beams=4, num_return_sequences=2, max_new_tokens=12, min_new_tokens=12, no_repeat_ngram_size=0)
    without = model.generate(ids, no_stutter_span_size=0, **settings)
    assert any(stutters(decoded(row), 4) for row in without.tolist())
    with_rule = model.generate(ids, no_stutter_span_size=4, **settings)
    assert with_rule.shape[0] == 4 and not any(stutters(decoded(row), 4) for row in with_rule.tolist())
    assert model.generation_config.no_stutter_span_size == DECODING["summarization"]["no_stutter_span_size"] == 4
    with pytest.raises(ValueError, match="needs input_ids"):  # asked for, where it cannot apply
        model.generate(encoder_outputs=model.get_encoder()(ids), no_stutter_span_size=2, max_new_tokens=3)
    # From the generation config, a call without source ids leaves it out, as before it existed.
    assert model.generate(encoder_outputs=model.get_encoder()(ids), max_new_tokens=3).shape[0] == 2
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="no_stutter_span_size must be a whole number"):
            model.generate(ids, no_stutter_span_size=bad, max_new_tokens=3)


def test_a_repeat_the_source_holds_is_still_written(reversal_model):
    """The reversal of a source with a token twice in a row holds it twice in a row: licensed, so every source of a
    doubled token that the trained reversal model reverses without the rule it still reverses with the rule (span 1).
    Compared row by row with the model's own decoding without the rule: the model is trained to 95%, and which rows
    it gets wrong (where the rule may change its output, even to the answer) depends on the machine's rounding."""
    ids, mask, answers = reversal_batch(seed=5, rows=32)
    for row, answer in enumerate(answers):
        length = len(answer) - 1  # at least 3
        ids[row, 1] = ids[row, 2]  # a doubled token inside the source
        answers[row] = ids[row, :length].flip(0).tolist() + [2]
    kwargs = dict(attention_mask=mask, num_beams=4, max_new_tokens=ids.shape[1] + 2)
    plain, ruled = (
        [decoded(row) for row in reversal_model.generate(ids, **kwargs, no_stutter_span_size=span).tolist()]
        for span in (0, 1)
    )
    right = [row for row, answer in enumerate(answers) if plain[row] == answer]
    assert len(right) >= 16, f"the model reverses {len(right)} of 32 sources without the rule"
    assert [ruled[row] for row in right] == [answers[row] for row in right]
