"""The one registry of decoding settings and input limits (`hf_vanilla.decoding_settings`): standard library only,
beside the `DECODING` rows, and read by every place a user sets a decoding: the recipes' flags, both command-line
files, the tuning script and the app."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from hf_vanilla import DECODING, configuration_vanilla, decoding_settings
from hf_vanilla.configuration_vanilla import VanillaGenerationConfig
from hf_vanilla.decoding_settings import (
    APP_INPUT_TOKENS,
    MAX_INPUT_TOKENS,
    SETTINGS,
    SUMMARY_INPUT_TOKENS,
    least_values,
    settings_for,
)
from hf_vanilla.training.arguments import RunSettings

from runs import recipe

ROOT = Path(__file__).resolve().parents[1]


def test_the_module_needs_only_the_standard_library():
    """The console script reads it by path and remote code copies it beside the model: no import of torch,
    transformers or the package, and no relative import."""
    tree = ast.parse(Path(decoding_settings.__file__).read_text())
    imported = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    imported += [node.module or "." for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and not node.level]
    relative = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level]
    assert not relative and imported
    assert all(name.split(".")[0] in sys.stdlib_module_names for name in imported), imported


def test_the_rows_live_here_and_the_configuration_exports_them():
    assert DECODING is configuration_vanilla.DECODING is decoding_settings.DECODING
    assert set(DECODING) == {"translation", "parsing", "summarization"}


def test_each_setting_is_a_generate_keyword_that_its_rows_give_within_its_bounds():
    """Each name is a generation config field (what `generate()` takes as keyword), each row value has the setting's
    type and is at least its least value, and each task offers at least the beam size and length penalty."""
    config = VanillaGenerationConfig()
    for setting in SETTINGS.values():
        assert hasattr(config, setting.name) and setting.flag == "--" + setting.name.replace("_", "-")
        assert setting.help.endswith(".") and set(setting.tasks) <= set(DECODING)
        for task, row in DECODING.items():
            if setting.name in row:
                assert isinstance(row[setting.name], setting.type), (task, setting.name)
                assert setting.least is None or row[setting.name] >= setting.least, (task, setting.name)
    for task in DECODING:
        assert {"num_beams", "length_penalty"} <= {setting.name for setting in settings_for(task)}
    assert [s.name for s in settings_for("summarization")] == [
        "num_beams",
        "length_penalty",
        "no_repeat_ngram_size",
        "min_new_tokens",
        "max_new_tokens",
        "no_stutter_span_size",
    ]
    assert least_values(["num_beams", "length_penalty", "max_new_tokens"]) == {"num_beams": 1, "max_new_tokens": 1}


def test_the_help_names_the_default_of_a_new_model_of_the_task():
    beams = SETTINGS["num_beams"]
    assert (
        beams.help_for("parsing") == "Beam size. Default: the model's generation config; a new parsing model's is 21."
    )
    assert beams.help_for(None, "the preset's") == (
        "Beam size. Default: the preset's (a new model's: its task's DECODING row)."
    )
    assert SETTINGS["no_repeat_ngram_size"].help_for("translation").endswith("Default: the model's generation config.")


def test_the_summarize_recipes_flags_take_their_help_and_bounds_from_the_registry():
    arguments = recipe("summarize").Arguments
    fields = {field.name: field for field in arguments.__dataclass_fields__.values()}
    for setting in settings_for("summarization"):
        assert fields[setting.name].metadata["help"].startswith(setting.help), setting.name
        if setting.least is not None:
            assert arguments.AT_LEAST[setting.name] == setting.least, setting.name
    assert set(least_values(arguments.GENERATION_CONFIG)) <= set(arguments.AT_LEAST)
    assert RunSettings.AT_LEAST["max_length_offset"] == SETTINGS["max_length_offset"].least == 0
    assert fields["max_new_tokens"].metadata["help"].endswith("a new summarization model's is 64.")


def _options(parser, command: str) -> dict:
    """The optional arguments of `command`'s subparser, by flag."""
    subparsers = next(action for action in parser._actions if action.dest == "command")
    return {flag: action for action in subparsers.choices[command]._actions for flag in action.option_strings}


