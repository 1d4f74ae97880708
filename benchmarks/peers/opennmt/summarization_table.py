"""OpenNMT-py 3.5.1 on the summarization demo: its side of the settings table (`opennmt_summary_rows`), onmt_train's
program and config (`train_program`, `summary_config`: translation's `train_config` on the AESLC pieces, with
`copy_attn`, OpenNMT's pointer-generator, in its defaults where the settings copy, `copy_attn_force` only for
`--system opennmt-py-force-copy`, and without it for `--system opennmt-py-no-copy`) and onmt_translate's program and
flags (`translate_program`, `summary_translate_flags`: the recipe's beam, GNMT penalty, n-gram ban and summary
lengths). A copying model trains and decodes with 3.5.1's copy generator patched to read each row's own attention
(`COPY_IN_OWN_ROWS`). Every option was read in the installed package's source (`onmt/opts.py`,
`onmt/modules/copy_generator.py`, `onmt/utils/loss.py`, `onmt/decoders/transformer.py`,
`onmt/inputters/text_utils.py`, `onmt/translate/`)."""

from dataclasses import replace
from pathlib import Path

from hf_vanilla.data.summaries import SIDES

from benchmarks.peers.common.settings import Row
from benchmarks.peers.fairseq.summarization_table import (
    lowercase_row,
    no_copy_row,
    summary_data_rows,
    validation_row,
    whole_word_row,
)
from benchmarks.peers.opennmt.translation_table import (
    architecture_rows,
    beam_rows,
    optimiser_rows,
    regularisation_rows,
    schedule_rows,
    train_config,
)

