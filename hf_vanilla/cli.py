"""The `hf-vanilla` command line's work: each subcommand's function (`COMMANDS`), run (`run`) on the flags that
`hf_vanilla_cli` parsed (the console script, which imports neither torch nor transformers: `--help` is quick)."""

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path

from .decoding_settings import SETTINGS, SUMMARY_INPUT_TOKENS
from .errors import error_line, user_exit
from .text_lines import line_pieces


def _fail(message: str) -> SystemExit:
    return user_exit("hf-vanilla", message)


def _average(args: argparse.Namespace) -> None:
    from .training.checkpoints import CheckpointError, average_checkpoints, list_checkpoints
    from .training.run_folder import recorded_run

    if args.checkpoints:
        chosen = [Path(p) for p in args.checkpoints]
    else:
        try:  # the checkpoints of the run that the folder records, where it records one
            run = recorded_run(Path(args.run_dir))
        except (OSError, ValueError, KeyError) as error:
            raise _fail(f"{args.run_dir}/run.json is unreadable: {error}") from None
        chosen = list_checkpoints(Path(args.run_dir), run.owns if run is not None else None)[-args.last :]
        if not chosen:
            raise _fail(f"no complete checkpoint in {args.run_dir}")
    try:
        output = average_checkpoints(chosen, Path(args.output))
    except (CheckpointError, ValueError) as error:
        raise _fail(str(error)) from None
    print(f"averaged {len(chosen)} checkpoints ({', '.join(p.name for p in chosen)}) into {output}")


# Warnings list the numbers of the first lines they concern, then how many more.
MAX_LISTED_LINES = 10


def split_lines(data: bytes) -> tuple[list[str], list[int]]:
    """Input bytes as lines: split at "\n" only, as `wc -l` counts (`str.splitlines` also splits at \r, \v, \f,
    \x1c-\x1e, \x85, \u2028 and \u2029, and the output would no longer match the input line for line), with a
    byte-order mark at the start and a "\r" before each "\n" dropped (`text_lines.line_pieces`, as the recipes read
    their corpora). Undecodable bytes become U+FFFD; returns the lines and the numbers (from 1) of the lines that held
    any."""
    lines, undecodable = [], []
    for number, piece in enumerate(line_pieces(data), 1):
        try:
            lines.append(piece.decode("utf-8"))
        except UnicodeDecodeError:
            lines.append(piece.decode("utf-8", errors="replace"))
            undecodable.append(number)
    return lines, undecodable


def _write_lines(lines: Iterable[str]) -> None:
    """`lines` on stdout in UTF-8, as the input is read, whatever the locale's encoding."""
    sys.stdout.buffer.write("".join(line + "\n" for line in lines).encode("utf-8"))
    sys.stdout.buffer.flush()


def _warn_lines(where: str, numbers: list[int], problem: str, unit: str = "line") -> None:
    """One line on stderr naming the input lines (or a table's rows: `unit` "row") that have `problem`."""
    if not numbers:
        return
    listed = ", ".join(str(n) for n in numbers[:MAX_LISTED_LINES])
    if len(numbers) > MAX_LISTED_LINES:
        listed += f" and {len(numbers) - MAX_LISTED_LINES} more"
    print(f"hf-vanilla: warning: {where} {unit}{'s' * (len(numbers) > 1)} {listed}: {problem}", file=sys.stderr)


def _warn_inputs(args: argparse.Namespace, numbers: list[int], problem: str) -> None:
    """`_warn_lines` for the texts of --input (or stdin): its lines, or a .jsonl or .csv file's rows."""
    table = bool(args.input) and Path(args.input).suffix.lower() in TABLE_SUFFIXES
    _warn_lines(args.input or "stdin", numbers, problem, "row" if table else "line")


def _read_lines(path: str | None) -> list[str]:
    """The lines of a file, or of stdin when `path` is None (see `split_lines`); undecodable bytes are replaced with
    a warning naming the lines."""
    try:
        data = Path(path).read_bytes() if path else sys.stdin.buffer.read()
    except OSError as error:
        raise _fail(f"cannot read {path}: {error.strerror}") from None
    lines, undecodable = split_lines(data)
    _warn_lines(path or "stdin", undecodable, "not UTF-8; the undecodable bytes were replaced with U+FFFD")
    return lines


