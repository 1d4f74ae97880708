"""The `hf-vanilla` console script: its flags and help, read without importing torch, transformers or the
hf_vanilla package (seconds of imports), so that `hf-vanilla --help`, `--version` and a mistyped flag answer at once;
the subcommands themselves run in `hf_vanilla.cli`."""

import argparse
import functools
import importlib.util
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


@functools.cache
def _package_file(name: str):
    """The standard-library-only module `hf_vanilla/NAME.py` (`decoding_settings`, `flag_bounds`, `model_paths`),
    read once without importing the package (its `__init__` imports transformers and torch: seconds)."""
    folder = importlib.util.find_spec("hf_vanilla").submodule_search_locations[0]
    spec = importlib.util.spec_from_file_location(f"hf_vanilla_cli.{name}", Path(folder) / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The decoding settings (name, type, least value, help, tasks) and the input limits: `hf_vanilla/decoding_settings.py`.
DECODING_SETTINGS = _package_file("decoding_settings")
# --input's other kinds of file, and the flag that chooses their text.
TABLE_INPUT = ", or a .jsonl or .csv file of rows, one output line a row (with --text-column)"
TEXT_COLUMN = "The column of a .jsonl or .csv --input that holds the text (a JSONL or CSV file is refused without it)."


def _version() -> str:
    try:
        return version("hf-vanilla")
    except PackageNotFoundError:  # a checkout on the path, not installed
        return "unknown (not installed)"


def _add_settings(command: argparse.ArgumentParser, task: str) -> None:
    """The flags of the decoding settings a user may set for a model of `task` (`decoding_settings.settings_for`)."""
    for setting in DECODING_SETTINGS.settings_for(task):
        command.add_argument(setting.flag, type=setting.type, help=setting.help_for(task))


def _add_decoding_arguments(command: argparse.ArgumentParser, task: str) -> None:
    command.add_argument("model", help="A model folder or a Hub id.")
    command.add_argument("--input", help=f"A text file, one sentence a line{TABLE_INPUT} (default: stdin).")
    command.add_argument("--text-column", metavar="NAME", help=TEXT_COLUMN)
    _add_settings(command, task)
    command.add_argument("--batch-tokens", type=int, default=4000, help="Source tokens per decoding batch.")
    command.add_argument(
        "--max-input-tokens",
        type=int,
        default=DECODING_SETTINGS.MAX_INPUT_TOKENS,
        help="Longer input lines are skipped (an empty output line) with a warning naming them (default: "
        f"{DECODING_SETTINGS.MAX_INPUT_TOKENS}).",
    )


def _checkpoint_and_score_commands(commands) -> None:
    """The subcommands average-checkpoints, score-bleu and score-evalb."""
    average = commands.add_parser("average-checkpoints", help="Average checkpoints into a loadable model folder.")
    average.add_argument(
        "run_dir", nargs="?", default=".", help="A recipe's output folder (its checkpoint-* folders)."
    )
    average.add_argument(
        "--last", type=int, default=5, help="Average the newest N complete checkpoints (paper: 5 base, 20 big)."
    )
    average.add_argument("--checkpoints", nargs="+", help="Explicit checkpoint or model folders instead.")
    average.add_argument("--output", required=True, help="Folder for the averaged model.")
    bleu = commands.add_parser("score-bleu", help="sacreBLEU and tokenized compound-split BLEU of two text files.")
    bleu.add_argument("hypotheses", help="A text file of translations, one a line.")
    bleu.add_argument("references", help="A text file of reference translations, one a line, as many lines.")
    bleu.add_argument("--lang", default="de", help="Target language for Moses tokenization.")
    score = commands.add_parser("score-evalb", help="EVALB (COLLINS.prm) of predicted against gold trees, one a line.")
    score.add_argument("gold", help="A file of gold PTB trees, one a line.")
    score.add_argument("predicted", help="A file of predicted trees over the same words, one a line, as many lines.")


def _decoding_commands(commands) -> None:
    """The subcommands translate, parse and summarize: one output line for each input line."""
    translate = commands.add_parser("translate", help="Translate sentences (stdin or --input) to stdout, one a line.")
    _add_decoding_arguments(translate, "translation")
    parse = commands.add_parser(
        "parse", help="Parse pre-tokenized sentences to PTB trees, one a line, always well formed."
    )
    _add_decoding_arguments(parse, "parsing")
    parse.add_argument(
        "--no-tree-grammar",
        dest="tree_grammar",
        action="store_false",
        help="Decode freely, as the paper did (default: only well-formed trees over the input words).",
    )
    summarize = commands.add_parser(
        "summarize", help="Summarize documents, one a line (stdin or --input), to stdout, one summary a line."
    )
    summarize.add_argument("model", help="A summarization model folder or Hub id.")
    summarize.add_argument("--input", help=f"A text file, one document a line{TABLE_INPUT} (default: stdin).")
    summarize.add_argument("--text-column", metavar="NAME", help=TEXT_COLUMN)
    _add_settings(summarize, "summarization")
    summarize.add_argument("--batch-tokens", type=int, default=4000, help="Document tokens per decoding batch.")
    summarize.add_argument(
        "--max-input-tokens",
        type=int,
        help="Longer documents are cut to their first N tokens (with </s>), with a warning naming them (default: "
        "the model's model_max_length, its training limit, if it records one, else "
        f"{DECODING_SETTINGS.SUMMARY_INPUT_TOKENS}).",
    )


def _publishing_commands(commands) -> None:
    """The subcommands push, import-marian, export-marian and export-ct2."""
    push = commands.add_parser(
        "push", help="Build the Hub folder (weights, code, tokenizer, card, results) and upload it."
    )
    push.add_argument("folder", help="A recipe's output folder, or a model folder holding its results.json.")
    push.add_argument("repo_id", help="The Hub repository, e.g. user/transformer-base-wmt14-ende.")
    push.add_argument("--private", action="store_true", help="Create the repository (and Space) as private.")
    push.add_argument("--build-dir", help="Where to build the uploaded folder (default: FOLDER/hub).")
    push.add_argument("--dry-run", action="store_true", help="Build and check the folder, do not upload.")
    push.add_argument("--space", metavar="SPACE_ID", help="Also build and upload a Gradio Space demo of REPO_ID.")
    push.add_argument(
        "--space-model", action="append", default=[], help="Another Hub model the Space shows (repeatable)."
    )
    push.add_argument("--space-dir", help="Where to build the Space folder (default: FOLDER/space).")
    importer = commands.add_parser(
        "import-marian", help="Convert a MarianMTModel (e.g. an OPUS-MT model) into an hf_vanilla model folder."
    )
    importer.add_argument("source", help="A MarianMTModel folder or Hub id, e.g. Helsinki-NLP/opus-mt-en-de.")
    importer.add_argument("output", help="Folder for the hf_vanilla model and the tokenizer.")
    exporter = commands.add_parser("export-marian", help="Convert an hf_vanilla model into a MarianMTModel folder.")
    exporter.add_argument("model", help="An hf_vanilla model folder or Hub id.")
    exporter.add_argument("output", help="Folder for the MarianMTModel and the tokenizer.")
    ct2 = commands.add_parser("export-ct2", help="Convert an hf_vanilla model into a CTranslate2 model folder.")
    ct2.add_argument("model", help="An hf_vanilla model folder or Hub id (with its tokenizer).")
    ct2.add_argument("output", help="Folder for the CTranslate2 model and the tokenizer files.")
    ct2.add_argument(
        "--quantization",
        help="CTranslate2 weight type: int8, int8_float32, int8_float16, int8_bfloat16, int16, "
        "float16, bfloat16 or float32 (default: float32, the model's own weights).",
    )
    ct2.add_argument("--force", action="store_true", help="Replace OUTPUT if it exists.")


def _inspection_commands(commands) -> None:
    """The subcommands attention and app."""
    attention = commands.add_parser(
        "attention",
        help="PNG heatmaps of every layer's and head's attention for one sentence (pair); for a pointer-generator, "
        "also p_gen.png: the probability that each output token was generated rather than copied.",
    )
    attention.add_argument("model", help="A model folder or a Hub id.")
    attention.add_argument("--source", required=True, help="The source sentence.")
    attention.add_argument("--target", help="The target sentence (default: the model's own translation).")
    attention.add_argument("--output", required=True, help="Folder for the PNGs and attention.npz.")
    app = commands.add_parser("app", help="A Gradio demo of models on this machine: a tab for each model's task.")
    app.add_argument("models", nargs="+", metavar="MODEL", help="Model folders or Hub ids.")
    app.add_argument("--host", default="127.0.0.1", help="Address to serve on (0.0.0.0: every interface).")
    app.add_argument("--port", type=int, default=7860, help="Port to serve on (default: 7860).")
    app.add_argument("--share", action="store_true", help="Also serve on a public gradio.live link (needs internet).")
    app.add_argument(
        "--max-input-tokens",
        type=int,
        default=DECODING_SETTINGS.APP_INPUT_TOKENS,
        help=f"Longer inputs are refused with a message in the page (default: {DECODING_SETTINGS.APP_INPUT_TOKENS}).",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hf-vanilla", description="Tools for the Attention Is All You Need Transformer."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    _checkpoint_and_score_commands(commands)
    _decoding_commands(commands)
    _publishing_commands(commands)
    _inspection_commands(commands)
    return parser


# The smallest value of each numeric flag, whichever subcommand has it (checked before any file or model is read):
# the decoding settings' from their registry.
AT_LEAST = {
    **DECODING_SETTINGS.least_values(DECODING_SETTINGS.SETTINGS),
    "batch_tokens": 1,
    "max_input_tokens": 2,
    "last": 1,
    "port": 1,
}

# Each subcommand's arguments that name a model (a folder or a Hub id), and push's recipe output folder (always a
# path here): checked before the package is imported (`hf_vanilla/model_paths.py`).
MODEL_ARGUMENTS = {
    "translate": ("model",),
    "parse": ("model",),
    "summarize": ("model",),
    "attention": ("model",),
    "app": ("models",),
    "import-marian": ("source",),
    "export-marian": ("model",),
    "export-ct2": ("model",),
}
FOLDER_ARGUMENTS = {"push": ("folder",)}


def model_names(args: argparse.Namespace) -> list[str]:
    """The names of models the subcommand loads (folders or Hub ids)."""
    values = [getattr(args, argument) for argument in MODEL_ARGUMENTS.get(args.command, ())]
    return [name for value in values for name in (value if isinstance(value, list) else [value])]


def first_problem(args: argparse.Namespace) -> str | None:
    """The first thing wrong with the parsed command line that is seen without loading anything, or None: a numeric
    flag under its smallest value (`AT_LEAST`), then a model path that is not there (`model_paths`) or a run folder
    without checkpoints to average."""
    problems = _package_file("flag_bounds").bound_problems(vars(args), AT_LEAST)
    paths = _package_file("model_paths")
    problems += [paths.model_path_problem(name) for name in model_names(args)]
    for argument in FOLDER_ARGUMENTS.get(args.command, ()):
        problems.append(paths.folder_problem(getattr(args, argument)))
    if args.command == "average-checkpoints":
        folders = args.checkpoints or []
        problems += [paths.folder_problem(folder) for folder in folders] or [paths.checkpoints_problem(args.run_dir)]
    return next((problem for problem in problems if problem), None)


def hub_problem(args: argparse.Namespace) -> str | None:
    """For the Hub models the subcommand loads (or the repo `push` uploads to): where the Hub does not answer one try
    (`hub_reach`), offline mode (HF_HUB_OFFLINE, set before transformers is imported); then the line for a model
    that is not cached, or None."""
    hub_ids = [name for name in model_names(args) if not _package_file("model_paths").is_local_path(name)]
    uploads = [args.repo_id] if args.command == "push" and not args.dry_run else []  # refused after the build
    hub = _package_file("hub_reach")
    hub.offline_unless_reachable(hub_ids + uploads)
    return next((problem for problem in map(hub.offline_model_problem, hub_ids) if problem), None)


def main(argv: list[str] | None = None) -> None:
    """The console script: parses the command line here and refuses what is wrong with it at once (`first_problem`,
    `hub_problem`: one line on stderr, exit 1), then runs it with `hf_vanilla.cli.run`."""
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    problem = first_problem(args) or hub_problem(args)
    if problem:
        raise _package_file("errors").user_exit("hf-vanilla", problem)
    from hf_vanilla.cli import run

    run(args)


if __name__ == "__main__":
    main()
