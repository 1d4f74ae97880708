"""The pointer-generator (`config.pointer_generator`, `VanillaPointerGenerator`): its distribution against the
equations of See et al. (2017) computed by hand from the model's own parts, the plain model when the gate never
copies, decoding a trained model (cache, beams, static cache, padding), rare source tokens that it learns to copy and
a plain model does not, and the conversions that refuse it."""

import copy
import math

import pytest
import torch

from hf_vanilla import VanillaTransformerConfig, VanillaTransformerForConditionalGeneration
from hf_vanilla.convert import ConversionError, to_marian
from hf_vanilla.modeling_vanilla import sinusoidal_positions
from hf_vanilla.pointer_generator_vanilla import (
    VanillaPointerGenerator,
    dense_pointer_generator_log_probs,
    pointer_generator_loss,
    whole_word_copy_positions,
)

from reversal import (
    LONG,
    REPEATING,
    SHORT,
    assert_varied,
    chosen_rows,
    decoded,
    decoded_without_cache,
    reversal_accuracy,
    reversal_batch,
    reversal_tokenizer,
    reversed_text,
)
from runs import batch, tiny_model
from tolerances import assert_close_up_to_rounding, pointer_sums, rounding_tolerance

FLOAT32_EPS = torch.finfo(torch.float32).eps


def reversal_labels(ids: torch.Tensor, answers: list) -> torch.Tensor:
    labels = torch.zeros(ids.shape[0], ids.shape[1] + 1, dtype=torch.long)
    for row, answer in enumerate(answers):
        labels[row, : len(answer)] = torch.tensor(answer)
    return labels


# --- configuration and weights --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides, message",
    [(dict(loss_chunk_tokens=64), "loss_chunk_tokens=0"), (dict(attention_dropout=0.1), "attention_dropout=0")],
)
def test_config_refuses_what_the_mixture_cannot_compute(overrides, message):
    with pytest.raises(ValueError, match=message) as error:
        VanillaTransformerConfig.from_size("tiny", pointer_generator=True, **overrides)
    assert "\n" not in str(error.value)
    VanillaTransformerConfig.from_size("tiny", **overrides)  # each alone is fine


def test_the_gate_is_the_only_new_weight_and_a_plain_model_is_unchanged():
    plain, pointer = tiny_model(), tiny_model(pointer_generator=True)
    assert not VanillaTransformerConfig().pointer_generator
    assert set(pointer.state_dict()) - set(plain.state_dict()) == {
        "pointer_generator.gate.weight",
        "pointer_generator.gate.bias",
    }
    assert set(plain.state_dict()) <= set(pointer.state_dict())
    assert plain.pointer_generator is None
    ids, mask = batch()
    out = plain(input_ids=ids, attention_mask=mask, decoder_input_ids=ids[:, :4])
    assert out.p_gen is None and len(out.to_tuple()) == 3  # logits, past_key_values, encoder_last_hidden_state


def test_save_and_load_keep_the_pointer_generator(tmp_path):
    model = tiny_model(pointer_generator=True)
    torch.nn.init.normal_(model.pointer_generator.gate.weight)
    torch.nn.init.normal_(model.pointer_generator.gate.bias)
    model.save_pretrained(tmp_path)
    loaded = VanillaTransformerForConditionalGeneration.from_pretrained(tmp_path).eval()
    assert loaded.config.pointer_generator
    for name in ("weight", "bias"):
        assert torch.equal(getattr(loaded.pointer_generator.gate, name), getattr(model.pointer_generator.gate, name))
    ids, mask = batch()
    a = model(input_ids=ids, attention_mask=mask, decoder_input_ids=ids[:, :4])
    b = loaded(input_ids=ids, attention_mask=mask, decoder_input_ids=ids[:, :4])
    assert torch.equal(a.logits, b.logits) and torch.equal(a.p_gen, b.p_gen)