# 3.5.1's BaseModel.load_state_dict cannot load a CopyGenerator's weights: it looks a parameter of the module
# `generator.linear` up as "weight" in the checkpoint's generator dict, which holds "linear.weight" (and then as
# "generator.linear.weight"), and raises "Missing key in checkpoint: generator.linear.weight". This method moves the
# generator's weights into the model's dict under their full names, where the loader finds every parameter, and calls
# the original (`load_state_dict`).
GENERATOR_IN_MODEL = r"""
def generator_in_model(self, checkpoint, *args, **kwargs):
    generator = checkpoint.get("generator") or {}
    checkpoint["model"].update({"generator." + key: value for key, value in generator.items()})
    checkpoint["generator"] = None
    return load_state_dict(self, checkpoint, *args, **kwargs)
"""
# 3.5.1's Translator._decode_and_generate, once a sentence of a batch has finished, folds each remaining sentence's
# copy probabilities into the vocabulary (collapse_copy_scores) with the dynamic dictionary of the sentence now at
# its index b (batch["src_ex_vocab"][b]), not its own (batch_offset[b]): this method gives each its own and calls the
# original (`decode_and_generate`).
OWN_DICTIONARIES = r"""
def own_dictionaries(self, decoder_in, enc_out, batch, *args, batch_offset=None, **kwargs):
    if batch_offset is not None:
        batch = dict(batch, src_ex_vocab=[batch["src_ex_vocab"][int(b)] for b in batch_offset])
    return decode_and_generate(self, decoder_in, enc_out, batch, *args, batch_offset=batch_offset, **kwargs)
"""
# 3.5.1's CopyGenerator.forward (onmt/modules/copy_generator.py) takes its rows batch-first, (batch x tlen) rows of
# hidden and attn, as the decoder gives them since v3.0 (commit 7301d426, "swap batch x len everywhere"), but its line
# 93 (`UPSTREAM_COPY_LINE`) still reads them time-major, (tlen x batch): in training, the copy probability of
# (sentence j, step i), row j * tlen + i, is built from the attention of row i * batch + j, another step's and mostly
# another sentence's (at decoding, one step a row, the line is right). `OWN_ROWS_COPY` is that forward with the line
# reading each row's own attention (`OWN_ROWS_COPY_LINE`), the same line at decoding's single step.
UPSTREAM_COPY_LINE = "copy_prob = torch.bmm(mul_attn.view(-1, batch, slen).transpose(0, 1), src_map)"
OWN_ROWS_COPY_LINE = "copy_prob = torch.bmm(mul_attn.view(batch, -1, slen), src_map)"
OWN_ROWS_COPY = r"""
def own_rows_copy(self, hidden, attn, src_map):
    _, slen = attn.size()
    batch, _, cvocab = src_map.size()
    logits = self.linear(hidden)
    logits[:, self.pad_idx] = -float("inf")
    prob = torch.softmax(logits, 1)
    p_copy = torch.sigmoid(self.linear_copy(hidden))
    out_prob = torch.mul(prob, 1 - p_copy)
    mul_attn = torch.mul(attn, p_copy)
    copy_prob = torch.bmm(mul_attn.view(batch, -1, slen), src_map)
    copy_prob = copy_prob.contiguous().view(-1, cvocab)
    return torch.cat([out_prob, copy_prob], 1)
"""
# 3.5.1's LossCompute.forward (onmt/utils/loss.py) folds the copy scores of its statistics (the accuracy) by
# collapse_copy_scores(self._unbottle(scores, batch), ...) over dimension 1: `_unbottle` views the (batch x tlen) rows
# time-major, (tlen, batch), so that sentence j's dictionary folds rows i * batch + j. These view them batch-first and
# fold over dimension 0, each sentence's rows with its own dictionary (the loss itself reads no folded score).
OWN_ROWS_STATISTICS = r"""
def own_rows_unbottle(self, _v, batch_size):
    return _v.view(batch_size, -1, _v.size(1))

own_rows_collapse = functools.partial(collapse_copy_scores, batch_dim=0)
"""
# The copy generator's and the statistics' rows fixed in the process (`OWN_ROWS_COPY`, `OWN_ROWS_STATISTICS`), for
# training and decoding alike.
COPY_IN_OWN_ROWS = (
    r"""
import functools
import torch
import onmt.utils.loss
from onmt.modules.copy_generator import CopyGenerator, collapse_copy_scores
"""
    + OWN_ROWS_COPY
    + OWN_ROWS_STATISTICS
    + r"""
CopyGenerator.forward = own_rows_copy
onmt.utils.loss.LossCompute._unbottle = own_rows_unbottle
onmt.utils.loss.collapse_copy_scores = own_rows_collapse
"""
)
# onmt_train (onmt.bin.train.main, its arguments following), run by `python -c` after the patches put before it.
ONMT_TRAIN_MAIN = r"""
import sys
from onmt.bin.train import main
sys.argv[0] = "onmt_train"
main()
"""
# onmt_train for a `copy_attn` model: `COPY_IN_OWN_ROWS`.
TRAIN_WITH_COPY = COPY_IN_OWN_ROWS + ONMT_TRAIN_MAIN
# onmt_translate (onmt.bin.translate.main, its arguments following) for a `copy_attn` model, with four faults of
# 3.5.1 fixed: the copy generator's rows (`COPY_IN_OWN_ROWS`, as in training); `GENERATOR_IN_MODEL`;
# inference_engine.infer_file builds its batches without the copy keys (build_dynamic_dataset_iter's copy=False), so
# that the translator's batch["src_map"] would be missing: they are built with them; and `OWN_DICTIONARIES`.
TRANSLATE_WITH_COPY = (
    COPY_IN_OWN_ROWS
    + r"""
import functools, sys
import onmt.inference_engine as engine
from onmt.bin.translate import main
from onmt.models.model import BaseModel
from onmt.translate.translator import Translator
load_state_dict = BaseModel.load_state_dict
engine.build_dynamic_dataset_iter = functools.partial(engine.build_dynamic_dataset_iter, copy=True)
decode_and_generate = Translator._decode_and_generate
"""
    + GENERATOR_IN_MODEL
    + OWN_DICTIONARIES
    + r"""
BaseModel.load_state_dict = generator_in_model
Translator._decode_and_generate = own_dictionaries
sys.argv[0] = "onmt_translate"
main()
"""
)


