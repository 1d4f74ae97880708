"""The benchmarks' one check of their count flags, worded as the recipes' and the CLI's (`hf_vanilla.flag_bounds`)."""

import argparse

from hf_vanilla.flag_bounds import bound_problems


def require_at_least(parser: argparse.ArgumentParser, args: argparse.Namespace, least: dict[str, int]) -> None:
    """`parser.error` (exit 2, one line) for the first flag of `least` given under its smallest value."""
    problems = bound_problems(vars(args), least)
    if problems:
        parser.error(problems[0])
