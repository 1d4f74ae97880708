"""The copy mechanism of pointer-generator networks (See et al., 2017, "Get To The Point: Summarization with
Pointer-Generator Networks", section 2.2) on the Transformer, as the summarizer uses it (`config.pointer_generator`):
at each decoder position t, from the context vector c_t, the decoder state s_t and its input x_t, the probability
p_gen of generating from the vocabulary, and the final distribution

    P(w) = p_gen P_vocab(w) + (1 - p_gen) sum_{i: x_i = w} a'_t,i

that mixes the vocabulary distribution with the copy distribution a'_t over the source tokens. Here are the module
(`VanillaPointerGenerator`), its output (`CopyMixture`), its training loss (`pointer_generator_loss`), whole-word
copying (`whole_word_copy_positions`), the equation written out as the tests' reference
(`dense_pointer_generator_log_probs`) and the autograd function that computes it in one vocabulary-wide pass.

A flat file with single-dot imports: `modeling_vanilla.py` imports it (never the other way round), and
`save_pretrained` copies it beside it as Hub remote code.
"""

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.autograd.function import once_differentiable
from transformers.utils import ModelOutput

from .configuration_vanilla import VanillaTransformerConfig


@dataclass
class CopyMixture:
    """A pointer-generator's output at each decoder position: `log_probs` = log P(w) (batch x target x vocab), `p_gen`
    (batch x target), `copy_attention` = a'_t (batch x target x source, summing to 1 over the copyable positions), and
    what its losses read: log(1 - p_gen), the vocabulary logits and the source ids."""

    log_probs: torch.Tensor
    p_gen: torch.Tensor
    copy_attention: torch.Tensor
    log_1m_p_gen: torch.Tensor
    vocab_logits: torch.Tensor
    source_ids: torch.LongTensor