def test_the_console_scripts_decoding_flags_and_limits_come_from_the_registry():
    """translate, parse and summarize offer their task's settings, typed, bounded and helped as the registry says;
    the input limits' defaults and help are the registry's."""
    from hf_vanilla_cli import AT_LEAST, build_parser

    parser = build_parser()
    every = {setting.flag for setting in SETTINGS.values()}
    for command, task in (("translate", "translation"), ("parse", "parsing"), ("summarize", "summarization")):
        options = _options(parser, command)
        assert {flag for flag in options if flag in every} == {setting.flag for setting in settings_for(task)}
        for setting in settings_for(task):
            action = options[setting.flag]
            assert (action.type, action.help, action.dest) == (setting.type, setting.help_for(task), setting.name)
            assert AT_LEAST.get(setting.name) == setting.least, setting.name
    assert _options(parser, "translate")["--max-input-tokens"].default == MAX_INPUT_TOKENS
    assert _options(parser, "parse")["--max-input-tokens"].default == MAX_INPUT_TOKENS
    assert f"else {SUMMARY_INPUT_TOKENS})" in _options(parser, "summarize")["--max-input-tokens"].help
    assert _options(parser, "app")["--max-input-tokens"].default == APP_INPUT_TOKENS


def test_the_console_script_reads_the_registry_without_torch_transformers_or_the_package():
    script = (
        "import sys, hf_vanilla_cli\nhf_vanilla_cli.build_parser()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', 'hf_vanilla')))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", (done.stdout[:300], done.stderr[-2000:])


def test_the_tuning_scripts_grid_is_the_summarizers_settings_with_their_bounds(capsys):
    tune = recipe("tune_summary_decoding")
    assert tune.GRID == settings_for("summarization")
    args = tune.parse_args(["--model", "m", *(part for s in tune.GRID for part in (s.flag, "2", "3"))])
    assert {s.name: getattr(args, s.name) for s in tune.GRID} == {s.name: [s.type(2), s.type(3)] for s in tune.GRID}
    for setting in tune.GRID:
        if setting.least is not None:
            with pytest.raises(SystemExit):
                tune.parse_args(["--model", "m", setting.flag, str(setting.least - 1)])
            assert f"{setting.flag} values must be at least {setting.least}" in capsys.readouterr().err
            tune.parse_args(["--model", "m", setting.flag, str(setting.least)])  # the least value itself is taken


def test_the_apps_summarize_endpoint_and_sliders_follow_the_registry(summarization_folder):
    """The app reads each model's own value of each setting its task offers, passes the summarizer's settings to its
    endpoint in the registry's order, and starts each slider at the setting's least value."""
    pytest.importorskip("gradio", reason="the demo app needs gradio: pip install 'hf-vanilla[app]'")
    from hf_vanilla import app

    model = app.DemoModel.read(str(summarization_folder))
    assert list(model.decoding) == [s.name for s in settings_for("summarization")]
    assert list(app.SUMMARY_PARAMETERS) == list(model.decoding)
    demo = app.build_app([str(summarization_folder)])
    sliders = {
        block.elem_id.removeprefix("summarization-0-"): block
        for block in demo.blocks.values()
        if type(block).__name__ == "Slider" and block.elem_id
    }
    bottoms = {"beams": "num_beams", "no-repeat": "no_repeat_ngram_size", "min-length": "min_new_tokens"}
    bottoms |= {"max-length": "max_new_tokens", "no-stutter": "no_stutter_span_size", "penalty": "length_penalty"}
    assert {key: sliders[key].minimum for key in bottoms} == {
        key: SETTINGS[name].least or 0 for key, name in bottoms.items()
    }
    parameters = demo.get_api_info()["named_endpoints"]["/summarization_0"]["parameters"]
    assert [p["parameter_name"] for p in parameters] == ["text", *app.SUMMARY_PARAMETERS.values()]
    # A setting the endpoint does not name is refused, not left to the model's own value.
    with pytest.raises(TypeError, match="^no summarize setting min_new_tokens; the settings: num_beams, "):
        app.summarize(model, APP_INPUT_TOKENS)("a b c", min_new_tokens=3, progress=lambda *a, **k: None)