def opennmt_summary_rows(s: dict) -> list[Row]:
    """The side-by-side table of OpenNMT-py 3.5.1 (`transformer` encoder and decoder, `copy_attn` where `s` copies,
    `adam`, `noam`) against the summarization settings `s` (`summarization.summarization_settings`): the model's rows,
    the copy mechanism's, training's, then decoding's."""
    copies = s["pointer_generator"]
    copying = _copy_rows(s) if copies else [no_copy_row(s, "copy_attn false: the plain generator")]
    regularisation = [_copy_smoothing_row(s) if copies and row.setting == "label smoothing" else row
                      for row in regularisation_rows(s)]  # fmt: skip
    schedule = [_summary_validation_row(s) if row.setting == "validation" else row for row in schedule_rows(s)]
    return [*architecture_rows(s), lowercase_row(s), *copying, *regularisation, *optimiser_rows(s), *schedule,
            *_summary_decoding_rows(s)]  # fmt: skip


def _copy_rows(s: dict) -> list[Row]:
    """OpenNMT's pointer-generator (`copy_attn`): its attention, its gate, what it copies, its vocabulary, its loss."""
    heads = s["num_attention_heads"]
    return [
        Row(
            "copy mechanism",
            f"pointer-generator on the last decoder layer's attention over the source, the mean of its {heads} heads",
            "copy_attn true (modules/copy_generator.CopyGenerator): the last decoder layer's context attention, its "
            "first head only (decoders/transformer.py returns attns[:, 0] as the copy attention)",
            "no option averages the heads: alignment_heads and full_context_alignment serve guided alignment, "
            "reuse_copy_attn and copy_attn_type the RNN decoder, and copy_loss_by_seqlength is read nowhere in 3.5.1",
            matched=False,
        ),
        Row(
            "copy rows",
            "each (sentence, step)'s copy distribution from its own attention",
            "copy_attn true, 3.5.1's modules/copy_generator.py line 93 patched in onmt_train and onmt_translate alike "
            "(opennmt/summarization_table.py's COPY_IN_OWN_ROWS)",
            f"3.5.1's `{UPSTREAM_COPY_LINE}` reads the decoder's batch-first rows (since v3.0) as time-major: in "
            "training the copy probability of sentence j's step i comes from row i * batch + j's attention, another "
            "step's and mostly another sentence's (decoding's one step a row is right); patched: "
            f"`{OWN_ROWS_COPY_LINE}`; the accuracy statistic (utils/loss.py's _unbottle and collapse_copy_scores) is "
            "patched alike",
        ),
        Row(
            "p_gen inputs",
            "sigmoid(w . [c_t; s_t; x_t] + b): context vector, decoder output, decoder input (embedding * sqrt(d) + "
            "position, after dropout)",
            "sigmoid(w . s_t + b): the decoder output alone (CopyGenerator.linear_copy)",
            "OpenNMT's gate reads no context vector and no decoder input, and no option adds them",
            matched=False,
        ),
        Row(
            "copied positions",
            "every source piece but </s>, <s>, <pad>, <unk>; the attention renormalized over them",
            "every source position: its source holds no </s> (the source end token row), so its attention spreads "
            "over the pieces alone",
            "the same positions; OpenNMT's attention itself could not rest on a </s>, the recipe's can",
        ),
        Row(
            "out-of-vocabulary words",
            "none: one shared byte-level BPE gives every source piece an id (no extended vocabulary)",
            "a dynamic dictionary a source (inputters/text_utils._addcopykeys), every piece of which is in the shared "
            "vocabulary: each copy is folded into its piece's vocabulary id (copy_generator.collapse_copy_scores)",
            "the exported pieces hold no <unk> (the record's data.unk_pieces): nothing is copied from outside the "
            "vocabulary",
        ),
        _force_copy_row(s),
        Row(
            "pointer smoothing",
            f"{s['pointer_smoothing']}: label smoothing over "
            + ("the vocabulary softmax only" if s["pointer_smoothing"] == "vocabulary" else "the final distribution"),
            "none: CopyGeneratorLoss is -log P(y), unsmoothed (the label smoothing row)",
            "OpenNMT's copy loss has no smoothing at all",
            matched=False,
        ),
    ]


