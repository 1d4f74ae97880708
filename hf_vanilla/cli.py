"""The `hf-vanilla` command line."""

import argparse
import json
import sys
from pathlib import Path


def _average(args: argparse.Namespace) -> None:
    from .training.checkpoints import average_checkpoints, list_checkpoints

    if args.checkpoints:
        chosen = [Path(p) for p in args.checkpoints]
    else:
        chosen = list_checkpoints(Path(args.run_dir))[-args.last :]
        if not chosen:
            raise SystemExit(f"hf-vanilla: no complete checkpoint in {args.run_dir}")
    output = average_checkpoints(chosen, Path(args.output))
    print(f"averaged {len(chosen)} checkpoints ({', '.join(p.name for p in chosen)}) into {output}")


def _read_lines(path: str) -> list[str]:
    try:
        return Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise SystemExit(f"hf-vanilla: cannot read {path}: {error.strerror}")


def _score_bleu(args: argparse.Namespace) -> None:
    from .evaluation.bleu import sacrebleu_score, tokenized_bleu

    hypotheses, references = _read_lines(args.hypotheses), _read_lines(args.references)
    try:
        score, signature = sacrebleu_score(hypotheses, references)
        tokenized = tokenized_bleu(hypotheses, references, args.lang)
    except ValueError as error:
        raise SystemExit(f"hf-vanilla: {error}")
    print(json.dumps({"sacrebleu": score, "sacrebleu_signature": signature, "tokenized_bleu": tokenized}))


def _score_evalb(args: argparse.Namespace) -> None:
    from .parsing import evalb

    try:
        print(json.dumps(evalb(_read_lines(args.gold), _read_lines(args.predicted))))
    except ValueError as error:
        raise SystemExit(f"hf-vanilla: {error}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hf-vanilla", description="Tools for the Attention Is All You Need Transformer.")
    commands = parser.add_subparsers(dest="command", required=True)
    average = commands.add_parser("average-checkpoints", help="Average checkpoints into a loadable model folder.")
    average.add_argument("run_dir", nargs="?", default=".", help="A recipe's output folder (its checkpoint-* folders).")
    average.add_argument("--last", type=int, default=5, help="Average the newest N complete checkpoints (paper: 5 base, 20 big).")
    average.add_argument("--checkpoints", nargs="+", help="Explicit checkpoint or model folders instead.")
    average.add_argument("--output", required=True, help="Folder for the averaged model.")
    average.set_defaults(run=_average)
    bleu = commands.add_parser("score-bleu", help="sacreBLEU and tokenized compound-split BLEU of two text files.")
    bleu.add_argument("hypotheses")
    bleu.add_argument("references")
    bleu.add_argument("--lang", default="de", help="Target language for Moses tokenization.")
    bleu.set_defaults(run=_score_bleu)
    score = commands.add_parser("score-evalb", help="EVALB (COLLINS.prm) of predicted against gold trees, one a line.")
    score.add_argument("gold")
    score.add_argument("predicted")
    score.set_defaults(run=_score_evalb)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main(sys.argv[1:])
