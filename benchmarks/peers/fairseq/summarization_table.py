"""fairseq 0.12's side of the summarization demo's settings table (`fairseq_summary_rows`), each row beside the
recipe's value (`summarization.summarization_settings`, with or without its copy mechanism), and fairseq's flags
derived from them: fairseq's `transformer_pointer_generator` (`examples/pointer_generator`, Enarvi et al., 2020) for
the copying model, its plain `transformer` for `--no-pointer-generator`. OpenNMT-py's table shares the rows whose
hf_vanilla side is summarization's own (`lowercase_row`, `validation_row`, `whole_word_row`, `summary_data_rows`)."""

from benchmarks.peers.common.settings import Row, hf_decoding_batches
from benchmarks.peers.fairseq.translation_table import (
    fairseq_decoding_batches,
    fairseq_train_flags,
    model_rows,
    training_rows,
)

# Where `--user-dir` points inside fairseq's installed package (the rows show it so; `runner` finds it).
POINTER_GENERATOR_SRC = "fairseq/examples/pointer_generator/pointer_generator_src"


def fairseq_summary_rows(s: dict) -> list[Row]:
    """The side-by-side table of fairseq 0.12 (`transformer_pointer_generator` where `s` copies, else `transformer`;
    `label_smoothed_cross_entropy`, `adam`, `inverse_sqrt`) against the summarization settings `s`
    (`summarization.summarization_settings`): the model's rows, the copy mechanism's, training's, then decoding's."""
    copying = _copy_rows(s) if s["pointer_generator"] else [no_copy_row(s)]
    training = [validation_row(s) if row.setting == "validation" else row for row in training_rows(s)]
    return [*model_rows(s), lowercase_row(s), *copying, *training, *_summary_decoding_rows(s)]


def lowercase_row(s: dict) -> Row:
    """Whether the tokenizer lower-cases documents and subjects."""
    return Row(
        "lower case",
        "the tokenizer lower-cases documents and subjects" if s["lowercase"] else "none",
        "the exported pieces (the demo's tokenizer's)",
    )


def no_copy_row(s: dict, peer: str = "--arch transformer") -> Row:
    """The copy mechanism's row where neither side copies: the recipe's variant, and what the `peer` runs instead."""
    return Row(
        "copy mechanism", f"none (--no-pointer-generator: the preset's variant, lr_scale {s['lr_scale']})", peer
    )


def _copy_rows(s: dict) -> list[Row]:
    """The pointer-generator: its attention, its gate, what it copies, its vocabulary, and hf_vanilla's extras."""
    last, heads = s["decoder_layers"] - 1, s["num_attention_heads"]
    return [
        Row(
            "copy mechanism",
            f"pointer-generator on the last decoder layer's attention over the source, the mean of its {heads} heads",
            f"--arch transformer_pointer_generator --user-dir <site-packages>/{POINTER_GENERATOR_SRC} "
            f"--alignment-layer {last} --alignment-heads {heads}",
            "fairseq's defaults are 1 head of the last layer (its XSum example: the last but one): set to "
            "hf_vanilla's attention",
        ),
        Row(
            "p_gen inputs",
            "sigmoid(w . [c_t; s_t; x_t] + b): context vector, decoder output, decoder input (embedding * sqrt(d) + "
            "position, after dropout)",
            "sigmoid(w . [x_t; s_t] + b): the previous token's embedding * sqrt(d) (no position, no dropout) and the "
            "decoder output",
            "fairseq's gate has no context vector c_t and no flag for one",
            matched=False,
        ),
        Row(
            "copied positions",
            "every source piece but </s>, <s>, <pad>, <unk>; the attention renormalized over them",
            "every source position, its </s> included (attention on it adds to P(</s>))",
            "fairseq scatters the whole attention into the source tokens' ids; no flag leaves any out",
            matched=False,
        ),
        Row(
            "out-of-vocabulary words",
            "none: one shared byte-level BPE gives every source piece an id (no extended vocabulary)",
            "--source-position-markers 0: no <unk-N> markers, no preprocess.py / postprocess.py",
            "the exported pieces hold no <unk> (the record's data.unk_pieces); fairseq's default, as many markers as "
            "max_source_positions, would take the dictionary's last 1,024 pieces for markers mapped to <unk>",
        ),
        Row(
            "force copy",
            f"{s['force_copy']}: a target piece its source holds is learnt by copying only",
            "none: the mixture's probability of the target is learnt",
            "hf_vanilla's extra (OpenNMT-py's -copy_attn_force); fairseq has no such loss",
            matched=not s["force_copy"],
        ),
        Row(
            "pointer smoothing",
            f"{s['pointer_smoothing']}: label smoothing over "
            + ("the vocabulary softmax only" if s["pointer_smoothing"] == "vocabulary" else "the final distribution"),
            "label_smoothed_cross_entropy on the mixture's log-probabilities: over the final distribution",
            "hf_vanilla's extra; fairseq's criterion smooths what the model outputs, the mixture",
            matched=s["pointer_smoothing"] == "mixture",
        ),
    ]


def validation_row(s: dict) -> Row:
    """How and how often the recipe validates, and which model it keeps."""
    metric = s["best_checkpoint_metric"]
    kept = f", the best {metric} kept in best/" if metric != "loss" else ""
    return Row(
        "validation",
        f"loss and greedy {metric} of {s['eval_metric_sentences']} validation e-mails every {s['eval_every']} updates"
        f"{kept}; the final model: {s['final_model']} (of the last {s['average_last']})",
        f"--validate-interval-updates {s['eval_every']} --validate-interval 1000000: loss only (none at epoch ends)",
        f"fairseq has no ROUGE validation, and also validates at every mid-epoch checkpoint save (every "
        f"{s['save_every']} updates); neither chooses the final model by it: wall time, not the model, differs",
        matched=False,
    )