def _force_copy_row(s: dict) -> Row:
    """Force copy: off in OpenNMT-py's defaults (`opennmt-py`), on in its labelled variant (`opennmt-py-force-copy`,
    the settings' `peer_force_copy`)."""
    recipe = f"{s['force_copy']}: " + (
        "a target piece its source holds is learnt by copying only" if s["force_copy"] else "the mixture's -log P(y)"
    )
    rule = (
        "CopyGeneratorLoss: where the source holds the target's piece, -log of its copy probability alone; "
        "elsewhere (</s> too) the mixture's: the rule hf_vanilla's force_copy follows"
    )
    if s.get("peer_force_copy"):
        peer = "copy_attn_force true (the labelled variant opennmt-py-force-copy: the recipe's rule, not its default)"
        return Row("force copy", recipe, peer, rule, matched=bool(s["force_copy"]))
    peer = "copy_attn_force false (OpenNMT-py's default, and its Summarization example's)"
    note = (
        "CopyGeneratorLoss: -log of the mixture's probability of every target piece; the recipe's rule (where the "
        "source holds the target's piece, -log of its copy probability alone) is the labelled variant --system "
        "opennmt-py-force-copy"
    )
    return Row("force copy", recipe, peer, note, matched=not s["force_copy"])


def _copy_smoothing_row(s: dict) -> Row:
    """Label smoothing where OpenNMT copies: its option is passed but the copy loss drops it."""
    eps = s["label_smoothing"]
    return Row(
        "label smoothing",
        str(eps),
        f"label_smoothing {eps}, dropped under copy_attn: none",
        "OpenNMT-py drops label smoothing under copy_attn, silently: utils/loss.LossCompute.from_opts gives it "
        "CopyGeneratorLoss (-log P(y) of the mixture), which smooths nothing; label_smoothing reaches only the plain "
        "generator's nn.CrossEntropyLoss",
        matched=eps == 0,
    )


def _summary_validation_row(s: dict) -> Row:
    return Row(
        "validation",
        validation_row(s).hf_vanilla,
        f"valid_steps {s['eval_every']}, valid_batch_size {s['tokens_per_step']}: loss (perplexity, accuracy) only",
        "OpenNMT's valid_metrics score BLEU or TER, not ROUGE; neither chooses the final model by it: wall time, "
        "not the model, differs",
        matched=False,
    )


def _summary_decoding_rows(s: dict) -> list[Row]:
    """The beam search and its rules, its batches, and what the exported splits hold."""
    n, shortest, longest = s["no_repeat_ngram_size"], s["min_new_tokens"], s["max_new_tokens"]
    rows = [
        *beam_rows(s),
        Row(
            "no repeated n-gram",
            f"no {n}-gram of pieces twice",
            f"block_ngram_repeat {n}",
            "decode_strategy.block_ngram_repeats: in each beam's own tokens (its <s>, which never repeats, "
            "counted), the piece that would end an n-gram written before is banned",
        ),
        Row(
            "shortest summary",
            f"{shortest} pieces (</s> not counted)",
            f"min_length {shortest}",
            "ensure_min_length bans </s> until that many pieces follow the <s>",
        ),
        Row(
            "longest summary",
            f"{longest} pieces (</s> not counted)",
            f"max_length {longest}, max_length_ratio 0",
            "ensure_max_length ends a beam once that many tokens follow its <s>, as max_new_tokens ends it; "
            "max_length_ratio 0 turns off its min(max_length, source tokens * ratio + 5)",
        ),
        Row(
            "stutter ban",
            f"no span of 1 to {s['no_stutter_span_size']} pieces twice in a row unless the document has it so",
            "none",
            "hf_vanilla's extra; onmt_translate has no such rule",
            matched=not s["no_stutter_span_size"],
        ),
    ]
    if s["pointer_generator"]:
        rows.append(replace(whole_word_row(s), note="hf_vanilla's extra; OpenNMT-py has no such rule"))
        rows.append(_copy_decoding_row())
    return [*rows, *_data_rows(s)]


