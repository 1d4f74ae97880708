"""Made-up words in a summarizer's output: words that occur neither in their own document nor anywhere in the
training split, such as "phillments" (a copy of "phill" from "Phillip" and of "ments" from "easements"). A model that
writes word pieces, copied or generated, can join pieces of different words; no reference can match such a word.

    python -m benchmarks.studies.summary_words RUN/predictions.jsonl [OTHER/predictions.jsonl ...]  # AESLC's train
    python -m benchmarks.studies.summary_words RUN/predictions.jsonl --dataset news.jsonl --text-column body \
        --summary-column title

Reads the summarization recipe's `predictions.jsonl` (source, prediction and first reference of each item). Words are
ROUGE's (`rouge_score`'s tokenizer: lower case, runs of ASCII letters and digits); the lexicon is every word of the
training split's documents and summaries. For each file: the share of summary words found in their document, the
share made up and the summaries holding one, ROUGE-1/2/L F1 against the first reference as written and with the
made-up words taken out (what a rule against them could gain at most by dropping them), and, for comparison, the share
of reference words outside the same lexicon (what such a rule would forbid the references themselves).
"""

import argparse
import json
from pathlib import Path

from rouge_score.tokenize import tokenize

from hf_vanilla.data.summaries import load_summarization_corpus
from hf_vanilla.evaluation.rouge import compute_rouge

DEMO_CORPUS = Path(__file__).resolve().parents[3] / "shared" / "data" / "aeslc" / "enron_subject_line"
TYPES = ("rouge1", "rouge2", "rougeL")


def words(text: str) -> list[str]:
    """ROUGE's words of `text` (no stemming)."""
    return tokenize(text, None)


def made_up_words(items: list[dict], lexicon: set[str]) -> dict:
    """Counts over `items` ({source, prediction, reference}) of the predictions' words that are in their source, and
    of those in neither their source nor `lexicon`; with the predictions without those words (`cleaned`)."""
    total = in_source = made_up = holding = reference_total = reference_outside = 0
    cleaned = []
    for item in items:
        source = set(words(item["source"]))

        def known(word: str, source: set[str] = source) -> bool:
            return word in source or word in lexicon

        predicted = words(item["prediction"])
        total += len(predicted)
        in_source += sum(word in source for word in predicted)
        invented = [word for word in predicted if not known(word)]
        made_up += len(invented)
        holding += bool(invented)
        # A written word may hold several of ROUGE's words ("q3/report"): it goes if any of them is made up.
        cleaned.append(" ".join(w for w in item["prediction"].split() if all(known(x) for x in words(w))))
        reference = words(item["reference"])
        reference_total += len(reference)
        reference_outside += sum(not known(word) for word in reference)
    return {
        "summaries": len(items),
        "words_per_summary": total / max(len(items), 1),
        "in_source": 100 * in_source / max(total, 1),
        "made_up": 100 * made_up / max(total, 1),
        "summaries_with_made_up": holding,
        "reference_words_outside": 100 * reference_outside / max(reference_total, 1),
        "cleaned": cleaned,
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("predictions", nargs="+", help="predictions.jsonl files of the summarization recipe.")
    parser.add_argument("--dataset", default=str(DEMO_CORPUS), help="As the recipe's --dataset: its training split.")
    parser.add_argument("--text-column", help="The documents' column of a file.")
    parser.add_argument("--summary-column", help="The summaries' column of a file.")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> list[dict]:
    args = parse_args(argv)
    train = load_summarization_corpus(args.dataset, args.text_column, args.summary_column)["train"]
    lexicon = {word for column in ("text", "summary") for text in train[column] for word in words(text)}
    print(f"lexicon: {len(lexicon):,} words of {args.dataset}'s training split\n")
    print(
        "| predictions | words a summary | in their document | made up | summaries with one | ROUGE-1 / 2 / L "
        "| made-up words taken out | reference words outside |"
    )
    print("|---|---|---|---|---|---|---|---|")
    rows = []
    for path in args.predictions:
        with open(path, encoding="utf-8") as lines:
            items = [json.loads(line) for line in lines if line.strip()]
        counts = made_up_words(items, lexicon)
        references = [item["reference"] for item in items]
        scores = compute_rouge([item["prediction"] for item in items], references, TYPES)
        cleaned = compute_rouge(counts.pop("cleaned"), references, TYPES)
        row = {"predictions": path, **counts, "rouge": scores, "rouge_cleaned": cleaned}
        rows.append(row)
        print(
            f"| {path} | {row['words_per_summary']:.2f} | {row['in_source']:.1f}% | {row['made_up']:.2f}% "
            f"| {row['summaries_with_made_up']:,} | {' / '.join(f'{scores[t]:.2f}' for t in TYPES)} "
            f"| {' / '.join(f'{cleaned[t]:.2f}' for t in TYPES)} | {row['reference_words_outside']:.2f}% |"
        )
    return rows


if __name__ == "__main__":
    main()