# --input files read as rows (one output line a row) with --text-column choosing the text, by their suffix.
TABLE_SUFFIXES = (".jsonl", ".csv")
# What a JSON value other than text is called in a refusal.
JSON_KINDS = {bool: "true or false", int: "a number", float: "a number", list: "a list", dict: "an object"}


def _read_inputs(args: argparse.Namespace) -> list[str]:
    """The texts translate, parse or summarize decode: the lines of --input (or stdin), or for a .jsonl or .csv
    --input its --text-column, a text a row (`_table_rows`, `_column`). A table without --text-column, and
    --text-column on input read a line at a time, are refused in one line."""
    suffix = Path(args.input).suffix.lower() if args.input else ""
    if suffix not in TABLE_SUFFIXES:
        if args.text_column is not None:
            raise _fail(
                f"--text-column reads a {' or '.join(TABLE_SUFFIXES)} --input; {args.input or 'stdin'} is read a "
                "text a line"
            )
        return _read_lines(args.input)
    columns, rows = _table_rows(args.input, suffix)
    return _column(args.input, columns, rows, args.text_column)


def _table_rows(path: str, suffix: str) -> tuple[list[str], list[tuple[int, dict]]]:
    """The column names (the CSV header, or the first JSON object's keys) and rows of a .jsonl or .csv file, each row
    with the number of the line it starts on; a line that is not a JSON object is refused, naming it. Blank lines of
    a JSONL file are no rows."""
    lines = _read_lines(path)
    if suffix == ".csv":
        import csv
        import io

        reader = csv.DictReader(io.StringIO("".join(line + "\n" for line in lines), newline=""))
        try:
            return list(reader.fieldnames or []), [(reader.line_num, row) for row in reader]
        except csv.Error as error:
            raise _fail(f"{path} line {reader.line_num}: not CSV ({error})") from None
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise _fail(f"{path} line {number}: not JSON ({error.msg}, column {error.colno})") from None
        if not isinstance(row, dict):
            raise _fail(f"{path} line {number}: a JSON {type(row).__name__}, not an object of columns")
        rows.append((number, row))
    return list(rows[0][1]) if rows else [], rows


def _column(path: str, columns: list[str], rows: list[tuple[int, dict]], name: str | None) -> list[str]:
    """Column `name` of each row (a missing CSV cell, or a JSON null, is an empty text: an empty output line), or a
    one-line refusal naming the columns there are: no --text-column given, or a row without it or with other than
    text in it."""
    listed = ", ".join(repr(column) for column in columns) or "none"
    if not rows:
        raise _fail(f"{path} holds no rows")
    if name is None:
        raise _fail(f"{path} is a table: choose the column to read with --text-column (its columns: {listed})")
    texts = []
    for number, row in rows:
        if name not in row:
            columns_here = ", ".join(repr(column) for column in row if column is not None)
            raise _fail(f"{path} line {number} has no column {name!r} (its columns: {columns_here or 'none'})")
        value = row[name]
        if value is not None and not isinstance(value, str):
            kind = JSON_KINDS.get(type(value), type(value).__name__)
            raise _fail(f"{path} line {number}: column {name!r} holds {kind}, not text")
        texts.append(value or "")
    return texts


def _score_bleu(args: argparse.Namespace) -> None:
    from .evaluation.bleu import sacrebleu_score, tokenized_bleu

    hypotheses, references = _read_lines(args.hypotheses), _read_lines(args.references)
    try:
        score, signature = sacrebleu_score(hypotheses, references)
        tokenized = tokenized_bleu(hypotheses, references, args.lang)
    except ValueError as error:
        raise _fail(str(error)) from None
    print(json.dumps({"sacrebleu": score, "sacrebleu_signature": signature, "tokenized_bleu": tokenized}))


def _score_evalb(args: argparse.Namespace) -> None:
    from .evaluation.evalb import evalb

    try:
        print(json.dumps(evalb(_read_lines(args.gold), _read_lines(args.predicted))))
    except ValueError as error:
        raise _fail(str(error)) from None


