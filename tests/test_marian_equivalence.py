"""hf_vanilla and transformers' MarianMTModel, an independent implementation of the same architecture, compute the
same function once `hf_vanilla.convert.to_marian` has moved the weights across: the forward pass on padded batches
(padding and causal masks), and greedy and beam decoding (the cache, the beam reordering) of the reversal model,
whose decodings depend on every source token."""

import torch

from hf_vanilla.convert import to_marian

from reversal import assert_varied, decoded, reversal_batch, reversal_rows
from runs import tiny_model
from tolerances import assert_close_up_to_rounding, transformer_sums


def test_same_logits_as_marian_on_a_padded_batch(reversal_model):
    for ours in (reversal_model, tiny_model(vocab_size=1003, init_std=0.1)):
        theirs = to_marian(ours).eval()
        ids, mask, answers = reversal_batch(seed=1, rows=4, lengths=(3, 10))
        assert mask.sum(-1).min() < mask.shape[1] - 3  # some rows are padded
        target = torch.tensor([[1] + answer[:-1] + [0] * (11 - len(answer)) for answer in answers])
        with torch.no_grad():
            a = ours(input_ids=ids, attention_mask=mask, decoder_input_ids=target).logits
            b = theirs(input_ids=ids, attention_mask=mask, decoder_input_ids=target).logits
        assert_close_up_to_rounding(a, b, **transformer_sums(ours.config))


def test_same_greedy_and_beam_tokens_and_scores_as_marian(reversal_model):
    """The same tokens and scores, and the reversals: the sentences are ones our model is checked to reverse both
    ways without the cache (`reversal_rows`), since which 5% a model trained to 95% gets wrong depends on the
    machine."""
    theirs = to_marian(reversal_model).eval()
    settings = dict(max_new_tokens=12, length_penalty=0.6, early_stopping=True, length_penalty_style="power")
    decodings = [{**settings, "num_beams": beams} for beams in (1, 4)]
    ids, mask, answers = reversal_rows(reversal_model, 2, [4, 10, 3, 7, 5, 9], *decodings)
    for beams in (1, 4):
        kwargs = dict(
            num_beams=beams,
            num_return_sequences=beams,
            max_new_tokens=12,
            length_penalty=0.6,
            early_stopping=True,
            do_sample=False,
            output_scores=True,
            return_dict_in_generate=True,
        )
        a = reversal_model.generate(input_ids=ids, attention_mask=mask, length_penalty_style="power", **kwargs)
        b = theirs.generate(input_ids=ids, attention_mask=mask, **kwargs)
        assert_varied(a.sequences[::beams])
        assert [decoded(row) for row in a.sequences[::beams].tolist()] == answers
        assert a.sequences.tolist() == b.sequences.tolist(), beams
        for ours_scores, theirs_scores in zip(a.scores, b.scores, strict=True):
            assert_close_up_to_rounding(ours_scores, theirs_scores, **transformer_sums(reversal_model.config))
