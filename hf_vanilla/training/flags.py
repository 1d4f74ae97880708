"""A recipe's command line, read from its settings dataclass (`training.arguments.RunSettings` or a subclass): one
flag a field, spelt with dashes (`--max-steps`; the underscore spelling `--max_steps` that HfArgumentParser took is
accepted too, as the end of `--help` says: `UNDERSCORE_SPELLINGS`), a switch pair for each yes/no field (`--resume` /
`--no-resume`), the field's help with its one default, and argparse's own errors (exit 2), with the closest flag
suggested for a misspelt one."""

import argparse
import dataclasses
import difflib
import os
import sys
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from ..errors import user_exit
from ..hub_reach import offline_unless_reachable
from .arguments import resolve
from .preflight import PreflightError

Settings = TypeVar("Settings")

# The end of every recipe's --help: the old spellings a command written for HfArgumentParser uses still work.
UNDERSCORE_SPELLINGS = (
    "Every flag is also accepted with underscores for dashes, as HfArgumentParser spelt it (--max_steps for "
    "--max-steps); a switch's underscore form (--torch_compile) turns it on."
)


def _value_type(annotation) -> type:
    """The type a field's flag parses: `int` of `int | None`, and so on."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        (annotation,) = [a for a in typing.get_args(annotation) if a is not type(None)]
    return annotation


def _help(field: dataclasses.Field) -> str:
    """The field's help, with its default where it has one (None reads as the help says: the preset's, ...)."""
    text = field.metadata.get("help", "")
    if field.default is None or isinstance(field.default, bool) or "Default" in text or "default" in text:
        return text
    return f"{text} Default: {field.default}."


class SettingsParser(argparse.ArgumentParser):
    """argparse, with a misspelt or unknown flag answered by the closest flag there is, after a one-line usage (the
    flags are many: --help lists them)."""

    def format_usage(self) -> str:
        return f"usage: {self.prog} [flags] (--help lists them)\n"

    def parse_args(self, args: Sequence[str] | None = None, namespace=None):
        parsed, unknown = self.parse_known_args(args, namespace)
        if unknown:
            flags = [flag for action in self._actions for flag in action.option_strings if flag.startswith("--")]
            close = difflib.get_close_matches(unknown[0].split("=")[0], flags, n=1)
            hint = f" (did you mean {close[0]}?)" if close and unknown[0].startswith("-") else ""
            self.error(f"unrecognized arguments: {' '.join(unknown)}{hint}")
        return parsed


def settings_parser(cls: type, description: str | None = None, prog: str | None = None) -> SettingsParser:
    """The command line of the settings dataclass `cls` (every field that `__init__` takes)."""
    parser = SettingsParser(description=description, prog=prog, epilog=UNDERSCORE_SPELLINGS)
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        kind = _value_type(hints[field.name])
        flag = "--" + field.name.replace("_", "-")
        if kind is bool:
            options = dict(action=argparse.BooleanOptionalAction)
        else:
            options = dict(type=kind, metavar=field.name.upper())
        parser.add_argument(flag, dest=field.name, default=field.default, help=_help(field), **options)
        alias = dict(action="store_const", const=True) if kind is bool else dict(options)
        if "_" in field.name:  # HfArgumentParser's spelling, still accepted, said once (the epilog), not listed
            parser.add_argument(
                "--" + field.name, dest=field.name, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **alias
            )
        for other in field.metadata.get("aliases", ()):  # another tool's name for it (e.g. fairseq's), in its help
            parser.add_argument(other, dest=field.name, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **alias)
    return parser


def parse_settings(
    cls: type[Settings],
    argv: Sequence[str] | None = None,
    description: str | None = None,
    presets: dict[str, dict] | None = None,
    program: str | None = None,
) -> Settings:
    """`cls` filled from `argv` (the command line when None); exit 2 with argparse's one line on a bad flag.
    With the recipe's `presets`, also checked as the run will resolve them (`arguments.resolve`: the preset, every
    bound), a mistake ending `program` (default: the script's name) with one line and exit 1, and the Hub asked once
    whether it answers where the run needs it (`hub_reach.offline_unless_reachable`; offline, a Hub corpus or model
    that no cache holds is such a mistake): all before the recipe imports torch, when it reads its settings first
    (`recipes/settings_first.py`)."""
    settings = cls(**vars(settings_parser(cls, description).parse_args(argv)))
    if presets is not None:
        try:
            resolved = resolve(settings, presets)
            offline_unless_reachable(resolved.hub_names())
            problem = resolved.offline_problem()
            if problem:
                raise PreflightError(problem)
        except PreflightError as error:
            if os.environ.get("RANK", "0") != "0":  # the first process alone says it, as `run.run_recipe` does
                raise SystemExit(1) from None
            raise user_exit(program or Path(sys.argv[0]).stem, str(error)) from None
    return settings