def _load(model_name: str, task: str | None = None):
    """Model and tokenizer from a folder or a Hub id, on the GPU when there is one; with `task`, a model trained for
    another task is refused (one line)."""
    from .batch_decoding import ModelLoadError, check_task, load_for_decoding

    try:
        model, tokenizer = load_for_decoding(model_name)
        if task is not None:
            check_task(model, model_name, task)
    except ModelLoadError as error:
        raise _fail(str(error)) from None
    return model, tokenizer


def _skip_long_lines(args: argparse.Namespace, texts: list[str], tokenizer) -> list[str]:
    """`texts` with those over --max-input-tokens made empty (an empty output line), with a warning naming them."""
    limit = args.max_input_tokens
    lengths = [len(tokenizer(text)["input_ids"]) if text.strip() else 0 for text in texts]
    long = [number for number, length in enumerate(lengths, 1) if length > limit]
    _warn_inputs(args, long, f"over --max-input-tokens {limit} tokens; skipped (empty output line)")
    return ["" if length > limit else text for text, length in zip(texts, lengths)]


def _decoding_flags(args: argparse.Namespace) -> dict:
    """The decoding settings given on the command line (`decoding_settings.SETTINGS`, each flag named as
    `generate()`'s keyword), as `generate()` keywords; the others stay the model's."""
    flags = {name: getattr(args, name, None) for name in SETTINGS}
    return {name: value for name, value in flags.items() if value is not None}


def _summary_input_limit(args: argparse.Namespace, tokenizer) -> tuple[int, str]:
    """How many tokens of each document `summarize` reads (`batch_decoding.input_limit`), SUMMARY_INPUT_TOKENS when
    neither --max-input-tokens nor the model sets it."""
    from .batch_decoding import input_limit

    return input_limit(tokenizer, args.max_input_tokens, "--max-input-tokens", SUMMARY_INPUT_TOKENS)


def _translate(args: argparse.Namespace) -> None:
    from .batch_decoding import generate_texts, one_line

    lines = _read_inputs(args)
    model, tokenizer = _load(args.model, "translation")
    lines = _skip_long_lines(args, lines, tokenizer)
    outputs = generate_texts(
        model, tokenizer, lines, args.batch_tokens, progress=bool(args.input), **_decoding_flags(args)
    )
    _write_lines(one_line(output) for output in outputs)


def _parse(args: argparse.Namespace) -> None:
    from .batch_decoding import parse_texts, ptb_words

    lines = _read_inputs(args)
    model, tokenizer = _load(args.model, "parsing")
    sentences = _skip_long_lines(args, [ptb_words(line) for line in lines], tokenizer)
    try:
        trees = parse_texts(
            model,
            tokenizer,
            sentences,
            args.tree_grammar,
            args.batch_tokens,
            progress=bool(args.input),
            **_decoding_flags(args),
        )
    except ValueError as error:  # the tree grammar's: a tokenizer that cannot write brackets as single tokens
        raise _fail(f"{args.model}: {error} Decode with --no-tree-grammar.") from None
    _write_lines(trees)


def _summarize(args: argparse.Namespace) -> None:
    """One summary a line for each document a line. A document over the input limit (`_summary_input_limit`) is
    cut to its first tokens, with a warning, where `translate` skips an over-long sentence: the beginning of a
    document still has a summary (and training documents are cut the same way), half a sentence has no translation."""
    from .batch_decoding import check_length_bounds, generate_texts, one_line

    lines = _read_inputs(args)
    model, tokenizer = _load(args.model, "summarization")
    flags = _decoding_flags(args)
    try:
        check_length_bounds(model, flags.get("min_new_tokens"), flags.get("max_new_tokens"))
    except ValueError as error:
        raise _fail(f"{error}: set --min-new-tokens <= --max-new-tokens") from None
    limit, origin = _summary_input_limit(args, tokenizer)
    lengths = [len(tokenizer(line, verbose=False)["input_ids"]) if line.strip() else 0 for line in lines]
    _warn_inputs(
        args,
        [number for number, length in enumerate(lengths, 1) if length > limit],
        f"over {limit} tokens ({origin}); only the first {limit} were read",
    )
    summaries = generate_texts(
        model,
        tokenizer,
        lines,
        args.batch_tokens,
        progress=bool(args.input),
        max_source_tokens=limit,
        **flags,
    )
    _write_lines(one_line(summary) for summary in summaries)


