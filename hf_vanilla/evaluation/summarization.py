"""Summarizing a held-out set with the model's decoding and scoring it with ROUGE F1 (`evaluation.rouge`)."""

import itertools
import math
from collections.abc import Mapping, Sequence

from tqdm.auto import tqdm

from ..batch_decoding import check_length_bounds, generate_texts
from .result import Evaluation
from .rouge import (  # noqa: F401  (MULTI_REFERENCE_RULE and ROUGE_TYPES re-exported)
    MULTI_REFERENCE_RULE,
    ROUGE_TYPES,
    choose_lead_k,
    figure_names,
    lead,
    rouge_scores,
)

# The lead baseline's candidate lengths: 1 word to this many, or to this many times the validation summaries' mean
# length where that is longer (AESLC: 14 words best on dev, its subjects 4 words long; CNN/DailyMail's lead-3 is
# about 80 words, its summaries about 55).
LEAD_WORDS, LEAD_TIMES_SUMMARY = 30, 4


def summarize_and_score(
    model,
    tokenizer,
    texts: list[str],
    references: list[list[str]],
    max_source_tokens: int | None = None,
    progress: bool = True,
    **generate_kwargs,
) -> Evaluation:
    """Summarizes `texts` (each cut to `max_source_tokens` tokens as in training; the model's generation config,
    overridden by `generate_kwargs`) and scores them against `references` (every reference of each item, the first
    being the one reference of a single-reference corpus; the samples show it). The figures hold `rouge1`,
    `rouge2`, `rougeL` and `rougeLsum` F1 on 0-100 against the first reference, rounded to 2 decimals, `eval_items`,
    and, where some item has several references, the same four as `*_multi_reference` (`MULTI_REFERENCE_RULE`)."""
    if len(texts) != len(references):
        raise ValueError(f"{len(texts)} texts but {len(references)} reference lists")
    predictions = generate_texts(
        model, tokenizer, texts, progress=progress, max_source_tokens=max_source_tokens, **generate_kwargs
    )
    return Evaluation.of(score_summaries(predictions, references), texts, [r[0] for r in references], predictions)


def score_summaries(predictions: list[str], references: list[list[str]]) -> dict:
    """`summarize_and_score`'s figures of `predictions` against `references` (every reference of each item)."""
    names = figure_names(references)
    scores = rouge_scores(predictions, [r[0] for r in references])
    if len(names) > len(scores):  # some item has several references: each item's best one too
        scores |= {f"{t}_multi_reference": v for t, v in rouge_scores(predictions, references).items()}
    figures = {name: round(scores[name], 2) for name in names}
    figures["eval_items"] = len(predictions)
    return figures


def lead_baseline(
    validation: Mapping[str, Sequence], evaluation: Mapping[str, Sequence], ks: Sequence[int] | None = None
) -> dict:
    """The lead baseline, the first k words of each document, the simplest a summarizer must beat: k chosen among
    `ks` (default: `LEAD_WORDS`, `LEAD_TIMES_SUMMARY`) on `validation` (ROUGE-1 F1 against the first reference,
    `choose_lead_k`), then `evaluation` scored as `summarize_and_score` scores a model. Both splits as
    `data.summaries` loads them ("text", "references"). Returns `k`, the range of `ks`, `validation_rouge1` and the
    figures."""
    firsts = [r[0] for r in validation["references"]]
    if ks is None:
        mean = sum(len(summary.split()) for summary in firsts) / max(len(firsts), 1)
        ks = range(1, max(LEAD_WORDS, math.ceil(LEAD_TIMES_SUMMARY * mean)) + 1)
    k, scores = choose_lead_k(validation["text"], firsts, ks)
    predictions = [lead(text, k) for text in evaluation["text"]]
    return {
        "k": k,
        "ks": [min(ks), max(ks)],
        "validation_rouge1": round(scores[k], 2),
        **score_summaries(predictions, list(evaluation["references"])),
    }


def tune_decoding(
    model,
    tokenizer,
    items: Mapping[str, Sequence],
    grid: Mapping[str, Sequence],
    max_source_tokens: int | None = None,
    key: str = "rouge1",
    progress: bool = True,
) -> tuple[dict, list[dict]]:
    """Summarizes `items` (a validation split, never the test: its "text" and "references" columns, as
    `data.summaries` loads them) once for every combination of `grid`'s values
    (generate() keyword -> candidates, e.g. {"length_penalty": [0.6, 1.0], "min_new_tokens": [1, 6]}) and scores each
    as `summarize_and_score` does. Returns (the row with the highest `key`, the first of them on a tie; every row, in
    the grid's order), a row being a setting's values and its figures. A `key` that no row would have, or a
    combination whose min_new_tokens is over its max_new_tokens (the model's own where the grid has none), is
    refused before any decoding."""
    if not grid or any(len(values) == 0 for values in grid.values()):
        raise ValueError(f"every decoding setting needs at least one value: {dict(grid)}")
    texts, references = items["text"], items["references"]
    figures = figure_names(references)
    if key not in figures:
        raise ValueError(f"no figure {key!r} to choose by; there are {', '.join(figures)}")
    settings = [dict(zip(grid, values)) for values in itertools.product(*grid.values())]
    for setting in settings:
        check_length_bounds(model, setting.get("min_new_tokens"), setting.get("max_new_tokens"))
    rows = []
    for setting in tqdm(settings, desc="decoding settings", disable=not progress):
        scored = summarize_and_score(model, tokenizer, texts, references, max_source_tokens, progress=False, **setting)
        rows.append(setting | scored.figures)
    return max(rows, key=lambda row: row[key]), rows  # max keeps the first of equal rows
