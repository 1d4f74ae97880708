"""With hf_vanilla's weights loaded into transformers' MarianMTModel (configured as the paper's model), both compute the
same function: an independent implementation checks the forward pass, the cache and beam search. The benchmark relies
on this mapping to compare speed on identical weights."""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from compare_marian import marian_like  # noqa: E402

from conftest import tiny_model  # noqa: E402


def paired_models_and_source(seed: int, batch: int, length: int, padded_row: int, real_length: int):
    """A tiny hf_vanilla model, a MarianMTModel holding its weights, and a random source batch with one padded row."""
    ours = tiny_model(pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    theirs = marian_like(ours, max_positions=128).eval()
    torch.manual_seed(seed)
    source = torch.randint(3, 1000, (batch, length))
    source[padded_row, real_length:] = 0
    return ours, theirs, source


def test_same_logits_as_marian_with_the_same_weights():
    ours, theirs, source = paired_models_and_source(seed=1, batch=3, length=12, padded_row=1, real_length=7)
    target = torch.randint(3, 1000, (3, 9))
    with torch.no_grad():
        a = ours(input_ids=source, attention_mask=(source != 0).long(), decoder_input_ids=target).logits
        b = theirs(input_ids=source, attention_mask=(source != 0).long(), decoder_input_ids=target).logits
    assert torch.allclose(a, b, atol=1e-5), (a - b).abs().max()


def test_same_greedy_and_beam_tokens_as_marian():
    ours, theirs, source = paired_models_and_source(seed=2, batch=4, length=10, padded_row=2, real_length=6)
    mask = (source != 0).long()
    for beams in (1, 4):
        kwargs = dict(num_beams=beams, max_new_tokens=12, length_penalty=0.6, early_stopping=True, do_sample=False)
        a = ours.generate(input_ids=source, attention_mask=mask, length_penalty_style="power", **kwargs)
        b = theirs.generate(input_ids=source, attention_mask=mask, **kwargs)
        assert a.tolist() == b.tolist(), (beams, a, b)
