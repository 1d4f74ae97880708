"""Token-budget batching (`hf_vanilla.data.batching`): the budget, every pair once, even shards, little padding."""

import pytest

from hf_vanilla.data.batching import TokenBudgetBatchSampler, random_batches
from hf_vanilla.data.corpora import load_translation_corpus
from hf_vanilla.data.encoding import encode_pairs
from hf_vanilla.tokenization import train_shared_bpe


def test_batches_respect_the_budget_cover_every_pair_and_shard_evenly():
    source = [(i * 7) % 23 + 1 for i in range(500)]
    target = [(i * 5) % 29 + 1 for i in range(500)]
    sampler = TokenBudgetBatchSampler(source, target, max_tokens=120, seed=3)
    batches = sampler.all_batches(0)
    assert sorted(i for b in batches for i in b) == list(range(500))
    for batch in batches:
        assert max(source[i] for i in batch) * len(batch) <= 120 and max(target[i] for i in batch) * len(batch) <= 120
    assert batches == TokenBudgetBatchSampler(source, target, max_tokens=120, seed=3).all_batches(0)
    assert batches != sampler.all_batches(1)
    shards = [
        TokenBudgetBatchSampler(source, target, 120, seed=3, num_replicas=3, rank=r).batches(0) for r in range(3)
    ]
    assert len({len(s) for s in shards}) == 1
    flat = [tuple(b) for s in shards for b in s]
    assert len(flat) == len(set(flat))


def test_budget_smaller_than_a_sentence_is_a_clear_error():
    with pytest.raises(ValueError, match="smaller than the longest sentence"):
        TokenBudgetBatchSampler([5, 50], [5, 5], max_tokens=20)


def test_padding_on_the_shared_wmt_sample_is_under_5_percent(wmt_sample):
    corpus = load_translation_corpus(str(wmt_sample), moses_detokenize=True)
    pairs = corpus["train"]
    tokenizer = train_shared_bpe(
        (p[lang] for p in pairs["translation"] for lang in ("en", "de")), vocab_size=8000, show_progress=False
    )
    examples = encode_pairs(pairs, tokenizer, "en", "de")
    source, target = examples.source_lengths.tolist(), examples.target_lengths.tolist()
    sampler = TokenBudgetBatchSampler(source, target, max_tokens=1024, seed=0)
    bucketed = sampler.padding_fraction(sampler.all_batches(0))
    average_batch = len(source) // len(sampler.all_batches(0))
    shuffled = sampler.padding_fraction(random_batches(len(source), average_batch, seed=0))
    assert bucketed < 0.05 < shuffled, (bucketed, shuffled)
