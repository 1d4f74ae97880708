"""`generate_texts`' decoding batches: at most `max_tokens` padded source tokens and, where capped, at most
`max_beam_rows` sentences times beams; the same outputs however the sentences are batched."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_vanilla.batch_decoding import CPU_BEAM_ROWS, decoding_batches, default_beam_rows, generate_texts

from reversal import reversal_batch, reversal_text, reversal_tokenizer


def test_batches_are_cut_by_source_tokens_and_by_beam_rows():
    assert decoding_batches([5] * 10, max_tokens=20) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    # 8 rows at 4 beams a sentence: 2 sentences, though 20 tokens would hold 4.
    assert decoding_batches([5] * 5, 20, max_beam_rows=8, rows_a_sentence=4) == [[0, 1], [2, 3], [4]]
    # A sentence whose beams alone exceed the cap still decodes, alone.
    assert decoding_batches([5] * 3, 20, max_beam_rows=3, rows_a_sentence=4) == [[0], [1], [2]]
    assert decoding_batches([], 20, max_beam_rows=8, rows_a_sentence=4) == []
    with pytest.raises(ValueError, match="max_beam_rows must be at least 1, got 0"):
        decoding_batches([5], 20, max_beam_rows=0, rows_a_sentence=4)


@settings(max_examples=200, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 60), max_size=40).map(sorted),
    max_tokens=st.integers(1, 400),
    max_beam_rows=st.none() | st.integers(1, 100),
    rows_a_sentence=st.integers(1, 21),
)
def test_each_batch_is_the_longest_run_both_budgets_allow(lengths, max_tokens, max_beam_rows, rows_a_sentence):
    batches = decoding_batches(lengths, max_tokens, max_beam_rows, rows_a_sentence)
    assert [p for batch in batches for p in batch] == list(range(len(lengths)))  # consecutive, each once

    def fits(batch: list[int]) -> bool:
        tokens = max(lengths[p] for p in batch) * len(batch)
        rows = len(batch) * rows_a_sentence
        return len(batch) == 1 or (tokens <= max_tokens and (max_beam_rows is None or rows <= max_beam_rows))

    for batch, following in zip(batches, batches[1:] + [None]):
        assert fits(batch)
        if following is not None:  # greedy: one more sentence would not fit
            assert not fits(batch + following[:1])


def test_the_cap_applies_on_a_cpu_only():
    assert default_beam_rows(torch.device("cpu")) == CPU_BEAM_ROWS
    assert default_beam_rows(torch.device("cuda")) is None
    assert default_beam_rows(torch.device("meta")) is None


def test_generate_texts_batches_beam_rows_and_decodes_the_same(reversal_model, monkeypatch):
    ids, _, _ = reversal_batch(seed=11, rows=12)
    sentences, tokenizer = reversal_text(ids), reversal_tokenizer()
    unbatched = generate_texts(reversal_model, tokenizer, sentences, progress=False, num_beams=4, max_beam_rows=None)
    sizes, generate = [], reversal_model.generate

    def recording(**kwargs):
        sizes.append(kwargs["input_ids"].shape[0])
        return generate(**kwargs)

    monkeypatch.setattr(reversal_model, "generate", recording)
    capped = generate_texts(reversal_model, tokenizer, sentences, progress=False, num_beams=4, max_beam_rows=12)
    assert sizes == [3, 3, 3, 3]  # 12 rows at 4 beams
    assert capped == unbatched
    assert len(set(unbatched)) > 6  # varied reversals, not one string for all
    sizes.clear()
    generate_texts(reversal_model, tokenizer, sentences, progress=False, num_beams=21)
    assert sizes == [12]  # CPU_BEAM_ROWS holds 36 sentences at beam 21
    sizes.clear()
    generate_texts(reversal_model, tokenizer, sentences, progress=False, num_beams=5, max_beam_rows=10)
    assert sizes == [2] * 6
