"""Beam search that drops a settled sentence from the batch (`beam_search_vanilla.beam_search`): the sequences of
every row kept to the end (`drop_finished_sentences=False`), from fewer rows; and the per-sentence logits processors
it narrows (`for_sentences`)."""

import pytest
import torch
from transformers import LogitsProcessor

from hf_vanilla.beam_search_vanilla import sentence_rows
from hf_vanilla.generation_vanilla import SourceLengthLimitLogitsProcessor, SourceLicensedStutterLogitsProcessor

from reversal import assert_varied, reversal_batch


def decode(model, ids, mask, drop: bool | None, **settings) -> tuple[torch.Tensor, list[int]]:
    """`model.generate`'s output with `drop_finished_sentences=drop` (None: the generation config's), and the rows of
    each decoder step it ran (the first: the whole batch's)."""
    rows, forward = [], model.forward

    def counting(*args, **kwargs):
        rows.append(kwargs["decoder_input_ids"].shape[0])
        return forward(*args, **kwargs)

    if drop is not None:
        settings["drop_finished_sentences"] = drop
    model.forward = counting
    try:
        output = model.generate(ids, attention_mask=mask, **settings)
    finally:
        del model.forward  # the class's forward again
    return output, rows


SETTINGS = {
    "the paper's": dict(num_beams=4, max_new_tokens=16, length_penalty_style="gnmt", length_penalty=0.6),
    "power penalty, no early stop": dict(num_beams=4, max_new_tokens=16, early_stopping=False, length_penalty=1.0),
    "never stop early": dict(num_beams=3, max_new_tokens=16, early_stopping="never"),
    "several returned": dict(num_beams=5, num_return_sequences=3, max_new_tokens=16),
    "source limit and stutter rule": dict(num_beams=4, max_length_offset=2, no_stutter_span_size=2),
}


@pytest.mark.parametrize("setting", SETTINGS)
def test_dropping_settled_sentences_decodes_the_sequences_of_transformers_loop(decoding_model, setting):
    """Sentences of 3 to 10 symbols settle at different steps: each leaves the batch when it does, and the batch
    decodes exactly the sequences of transformers' loop, which computes every sentence's beams to the end."""
    ids, mask, _ = reversal_batch(seed=3, rows=10, lengths=(3, 10))
    full, full_rows = decode(decoding_model, ids, mask, drop=False, **SETTINGS[setting])
    dropped, dropped_rows = decode(decoding_model, ids, mask, drop=True, **SETTINGS[setting])
    assert_varied(full[:: SETTINGS[setting].get("num_return_sequences", 1)])
    assert torch.equal(dropped, full)
    assert dropped_rows[0] == full_rows[0] == full_rows[-1] and len(dropped_rows) == len(full_rows)
    assert dropped_rows[-1] < full_rows[-1] and sum(dropped_rows) < 0.8 * sum(full_rows), dropped_rows


def test_a_batch_cut_at_its_length_limit_keeps_the_sentences_it_dropped(reversal_model):
    """`max_new_tokens` ends the loop with sentences still open: the ones dropped earlier keep their hypotheses."""
    ids, mask, _ = reversal_batch(seed=3, rows=10, lengths=(3, 10))
    full, _ = decode(reversal_model, ids, mask, drop=False, num_beams=3, max_new_tokens=7)
    dropped, rows = decode(reversal_model, ids, mask, drop=True, num_beams=3, max_new_tokens=7)
    assert torch.equal(dropped, full)
    assert rows[-1] < rows[0] and (full[:, -1] != 2).any() and (full == 2).any(-1).any()