def _push(args: argparse.Namespace) -> None:
    from .cards import CardError
    from .hub import PublishError, build_hub_folder, build_space_folder, push_model_folder, push_space_folder

    try:
        folder = build_hub_folder(Path(args.folder), Path(args.build_dir or Path(args.folder) / "hub"), args.repo_id)
        space = args.space and build_space_folder(
            Path(args.space_dir or Path(args.folder) / "space"), [args.repo_id, *args.space_model], args.space
        )
        if args.dry_run:
            print(f"built {folder}{f' and {space}' if space else ''}; not uploaded (--dry-run)")
            return
        print(f"published {args.repo_id}: {push_model_folder(folder, args.repo_id, private=args.private)}")
        if space:
            print(f"published Space {args.space}: {push_space_folder(space, args.space, private=args.private)}")
    except (CardError, PublishError) as error:
        raise _fail(str(error)) from None


def _import_marian(args: argparse.Namespace) -> None:
    from .convert import import_marian

    output = _convert(import_marian, args.source, args.output, "Marian model")
    print(f"hf_vanilla model and tokenizer written to {output}")


def _export_marian(args: argparse.Namespace) -> None:
    from .convert import export_marian

    output = _convert(export_marian, args.model, args.output, "model")
    print(f"MarianMTModel written to {output}")


def _convert(convert, source: str, output: str, what: str) -> Path:
    """`convert(source, output)`, its refusals and loading errors each one line."""
    from .convert import ConversionError

    _quiet_loading()
    try:
        return convert(source, output)
    except ConversionError as error:
        raise _fail(f"cannot convert {source}: {error}") from None
    except (OSError, ValueError) as error:
        raise _fail(f"cannot load {what} {source!r}: {error_line(error)}") from None


def _export_ct2(args: argparse.Namespace) -> None:
    try:
        from .ct2 import export_ct2
    except ImportError as error:
        raise _fail(str(error)) from None
    _quiet_loading()
    try:
        output = export_ct2(args.model, args.output, quantization=args.quantization, force=args.force)
    except (ImportError, FileExistsError) as error:
        raise _fail(str(error)) from None
    except (OSError, ValueError) as error:
        raise _fail(f"cannot export {args.model!r}: {error_line(error)}") from None
    print(f"CTranslate2 model ({args.quantization or 'float32'}) and tokenizer written to {output}")


def _attention(args: argparse.Namespace) -> None:
    from .attention_plots import PLOTS_MISSING, attention_maps, plot_attention, with_attention_weights

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise _fail(PLOTS_MISSING) from None
    if not args.source.strip():
        raise _fail("--source is empty")
    model, tokenizer = _load(args.model)
    maps = attention_maps(with_attention_weights(model), tokenizer, args.source, args.target)
    written = plot_attention(maps, args.output)
    print(f"{len(written)} plots and attention.npz written to {args.output}")


def _app(args: argparse.Namespace) -> None:
    from .batch_decoding import ModelLoadError

    try:
        from .app import launch
    except ImportError as error:
        raise _fail(str(error)) from None
    try:
        launch(
            args.models,
            host=args.host,
            port=args.port,
            max_input_tokens=args.max_input_tokens,
            share=args.share,
        )
    except (ModelLoadError, ValueError) as error:
        raise _fail(str(error)) from None


def _quiet_loading() -> None:
    from transformers.utils import logging

    logging.disable_progress_bar()


# Each subcommand's work (`hf_vanilla_cli.build_parser` defines their flags).
COMMANDS = {
    "average-checkpoints": _average,
    "score-bleu": _score_bleu,
    "score-evalb": _score_evalb,
    "translate": _translate,
    "parse": _parse,
    "summarize": _summarize,
    "push": _push,
    "import-marian": _import_marian,
    "export-marian": _export_marian,
    "export-ct2": _export_ct2,
    "attention": _attention,
    "app": _app,
}


def run(args: argparse.Namespace) -> None:
    """Runs the parsed command line's subcommand (its flags and model paths already checked by
    `hf_vanilla_cli.first_problem`)."""
    COMMANDS[args.command](args)
