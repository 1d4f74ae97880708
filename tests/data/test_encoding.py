"""Encoded pairs (`hf_vanilla.data.encoding`): the tokenizer's ids, padded batches, Arrow columns of any chunking."""

import pytest
import torch

from hf_vanilla.data.corpora import load_translation_corpus
from hf_vanilla.data.encoding import EncodedPairs, encode_pairs
from hf_vanilla.tokenization import train_shared_bpe


@pytest.mark.parametrize("multiple", [1, 8])
def test_encoded_pairs_batch_equals_padding_each_row_by_hand(multiple):
    sources = [[3 + (i * 7 + j) % 50 for j in range(1 + i % 9)] + [2] for i in range(40)]
    targets = [[4 + (i * 5 + j) % 60 for j in range(i % 13)] + [2] for i in range(40)]
    examples = EncodedPairs.from_lists(sources, targets)
    assert examples.source_lengths.tolist() == [len(s) for s in sources]
    indices = [31, 0, 7, 12, 7]  # any order, repeats allowed
    batch = examples.collate(indices, pad_token_id=1, pad_to_multiple_of=multiple)
    width = -(-max(len(sources[i]) for i in indices) // multiple) * multiple
    assert width == (9 if multiple == 1 else 16)
    assert batch["input_ids"].tolist() == [sources[i] + [1] * (width - len(sources[i])) for i in indices]
    assert batch["attention_mask"].tolist() == [
        [1] * len(sources[i]) + [0] * (width - len(sources[i])) for i in indices
    ]
    width = -(-max(len(targets[i]) for i in indices) // multiple) * multiple
    assert batch["labels"].tolist() == [targets[i] + [-100] * (width - len(targets[i])) for i in indices]
    assert all(t.dtype == torch.long for t in batch.values())


def test_encode_pairs_holds_the_tokenizer_ids_after_a_filter(wmt_sample):
    """`encode_pairs` reads the ids straight from Arrow; a filtered dataset (an indices mapping) must not shift
    rows."""
    pairs = (
        load_translation_corpus(str(wmt_sample))["train"]
        .select(range(300))
        .filter(lambda p: len(p["translation"]["en"]) % 3)
    )
    tokenizer = train_shared_bpe(
        (p[lang] for p in pairs["translation"] for lang in ("en", "de")), vocab_size=500, show_progress=False
    )
    examples = encode_pairs(pairs, tokenizer, "en", "de")
    english = [p["en"] for p in pairs["translation"]]
    german = [p["de"] for p in pairs["translation"]]
    assert len(examples) == len(english) < 300
    batch = examples.collate(range(len(english)), tokenizer.pad_token_id)
    for row, (source, target) in enumerate(zip(tokenizer(english)["input_ids"], tokenizer(german)["input_ids"])):
        assert batch["input_ids"][row, : len(source)].tolist() == source
        assert batch["labels"][row, : len(target)].tolist() == target


def test_encoded_pairs_read_chunked_and_sliced_arrow_columns():
    import pyarrow as pa

    from hf_vanilla.data.encoding import _flat

    rows = [[5, 6, 2], [7, 2], [8, 9, 10, 2], [2], [11, 2]]
    column = pa.chunked_array([pa.array([[1, 1]] + rows[:2]).slice(1), pa.array(rows[2:4]), pa.array(rows[4:])])
    examples = EncodedPairs(*_flat(column), *_flat(column))
    assert examples.source_lengths.tolist() == [3, 2, 4, 1, 2]
    assert examples.collate([2, 4, 0], 0)["input_ids"].tolist() == [[8, 9, 10, 2], [11, 2, 0, 0], [5, 6, 2, 0]]


def test_encoded_pairs_reject_mismatched_or_empty_sides():
    with pytest.raises(ValueError, match="3 sources but 2 targets"):
        EncodedPairs.from_lists([[2], [2], [2]], [[2], [2]])
    with pytest.raises(ValueError, match="at least one token"):
        EncodedPairs.from_lists([[2], []], [[2], [2]])