class ExactLengths(LogitsProcessor):
    """Every hypothesis of sentence i writes exactly `lengths[i]` tokens, then </s>: </s> is blocked before, and is
    the only choice there. So the hypotheses' lengths are the test's, not what a trained model happens to write on
    this machine's kernels; which tokens they write is still the model's."""

    def __init__(self, lengths: torch.Tensor, eos: int = 2):
        self.lengths, self.eos = lengths, eos

    def __call__(self, input_ids, scores):
        written = input_ids.shape[1] - 1  # after the start token
        lengths = self.lengths.repeat_interleave(scores.shape[0] // len(self.lengths))
        scores = scores.clone()
        scores[lengths > written, self.eos] = -float("inf")
        ends = lengths == written
        scores[ends] = torch.where(torch.arange(scores.shape[1]) == self.eos, scores[ends], -float("inf"))
        return scores

    def for_sentences(self, kept):
        return ExactLengths(self.lengths[kept], self.eos)


def test_the_running_beams_token_rows_widen_as_the_steps_need(reversal_model, monkeypatch):
    """The running beams' token rows start short and double when a step needs more room (a step's gathers copy them
    whole): hypotheses shorter than the first row, between the first and the second, and longer than the second
    (`ExactLengths`), decode exactly the sequences of every row kept to the end, fill past each one's end included."""
    from hf_vanilla import beam_search_vanilla

    widths, widen = [], beam_search_vanilla._Beams.widen

    def counting(self, width, fill):
        widths.append(width)
        return widen(self, width, fill)

    monkeypatch.setattr(beam_search_vanilla._Beams, "widen", counting)
    ids, mask, _ = reversal_batch(seed=3, rows=6, lengths=(15, 40))
    lengths = torch.tensor([9, 30, 12, 50, 25, 40])  # 1 prompt token: rows of 18, then 37 (2 * 18 + 1), then 61
    decoding = dict(num_beams=3, max_new_tokens=60, logits_processor=[ExactLengths(lengths)])
    full, _ = decode(reversal_model, ids, mask, drop=False, **decoding)
    widths.clear()
    dropped, rows = decode(reversal_model, ids, mask, drop=True, **decoding)
    assert torch.equal(dropped, full) and rows[-1] < rows[0]
    assert widths == [37, 61], widths  # from 18 (1 prompt token: 2 + 16) to 37, then to max_length (1 + 60)
    assert torch.equal((full[:, 1:] != 2).sum(-1), lengths)  # each wrote its length (eos is also the fill here)
    assert_varied(full)


class PlaceInBatch(LogitsProcessor):
    """A rule that reads a row's place in the batch: the first `rows` rows may not write `token`."""

    def __init__(self, rows: int, token: int):
        self.rows, self.token = rows, token

    def __call__(self, input_ids, scores):
        scores = scores.clone()
        scores[: self.rows, self.token] = -float("inf")
        return scores


@pytest.mark.parametrize(
    "setting",
    [
        dict(logits_processor=[PlaceInBatch(4, 2)]),  # the first sentence may not end: rows must keep their places
        dict(cache_implementation="static"),
        dict(return_dict_in_generate=True),
        dict(do_sample=True, top_k=3),
    ],
    ids=["a rule of rows' places", "static cache", "every step's output", "sampled beams"],
)
def test_beam_search_keeps_every_row_where_dropping_one_would_change_the_output(reversal_model, setting):
    ids, mask, _ = reversal_batch(seed=3, rows=6, lengths=(3, 10))
    decoding = dict(num_beams=4, max_new_tokens=14, **setting)
    torch.manual_seed(0)
    full, full_rows = decode(reversal_model, ids, mask, drop=False, **decoding)
    torch.manual_seed(0)
    asked, rows = decode(reversal_model, ids, mask, drop=True, **decoding)
    if setting.get("return_dict_in_generate"):
        full, asked = full.sequences, asked.sequences
    assert torch.equal(asked, full) and rows == full_rows == [24] * len(rows)


def test_the_generation_config_turns_dropping_off_and_saves_it(reversal_model, tmp_path):
    ids, mask, _ = reversal_batch(seed=3, rows=6, lengths=(3, 10))
    config = reversal_model.generation_config
    assert config.drop_finished_sentences is True
    by_default, default_rows = decode(reversal_model, ids, mask, drop=None, num_beams=4)
    config.drop_finished_sentences = False
    try:
        config.save_pretrained(tmp_path)
        turned_off, rows = decode(reversal_model, ids, mask, drop=None, num_beams=4)
    finally:
        config.drop_finished_sentences = True
    assert torch.equal(turned_off, by_default) and set(rows) == {24} and min(default_rows) < 24
    assert type(config).from_pretrained(tmp_path).drop_finished_sentences is False


def narrowing_cases(generator: torch.Generator):
    """Rows of 3 beams for 4 sentences over a 3-symbol alphabet (so that stutters and licensed repeats are common),
    random scores, and each rule built for the 4 sentences."""
    sources = torch.randint(4, 7, (4, 9), generator=generator)
    sources[1, 6:] = 0  # padding, which the attention mask leaves out
    mask = (sources != 0).long()
    written = torch.cat([torch.ones(12, 1, dtype=torch.long), torch.randint(4, 7, (12, 7), generator=generator)], 1)
    scores = torch.randn(12, 10, generator=generator)
    limits = SourceLengthLimitLogitsProcessor(torch.tensor([9, 7, 8, 12]), eos_token_id=2)
    stutter = SourceLicensedStutterLogitsProcessor(sources, 3, 0, mask)
    return written, scores, (limits, stutter)


@pytest.mark.parametrize("kept", [[0, 2, 3], [3], [1, 2], [3, 1]])
def test_a_rule_for_the_kept_sentences_scores_their_rows_as_it_does_in_the_whole_batch(kept):
    """`for_sentences(kept)` on the kept sentences' rows alone gives what the rule gives them in the whole batch; the
    limits (forced ends) and the stutter rule (blocked tokens) each act on some rows here, so a rule that read
    another sentence's settings would change them."""
    written, scores, rules = narrowing_cases(torch.Generator().manual_seed(0))
    kept = torch.tensor(kept)
    rows = sentence_rows(kept, 3)
    for rule in rules:
        whole = rule(written, scores.clone())
        assert (~torch.isfinite(whole)).any(-1).sum() not in (0, 12), type(rule).__name__  # acts on some rows
        assert torch.equal(rule.for_sentences(kept)(written[rows], scores[rows].clone()), whole[rows])


def cross_attention_rows(model, **generate_kwargs) -> tuple[torch.Tensor, set[int]]:
    """`model.generate`'s output on 10 reversal sentences and the rows of every encoder output its cross-attention
    projected into keys and values."""
    rows, layers = set(), [layer.encoder_attn.kv_proj for layer in model.model.decoder.layers]
    hooks = [layer.register_forward_hook(lambda _, inputs, __: rows.add(inputs[0].shape[0])) for layer in layers]
    ids, mask, _ = reversal_batch(seed=3, rows=10, lengths=(3, 10))
    try:
        output = model.generate(ids, attention_mask=mask, max_new_tokens=14, **generate_kwargs)
    finally:
        for hook in hooks:
            hook.remove()
    return output, rows


@pytest.mark.parametrize("drop", [False, True], ids=["every row to the end", "settled sentences dropped"])
def test_the_beams_of_a_sentence_share_its_encoder_rows(decoding_model, drop):
    """`generate()` projects and caches a source's cross-attention keys and values once for its 4 beams (10 rows,
    not 40) and decodes the sequences of transformers' repeated rows, which it keeps where every step's output is
    returned (`return_dict_in_generate`)."""
    shared, shared_rows = cross_attention_rows(decoding_model, num_beams=4, drop_finished_sentences=drop)
    repeated, repeated_rows = cross_attention_rows(decoding_model, num_beams=4, return_dict_in_generate=True)
    assert shared_rows == {10} and repeated_rows == {40}
    assert_varied(shared)
    assert torch.equal(shared, repeated.sequences)


def test_a_decoder_batch_of_k_rows_a_source_reads_each_source_once(decoding_model):
    """The forward pass with one encoder row for each source's 3 consecutive decoder rows (5 teacher-forced positions
    each, padded sources) gives the logits, attention weights and a pointer-generator's p_gen and copy attention of
    the same rows with the encoder output repeated, up to rounding (grouped queries attend in other blocks)."""
    from tolerances import assert_close_up_to_rounding, pointer_sums

    ids, mask, _ = reversal_batch(seed=5, rows=4, lengths=(3, 10))
    decoder_ids = torch.randint(4, 28, (12, 5), generator=torch.Generator().manual_seed(0))
    decoder_ids[:, 0] = 1
    with torch.no_grad():
        encoder = decoding_model.get_encoder()(input_ids=ids, attention_mask=mask)
        repeated = type(encoder)(last_hidden_state=encoder.last_hidden_state.repeat_interleave(3, 0))
        outputs = [
            decoding_model(
                input_ids=source,
                attention_mask=source_mask,
                encoder_outputs=states,
                decoder_input_ids=decoder_ids,
                output_attentions=True,
            )
            for source, source_mask, states in (
                (ids, mask, encoder),
                (ids.repeat_interleave(3, 0), mask.repeat_interleave(3, 0), repeated),
            )
        ]
    sums = pointer_sums(decoding_model.config)
    for name in ("logits", "p_gen", "copy_attention"):
        if getattr(outputs[1], name) is not None:
            assert getattr(outputs[0], name).shape == getattr(outputs[1], name).shape
            assert_close_up_to_rounding(getattr(outputs[0], name), getattr(outputs[1], name), **sums, msg=name)
    for shared, expected in zip(outputs[0].cross_attentions, outputs[1].cross_attentions):
        assert_close_up_to_rounding(shared, expected, **sums)
    assert (outputs[1].cross_attentions[-1][:, :, :, -1] == 0).any()  # a padded source's last position: no weight


def test_decoder_rows_that_do_not_divide_among_the_sources_are_refused(reversal_model):
    ids, mask, _ = reversal_batch(seed=5, rows=2, lengths=(3, 10))
    with pytest.raises(ValueError, match="decoder's 3 rows do not divide among the encoder output's 2"):
        reversal_model(input_ids=ids, attention_mask=mask, decoder_input_ids=torch.ones(3, 2, dtype=torch.long))