def _copy_decoding_row() -> Row:
    return Row(
        "copy decoding",
        "the trained mixture at every step of the beam",
        "the copy model decoded by onmt_translate with 3.5.1's four copy faults fixed "
        "(opennmt/summarization_table.py's TRANSLATE_WITH_COPY)",
        "as released it cannot load a copy_attn checkpoint, builds its batches without src_map, and folds a batch's "
        "remaining sentences' copies with another sentence's dictionary once one has ended; its copy generator is "
        "training's, its rows patched (the copy rows row), which at one step a row computes what 3.5.1's does",
    )


def _data_rows(s: dict) -> list[Row]:
    """fairseq's rows of the decoding batches and the exported splits (`fairseq.summarization_table`), with OpenNMT's
    side."""
    peer = {
        "decoding batches": f"batch_type tokens, batch_size {s['decode_max_tokens']}",
        "documents": f"the exported pieces cut so ({s['max_source_tokens'] - 1} pieces; OpenNMT adds no </s> to them)",
        "subjects": f"the exported pieces cut so ({s['max_target_tokens'] - 1} pieces, OpenNMT adds <s> and </s>)",
        "training pairs": "the exported split, without transforms (no filtertoolong): OpenNMT keeps all",
        "scoring": "the same scorer on OpenNMT-py's pieces decoded by the demo's tokenizer",
    }
    note = {
        "decoding batches": "its sources are counted without </s>; it has no cap on sentences (hf_vanilla's binds "
        "only on batches of short sources)"
    }
    return [replace(row, peer=peer[row.setting], note=note.get(row.setting, "")) for row in summary_data_rows(s)]


def summary_config(s: dict, seed: int, data: Path, vocabulary: Path, save_model: Path, train_pairs: int) -> dict:
    """onmt_train's options for the summarization settings `s`: translation's (`train_config`) on the exported
    `.text` / `.summary` pieces, with `copy_attn` where `s` copies, `copy_attn_force` at OpenNMT-py's default (false)
    but for its labelled variant (`s["peer_force_copy"]`: `opennmt-py-force-copy`, the recipe's force_copy), and
    `copy_attn false` where it does not copy."""
    config = train_config(s, seed, data, vocabulary, save_model, train_pairs, SIDES)
    if not s["pointer_generator"]:
        return {**config, "copy_attn": False}
    return {**config, "copy_attn": True, "copy_attn_force": bool(s.get("peer_force_copy"))}


def summary_translate_flags(s: dict) -> list[str]:
    """onmt_translate's decoding flags for the summarization settings `s`: beam, GNMT's penalty (`wu`), the n-gram
    ban and the summary's length in pieces after <s> (`min_length`, `max_length`; no ratio rule)."""
    if s["length_penalty_style"] != "gnmt":
        raise ValueError(f"OpenNMT-py's wu penalty is GNMT's, not {s['length_penalty_style']!r}")
    return [
        *("-beam_size", str(s["num_beams"]), "-length_penalty", "wu", "-alpha", str(s["length_penalty"])),
        *("-ratio", "0", "-block_ngram_repeat", str(s["no_repeat_ngram_size"])),
        *("-min_length", str(s["min_new_tokens"]), "-max_length", str(s["max_new_tokens"]), "-max_length_ratio", "0"),
        *("-batch_type", "tokens", "-batch_size", str(s["decode_max_tokens"]), "-report_time"),
    ]


def train_program(bin_folder: Path, s: dict) -> list[str]:
    """onmt_train, or, for a model that copies (`s["pointer_generator"]`), onmt_train with 3.5.1's copy generator
    reading each row's own attention (`TRAIN_WITH_COPY`)."""
    if s.get("pointer_generator"):
        return [str(bin_folder / "python"), "-c", TRAIN_WITH_COPY]
    return [str(bin_folder / "onmt_train")]


def translate_program(bin_folder: Path, s: dict) -> list[str]:
    """onmt_translate, or, for a model that copies (`s["pointer_generator"]`), onmt_translate with 3.5.1's four copy
    faults fixed (`TRANSLATE_WITH_COPY`)."""
    if s.get("pointer_generator"):
        return [str(bin_folder / "python"), "-c", TRANSLATE_WITH_COPY]
    return [str(bin_folder / "onmt_translate")]
