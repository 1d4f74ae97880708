"""The benchmarks' one check of their count flags, worded as the recipes' and the CLI's (`hf_vanilla.flag_bounds`)."""

import argparse

from hf_vanilla.flag_bounds import bound_problems


def require_at_least(parser: argparse.ArgumentParser, args: argparse.Namespace, least: dict[str, int]) -> None:
    """`parser.error` (exit 2, one line) for the first flag of `least` given under its smallest value."""
    problems = bound_problems(vars(args), least)
    if problems:
        parser.error(problems[0])


def add_model_size(parser: argparse.ArgumentParser, former: str, default: str, choices: list[str]) -> None:
    """`--model-size` (a size of `hf_vanilla.SIZES`), also accepted under its `former` spelling, said in the help."""
    parser.add_argument(
        "--model-size",
        former,
        dest="model_size",
        default=default,
        choices=choices,
        help=f"Model size (hf_vanilla.SIZES); {former} is its former spelling.",
    )
