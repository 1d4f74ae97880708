"""Chooses a summarizer's decoding on the validation split (never the test): every combination of the given length
penalties, length bounds, beam sizes, n-gram and stutter rules is decoded and scored with ROUGE, and the best is
printed as the flags to give `recipes/summarize.py` (or `hf-vanilla summarize`).

    python recipes/tune_summary_decoding.py --model RUN/final --length-penalty 0.6 1.0 1.5 --min-new-tokens 1 4 8
    python recipes/tune_summary_decoding.py --model RUN/final --dataset train.jsonl --validation-file dev.jsonl \
        --min-new-tokens 4 8 --json tuning.json

The validation documents are cut as the model was trained (its tokenizer's model_max_length, or
--max-source-tokens); each summary is scored against every reference of its item where there are several
(`MULTI_REFERENCE_RULE`, reported beside the first-reference figures).
"""

import argparse
import json
import sys

from summarize import DEMO_CORPUS

from hf_vanilla.batch_decoding import ModelLoadError, input_limit, load_for_decoding
from hf_vanilla.data.summaries import load_summarization_corpus
from hf_vanilla.decoding_settings import settings_for
from hf_vanilla.errors import error_line, user_exit
from hf_vanilla.evaluation.summarization import lead_baseline, tune_decoding
from hf_vanilla.flag_bounds import bound_problem, bound_problems
from hf_vanilla.tokenization import whole_word_copy_ids

PROGRAM = "tune_summary_decoding"  # the first word of its error lines
# The settings tuned: a summarizer's decoding settings (`decoding_settings.settings_for`), each flag taking candidates.
GRID = settings_for("summarization")
SHOWN = ("rouge1", "rouge2", "rougeL", "rougeLsum")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="A trained summarizer: its output folder or a Hub id.")
    parser.add_argument(
        "--dataset",
        default=str(DEMO_CORPUS),
        help="As recipes/summarize.py's --dataset (only its validation split is read). Default: the demo's AESLC.",
    )
    parser.add_argument("--text-column")
    parser.add_argument("--summary-column")
    parser.add_argument("--validation-file", help="The validation split of a --dataset file.")
    parser.add_argument("--max-items", type=int, help="Only the first N validation items (default: all).")
    parser.add_argument(
        "--max-source-tokens", type=int, help="Documents cut to this many tokens (default: the model's own limit)."
    )
    for setting in GRID:
        described = f"Candidates: {setting.help[0].lower()}{setting.help[1:]} Default: the model's setting."
        parser.add_argument(setting.flag, dest=setting.name, type=setting.type, nargs="+", help=described)
    parser.add_argument(
        "--whole-word-copy",
        nargs="+",
        choices=("on", "off"),
        help="Candidates for a pointer-generator's whole-word copying (recipes/summarize.py's --whole-word-copy; "
        "default: the model's setting).",
    )
    parser.add_argument(
        "--choose-by", default="rouge1", help="The figure to maximize (default rouge1, first reference)."
    )
    parser.add_argument("--json", help="Also write every row and the choice to this file.")
    args = parser.parse_args(argv)
    for setting in GRID:
        smallest = min(getattr(args, setting.name) or (), default=None)
        if setting.least is not None and bound_problem(setting.flag, smallest, setting.least):
            parser.error(f"{setting.flag} values must be at least {setting.least}, got {getattr(args, setting.name)}")
    problems = bound_problems(vars(args), {"max_items": 1, "max_source_tokens": 2})
    if problems:
        parser.error(problems[0])
    return args


def table(rows: list[dict], names: list[str]) -> str:
    """The rows as a Markdown table: the setting's values, then the ROUGE F1 figures (first reference, and the best
    reference where there is one)."""
    figures = [k for k in rows[0] if k.split("_multi")[0] in SHOWN]
    lines = ["| " + " | ".join(names + figures) + " |", "|" + "---|" * (len(names) + len(figures))]
    lines += ["| " + " | ".join(str(row[k]) for k in names + figures) + " |" for row in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    try:
        model, tokenizer = load_for_decoding(args.model)
        corpus = load_summarization_corpus(
            args.dataset, args.text_column, args.summary_column, args.validation_file, None
        )
    except (ModelLoadError, ValueError, OSError) as error:
        raise user_exit(PROGRAM, error_line(error)) from None
    if "validation" not in corpus:
        raise user_exit(PROGRAM, f"{args.dataset} has no validation split to tune on (give --validation-file)")
    items = corpus["validation"]
    if args.max_items is not None:
        items = items.select(range(min(args.max_items, len(items))))
    limit, _ = input_limit(tokenizer, args.max_source_tokens)
    grid = {setting.name: getattr(args, setting.name) for setting in GRID if getattr(args, setting.name)}
    if not grid:
        config = model.generation_config
        grid = {"length_penalty": [config.length_penalty]}  # no candidates given: the model's own setting, scored
    rows = []
    try:
        for whole in args.whole_word_copy or [None]:  # None: the model's own
            if whole is not None:
                copies, flag = model.config.pointer_generator, f"--whole-word-copy {whole}"
                ids = whole_word_copy_ids(tokenizer, copies, whole == "on", flag)
                model.generation_config.word_continuation_ids = ids
            rows += [
                ({"whole_word_copy": whole} if whole else {}) | row
                for row in tune_decoding(model, tokenizer, items, grid, limit, key=args.choose_by)[1]
            ]
    except ValueError as error:
        raise user_exit(PROGRAM, error_line(error)) from None
    chosen = max(rows, key=lambda row: row[args.choose_by])  # max keeps the first of equal rows
    names = (["whole_word_copy"] if args.whole_word_copy else []) + list(grid)
    print(table(rows, names))
    best = {name: chosen[name] for name in names}
    flags = " ".join(
        ("--whole-word-copy" if value == "on" else "--no-whole-word-copy")
        if name == "whole_word_copy"
        else f"--{name.replace('_', '-')} {value}"
        for name, value in best.items()
    )
    print(f"best on {len(items):,} validation items by {args.choose_by} ({chosen[args.choose_by]}): {flags}")
    lead = lead_baseline(items, items)  # k chosen on these items too, as the decoding is
    every = [f"{name}_multi_reference" for name in SHOWN if f"{name}_multi_reference" in lead]
    shown = " / ".join(str(lead[name]) for name in SHOWN) + (
        "; every reference " + " / ".join(str(lead[name]) for name in every) if every else ""
    )
    print(f"the lead baseline on them: the first {lead['k']} words, ROUGE-1 / 2 / L / Lsum {shown}")
    record = {
        "model": args.model,
        "dataset": args.dataset,
        "validation_items": len(items),
        "max_source_tokens": limit,
        "choose_by": args.choose_by,
        "best": best,
        "rows": rows,
        "lead_baseline": lead,
        "command": " ".join(sys.argv),
    }
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(record, handle, indent=2)
    return record


if __name__ == "__main__":
    main()
