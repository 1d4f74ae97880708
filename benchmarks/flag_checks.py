"""The benchmarks' one check of their count flags, worded as the recipes' and the CLI's."""

import argparse


def require_at_least(parser: argparse.ArgumentParser, args: argparse.Namespace, least: dict[str, int]) -> None:
    """`parser.error` (exit 2, one line) for the first flag of `least` given under its smallest value."""
    for name, smallest in least.items():
        value = getattr(args, name)
        if value is not None and value < smallest:
            parser.error(f"--{name.replace('_', '-')} must be at least {smallest}, got {value}")
