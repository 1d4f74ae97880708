"""The ceiling of copying under each tokenization: how many summary tokens the truncated source holds, with a BPE
trained on the training split for each of the four combinations of `BpeOptions.prefix_space` and `lowercase`.

    python -m benchmarks.studies.copy_ceiling                     # AESLC (../shared/data), test split
    python -m benchmarks.studies.copy_ceiling --dataset news.jsonl --text-column body --summary-column title \
        --split train

Counting only (no model): for each variant, `hf_vanilla.data.copyable.copyable_tokens` of the split encoded as the
summarization recipe encodes it (sources cut to --max-source-tokens, </s> counted).
"""

import argparse
import json
from pathlib import Path

from hf_vanilla.data.copyable import copyable_tokens
from hf_vanilla.data.encoding import encode_truncated_pairs
from hf_vanilla.data.summaries import SIDES, as_pairs, load_summarization_corpus
from hf_vanilla.errors import user_exit
from hf_vanilla.tokenization import BpeOptions, train_shared_bpe

from benchmarks.flag_checks import require_at_least

DEMO_CORPUS = Path(__file__).resolve().parents[3] / "shared" / "data" / "aeslc" / "enron_subject_line"
VARIANTS = {
    "as the translation recipe (cased, no prefix space)": BpeOptions(),
    "prefix space, white space as one space": BpeOptions(prefix_space=True),
    "lower case": BpeOptions(lowercase=True),
    "prefix space and lower case (the summarization presets)": BpeOptions(prefix_space=True, lowercase=True),
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default=str(DEMO_CORPUS), help="As the summarization recipe's --dataset.")
    parser.add_argument("--text-column", help="The documents' column of a file.")
    parser.add_argument("--summary-column", help="The summaries' column of a file.")
    parser.add_argument("--split", default="test", help="The split counted (train, validation, test).")
    parser.add_argument("--vocab-size", type=int, default=4000, help="BPE vocabulary size (the demo's 4,000).")
    parser.add_argument("--max-source-tokens", type=int, default=96, help="Sources cut to this many tokens.")
    parser.add_argument("--json", help="Also write the rows to this file.")
    args = parser.parse_args(argv)
    require_at_least(parser, args, {"vocab_size": 261, "max_source_tokens": 2})
    return args


def main(argv: list[str] | None = None) -> list[dict]:
    args = parse_args(argv)
    corpus = as_pairs(load_summarization_corpus(args.dataset, args.text_column, args.summary_column))
    if args.split not in corpus:
        raise user_exit("copy_ceiling", f"{args.dataset} has no {args.split!r} split (it has {', '.join(corpus)})")
    train = corpus["train"]
    rows = []
    for name, options in VARIANTS.items():
        texts = (pair[side] for pair in train["translation"] for side in SIDES)
        tokenizer = train_shared_bpe(texts, args.vocab_size, show_progress=False, **vars(options))
        encoded, _ = encode_truncated_pairs(corpus[args.split], tokenizer, *SIDES, None, args.max_source_tokens)
        rows.append({"tokenization": name, **copyable_tokens(encoded, tokenizer.all_special_ids)})
    print(f"{args.dataset} ({args.split}), sources cut to {args.max_source_tokens} tokens, {args.vocab_size:,} BPE\n")
    print("| tokenization | summary tokens in the source | first summary token in the source | tokens a summary |")
    print("|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['tokenization']} | {row['summary_tokens_in_source']:.1f}% | {row['first_token_in_source']:.1f}% "
            f"| {row['tokens_per_summary']:.2f} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return rows


if __name__ == "__main__":
    main()
