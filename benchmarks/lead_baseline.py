"""The summarization demo's trivial baseline, the figure a verdict row must beat to measure anything: the lead baseline
(the first k words of each e-mail, k chosen on the validation split), as `recipes/summarize.py` computes it before
training (`hf_vanilla.evaluation.summarization.lead_baseline`), on the test split that the peers' runs score.

    python -m benchmarks.lead_baseline     # writes benchmarks/results/lead-baseline-summarization.json

The figure counts words and n-grams: the same on every machine. `benchmarks/render_tables.py` marks a verdict row
whose seeds never beat it as no measurement of its toolkit (issue 63).
"""

import argparse
import json
import os
from pathlib import Path

from hf_vanilla.data.summaries import load_summarization_corpus
from hf_vanilla.evaluation.summarization import lead_baseline

from benchmarks.environment import environment
from benchmarks.peers.common.recipes import recipe_module

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "benchmarks" / "results" / "lead-baseline-summarization.json"
COMMAND = "python -m benchmarks.lead_baseline"


def lead_record(corpus, dataset: str) -> dict:
    """The record of `corpus`' lead baseline on its test split, k chosen on its validation split: the figures of
    `lead_baseline`, and its ROUGE-1 as the record's `quality`, as a peer record holds it."""
    figures = lead_baseline(corpus["validation"], corpus["test"])
    return {
        "environment": environment(),
        "task": "summarization",
        "baseline": f"lead-{figures['k']}",
        "dataset": os.path.relpath(dataset, ROOT) if os.path.isabs(dataset) else dataset,
        "split": "test",
        "quality": {"metric": "rouge1", "value": figures["rouge1"]},
        "lead_baseline": figures,
        "command": COMMAND,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", help="The corpus (default: the demo's AESLC folder, as the recipe reads it).")
    parser.add_argument("--out", type=Path, default=RECORD, help="Where the record goes.")
    args = parser.parse_args(argv)
    dataset = args.dataset or recipe_module("summarize").default_dataset("demo")
    record = lead_record(load_summarization_corpus(dataset), dataset)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    figures = record["lead_baseline"]
    print(f"{record['baseline']}: ROUGE-1 {figures['rouge1']} on {figures['eval_items']} test items")
    return record


if __name__ == "__main__":
    main()