# --- the distribution -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("attn_implementation", ["sdpa", "eager"])
def test_the_distribution_is_see_et_als_mixture_computed_by_hand(attn_implementation):
    """exp(logits) sums to 1 and is P(w) = p_gen P_vocab(w) + (1 - p_gen) sum_{i: x_i = w} a'_t,i, with a_t the last
    layer's cross-attention recomputed from its query and key projections, c_t = a_t h, p_gen from the gate's weights
    over [c_t; s_t; x_t], a'_t the attention renormalized over the source tokens that are no special token (each
    source ends with </s>, which is not copied), and the copy summed by a loop over the source positions. The weights
    are drawn wider than the initialisation (std 0.3), so that the attention is peaked and p_gen varies."""
    torch.manual_seed(0)
    model = tiny_model(pointer_generator=True, attn_implementation=attn_implementation, init_std=0.3)
    ids, mask = batch(lengths=(7, 4, 6))
    ids[0, 4] = ids[0, 1]  # a source token twice: its copy probability is the sum of both positions' attention
    target, _ = batch(seed=2, lengths=(5, 3, 5))
    captured = {}
    last_layer = model.model.decoder.layers[-1]
    last_layer.encoder_attn.register_forward_hook(
        lambda module, args, kwargs, output: captured.update(query_input=args[0]), with_kwargs=True
    )
    out = model(input_ids=ids, attention_mask=mask, decoder_input_ids=target)
    decoder_state = model.model(input_ids=ids, attention_mask=mask, decoder_input_ids=target).last_hidden_state

    double = {name: p.detach().double() for name, p in model.named_parameters()}
    d_model, heads, vocab = 64, 4, model.config.vocab_size
    head_dim = d_model // heads
    prefix = "model.decoder.layers.1.encoder_attn."
    encoder_output = out.encoder_last_hidden_state.detach().double()
    query = (
        captured["query_input"].detach().double() @ double[prefix + "q_proj.weight"].T + double[prefix + "q_proj.bias"]
    )
    key = encoder_output @ double[prefix + "kv_proj.weight"][:d_model].T + double[prefix + "kv_proj.bias"][:d_model]
    query = query.view(3, -1, heads, head_dim).transpose(1, 2)
    key = key.view(3, -1, heads, head_dim).transpose(1, 2)
    scores = (query @ key.transpose(-1, -2) / math.sqrt(head_dim)).masked_fill(mask[:, None, None, :] == 0, -math.inf)
    attention = scores.softmax(-1).mean(1)  # a_t: (batch, target, source)
    context = attention @ encoder_output  # c_t
    state = decoder_state.detach().double()  # s_t
    embeddings = double["model.shared.weight"][target] * math.sqrt(d_model)
    embeddings = embeddings + sinusoidal_positions(0, target.shape[1], d_model, "cpu").double()  # x_t
    gate = torch.cat([context, state, embeddings], -1) @ double["pointer_generator.gate.weight"].T
    p_gen = torch.sigmoid(gate + double["pointer_generator.gate.bias"]).squeeze(-1)
    probs = p_gen[..., None] * (state @ double["model.shared.weight"].T).softmax(-1)
    for row in range(ids.shape[0]):
        copyable = [p for p in range(ids.shape[1]) if mask[row, p] and int(ids[row, p]) >= 3]  # not <pad> <s> </s>
        total = attention[row][:, copyable].sum(-1)
        for position in copyable:
            probs[row, :, ids[row, position]] += (1 - p_gen[row]) * attention[row, :, position] / total

    assert float(p_gen.min()) < 0.5 < float(p_gen.max())  # copying and generating both prevail somewhere
    # Not uniform: each position's copy differs from one source token to another.
    assert bool((attention.amax(-1) > 1.2 / mask.sum(-1)[:, None]).all())
    log_probs = out.logits.detach().double()
    # Each of the vocab_size terms of the sum is rounded (relative FLOAT32_EPS): the sum is 1 within vocab_size eps.
    torch.testing.assert_close(
        log_probs.exp().sum(-1), torch.ones(3, 5, dtype=torch.float64), rtol=0, atol=vocab * FLOAT32_EPS
    )
    torch.testing.assert_close(out.p_gen.double(), p_gen, rtol=0, atol=d_model * FLOAT32_EPS)
    # log P's error is P's relative error: float32 roundings through width-d_model products (logits of order 10).
    torch.testing.assert_close(log_probs, probs.log(), rtol=0, atol=10 * d_model * FLOAT32_EPS)
    assert float(attention[0, :, 6].min()) > 0.01  # </s> of the first row is attended to, and yet not copied:
    vocabulary_part = (p_gen[..., None] * (state @ double["model.shared.weight"].T).softmax(-1)).log()
    torch.testing.assert_close(log_probs[..., 2], vocabulary_part[..., 2], rtol=0, atol=10 * d_model * FLOAT32_EPS)


def test_special_tokens_get_no_copy_mass_and_a_source_of_them_alone_only_generates():
    """</s>, <s>, <pad> and <unk> (the config's ids) inside a source are attended to but never copied: their columns
    hold p_gen P_vocab alone and the rest of the copy is renormalized (the distribution sums to 1); a source of
    special tokens alone gives p_gen = 1 and P = P_vocab. Copying them (the copy not renormalized) fails this."""
    torch.manual_seed(0)
    model = tiny_model(pointer_generator=True, init_std=0.3, unk_token_id=3)
    assert model.pointer_generator.uncopyable_ids == [0, 1, 2, 3]
    ids = torch.tensor([[17, 3, 1, 2, 2, 40, 2], [3, 2, 1, 2, 0, 0, 0]])
    mask = (torch.arange(7) < torch.tensor([[7], [4]])).long()  # the second row: specials only, then padding
    decoder = torch.tensor([[1, 17, 40], [1, 5, 6]])
    out = model(input_ids=ids, attention_mask=mask, decoder_input_ids=decoder)
    vocabulary = model.lm_head(model.model(input_ids=ids, attention_mask=mask, decoder_input_ids=decoder)[0])
    log_vocab = vocabulary.float().log_softmax(-1)
    special = [0, 1, 2, 3]
    assert float(out.copy_attention[0][:, [1, 2, 3, 4, 6]].abs().max()) == 0  # a'_t: no mass on specials
    torch.testing.assert_close(out.copy_attention.sum(-1)[0], torch.ones(3))
    torch.testing.assert_close(out.logits[0][:, special], out.p_gen[0, :, None].log() + log_vocab[0][:, special])
    torch.testing.assert_close(out.logits.exp().sum(-1), torch.ones(2, 3))
    assert bool((out.p_gen[1] == 1).all()) and bool((out.copy_attention[1] == 0).all())
    torch.testing.assert_close(out.logits[1], log_vocab[1])
    assert float(out.p_gen[0].max()) < 1  # the first row copies (17 and 40)


