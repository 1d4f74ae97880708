"""Summarization's side of the comparison: the AESLC demo's settings a peer matches (`summarization_settings`, with or
without the copy mechanism), its splits written as a peer reads them (`export_summaries`: one e-mail body (`.text`)
or subject (`.summary`) a line, as the demo's own pieces, lower-cased by its tokenizer, bodies cut to
`max_source_tokens` and subjects to `max_target_tokens` as the recipe cuts every split), with the test split's
references beside them (`test.references.jsonl`) for the project's ROUGE; and its task's parts
(`tasks.TASKS["summarization"]`)."""

import argparse
import json
from pathlib import Path

from hf_vanilla.configuration_vanilla import VanillaGenerationConfig
from hf_vanilla.data.encoding import encode_truncated_pairs
from hf_vanilla.data.summaries import SIDES, as_pairs, load_summarization_corpus
from hf_vanilla.evaluation.rouge import figure_names
from hf_vanilla.evaluation.summarization import score_summaries
from hf_vanilla.tokenization import BpeOptions
from hf_vanilla.training.arguments import resolve
from hf_vanilla.training.model_building import run_config
from hf_vanilla.training.presets import SUMMARIZATION_PRESETS

from benchmarks.peers.common.pieces import SPLITS, Exported, shared_tokenizer, write_dictionary, write_sides
from benchmarks.peers.common.recipes import recipe_module
from benchmarks.peers.common.settings import DECODING_BATCHES, OVERRIDABLE, resolved_training

REFERENCES = "test.references.jsonl"  # each test item's references, a JSON list a line, the sender's subject first