class VanillaPointerGenerator(nn.Module):
    """The copy mechanism of pointer-generator networks (See et al., 2017, "Get To The Point: Summarization with
    Pointer-Generator Networks", section 2.2) on the Transformer, as Deaton et al. (2019, "Transformers and
    Pointer-Generator Networks for Abstractive Summarization") put it there: the attention it copies with is the last
    decoder layer's attention over the encoder output, averaged over the heads. At each decoder position t, with a_t
    those weights, h the encoder output, s_t the decoder output and x_t the decoder input:

        c_t = sum_i a_t,i h_i                                    (the context vector)
        p_gen = sigmoid(w_c . c_t + w_s . s_t + w_x . x_t + b)   (the probability of generating from the vocabulary)
        P(w) = p_gen P_vocab(w) + (1 - p_gen) sum_{i: source token i is w} a'_t,i

    `dense_pointer_generator_log_probs` writes P(w) out as this equation; `forward` computes the same in a faster way.
    Source and target share one subword vocabulary, so every source token has an id: copying needs no extended
    vocabulary. The gate's [w_c; w_s; w_x] and b are one linear layer over [c_t; s_t; x_t].

    Special tokens (</s>, <s>, <pad>, <unk>) are never copied, as in See et al.'s and OpenNMT-py's models, whose
    sources hold no stop symbol: a'_t is a_t renormalized over the other source positions (the attention itself, and
    so c_t, may still rest on </s>). A source with nothing copyable gives p_gen = 1."""

    def __init__(self, config: VanillaTransformerConfig):
        super().__init__()
        self.gate = nn.Linear(3 * config.d_model, 1)
        ids = (config.pad_token_id, config.bos_token_id, config.eos_token_id, config.unk_token_id)
        self.uncopyable_ids = sorted({i for i in (*ids, config.decoder_start_token_id) if isinstance(i, int)})

    def copy_distribution(
        self, attention: torch.Tensor, source_ids: torch.LongTensor, allowed: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """a'_t (float32, batch x target x source): the attention renormalized over the copyable source positions
        (those of no special token, and of `allowed`, batch x target x source, where given), and whether each
        position (batch x target) has any copyable mass."""
        copyable = torch.ones_like(source_ids, dtype=torch.bool)
        for special in self.uncopyable_ids:
            copyable &= source_ids != special
        copyable = copyable[:, None, :] if allowed is None else copyable[:, None, :] & allowed
        masked = attention.float() * copyable
        total = masked.sum(-1, keepdim=True)
        return masked / total.clamp_min(torch.finfo(masked.dtype).tiny), total.squeeze(-1) > 0

    def forward(
        self,
        vocab_logits: torch.Tensor,
        attention: torch.Tensor,
        encoder_hidden_states: torch.Tensor,
        decoder_hidden_states: torch.Tensor,
        decoder_embeddings: torch.Tensor,
        source_ids: torch.LongTensor,
        allowed: torch.Tensor | None = None,
    ) -> CopyMixture:
        """The final distribution (`CopyMixture`: log P(w), float32 of shape (batch, target length, vocab); p_gen;
        a'_t) from the vocabulary logits, the attention a_t (batch x target x source), h (one row a source, which k
        consecutive rows of the batch may share), s_t, x_t and the source ids (one row a batch row). With `allowed`
        (batch x target x source, bool), each position copies only from the source positions it allows
        (whole-word copying: `whole_word_copy_positions`).

        The mixture is computed in log space and float32 (autocast off), with log_softmax and logsigmoid: a
        vocabulary probability below float32's range (a logit ~87 under the best) keeps its log-probability, where
        the log of the mixed probabilities would be -inf for it (the label-smoothed loss and beam scores read them),
        and a saturated gate gives no log 0. Only the columns of source tokens get copy mass, so only they are mixed
        (`_copy_mixture`): O(target x source) work instead of a scatter over the whole vocabulary at each position,
        O(target x vocab). Source padding has no attention, and special tokens are not copied, so neither gets copy
        mass."""
        if source_ids.shape != attention.shape[::2]:
            raise ValueError(
                f"The pointer-generator copies from input_ids of shape {tuple(source_ids.shape)}, but the decoder "
                f"attended over {tuple(attention.shape[::2])} encoder positions: pass the source's input_ids."
            )
        # c_t; where k consecutive rows share a source's encoder output (beams: `modeling_vanilla.share_source`), as
        # one row of k times the positions
        sources = len(encoder_hidden_states)
        shared = attention if len(attention) == sources else attention.reshape(sources, -1, attention.shape[-1])
        context = torch.matmul(shared, encoder_hidden_states)
        context = context.view(*attention.shape[:-1], -1)
        # w_c . c_t + w_s . s_t + w_x . x_t + b
        p_gen_logit = self.gate(torch.cat([context, decoder_hidden_states, decoder_embeddings], dim=-1))
        p_gen_logit = p_gen_logit.squeeze(-1).float()
        copy_attention, has_copy = self.copy_distribution(attention, source_ids, allowed)
        with torch.autocast(device_type=attention.device.type, enabled=False):
            log_p_gen = torch.where(has_copy, nn.functional.logsigmoid(p_gen_logit), 0.0)
            log_1m_p_gen = torch.where(has_copy, nn.functional.logsigmoid(-p_gen_logit), -math.inf)
            vocab_logits = vocab_logits.float()
            log_probs = _copy_mixture(vocab_logits, log_p_gen, log_1m_p_gen, copy_attention, source_ids)
        p_gen = torch.where(has_copy, torch.sigmoid(p_gen_logit), 1.0)
        return CopyMixture(log_probs, p_gen, copy_attention, log_1m_p_gen, vocab_logits, source_ids)

    def final_distribution(
        self,
        vocab_logits: torch.Tensor,
        outputs: ModelOutput,
        kept: slice | torch.Tensor,
        source_ids: torch.LongTensor,
        decoder_input_ids: torch.LongTensor | None,
        word_continuation_mask: torch.Tensor | None,
    ) -> CopyMixture:
        """P(w) at the `kept` decoder positions from the model's `outputs` (`VanillaSeq2SeqModelOutput`: a_t, h, s_t
        and x_t), whole-word with `word_continuation_mask` (which reads the decoder input ids: the token each position
        has just read)."""
        allowed, rows = None, vocab_logits.shape[0]
        if rows != len(source_ids):  # k rows a source (beams, `share_source`): its ids for each
            source_ids = source_ids.repeat_interleave(rows // len(source_ids), dim=0)
        if word_continuation_mask is not None:
            if decoder_input_ids is None:
                raise ValueError(
                    "Whole-word copying reads the decoder's input ids: pass decoder_input_ids or labels, "
                    "not decoder_inputs_embeds."
                )
            allowed = whole_word_copy_positions(source_ids, decoder_input_ids[:, kept], word_continuation_mask)
        return self(
            vocab_logits,
            outputs.copy_attention[:, kept, :],
            outputs.encoder_last_hidden_state,
            outputs.last_hidden_state[:, kept, :],
            outputs.decoder_embeddings[:, kept, :],
            source_ids,
            allowed,
        )


def whole_word_copy_positions(
    source_ids: torch.LongTensor, previous_ids: torch.LongTensor, word_continuation_mask: torch.Tensor
) -> torch.Tensor:
    """Where each decoder position may copy from (batch x target x source, bool): a source token that starts a word,
    anywhere; one that continues a word (`word_continuation_mask[token]`), only right after the token the decoder
    has just read (`previous_ids`, batch x target), so that the copy goes on with the source word being written.
    Copying " easements" then writes " ease" + "ments", and never "ments" after " phill" ("phillments": a word that
    neither the source nor the vocabulary spells). The vocabulary distribution may still write any piece."""
    before = torch.cat([torch.full_like(source_ids[:, :1], -1), source_ids[:, :-1]], dim=1)
    starts = ~word_continuation_mask.to(source_ids.device)[source_ids]
    return starts[:, None, :] | (before[:, None, :] == previous_ids[:, :, None])


def _copy_mixture(
    vocab_logits: torch.Tensor,
    log_p_gen: torch.Tensor,
    log_1m_p_gen: torch.Tensor,
    attention: torch.Tensor,
    source_ids: torch.LongTensor,
) -> torch.Tensor:
    """log P from the vocabulary logits (batch x target x vocab), log p_gen and log(1 - p_gen) (batch x target), the
    copy attention a_t (batch x target x source) and the source ids: log p_gen + log P_vocab(w), the column of each
    source token w replaced by logaddexp(log p_gen + log P_vocab(w), log(1 - p_gen) + log sum_{i: x_i = w} a_t,i).

    The copy mass of a token is summed at its first source position (a scatter-add of the attention, O(target x
    source)) and read back at each of its positions, so a token at several positions writes its column with the
    same value from each, bit for bit (`_PointerGeneratorLogProbs` counts its gradient once)."""
    first = _first_positions(source_ids)[:, None, :].expand_as(attention)
    copy_mass = torch.zeros_like(attention).scatter_add(-1, first, attention).gather(-1, first)
    # log 0 = -inf where a token has no attention (padding), through a clamp so that its gradient is 0, not inf * 0.
    log_copy = torch.where(copy_mass > 0, copy_mass.clamp_min(torch.finfo(copy_mass.dtype).tiny).log(), -math.inf)
    is_first = first == torch.arange(source_ids.shape[1], device=source_ids.device)
    columns = source_ids[:, None, :].expand_as(attention)
    log_copy = log_1m_p_gen[..., None] + log_copy
    return _PointerGeneratorLogProbs.apply(vocab_logits, log_p_gen, log_copy, columns, is_first)


def _first_positions(source_ids: torch.LongTensor) -> torch.LongTensor:
    """For each source position, the first position holding the same token id, shape (batch, source): a stable sort
    puts equal ids side by side in source order, so each run's first element is the token's first position."""
    ids, order = torch.sort(source_ids, dim=-1, stable=True)
    positions = torch.arange(ids.shape[-1], device=ids.device).expand_as(ids)
    starts = torch.ones_like(ids, dtype=torch.bool)
    starts[:, 1:] = ids[:, 1:] != ids[:, :-1]
    run_start = torch.cummax(torch.where(starts, positions, 0), dim=-1).values  # (in sorted order)
    return torch.empty_like(order).scatter_(-1, order, order.gather(-1, run_start))


class _PointerGeneratorLogProbs(torch.autograd.Function):
    """log P from float32 vocabulary logits z (batch x target x vocab), log p_gen (batch x target) and, for each
    source position i, log(1 - p_gen) + log m_i (batch x target x source): log p_gen + log_softmax(z) in every column,
    then the column of each source token, `columns[..., i]`, replaced by logaddexp(log p_gen + log P_vocab(x_i),
    log(1 - p_gen) + log m_i).

    Written out so that the vocabulary-wide work is one pass forward (z minus its log-sum-exp, the columns replaced in
    place) and log_softmax's own pass backward, where autograd's log_softmax, add, gather and scatter would each
    write a batch x target x vocab tensor, forward and backward. A column written from several source positions (one
    token repeated, with the same m at each) gets its gradient once, at `is_first`, the token's first position."""

    @staticmethod
    def forward(ctx, vocab_logits, log_p_gen, log_copy, columns, is_first):
        log_normalizer = torch.logsumexp(vocab_logits, dim=-1)  # log sum_w exp(z_w)
        log_probs = vocab_logits - (log_normalizer - log_p_gen)[..., None]
        generate = log_probs.gather(-1, columns)
        mixed = torch.logaddexp(generate, log_copy)
        log_probs.scatter_(-1, columns, mixed)
        ctx.save_for_backward(vocab_logits, log_normalizer, generate, log_copy, mixed, columns, is_first)
        return log_probs

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        vocab_logits, log_normalizer, generate, log_copy, mixed, columns, is_first = ctx.saved_tensors
        grad_mixed = grad.gather(-1, columns) * is_first
        # The gradient into log p_gen + log P_vocab: the incoming one, in a source column its share of the mixture,
        # d logaddexp(a, b) / da = exp(a - logaddexp(a, b)) (0 for b = log 0).
        grad_generate = grad.scatter(-1, columns, 0.0).scatter_add_(-1, columns, grad_mixed * (generate - mixed).exp())
        grad_log_p_gen = grad_generate.sum(-1)
        # log_softmax's backward: g - softmax(z) * sum(g).
        softmax = (vocab_logits - log_normalizer[..., None]).exp_()
        grad_logits = grad_generate.sub_(softmax.mul_(grad_log_p_gen[..., None]))
        return grad_logits, grad_log_p_gen, grad_mixed * (log_copy - mixed).exp(), None, None


def pointer_generator_loss(
    mixture: CopyMixture,
    labels: torch.Tensor,
    epsilon: float,
    pad_token_id: int,
    num_items_in_batch: int | torch.Tensor | None = None,
    smoothing: str = "mixture",
    force_copy: bool = False,
) -> torch.Tensor:
    """A pointer-generator's training loss per label token (as `label_smoothed_cross_entropy`'s):
    -(1 - epsilon) log P(y) - epsilon * mean_w log Q(w), where Q is, by `smoothing`, the final mixture P
    (`"mixture"`: the smoothing then also rewards generating, p_gen, at every position) or the vocabulary
    distribution P_vocab alone (`"vocabulary"`: the copy gate is trained by the targets only). With `force_copy`
    (OpenNMT-py's `-copy_attn_force`), a target that its source holds counts only its copy probability,
    log((1 - p_gen) sum_{i: x_i = y} a'_t,i), so that copying, not generating, is what learns it."""
    labels = labels.masked_fill(labels == pad_token_id, -100).to(mixture.log_probs.device)
    kept = labels != -100
    target = labels.clamp_min(0)
    log_p = mixture.log_probs.gather(-1, target[..., None]).squeeze(-1)
    if force_copy:
        copy_mass = (mixture.copy_attention * (mixture.source_ids[:, None, :] == target[..., None])).sum(-1)
        log_copy = mixture.log_1m_p_gen + copy_mass.clamp_min(torch.finfo(copy_mass.dtype).tiny).log()
        log_p = torch.where(copy_mass > 0, log_copy, log_p)
    if smoothing == "mixture":
        log_q = mixture.log_probs
        mean_log_q = log_q.sum(-1) / log_q.shape[-1]
    else:
        z = mixture.vocab_logits
        mean_log_q = z.mean(-1) - torch.logsumexp(z, dim=-1)
    per_token = -(1 - epsilon) * log_p - epsilon * mean_log_q
    return per_item_loss(per_token.masked_fill(~kept, 0).sum(), labels, num_items_in_batch)


def per_item_loss(
    loss: torch.Tensor, labels: torch.Tensor, num_items_in_batch: int | torch.Tensor | None
) -> torch.Tensor:
    """A summed loss over the label tokens of the batch (labels -100 on padding), or over `num_items_in_batch`: the
    model's label-smoothed losses divide by it too (`modeling_vanilla` imports it from here)."""
    if num_items_in_batch is None:
        num_items_in_batch = (labels != -100).sum()
    if isinstance(num_items_in_batch, torch.Tensor):
        num_items_in_batch = num_items_in_batch.to(loss.device)
    return loss / num_items_in_batch


def dense_pointer_generator_log_probs(
    vocab_logits: torch.Tensor, p_gen: torch.Tensor, copy_attention: torch.Tensor, source_ids: torch.LongTensor
) -> torch.Tensor:
    """The pointer-generator's final distribution as See et al. write it, the definition that
    `VanillaPointerGenerator` computes faster: P(w) = p_gen P_vocab(w) + (1 - p_gen) sum_{i: x_i = w} a'_t,i, from the
    vocabulary logits (batch x target x vocab), p_gen (batch x target), a'_t (batch x target x source) and the source
    ids; returns log P(w). The shape of fairseq's pointer-generator `output_layer`: the softmax times p_gen, plus the
    attention times 1 - p_gen added into the source tokens' columns (`scatter_add`). O(target x vocab) memory per
    sentence, and log 0 = -inf where P underflows."""
    p_gen = p_gen[..., None]
    generated = p_gen * vocab_logits.softmax(-1)
    columns = source_ids[:, None, :].expand_as(copy_attention)
    return generated.scatter_add(-1, columns, (1 - p_gen) * copy_attention).log()


__all__ = [
    "CopyMixture",
    "VanillaPointerGenerator",
    "dense_pointer_generator_log_probs",
    "per_item_loss",
    "pointer_generator_loss",
    "whole_word_copy_positions",
]