def test_the_source_columns_mixture_is_the_dense_mixture_with_its_gradients():
    """The pointer-generator mixes only the columns of source tokens (a copy mass per source position); its log P
    and the gradients of a random weighting of it (into the vocabulary logits, the attention scores and the decoder
    state) are the dense float64 mixture's, with a token at three source positions (one of them the first), another
    twice, and padding (id 0, no attention) in two rows. The logits are drawn wide (std 4), so that some vocabulary
    probabilities are far below the copy's and both terms of the mixture matter."""
    torch.manual_seed(0)
    config = VanillaTransformerConfig.from_size("tiny", pointer_generator=True)
    pointer = VanillaPointerGenerator(config)
    torch.nn.init.normal_(pointer.gate.weight, std=0.1)
    rows, target, source, d_model, vocab = 3, 5, 9, config.d_model, config.vocab_size
    ids = torch.randint(4, vocab, (rows, source))
    ids[0, [0, 3, 7]] = 17  # three times, from the first position on
    ids[1, [2, 5]] = 23  # twice
    ids[1, 6:], ids[2, 4:] = 0, 0  # padding
    mask = ids != 0
    ids[0, 8], ids[1, 5], ids[2, 3] = 2, 2, 2  # each source ends with </s>, attended to and never copied
    vocab_logits = (4 * torch.randn(rows, target, vocab)).requires_grad_()
    scores = (3 * torch.randn(rows, target, source)).requires_grad_()
    encoder_states = torch.randn(rows, source, d_model)
    decoder_states = torch.randn(rows, target, d_model, requires_grad=True)
    embeddings = torch.randn(rows, target, d_model)
    weighting = torch.randn(rows, target, vocab, dtype=torch.float64)

    def attention_of(scores):
        return scores.masked_fill(~mask[:, None, :], -math.inf).softmax(-1)

    mixture = pointer(vocab_logits, attention_of(scores), encoder_states, decoder_states, embeddings, ids)
    log_probs, p_gen = mixture.log_probs, mixture.p_gen
    (log_probs.double() * weighting).sum().backward()

    leaves = [x.detach().double().requires_grad_() for x in (vocab_logits, scores, decoder_states)]
    attention = attention_of(leaves[1])
    weight, bias = pointer.gate.weight.detach().double(), pointer.gate.bias.detach().double()
    gate = (torch.cat([attention @ encoder_states.double(), leaves[2], embeddings.double()], -1) @ weight.T + bias)[
        ..., 0
    ]
    copied_attention = attention * (ids != 2)[:, None, :]
    copied_attention = copied_attention / copied_attention.sum(-1, keepdim=True)  # a'_t
    expected = dense_pointer_generator_log_probs(leaves[0], torch.sigmoid(gate), copied_attention, ids)
    (expected * weighting).sum().backward()

    assert float(p_gen.detach().min()) < 0.5 < float(p_gen.detach().max())  # copying and generating both prevail
    copied = torch.zeros(rows, target, vocab, dtype=torch.bool).scatter_(-1, ids[:, None, :].expand(-1, target, -1), 1)
    # In some source columns the copy outweighs the vocabulary, P_copy > P_vocab: the mixture changes them.
    assert bool(
        (expected.detach() - leaves[0].detach().log_softmax(-1) - torch.sigmoid(gate)[..., None].log())[copied].max()
        > 1
    )
    sums = dict(depth=5, width=max(3 * d_model, vocab))  # gate, softmax, renormalized copy mass, log of the mixture
    float32 = dict(dtype=torch.float32, **sums)  # compared in float64, to float32's rounding
    assert_close_up_to_rounding(log_probs.detach().double(), expected.detach(), **float32)
    assert_close_up_to_rounding(p_gen.detach().double(), torch.sigmoid(gate).detach(), **float32)
    for leaf, computed in zip(leaves, (vocab_logits, scores, decoder_states), strict=True):
        assert_close_up_to_rounding(computed.grad.double(), leaf.grad, **float32)


def test_logits_to_keep_mixes_the_kept_positions_only():
    model = tiny_model(pointer_generator=True, init_std=0.3)
    ids, mask = batch()
    target, _ = batch(seed=2, lengths=(5, 3, 5))
    full = model(input_ids=ids, attention_mask=mask, decoder_input_ids=target)
    last = model(input_ids=ids, attention_mask=mask, decoder_input_ids=target, logits_to_keep=1)
    assert_close_up_to_rounding(last.logits, full.logits[:, -1:], **pointer_sums(model.config))
    assert_close_up_to_rounding(last.p_gen, full.p_gen[:, -1:], **pointer_sums(model.config))


def test_the_copy_needs_the_source_ids():
    model = tiny_model(pointer_generator=True)
    ids, mask = batch()
    encoder_outputs = model.get_encoder()(input_ids=ids, attention_mask=mask)
    with pytest.raises(ValueError, match="pass input_ids"):
        model(encoder_outputs=encoder_outputs, attention_mask=mask, decoder_input_ids=ids[:, :3])
    with pytest.raises(ValueError, match="pass the source's input_ids"):
        model(input_ids=ids[:, :4], encoder_outputs=encoder_outputs, attention_mask=mask, decoder_input_ids=ids[:, :3])
    # With the ids, precomputed encoder outputs give the same distribution as encoding here.
    a = model(input_ids=ids, encoder_outputs=encoder_outputs, attention_mask=mask, decoder_input_ids=ids[:, :3])
    b = model(input_ids=ids, attention_mask=mask, decoder_input_ids=ids[:, :3])
    assert torch.equal(a.logits, b.logits)


