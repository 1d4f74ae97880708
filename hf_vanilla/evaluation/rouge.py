"""ROUGE F1 (Lin, 2004) with stemming, through Google's `rouge_score` wrapped as a local `evaluate` metric, and the
lead baseline of summarization (the first k words of the document)."""

import functools
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from nltk.tokenize.punkt import PunktSentenceTokenizer
from rouge_score import rouge_scorer, scoring, tokenizers
from tqdm.auto import tqdm

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
# The `evaluate` metric (a loading script shipped with the package): `evaluate.load(str(METRIC_DIR))`.
METRIC_DIR = Path(__file__).resolve().parent / "metrics" / "rouge"
# Punkt with no trained parameters: no download, the same sentences on every machine (see `sentence_lines`).
_SENTENCES = PunktSentenceTokenizer()


# Where an item has several references (AESLC's dev and test: the sender's subject and three annotators'), the
# `*_multi_reference` figures score, for each item and ROUGE type separately, the F1 of its best-matching reference
# (`evaluation.rouge.compute_rouge`), then average over the items; the plain figures score the first reference alone.
MULTI_REFERENCE_RULE = (
    "for each item and ROUGE type, the F1 against its best-matching reference, averaged over the items "
    "(rouge_score's score_multi, as AESLC's multi-reference evaluation)"
)


def figure_names(references: list[list[str]] | None = None, several: bool | None = None) -> list[str]:
    """The ROUGE figures `summarize_and_score` gives against `references` (eval_items aside): the four F1 against
    the first reference and, where some item has several references (or `several` says so), the same four as
    `*_multi_reference`."""
    if several is None:
        several = any(len(r) > 1 for r in references or [])
    return [*ROUGE_TYPES, *(f"{t}_multi_reference" for t in ROUGE_TYPES if several)]


def sentence_lines(text: str) -> str:
    """`text` with one sentence a line, the input ROUGE-Lsum needs. The rule: a line break already in the text ends a
    sentence (CNN/DailyMail's highlights come one a line); within a line, NLTK's Punkt algorithm with no trained
    parameters (no download) ends a sentence at `.`, `?` or `!` followed by white space, so it also splits after
    abbreviations such as "Mr." (a trained Punkt model would know them; it is not used so that no machine needs
    one)."""
    return "\n".join(sentence for line in text.splitlines() for sentence in _SENTENCES.tokenize(line) if sentence)


def compute_rouge(
    predictions: Sequence[str],
    references: Sequence[str] | Sequence[Sequence[str]],
    rouge_types: Sequence[str] = ROUGE_TYPES,
) -> dict[str, float]:
    """Mean F1 (0-100) over the items of each ROUGE type, Porter-stemmed (words over 3 letters), with
    `rouge_score`'s tokenizer (lower case, runs of ASCII letters and digits). An item with several references
    scores, for each type separately, the F1 of its best-matching reference (`RougeScorer.score_multi`, the rule of
    `evaluate`'s rouge and of AESLC's multi-reference evaluation). The mean is exact, not the bootstrap estimate
    that `evaluate`'s rouge reports by default."""
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references.")
    unknown = set(rouge_types) - set(ROUGE_TYPES)
    if unknown:
        raise ValueError(f"unknown ROUGE types {sorted(unknown)}; choose from {', '.join(ROUGE_TYPES)}")
    scorer = rouge_scorer.RougeScorer(list(rouge_types), use_stemmer=True)
    split = "rougeLsum" in rouge_types  # newlines only matter to ROUGE-Lsum; other types read them as spaces
    totals = dict.fromkeys(rouge_types, 0.0)
    for prediction, item_references in zip(predictions, references):
        item_references = [item_references] if isinstance(item_references, str) else list(item_references)
        if not item_references:
            raise ValueError("an item has no reference")
        if split:
            prediction, item_references = sentence_lines(prediction), [sentence_lines(r) for r in item_references]
        scores = scorer.score_multi(item_references, prediction)
        for rouge_type in rouge_types:
            totals[rouge_type] += scores[rouge_type].fmeasure
    return {rouge_type: 100.0 * total / max(len(predictions), 1) for rouge_type, total in totals.items()}


@functools.cache
def load_rouge_metric():
    """ROUGE as an `evaluate` metric, loaded from the package's own folder (no Hub access)."""
    import evaluate

    return evaluate.load(str(METRIC_DIR))


def rouge_scores(
    predictions: list[str], references: list[str] | list[list[str]], rouge_types: Sequence[str] = ROUGE_TYPES
) -> dict[str, float]:
    """ROUGE-1, ROUGE-2, ROUGE-L and ROUGE-Lsum F1 (0-100, stemmed) of `predictions` against `references` (one string
    or a list of strings per item), through the package's `evaluate` metric: see `compute_rouge` for the rules,
    among them the multi-reference one (per item and type, the best reference's F1) and `sentence_lines` for
    ROUGE-Lsum's sentences."""
    references = [[r] if isinstance(r, str) else list(r) for r in references]
    return load_rouge_metric().compute(predictions=predictions, references=references, rouge_types=list(rouge_types))


def lead(text: str, k: int) -> str:
    """The lead baseline: the first `k` whitespace-separated words of `text`."""
    return " ".join(text.split()[:k])


def choose_lead_k(
    texts: Sequence[str],
    references: Sequence[str] | Sequence[Sequence[str]],
    ks: Sequence[int] = range(1, 21),
    progress: bool = True,
) -> tuple[int, dict[int, float]]:
    """The k of `ks` whose lead baseline scores the best ROUGE-1 F1 against `references` (the smallest such k on a
    tie; choose it on validation, never on test), and every k's ROUGE-1, each equal to `rouge_scores` of
    `lead(text, k)` (an item with several references scores its best one). Every k is scored in one pass: the
    tokens of `lead(text, k)` are those of its first k words, each tokenized alone (`rouge_score`'s tokenizer splits
    at every space and lower-cases), so the overlap with a reference grows word by word."""
    ks = sorted(set(ks))
    if not ks or ks[0] < 1:
        raise ValueError(f"choose_lead_k needs ks of at least 1 word, got {ks}")
    if len(texts) != len(references):
        raise ValueError(f"{len(texts)} texts but {len(references)} references.")
    tokenizer = tokenizers.DefaultTokenizer(use_stemmer=True)
    totals = dict.fromkeys(ks, 0.0)
    for text, item_references in tqdm(
        zip(texts, references), total=len(texts), desc="lead-k baseline", disable=not progress
    ):
        item_references = [item_references] if isinstance(item_references, str) else list(item_references)
        if not item_references:
            raise ValueError("an item has no reference")
        targets = [Counter(tokenizer.tokenize(reference)) for reference in item_references]
        target_lengths = [max(sum(target.values()), 1) for target in targets]
        written, overlaps, length = Counter(), [0] * len(targets), 0
        words = iter(text.split())
        for count in range(1, ks[-1] + 1):
            for token in tokenizer.tokenize(next(words, "")):
                written[token] += 1
                length += 1
                overlaps = [o + (written[token] <= t[token]) for o, t in zip(overlaps, targets)]
            if count in totals:  # rouge_score's F1 (`_score_ngrams`), the best reference's
                totals[count] += max(
                    scoring.fmeasure(o / max(length, 1), o / target_length)
                    for o, target_length in zip(overlaps, target_lengths)
                )
    scores = {k: 100.0 * total / max(len(texts), 1) for k, total in totals.items()}
    best = max(scores.values())
    return min(k for k, score in scores.items() if score == best), scores
