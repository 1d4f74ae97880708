"""A recipe's command line (`hf_vanilla.training.flags`): dashes, switch pairs, one default each, the old underscore
spelling, and a misspelt flag answered by argparse in one line (exit 2) with the closest flag."""

import re

import pytest

from hf_vanilla.training.flags import UNDERSCORE_SPELLINGS, parse_settings, settings_parser

from runs import recipe


@pytest.mark.parametrize(
    "name, argv, expected",
    [
        ("wmt_ende", ["--presett", "demo"], "unrecognized arguments: --presett demo (did you mean --preset?)"),
        ("summarize", ["--train-file", "x"], "unrecognized arguments: --train-file x (did you mean --test-file?)"),
        ("ptb_parse", ["--zzz"], "unrecognized arguments: --zzz"),
    ],
)
def test_an_unknown_flag_is_argparses_one_line_with_the_closest_flag_and_exit_2(name, argv, expected, capsys):
    with pytest.raises(SystemExit) as exit_:
        parse_settings(recipe(name).Arguments, argv)
    assert exit_.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].endswith(f"error: {expected}") and not any("Traceback" in line for line in lines)


def test_flags_are_dashed_switches_pair_and_the_underscore_spelling_still_works():
    arguments = recipe("summarize").Arguments
    assert parse_settings(arguments, ["--resume"]).resume is True
    assert parse_settings(arguments, ["--no-resume"]).resume is False
    assert parse_settings(arguments, ["--no-pointer-generator"]).pointer_generator is False
    assert parse_settings(arguments, []).pointer_generator is None  # the preset's
    given = parse_settings(arguments, ["--max_steps", "7", "--eval-every", "3", "--torch_compile"])
    assert (given.max_steps, given.eval_every, given.torch_compile) == (7, 3, True)
    with pytest.raises(SystemExit):
        parse_settings(arguments, ["--max-steps", "seven"])


def test_help_says_that_the_underscore_spellings_are_accepted(capsys):
    """A user of a command written for HfArgumentParser (`--max_steps`) reads in --help that it still works, once,
    not as a second list of flags."""
    for name in ("wmt_ende", "ptb_parse", "summarize"):
        with pytest.raises(SystemExit):
            parse_settings(recipe(name).Arguments, ["--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert text.endswith(UNDERSCORE_SPELLINGS), text[-300:]
        assert "--max_steps for --max-steps" in text and text.count("--max_steps") == 1


def test_help_lists_every_flag_once_with_help_and_at_most_one_default():
    for name in ("wmt_ende", "ptb_parse", "summarize"):
        parser = settings_parser(recipe(name).Arguments, prog=name)
        usage = parser.format_usage()
        assert not re.search(r"--\w*_", usage), usage  # dashes, as the docs spell the flags
        for action in parser._actions:
            if action.help == "==SUPPRESS==" or not action.option_strings or action.dest == "help":
                continue
            assert action.help, action.option_strings  # a line of help on every flag
            shown = action.help + (" (default: ...)" if "%(default)" in action.help else "")
            assert shown.count("Default") + shown.count("(default") <= 1, (name, action.option_strings, shown)
        text = parser.format_help()
        assert "--resume, --no-resume" in text and "(default: None)" not in text