def test_a_gate_that_never_copies_gives_the_plain_model(reversal_model):
    """With p_gen forced to 1 (gate weights zero, bias +10^4), the pointer-generator built on the trained reversal
    model's weights gives that model's log-softmax and decodes its tokens and beam scores."""
    config = copy.deepcopy(reversal_model.config)
    config.pointer_generator = True
    model = VanillaTransformerForConditionalGeneration(config).eval()
    missing, unexpected = model.load_state_dict(reversal_model.state_dict(), strict=False)
    assert set(missing) == {"pointer_generator.gate.weight", "pointer_generator.gate.bias"} and not unexpected
    with torch.no_grad():
        model.pointer_generator.gate.weight.zero_()
        model.pointer_generator.gate.bias.fill_(1e4)
    ids, mask, answers = reversal_batch(seed=3, rows=6)
    labels = reversal_labels(ids, answers)
    out = model(input_ids=ids, attention_mask=mask, labels=labels)
    plain = reversal_model(input_ids=ids, attention_mask=mask, labels=labels)
    assert bool((out.p_gen == 1).all())
    # The plain model's last layer runs SDPA, this one's eager: they agree to rounding, as in test_modeling.
    assert_close_up_to_rounding(out.logits, plain.logits.log_softmax(-1), **pointer_sums(model.config))
    assert_close_up_to_rounding(out.loss, plain.loss, **pointer_sums(model.config))
    kwargs = dict(
        attention_mask=mask, num_beams=4, max_new_tokens=12, output_scores=True, return_dict_in_generate=True
    )
    ours, theirs = model.generate(ids, **kwargs), reversal_model.generate(ids, **kwargs)
    assert_varied(ours.sequences)
    assert torch.equal(ours.sequences, theirs.sequences)
    assert_close_up_to_rounding(ours.sequences_scores, theirs.sequences_scores, **pointer_sums(model.config, 12))


# --- decoding a trained pointer-generator ---------------------------------------------------------------------------


def test_the_pointer_generator_learns_the_reversal_by_copying(pointer_reversal_model):
    """The model the decoding tests compare (here, and tests/test_modeling.py's decoding tests, which run on both
    models): it decodes unseen sources' reversals, and it does so by copying (p_gen below one half on average over the
    answers' tokens), so that those tests go through the copy."""
    ids, mask, answers = reversal_batch(seed=7, rows=64)
    assert reversal_accuracy(pointer_reversal_model, ids, mask, answers, num_beams=1) >= 0.9
    assert reversal_accuracy(pointer_reversal_model, ids, mask, answers, num_beams=4) >= 0.9
    labels = reversal_labels(ids, answers)
    with torch.no_grad():
        p_gen = pointer_reversal_model(input_ids=ids, attention_mask=mask, labels=labels).p_gen
    assert float(p_gen[labels != 0].mean()) < 0.5


# --- copying what a plain model cannot learn ------------------------------------------------------------------------

NAMES_VOCAB = 8192
FILLERS = range(4, 31)
MARKER = 31
NAMES = range(32, NAMES_VOCAB)  # 8,160 "names"