def _summary_decoding_rows(s: dict) -> list[Row]:
    """The beam search and its rules, its batches, and what the exported splits hold."""
    alpha, n = s["length_penalty"], s["no_repeat_ngram_size"]
    rows = [
        Row("beam", str(s["num_beams"]), f"--beam {s['num_beams']}"),
        Row(
            "length penalty",
            f"GNMT: log P / ((5 + len(Y)) / 6)^{alpha}",
            f"--lenpen {alpha}: length normalization, log P / len(Y)^{alpha}",
            "fairseq-generate has no GNMT penalty; the same alpha under its formula (the demo tuned it for GNMT's)",
            matched=False,
        ),
        Row(
            "no repeated n-gram",
            f"no {n}-gram of pieces twice",
            f"--no-repeat-ngram-size {n}",
            "without its CUDA extension fairseq 0.12 compares the last n-1 slots of its padded token buffer, not of "
            "the hypothesis (fairseq issues 4709, 5206), and blocks nothing on a CPU: fairseq-generate runs with that "
            "method fixed (fairseq/runner.py's NGRAM_BAN), as its CUDA kernel blocks",
        ),
        Row(
            "shortest summary", f"{s['min_new_tokens']} pieces (</s> not counted)", f"--min-len {s['min_new_tokens']}"
        ),
        Row(
            "longest summary",
            f"{s['max_new_tokens']} pieces (</s> not counted)",
            f"--max-len-a 0 --max-len-b {s['max_new_tokens']}",
            "fairseq's limit a * source + b leaves out the </s> it adds, as max_new_tokens does",
        ),
        Row(
            "stutter ban",
            f"no span of 1 to {s['no_stutter_span_size']} pieces twice in a row unless the document has it so",
            "none",
            "hf_vanilla's extra; fairseq-generate has no such rule",
            matched=not s["no_stutter_span_size"],
        ),
    ]
    if s["pointer_generator"]:
        rows.append(whole_word_row(s))
    return [*rows, *summary_data_rows(s)]


def whole_word_row(s: dict) -> Row:
    """Whether a piece that continues a word may be copied alone."""
    return Row(
        "whole-word copy",
        "a piece that continues a word is copied only right after the source piece before it"
        if s["whole_word_copy"]
        else "off",
        "none: any source piece is copied after any other",
        "hf_vanilla's extra; fairseq has no such rule",
        matched=not s["whole_word_copy"],
    )


def summary_data_rows(s: dict) -> list[Row]:
    """The decoding batches, the documents' and subjects' cuts, the pairs kept, and the scoring."""
    return [
        Row(
            "decoding batches",
            hf_decoding_batches(s),
            " ".join(fairseq_decoding_batches(s)),
            "fairseq counts max(source, reference) tokens",
        ),
        Row(
            "documents",
            f"cut to {s['max_source_tokens']} tokens, </s> counted (training, validation and test)",
            f"the exported pieces cut so ({s['max_source_tokens'] - 1} pieces, fairseq adds the </s>)",
        ),
        Row(
            "subjects",
            f"cut to {s['max_target_tokens']} tokens, </s> counted (in training and validation loss)",
            f"the exported pieces cut so ({s['max_target_tokens'] - 1} pieces, fairseq adds the </s>)",
        ),
        Row("training pairs", "every pair (no length or ratio filter)", "the exported split"),
        Row(
            "scoring",
            "ROUGE-1/2/L/Lsum F1 (rouge_score, stemmed) against the sender's @subject; the best of it and the "
            "annotators' as *_multi_reference",
            "the same scorer on fairseq's pieces decoded by the demo's tokenizer",
        ),
    ]


def fairseq_summary_train_flags(s: dict, seed: int, user_dir: str | None = None) -> list[str]:
    """`fairseq-train`'s flags for the summarization settings `s`: translation's (`fairseq_train_flags`), the arch
    `transformer_pointer_generator` where `s` copies (from `user_dir`, its `pointer_generator_src`) with the copy
    rows' flags, else `transformer`."""
    if not s["pointer_generator"]:
        return fairseq_train_flags(s, seed)
    if user_dir is None:
        raise ValueError("the pointer-generator needs fairseq's examples/pointer_generator/pointer_generator_src")
    extra = {
        "--arch": "transformer_pointer_generator",
        "--user-dir": user_dir,
        "--alignment-layer": s["decoder_layers"] - 1,
        "--alignment-heads": s["num_attention_heads"],
        "--source-position-markers": 0,
    }
    return fairseq_train_flags(s, seed, extra)


def fairseq_summary_generate_flags(s: dict, user_dir: str | None = None) -> list[str]:
    """`fairseq-generate`'s decoding flags for the summarization settings `s` (with `--user-dir` where the model is
    the pointer-generator: its checkpoint names that arch)."""
    flags = ["--user-dir", user_dir] if s["pointer_generator"] and user_dir else []
    return [
        *flags,
        *("--beam", str(s["num_beams"]), "--lenpen", str(s["length_penalty"])),
        *("--no-repeat-ngram-size", str(s["no_repeat_ngram_size"]), "--min-len", str(s["min_new_tokens"])),
        *("--max-len-a", "0", "--max-len-b", str(s["max_new_tokens"])),
        *fairseq_decoding_batches(s),
    ]
