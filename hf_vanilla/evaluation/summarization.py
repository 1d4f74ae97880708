"""Summarizing a held-out set with the model's decoding and scoring it with ROUGE F1 (`evaluation.rouge`)."""

import itertools
from collections.abc import Mapping, Sequence

from tqdm.auto import tqdm

from ..decoding import check_length_bounds, generate_texts
from .result import Evaluation
from .rouge import MULTI_REFERENCE_RULE, ROUGE_TYPES, figure_names, rouge_scores  # noqa: F401  (re-exported)


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
    names = figure_names(references)
    scores = rouge_scores(predictions, [r[0] for r in references])
    if len(names) > len(scores):  # some item has several references: each item's best one too
        scores |= {f"{t}_multi_reference": v for t, v in rouge_scores(predictions, references).items()}
    figures = {name: round(scores[name], 2) for name in names}
    figures["eval_items"] = len(texts)
    return Evaluation.of(figures, texts, [r[0] for r in references], predictions)


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
