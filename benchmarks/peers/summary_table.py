"""The summarization demo's settings (`recipes/summarize.py --preset demo`, with or without its copy mechanism), each
beside fairseq's flag that gives it (or the reason none can), and fairseq's flags derived from them: fairseq's
`transformer_pointer_generator` (`examples/pointer_generator`, Enarvi et al., 2020) for the copying model, its plain
`transformer` for `--no-pointer-generator`."""

import importlib
import sys
from pathlib import Path

from hf_vanilla.configuration_vanilla import VanillaGenerationConfig
from hf_vanilla.training.arguments import resolve
from hf_vanilla.training.model_building import run_config
from hf_vanilla.training.presets import SUMMARIZATION_PRESETS

from settings_table import (
    DECODING_BATCHES,
    OVERRIDABLE,
    Row,
    _model_rows,
    _training_rows,
    fairseq_decoding_batches,
    fairseq_train_flags,
    hf_decoding_batches,
    resolved_training,
)

RECIPES = Path(__file__).resolve().parents[2] / "recipes"
# Where `--user-dir` points inside fairseq's installed package (the rows show it so; `fairseq_peer` finds it).
POINTER_GENERATOR_SRC = "fairseq/examples/pointer_generator/pointer_generator_src"


def summarize_recipe():
    """`recipes/summarize.py` as a module: its `Arguments` resolve the preset as a run does, its `default_dataset`
    names the demo's corpus."""
    if str(RECIPES) not in sys.path:
        sys.path.insert(0, str(RECIPES))
    return importlib.import_module("summarize")


def summarization_settings(preset: str = "demo", copy: bool = True, **overrides) -> dict:
    """Every setting of the summarization recipe's `preset` that a peer has to match, as the recipe resolves it
    (its `Arguments` over `SUMMARIZATION_PRESETS` by `resolve`, the preset's variant for `--no-pointer-generator`
    where `copy` is False), the model's (`run_config`) and the decoding's (the model's generation config with the
    preset's decoding values over it, as `build_model` sets it), with `overrides` (names of `OVERRIDABLE`)."""
    unknown = set(overrides) - set(OVERRIDABLE)
    if unknown:
        raise ValueError(f"not overridable: {sorted(unknown)}")
    given = {name: value for name, value in overrides.items() if value is not None}
    args = summarize_recipe().Arguments(preset=preset, pointer_generator=None if copy else False, **given)
    run = resolve(args, SUMMARIZATION_PRESETS)
    model = run_config(run, "summarization")
    decoding = VanillaGenerationConfig.from_model_config(model)
    decoding.update(**run.decoding)
    return {
        "task": "summarization",
        "preset": preset,
        **_model_settings(model),
        "whole_word_copy": model.pointer_generator and run.whole_word_copy is not False,
        "lowercase": bool(run.lowercase),
        **resolved_training(run, model),
        "eval_metric_sentences": run.eval_metric_sentences,
        "best_checkpoint_metric": run.best_checkpoint_metric,
        "final_model": run.final_model,
        "max_length": run.max_length,
        "max_length_ratio": run.max_length_ratio,
        "max_source_tokens": run.max_source_tokens,
        "max_target_tokens": run.max_target_tokens,
        **{name: getattr(decoding, name) for name in DECODING_NAMES},
        **DECODING_BATCHES,
    }


DECODING_NAMES = (
    "num_beams",
    "length_penalty",
    "length_penalty_style",
    "no_repeat_ngram_size",
    "no_stutter_span_size",
    "min_new_tokens",
    "max_new_tokens",
)


def _model_settings(model) -> dict:
    """The model configuration's fields a peer matches (`settings_table._model_rows` reads most of them)."""
    names = ("encoder_layers", "decoder_layers", "d_model", "num_attention_heads", "d_ff", "dropout")
    names += ("attention_dropout", "activation_dropout", "label_smoothing", "tie_word_embeddings", "scale_embedding")
    names += ("layer_norm_eps",)  # OpenNMT-py's norm_eps (`opennmt_settings`)
    names += ("pointer_generator", "pointer_smoothing", "force_copy")
    return {"activation": model.activation_function, **{name: getattr(model, name) for name in names}}


def fairseq_summary_rows(s: dict) -> list[Row]:
    """The side-by-side table of fairseq 0.12 (`transformer_pointer_generator` where `s` copies, else `transformer`;
    `label_smoothed_cross_entropy`, `adam`, `inverse_sqrt`) against the summarization settings `s`
    (`summarization_settings`): the model's rows, the copy mechanism's, training's, then decoding's."""
    copying = _copy_rows(s) if s["pointer_generator"] else [no_copy_row(s)]
    training = [_validation_row(s) if row.setting == "validation" else row for row in _training_rows(s)]
    return [*_model_rows(s), _lowercase_row(s), *copying, *training, *_summary_decoding_rows(s)]


def _lowercase_row(s: dict) -> Row:
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


def _validation_row(s: dict) -> Row:
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
            "method fixed (fairseq_peer.NGRAM_BAN), as its CUDA kernel blocks",
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
        rows.append(_whole_word_row(s))
    return [*rows, *_summary_data_rows(s)]


def _whole_word_row(s: dict) -> Row:
    return Row(
        "whole-word copy",
        "a piece that continues a word is copied only right after the source piece before it"
        if s["whole_word_copy"]
        else "off",
        "none: any source piece is copied after any other",
        "hf_vanilla's extra; fairseq has no such rule",
        matched=not s["whole_word_copy"],
    )


def _summary_data_rows(s: dict) -> list[Row]:
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