def names_batch(names: list[int], generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One example per name: a source of 5-9 filler tokens holding MARKER followed by the name, and another random
    name elsewhere (a distractor), then </s>; the target is the name after the marker, then </s>."""
    rows = []
    for name in names:
        length = int(torch.randint(5, 10, (1,), generator=generator))
        source = torch.randint(FILLERS.start, FILLERS.stop, (length,), generator=generator)
        marker = int(torch.randint(0, length - 1, (1,), generator=generator))
        source[marker], source[marker + 1] = MARKER, name
        distractor = int(torch.randint(0, length, (1,), generator=generator))
        if distractor not in (marker, marker + 1):
            source[distractor] = int(torch.randint(NAMES.start, NAMES.stop, (1,), generator=generator))
        rows.append(source.tolist() + [2])
    ids = torch.zeros(len(rows), max(map(len, rows)), dtype=torch.long)
    for row, tokens in enumerate(rows):
        ids[row, : len(tokens)] = torch.tensor(tokens)
    return ids, (ids != 0).long(), torch.tensor([[name, 2] for name in names])


def held_out_name_accuracy(pointer_generator: bool, steps: int = 300, rows: int = 48) -> float:
    """Trains a tiny model (seed 0, the same batches whatever `pointer_generator`) on names each of which is the
    target of at most two training examples, and returns its greedy accuracy on 256 names never a target."""
    names = (torch.randperm(len(NAMES), generator=torch.Generator().manual_seed(1)) + NAMES.start).tolist()
    held_out, trained = names[:256], names[256:]
    targets = (trained * 2)[: steps * rows]
    torch.manual_seed(0)
    config = VanillaTransformerConfig.from_size(
        "tiny", vocab_size=NAMES_VOCAB, dropout=0.0, label_smoothing=0.0, pointer_generator=pointer_generator
    )
    model = VanillaTransformerForConditionalGeneration(config).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3, betas=(0.9, 0.98))
    warmup = 50
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min((s + 1) / warmup, (warmup / (s + 1)) ** 0.5))
    generator = torch.Generator().manual_seed(0)
    order = torch.randperm(len(targets), generator=generator).tolist()
    for step in range(steps):
        ids, mask, labels = names_batch([targets[i] for i in order[step * rows : (step + 1) * rows]], generator)
        model(input_ids=ids, attention_mask=mask, labels=labels).loss.backward()
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
    ids, mask, labels = names_batch(held_out, torch.Generator().manual_seed(3))
    out = model.eval().generate(ids, attention_mask=mask, num_beams=1, max_new_tokens=2)
    return float((out[:, 1:3] == labels).all(-1).float().mean())


@pytest.mark.slow  # two models of an 8,192-token vocabulary trained for 300 updates: over a minute on 2 cores
def test_the_copy_learns_rare_source_tokens_that_a_plain_model_does_not():
    """The answer is the source token after a marker, among 8,160 names each the target of at most two of the 14,400
    training examples: with the same updates and seed, the pointer-generator copies names it never wrote in training
    (its held-out accuracy is high); the plain model does not."""
    assert held_out_name_accuracy(pointer_generator=True) >= 0.7
    assert held_out_name_accuracy(pointer_generator=False) <= 0.05


# --- whole-word copying (word_continuation_ids) ---------------------------------------------------------------------


def test_whole_word_copy_positions_are_the_rule_written_out():
    """A source token that starts a word may be copied at every decoder position; one that continues a word only
    where the decoder's input (the token just written) is the source token before it; never at the first position."""
    generator = torch.Generator().manual_seed(0)
    source = torch.randint(4, 12, (3, 9), generator=generator)
    previous = torch.randint(4, 12, (3, 5), generator=generator)
    continues = torch.zeros(12, dtype=torch.bool)
    continues[[5, 7, 8, 11]] = True
    source[0, 3], previous[0, 2] = 7, int(source[0, 2])  # a piece that goes on with the source word just written
    source[1, 0] = 8  # a continuation at the first source position: nothing is before it
    allowed = whole_word_copy_positions(source, previous, continues)
    expected = [
        [
            [not continues[source[b, j]] or (j > 0 and int(source[b, j - 1]) == int(previous[b, t])) for j in range(9)]
            for t in range(5)
        ]
        for b in range(3)
    ]
    assert allowed.tolist() == expected
    assert allowed[0, 2, 3] and not allowed[1, :, 0].any()
    assert not allowed[continues[source][:, None, :].expand(-1, 5, -1)].all()  # some continuations are refused


def test_whole_word_copying_takes_copy_mass_off_spliced_pieces_and_mixes_the_rest_as_see_et_al():
    """With `word_continuation_mask`, a'_t is the free model's a'_t on the positions `whole_word_copy_positions`
    allows, renormalized there; p_gen is the free model's wherever some position is allowed (1 where none is); and
    log P is See et al.'s mixture of that a'_t (`dense_pointer_generator_log_probs`). A rule that moved no mass, or
    did not renormalize, fails."""
    model = tiny_model(pointer_generator=True, init_std=0.3)
    ids, mask = batch(lengths=(7, 4, 6))
    target, _ = batch(seed=2, lengths=(5, 3, 5))
    target[0, 2] = ids[0, 1]  # after writing source token 1, the piece at source position 2 may be copied
    continues = torch.zeros(model.config.vocab_size, dtype=torch.bool)
    continues[ids[:, 2::2]] = True  # every second source position continues a word
    continues[:4] = False
    with torch.no_grad():
        free = model(input_ids=ids, attention_mask=mask, decoder_input_ids=target)
        ruled = model(input_ids=ids, attention_mask=mask, decoder_input_ids=target, word_continuation_mask=continues)
        vocabulary = model.lm_head(model.model(input_ids=ids, attention_mask=mask, decoder_input_ids=target)[0])
    allowed = whole_word_copy_positions(ids, target, continues)
    kept = free.copy_attention * allowed
    total = kept.sum(-1, keepdim=True)
    assert float((free.copy_attention * ~allowed).sum(-1).max()) > 0.2  # the rule takes real mass away
    assert bool(allowed[0, 2, 2]) and float(ruled.copy_attention[0, 2, 2]) > 0
    has_copy = total.squeeze(-1) > 0
    sums = pointer_sums(model.config)
    assert_close_up_to_rounding(ruled.copy_attention, torch.where(total > 0, kept / total, 0.0), **sums)
    assert_close_up_to_rounding(ruled.p_gen, torch.where(has_copy, free.p_gen, 1.0), **sums)
    expected = dense_pointer_generator_log_probs(vocabulary, ruled.p_gen, ruled.copy_attention, ids)
    assert_close_up_to_rounding(ruled.logits, expected, **sums)


def test_generate_copies_whole_words_at_every_step_with_the_mask_of_its_config(pointer_reversal_model):
    """The reversal model copies each symbol from the source position after the one it has just written; with half
    of the symbols called word continuations, those cannot be copied there. Each greedy step's log P is the
    teacher-forced log P under the same rule (the decoder input of each step reaches the copy), the rule changes the
    decoding (fewer exact reversals), the generation config's ids decode as the keyword does, and beams decode the
    same with and without the cache."""
    model = pointer_reversal_model
    words = list(range(4, 32, 2))

    def reversed_only_freely(source: list[int], ruled: list[int]) -> bool:
        return ruled != [*source[::-1], 2] and decoded_without_cache(model, [source]) == [[*source[::-1], 2]]

    # 8 sources whose ruled decodings are varied, one of them reversed right without the rule and wrong with it
    ids, mask, answers = chosen_rows(model, 6, 8, {"word_continuation_ids": words}, wanted=reversed_only_freely)
    continues = torch.zeros(model.config.vocab_size, dtype=torch.bool)
    continues[words] = True
    kwargs = dict(attention_mask=mask, max_new_tokens=12, output_logits=True, return_dict_in_generate=True)
    ruled = model.generate(ids, num_beams=1, word_continuation_ids=words, **kwargs)
    assert_varied(ruled.sequences)
    teacher = model(
        input_ids=ids, attention_mask=mask, decoder_input_ids=ruled.sequences[:, :-1], word_continuation_mask=continues
    ).logits
    for step, step_logits in enumerate(ruled.logits):
        assert_close_up_to_rounding(step_logits, teacher[:, step], **pointer_sums(model.config))
    free = model.generate(ids, num_beams=1, **kwargs)
    assert not torch.equal(free.sequences, ruled.sequences)
    exact = reversal_accuracy(model, ids, mask, answers, num_beams=1)
    assert reversal_accuracy(model, ids, mask, answers, num_beams=1, word_continuation_ids=words) < exact
    config = copy.deepcopy(model.generation_config)
    config.word_continuation_ids = words
    from_config = model.generate(ids, generation_config=config, num_beams=1, **kwargs)
    assert torch.equal(from_config.sequences, ruled.sequences)
    beams = dict(attention_mask=mask, max_new_tokens=12, num_beams=4, word_continuation_ids=words)
    assert torch.equal(model.generate(ids, **beams), model.generate(ids, use_cache=False, **beams))
    assert torch.equal(model.generate(ids, num_beams=1, **kwargs).sequences, free.sequences)  # no rule left behind


def test_whole_word_copying_refuses_what_it_cannot_apply_in_one_line(pointer_reversal_model, reversal_model):
    ids, mask, _ = reversal_batch(seed=6, rows=2)
    vocab = pointer_reversal_model.config.vocab_size
    cases = [
        (lambda: reversal_model.generate(ids, attention_mask=mask, word_continuation_ids=[5]), "copy mechanism"),
        (lambda: pointer_reversal_model.generate(ids, word_continuation_ids=[5, vocab]), "below the vocabulary size"),
        (lambda: pointer_reversal_model.generate(ids, word_continuation_ids=5), "a list of vocabulary ids"),
        (
            lambda: pointer_reversal_model(
                input_ids=ids, decoder_input_ids=ids[:, :2], word_continuation_mask=torch.ones(vocab + 1).bool()
            ),
            "bool tensor of shape",
        ),
        (
            lambda: pointer_reversal_model(
                input_ids=ids,
                decoder_inputs_embeds=torch.zeros(2, 2, pointer_reversal_model.config.d_model),
                word_continuation_mask=torch.ones(vocab).bool(),
            ),
            "pass decoder_input_ids",
        ),
        (
            lambda: reversal_model(
                input_ids=ids, decoder_input_ids=ids[:, :2], word_continuation_mask=torch.ones(vocab).bool()
            ),
            "no copy mechanism",
        ),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message) as error:
            call()
        assert "\n" not in str(error.value)


# --- conversions ----------------------------------------------------------------------------------------------------


def test_the_issues_call_whole_word_copying_with_a_length_offset_and_beams_decodes():
    """Whole-word copying with `max_length_offset` and beams (the mask once went to forward through an attribute that
    the length limit's attention mask overwrote: an IndexError)."""
    cfg = VanillaTransformerConfig.from_size("tiny", pointer_generator=True, vocab_size=50)
    model = VanillaTransformerForConditionalGeneration(cfg).eval()
    ids = torch.tensor([[5, 6, 7, 8, 2], [9, 10, 11, 2, 0]])
    rules = dict(word_continuation_ids=[6, 10], max_length_offset=3, num_beams=2)
    out = model.generate(input_ids=ids, attention_mask=(ids != 0).long(), **rules)
    for row, limit in zip(out.tolist(), (5 + 3, 4 + 3)):
        assert 2 in row[1:] and len(decoded(row)) <= limit


# --- every decoding rule with the copy ------------------------------------------------------------------------------

RULES = dict(
    words=dict(word_continuation_ids=list(range(4, 32, 2))),  # the even symbols continue a word
    stutter=dict(no_stutter_span_size=2),
    offset=dict(max_length_offset=-1),  # one token short of each reversal: every sentence meets its limit
    gnmt=dict(length_penalty_style="gnmt"),
)


def rules_batch() -> tuple[torch.Tensor, torch.Tensor]:
    """Reversal sources where each rule changes the decoding: the reversals of the first two write a span of 2 twice
    in a row that their sources do not hold ("5 8 5 8" -> "8 5 8 5"), the fourth's a doubled token its source holds
    (licensed); half of every source's symbols are even (not copied where whole-word copying forbids it)."""
    sources = [
        [5, 8, 5, 8, 12],
        [9, 14, 20, 14, 20, 7, 11],
        [6, 10, 13, 17, 21, 25],
        [22, 16, 16, 4, 19],
        [7, 9, 11, 13, 15, 17, 19, 23],
        [24, 18, 26, 4],
    ]
    ids = torch.zeros(len(sources), max(map(len, sources)) + 1, dtype=torch.long)
    for row, source in enumerate(sources):
        ids[row, : len(source) + 1] = torch.tensor(source + [2])
    return ids, (ids != 0).long()


def blocked_stutters(written: list[int], source: list[int], size: int, vocab: int) -> set[int]:
    """The tokens t for which written + [t] ends with a span of at most `size` tokens twice in a row that the source
    does not hold, by brute force."""
    blocked = set()
    for token in range(vocab):
        longer = written + [token]
        for n in range(1, min(size, len(longer) // 2) + 1):
            tail = longer[-2 * n :]
            held = any(source[i : i + 2 * n] == tail for i in range(len(source) - 2 * n + 1))
            if tail[:n] == tail[n:] and not held:
                blocked.add(token)
    return blocked


def ruled_log_probs(model, ids, mask, sequence: torch.Tensor, row: int, beams: bool) -> torch.Tensor:
    """What each step of a decoding of source `row` under every rule scores, computed apart from generate(): the
    teacher-forced log P of the whole-word copy (forward with the rule's mask; beam search's log_softmax of it, which
    differs where the copy's allowed attention underflows and log P falls short of normalized), the unlicensed
    stutters' tokens at -inf, and at the source's limit (its length - 1) every token but </s> at -inf; one row a
    step, up to </s>."""
    words = torch.zeros(model.config.vocab_size, dtype=torch.bool)
    words[RULES["words"]["word_continuation_ids"]] = True
    length = int(mask[row].sum())
    tokens = decoded(sequence.tolist())
    decoder_ids = sequence[None, : len(tokens)]
    with torch.no_grad():
        log_probs = model(
            input_ids=ids[row : row + 1, :length], decoder_input_ids=decoder_ids, word_continuation_mask=words
        ).logits[0]
    if beams:
        log_probs = log_probs.log_softmax(-1)
    source = ids[row, :length].tolist()
    for step in range(len(tokens)):
        blocked = blocked_stutters(tokens[:step], source, RULES["stutter"]["no_stutter_span_size"], words.numel())
        log_probs[step, sorted(blocked)] = -math.inf
        if step + 1 >= length + RULES["offset"]["max_length_offset"]:
            log_probs[step, torch.arange(words.numel()) != 2] = -math.inf
    return log_probs


@pytest.mark.parametrize("num_beams", [1, 4])
def test_every_decoding_rule_applies_with_the_copy_as_it_does_alone(pointer_reversal_model, num_beams):
    """Whole-word copying, the stutter rule, the source-length limit and the GNMT penalty in one decoding of the
    trained pointer-generator. Each rule alone changes the decoding (the GNMT penalty: the beams' scores), and with
    all of them each holds in the output: no sentence passes its limit, none writes an unlicensed stutter, and what
    generate() scores is computed apart (`ruled_log_probs`): greedy, every step's scores; beams, each sentence's score
    is the sum of its tokens' log P divided by the GNMT lp(Y), not |Y|^alpha."""
    model = pointer_reversal_model
    ids, mask = rules_batch()
    kwargs = dict(
        attention_mask=mask,
        num_beams=num_beams,
        length_penalty=1.0,
        length_penalty_style="power",
        output_scores=True,
        return_dict_in_generate=True,
    )
    free = model.generate(ids, max_new_tokens=12, **kwargs)  # max_new_tokens: no source-length limit
    assert_varied(free.sequences)
    for name, rule in RULES.items():
        alone = model.generate(ids, **{**kwargs, **({} if name == "offset" else dict(max_new_tokens=12)), **rule})
        if name != "gnmt":
            assert not torch.equal(alone.sequences, free.sequences), name
        elif num_beams > 1:  # greedy decoding has no length penalty
            assert not torch.equal(alone.sequences_scores, free.sequences_scores), name
    every_rule = {key: value for rule in RULES.values() for key, value in rule.items()}
    out = model.generate(ids, **{**kwargs, **every_rule})
    sums = pointer_sums(model.config)
    for row, sequence in enumerate(out.sequences):
        tokens, length = decoded(sequence.tolist()), int(mask[row].sum())
        assert tokens[-1] == 2 and len(tokens) <= length + RULES["offset"]["max_length_offset"], row
        source = ids[row, :length].tolist()
        assert not any(
            tokens[step] in blocked_stutters(tokens[:step], source, 2, model.config.vocab_size)
            for step in range(len(tokens))
        ), row
        expected = ruled_log_probs(model, ids, mask, sequence, row, beams=num_beams > 1)
        if num_beams == 1:
            scores = torch.stack([step[row] for step in out.scores[: len(tokens)]])
            assert_close_up_to_rounding(scores, expected, **sums, msg=f"row {row}")
        else:
            log_prob = float(expected[torch.arange(len(tokens)), tokens].sum())
            penalty = (5 + len(tokens)) / 6  # lp(Y) at alpha = 1
            scale = float(expected[torch.isfinite(expected)].abs().max())
            tolerance = rounding_tolerance(scale, depth=len(tokens) * sums["depth"], width=sums["width"]) / penalty
            assert abs(float(out.sequences_scores[row]) - log_prob / penalty) <= tolerance, row


def test_conversions_refuse_a_pointer_generator_in_one_line(tmp_path):
    model = tiny_model(pointer_generator=True, vocab_size=32)
    with pytest.raises(ConversionError) as error:
        to_marian(model)
    assert str(error.value) == "pointer_generator=True: MarianMTModel has no copy mechanism"
    pytest.importorskip("ctranslate2", reason="CTranslate2 is not installed (pip install 'hf-vanilla[ct2]')")
    from hf_vanilla.ct2 import export_ct2

    with pytest.raises(ValueError) as error:
        export_ct2(model, tmp_path / "ct2", tokenizer=reversal_tokenizer())
    assert str(error.value) == "pointer_generator=True: CTranslate2 has no copy mechanism"
    assert not (tmp_path / "ct2").exists()


# --- the summarization decoding (DECODING["summarization"]) ---------------------------------------------------------


def summaries(model, texts: list[str], **generate_kwargs) -> list[list[str]]:
    """Each text's decoding by `model` as the reversal tokenizer's tokens, every one after the start token up to
    (without) </s>; the model's generation config unless `generate_kwargs` say otherwise."""
    tokenizer = reversal_tokenizer()
    encoded = tokenizer(texts, return_tensors="pt", padding=True)
    rows = [decoded(row) for row in model.generate(**encoded, **generate_kwargs).tolist()]
    return [tokenizer.convert_ids_to_tokens(row[:-1] if row[-1:] == [2] else row) for row in rows]


def trigrams(tokens: list[str]) -> list[tuple]:
    return [tuple(tokens[i : i + 3]) for i in range(len(tokens) - 2)]


def test_the_summarization_row_forbids_repeated_trigrams_that_the_copy_task_would_write(summarization_model):
    """The trained reversal model writes a repeated trigram where the reversal has one ("c b a" twice) when the
    row's rules are off (its beams and length penalty kept); under its generation config (the summarization row,
    no_repeat_ngram_size=3) it never does, and where no trigram repeats the row changes nothing. The two sources are
    ones the model is checked to reverse with the rules off (`reversed_text`), not fixed strings: which of its 5%
    wrong outputs a model trained to 95% writes depends on the machine's rounding."""
    rules_off = dict(no_repeat_ngram_size=0, no_stutter_span_size=0)
    repeating, plain = (reversed_text(summarization_model, texts, rules_off) for texts in (REPEATING, LONG))
    free = summaries(summarization_model, [repeating, plain], **rules_off)
    assert free == [repeating.split()[::-1], plain.split()[::-1]]
    assert len(set(trigrams(free[0]))) < len(trigrams(free[0]))
    row = summaries(summarization_model, [repeating, plain])
    assert len(set(trigrams(row[0]))) == len(trigrams(row[0])) and row[1] == free[1]


def test_the_rows_length_bounds_reach_generate(summarization_model, monkeypatch):
    """A row with other bounds, made the generation config by `from_model_config`, bounds the outputs: at most
    max_new_tokens tokens (the reversal of 10 symbols is cut to 4), at least min_new_tokens (that of 3 grows to 8).
    The sources are ones the model is checked to reverse under its row (`reversed_text`)."""
    from hf_vanilla.configuration_vanilla import VanillaGenerationConfig
    from hf_vanilla.decoding_settings import DECODING

    short, long = (reversed_text(summarization_model, texts, {}) for texts in (SHORT, LONG))
    assert [len(tokens) for tokens in summaries(summarization_model, [short, long])] == [3, 10]
    model = copy.deepcopy(summarization_model)
    row = {**DECODING["summarization"], "min_new_tokens": 8, "max_new_tokens": 4}
    monkeypatch.setitem(DECODING, "summarization", {**row, "min_new_tokens": 0})
    model.generation_config = VanillaGenerationConfig.from_model_config(model.config)
    assert [len(tokens) for tokens in summaries(model, [short, long])] == [3, 4]
    monkeypatch.setitem(DECODING, "summarization", {**row, "max_new_tokens": 12})
    model.generation_config = VanillaGenerationConfig.from_model_config(model.config)
    lengths = [len(tokens) for tokens in summaries(model, [short, long])]
    assert 8 <= lengths[0] <= 12 and lengths[1] == 10


# --- the losses -----------------------------------------------------------------------------------------------------


def pointer_loss_case():
    """A tiny pointer-generator's forward pass over a batch whose targets are partly copyable (17 and 40 are in the
    first source, 5 in none), its `CopyMixture`, and the pieces to recompute its losses by hand in float64."""
    torch.manual_seed(0)
    model = tiny_model(pointer_generator=True, init_std=0.3)
    ids = torch.tensor([[17, 33, 40, 2], [8, 9, 2, 0]])
    mask = (ids != 0).long()
    labels = torch.tensor([[17, 5, 40, 2], [9, 5, 2, 0]])
    outputs = {}
    handle = model.pointer_generator.register_forward_hook(lambda module, args, output: outputs.update(m=output))
    model(input_ids=ids, attention_mask=mask, labels=labels)
    handle.remove()
    return outputs["m"], labels, model


@pytest.mark.parametrize("smoothing", ["mixture", "vocabulary"])
@pytest.mark.parametrize("force_copy", [False, True])
def test_pointer_generator_losses_are_their_equations(smoothing, force_copy):
    """-(1 - eps) log P(y) - eps mean_w log Q(w) per label token, Q the mixture or the vocabulary softmax, and with
    force_copy log P(y) replaced by log((1 - p_gen) copy mass of y) where the source holds y; recomputed in float64
    from the mixture's own parts (the vocabulary logits, p_gen, a'_t, the source ids) and the dense equation."""
    mixture, labels, _ = pointer_loss_case()
    epsilon = 0.1
    loss = pointer_generator_loss(mixture, labels, epsilon, 0, smoothing=smoothing, force_copy=force_copy)
    z, p_gen = mixture.vocab_logits.detach().double(), mixture.p_gen.detach().double()
    a = mixture.copy_attention.detach().double()
    log_p = dense_pointer_generator_log_probs(z, p_gen, a, mixture.source_ids)
    total, count = 0.0, 0
    for row in range(labels.shape[0]):
        for t in range(labels.shape[1]):
            y = int(labels[row, t])
            if y == 0:
                continue
            copy_mass = sum(float(a[row, t, i]) for i in range(4) if int(mixture.source_ids[row, i]) == y)
            target = log_p[row, t, y]
            if force_copy and copy_mass > 0:
                target = torch.log((1 - p_gen[row, t]) * copy_mass)
            q = log_p[row, t] if smoothing == "mixture" else z[row, t].log_softmax(-1)
            total += float(-(1 - epsilon) * target - epsilon * q.mean())
            count += 1
    assert math.isclose(float(loss.detach()), total / count, rel_tol=1e-5)


def test_vocabulary_smoothing_leaves_the_gate_to_the_targets_and_mixture_smoothing_pulls_it_to_generate():
    """The smoothing term's gradient into the gate (p_gen's bias b): none when the smoothing spreads over the
    vocabulary softmax; with it on the mixture, towards generating (the term's gradient in b is negative: the mean
    log P over the vocabulary grows with p_gen)."""
    mixture, labels, model = pointer_loss_case()
    bias = model.pointer_generator.gate.bias
    smoothing_term = {}
    for smoothing in ("mixture", "vocabulary"):
        full = pointer_generator_loss(mixture, labels, 0.1, 0, smoothing=smoothing)
        none = pointer_generator_loss(mixture, labels, 0.0, 0, smoothing=smoothing)
        (grad,) = torch.autograd.grad(full - 0.9 * none, bias, retain_graph=True, allow_unused=True)
        smoothing_term[smoothing] = 0.0 if grad is None else float(grad)
    assert abs(smoothing_term["vocabulary"]) < 1e-7  # zero up to the rounding of full - 0.9 none
    assert smoothing_term["mixture"] < -1e-4