def summarization_settings(preset: str = "demo", copy: bool = True, **overrides) -> dict:
    """Every setting of the summarization recipe's `preset` that a peer has to match, as the recipe resolves it
    (its `Arguments` over `SUMMARIZATION_PRESETS` by `resolve`, the preset's variant for `--no-pointer-generator`
    where `copy` is False), the model's (`run_config`) and the decoding's (the model's generation config with the
    preset's decoding values over it, as `build_model` sets it), with `overrides` (names of `OVERRIDABLE`)."""
    unknown = set(overrides) - set(OVERRIDABLE)
    if unknown:
        raise ValueError(f"not overridable: {sorted(unknown)}")
    given = {name: value for name, value in overrides.items() if value is not None}
    args = recipe_module("summarize").Arguments(preset=preset, pointer_generator=None if copy else False, **given)
    run = resolve(args, SUMMARIZATION_PRESETS)
    model = run_config(run, "summarization")
    decoding = VanillaGenerationConfig.from_model_config(model)
    decoding.update(**run.decoding)
    return {
        "task": "summarization",
        "preset": preset,
        **model_settings(model),
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


def model_settings(model) -> dict:
    """The model configuration's fields a peer matches (`fairseq.translation_table.model_rows` reads most of them)."""
    names = ("encoder_layers", "decoder_layers", "d_model", "num_attention_heads", "d_ff", "dropout")
    names += ("attention_dropout", "activation_dropout", "label_smoothing", "tie_word_embeddings", "scale_embedding")
    names += ("layer_norm_eps",)  # OpenNMT-py's norm_eps (`opennmt.translation_table`)
    names += ("pointer_generator", "pointer_smoothing", "force_copy")
    return {"activation": model.activation_function, **{name: getattr(model, name) for name in names}}


def summary_corpus(settings: dict, dataset: str | None = None):
    """The recipe's splits of `dataset` (default: the demo's AESLC folder, `recipes/summarize.py`'s
    `default_dataset`), read by its loader and paired (`as_pairs`) as the recipe pairs them."""
    dataset = dataset or recipe_module("summarize").default_dataset(settings["preset"])
    return as_pairs(load_summarization_corpus(dataset)), dataset


def bpe_options(settings: dict) -> BpeOptions:
    """The recipe's BPE options for summaries: a space before the first word, lower-cased where the preset says."""
    return BpeOptions(prefix_space=True, lowercase=bool(settings["lowercase"]))


def summary_tokenizer(folder: Path, train_split, settings: dict, dataset: str, source: Path | None = None):
    """The demo's shared BPE of `settings["vocab_size"]` pieces over bodies and subjects, with the recipe's options
    (`bpe_options`): `shared_tokenizer`'s, trained into `folder` or read from `source`."""
    return shared_tokenizer(folder, train_split, settings["vocab_size"], dataset, source, SIDES, bpe_options(settings))


def export_summaries(corpus, tokenizer, folder: Path, settings: dict, test_limit: int | None = None) -> Exported:
    """Writes `folder/{train,valid,test}.{text,summary}` (pieces, each side cut as the recipe cuts it:
    `encode_truncated_pairs` with `max_source_tokens`, `max_target_tokens`), `test.references.jsonl` and `dict.txt`
    (`write_dictionary`). The training split keeps the pairs the recipe's length filter keeps (the preset's
    `max_length`, `max_length_ratio`: none dropped by the demo's); `test_limit` keeps the first N test items."""
    folder.mkdir(parents=True, exist_ok=True)
    counts, tokens, dropped, truncated, unknown = {}, {}, {}, {}, 0
    for split, stem in SPLITS.items():
        items = corpus[split]
        if split == "test" and test_limit is not None:
            items = items.select(range(min(test_limit, len(items))))
        limits = settings["max_source_tokens"], settings["max_target_tokens"]
        examples, truncated[stem] = encode_truncated_pairs(items, tokenizer, *SIDES, None, *limits)
        if split == "train":
            examples, dropped = examples.length_filter(settings["max_length"], settings["max_length_ratio"])
        unknown += write_sides(examples, tokenizer, folder / stem, SIDES)
        if split == "test":
            references = "".join(json.dumps(list(r), ensure_ascii=False) + "\n" for r in items["references"])
            (folder / REFERENCES).write_text(references, encoding="utf-8")
        counts[stem] = len(examples)
        tokens[stem] = {"source": int(examples.source_lengths.sum()), "target": int(examples.target_lengths.sum())}
    write_dictionary(tokenizer, folder / "dict.txt")
    return Exported(folder, counts, dropped, tokens, {"truncated": truncated, "unk_pieces": unknown})


def score_summary_file(hypotheses: list[str], folder: Path) -> dict:
    """The record's quality (ROUGE-1 F1) and every ROUGE figure of `hypotheses` (text, in test order) against the
    exported test references, by the recipe's own scorer (`score_summaries`: rouge_score with stemming, against
    the sender's @subject, and the best of every reference as `*_multi_reference`)."""
    lines = (folder / REFERENCES).read_text(encoding="utf-8").splitlines()
    references = [json.loads(line) for line in lines]
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} test items")
    figures = score_summaries(hypotheses, references)
    return {"quality": {"metric": "rouge1", "value": figures["rouge1"]}, "rouge": figures}


def summary_results(results: dict) -> dict:
    """The record's quality and ROUGE figures from the summarization recipe's results.json."""
    names = [name for name in (*figure_names(several=True), "eval_items") if name in results]
    return {"quality": {"metric": "rouge1", "value": results["rouge1"]}, "rouge": {n: results[n] for n in names}}


def summary_test_inputs(settings: dict, test_limit: int | None, dataset: str | None = None) -> tuple[list, dict]:
    """The test e-mails the recipe decodes (the first `test_limit`), and `generate_texts`' keywords for them: each
    body cut to `max_source_tokens`, as the recipe reads it."""
    corpus, _ = summary_corpus(settings, dataset)
    return list(corpus["test"]["text"])[:test_limit], {"max_source_tokens": settings["max_source_tokens"]}


def summarization_task_settings(preset: str, copy: bool, overrides: dict) -> dict:
    """The summarization demo's settings (`summarization_settings`), with or without copying."""
    return summarization_settings(preset, copy, **overrides)


def export_summarization(settings: dict, work: Path, args: argparse.Namespace) -> tuple[Exported, object]:
    """The AESLC demo's splits in its lower-casing BPE (trained in `work/tokenizer`, or --tokenizer-from's)."""
    corpus, dataset = summary_corpus(settings)
    tokenizer = summary_tokenizer(work / "tokenizer", corpus["train"], settings, dataset, args.tokenizer_from)
    return export_summaries(corpus, tokenizer, work / "data", settings, args.test_limit), tokenizer
