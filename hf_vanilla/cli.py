"""The `hf-vanilla` command line."""

import argparse
import codecs
import json
import sys
from collections.abc import Iterable
from pathlib import Path


def _fail(message: str) -> SystemExit:
    return SystemExit(f"hf-vanilla: {message}")


def _average(args: argparse.Namespace) -> None:
    from .training.checkpoints import CheckpointError, average_checkpoints, list_checkpoints

    if args.checkpoints:
        chosen = [Path(p) for p in args.checkpoints]
    else:
        chosen = list_checkpoints(Path(args.run_dir))[-args.last :]
        if not chosen:
            raise SystemExit(f"hf-vanilla: no complete checkpoint in {args.run_dir}")
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
    byte-order mark at the start and a "\r" before each "\n" dropped. Undecodable bytes become U+FFFD; returns the
    lines and the numbers (from 1) of the lines that held any."""
    pieces = data.removeprefix(codecs.BOM_UTF8).split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()  # the newline that ends the last line starts no new one
    lines, undecodable = [], []
    for number, piece in enumerate(pieces, 1):
        piece = piece.removesuffix(b"\r")
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


def _warn_lines(where: str, numbers: list[int], problem: str) -> None:
    """One line on stderr naming the input lines that have `problem`."""
    if not numbers:
        return
    listed = ", ".join(str(n) for n in numbers[:MAX_LISTED_LINES])
    if len(numbers) > MAX_LISTED_LINES:
        listed += f" and {len(numbers) - MAX_LISTED_LINES} more"
    print(f"hf-vanilla: warning: {where} line{'s' * (len(numbers) > 1)} {listed}: {problem}", file=sys.stderr)


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


def _load(model_name: str):
    """Model and tokenizer from a folder or a Hub id, on the GPU when there is one."""
    from .decoding import ModelLoadError, load_for_decoding

    try:
        return load_for_decoding(model_name)
    except ModelLoadError as error:
        raise _fail(str(error)) from None


def _skip_long_lines(args: argparse.Namespace, texts: list[str], tokenizer) -> list[str]:
    """`texts` with those over --max-input-tokens made empty (an empty output line), with a warning naming them."""
    limit = args.max_input_tokens
    lengths = [len(tokenizer(text)["input_ids"]) if text.strip() else 0 for text in texts]
    long = [number for number, length in enumerate(lengths, 1) if length > limit]
    _warn_lines(args.input or "stdin", long, f"over --max-input-tokens {limit} tokens; skipped (empty output line)")
    return ["" if length > limit else text for text, length in zip(texts, lengths)]


# summarize's own decoding flags -> generate()'s names (the lengths are the summary's, not counting </s>).
SUMMARY_FLAGS = {
    "no_repeat_ngram_size": "no_repeat_ngram_size",
    "min_length": "min_new_tokens",
    "max_length": "max_new_tokens",
}


def _decoding_flags(args: argparse.Namespace) -> dict:
    """The decoding flags given on the command line, as `generate()` keywords; the others stay the model's."""
    flags = {"num_beams": args.num_beams, "length_penalty": args.length_penalty}
    flags.update({name: getattr(args, flag, None) for flag, name in SUMMARY_FLAGS.items()})
    return {name: value for name, value in flags.items() if value is not None}


# The longest document `summarize` reads, in tokens, when neither --max-input-tokens nor the model sets one.
SUMMARY_INPUT_TOKENS = 1024


def _summary_input_limit(args: argparse.Namespace, tokenizer) -> tuple[int, str]:
    """How many tokens of each document `summarize` reads, and where that limit comes from: --max-input-tokens, else
    the limit recorded with the model (its tokenizer's model_max_length), else SUMMARY_INPUT_TOKENS."""
    from .decoding import recorded_input_limit

    if args.max_input_tokens is not None:
        return args.max_input_tokens, "--max-input-tokens"
    if recorded_input_limit(tokenizer) is not None:
        return recorded_input_limit(tokenizer), "the model's model_max_length"
    return SUMMARY_INPUT_TOKENS, "the default limit"


def _translate(args: argparse.Namespace) -> None:
    from .decoding import generate_texts, one_line

    lines = _read_lines(args.input)
    model, tokenizer = _load(args.model)
    lines = _skip_long_lines(args, lines, tokenizer)
    outputs = generate_texts(
        model, tokenizer, lines, args.batch_tokens, progress=bool(args.input), **_decoding_flags(args)
    )
    _write_lines(one_line(output) for output in outputs)


def _parse(args: argparse.Namespace) -> None:
    from .decoding import parse_texts, ptb_words

    lines = _read_lines(args.input)
    model, tokenizer = _load(args.model)
    if model.config.decoding != "parsing":
        raise _fail(f"{args.model} is a {model.config.decoding} model, not a parser; use `hf-vanilla translate`")
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
    from .decoding import check_length_bounds, generate_texts, one_line

    for name, least in (("num_beams", 1), ("max_length", 1), ("max_input_tokens", 2), ("min_length", 0)):
        if getattr(args, name) is not None and getattr(args, name) < least:
            raise _fail(f"--{name.replace('_', '-')} must be at least {least}, got {getattr(args, name)}")
    if args.no_repeat_ngram_size is not None and args.no_repeat_ngram_size < 0:
        raise _fail(f"--no-repeat-ngram-size must not be negative, got {args.no_repeat_ngram_size}")
    lines = _read_lines(args.input)
    model, tokenizer = _load(args.model)
    task = getattr(model.config, "decoding", "translation")  # a MarianMTModel translates
    if task != "summarization":
        other = "parse" if task == "parsing" else "translate"
        raise _fail(f"{args.model} is a {task} model, not a summarizer; use `hf-vanilla {other}`")
    flags = _decoding_flags(args)
    try:
        check_length_bounds(model, flags.get("min_new_tokens"), flags.get("max_new_tokens"))
    except ValueError as error:
        raise _fail(f"{error}: set --min-length <= --max-length") from None
    limit, origin = _summary_input_limit(args, tokenizer)
    lengths = [len(tokenizer(line, verbose=False)["input_ids"]) if line.strip() else 0 for line in lines]
    _warn_lines(
        args.input or "stdin",
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
        raise _fail(f"cannot load {what} {source!r}: {str(error).splitlines()[0]}") from None


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
        raise _fail(f"cannot export {args.model!r}: {str(error).splitlines()[0]}") from None
    print(f"CTranslate2 model ({args.quantization or 'float32'}) and tokenizer written to {output}")


def _attention(args: argparse.Namespace) -> None:
    from . import VanillaPreTrainedModel
    from .attention_plots import PLOTS_MISSING, attention_maps, plot_attention

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise _fail(PLOTS_MISSING) from None
    if not args.source.strip():
        raise _fail("--source is empty")
    model, tokenizer = _load(args.model)
    if not isinstance(model, VanillaPreTrainedModel):  # e.g. a MarianMTModel: its SDPA attention returns no weights
        model.set_attn_implementation("eager")
    maps = attention_maps(model, tokenizer, args.source, args.target)
    written = plot_attention(maps, args.output)
    print(f"{len(written)} plots and attention.npz written to {args.output}")


def _app(args: argparse.Namespace) -> None:
    from .decoding import ModelLoadError

    try:
        from .app import MAX_INPUT_TOKENS, launch
    except ImportError as error:
        raise _fail(str(error)) from None
    try:
        launch(args.models, host=args.host, port=args.port, max_input_tokens=args.max_input_tokens or MAX_INPUT_TOKENS)
    except (ModelLoadError, ValueError) as error:
        raise _fail(str(error)) from None


def _quiet_loading() -> None:
    from transformers.utils import logging

    logging.disable_progress_bar()


def _add_decoding_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("model", help="A model folder or a Hub id.")
    command.add_argument("--input", help="A text file, one sentence a line (default: stdin).")
    command.add_argument("--num-beams", type=int, help="Beam size (default: the model's, i.e. the paper's).")
    command.add_argument("--length-penalty", type=float, help="GNMT length penalty alpha (default: the model's).")
    command.add_argument("--batch-tokens", type=int, default=4000, help="Source tokens per decoding batch.")
    command.add_argument(
        "--max-input-tokens",
        type=int,
        default=1024,
        help="Longer input lines are skipped (an empty output line) with a warning naming them.",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hf-vanilla", description="Tools for the Attention Is All You Need Transformer."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    average = commands.add_parser("average-checkpoints", help="Average checkpoints into a loadable model folder.")
    average.add_argument(
        "run_dir", nargs="?", default=".", help="A recipe's output folder (its checkpoint-* folders)."
    )
    average.add_argument(
        "--last", type=int, default=5, help="Average the newest N complete checkpoints (paper: 5 base, 20 big)."
    )
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
    translate = commands.add_parser("translate", help="Translate sentences (stdin or --input) to stdout, one a line.")
    _add_decoding_arguments(translate)
    translate.set_defaults(run=_translate)
    parse = commands.add_parser(
        "parse", help="Parse pre-tokenized sentences to PTB trees, one a line, always well formed."
    )
    _add_decoding_arguments(parse)
    parse.add_argument(
        "--no-tree-grammar",
        dest="tree_grammar",
        action="store_false",
        help="Decode freely, as the paper did (default: only well-formed trees over the input words).",
    )
    parse.set_defaults(run=_parse)
    summarize = commands.add_parser(
        "summarize", help="Summarize documents, one a line (stdin or --input), to stdout, one summary a line."
    )
    summarize.add_argument("model", help="A summarization model folder or Hub id.")
    summarize.add_argument("--input", help="A text file, one document a line (default: stdin).")
    summarize.add_argument("--num-beams", type=int, help="Beam size (default: the model's generation config).")
    summarize.add_argument("--length-penalty", type=float, help="GNMT length penalty alpha (default: the model's).")
    summarize.add_argument(
        "--no-repeat-ngram-size",
        type=int,
        help="No n-gram of this size twice in a summary; 0: no limit (default: the model's).",
    )
    summarize.add_argument(
        "--min-length",
        "--min-new-tokens",
        dest="min_length",
        type=int,
        help="Fewest tokens in a summary, </s> not counted (default: the model's; the recipe's --min-new-tokens).",
    )
    summarize.add_argument(
        "--max-length",
        "--max-new-tokens",
        dest="max_length",
        type=int,
        help="Most tokens in a summary, </s> not counted (default: the model's; the recipe's --max-new-tokens).",
    )
    summarize.add_argument("--batch-tokens", type=int, default=4000, help="Document tokens per decoding batch.")
    summarize.add_argument(
        "--max-input-tokens",
        type=int,
        help="Longer documents are cut to their first N tokens (with </s>), with a warning naming them (default: "
        f"the model's model_max_length, its training limit, if it records one, else {SUMMARY_INPUT_TOKENS}).",
    )
    summarize.set_defaults(run=_summarize)
    push = commands.add_parser(
        "push", help="Build the Hub folder (weights, code, tokenizer, card, results) and upload it."
    )
    push.add_argument("folder", help="A recipe's output folder, or a model folder holding its results.json.")
    push.add_argument("repo_id", help="The Hub repository, e.g. user/transformer-base-wmt14-ende.")
    push.add_argument("--private", action="store_true")
    push.add_argument("--build-dir", help="Where to build the uploaded folder (default: FOLDER/hub).")
    push.add_argument("--dry-run", action="store_true", help="Build and check the folder, do not upload.")
    push.add_argument("--space", metavar="SPACE_ID", help="Also build and upload a Gradio Space demo of REPO_ID.")
    push.add_argument(
        "--space-model", action="append", default=[], help="Another Hub model the Space shows (repeatable)."
    )
    push.add_argument("--space-dir", help="Where to build the Space folder (default: FOLDER/space).")
    push.set_defaults(run=_push)
    importer = commands.add_parser(
        "import-marian", help="Convert a MarianMTModel (e.g. an OPUS-MT model) into an hf_vanilla model folder."
    )
    importer.add_argument("source", help="A MarianMTModel folder or Hub id, e.g. Helsinki-NLP/opus-mt-en-de.")
    importer.add_argument("output", help="Folder for the hf_vanilla model and the tokenizer.")
    importer.set_defaults(run=_import_marian)
    exporter = commands.add_parser("export-marian", help="Convert an hf_vanilla model into a MarianMTModel folder.")
    exporter.add_argument("model", help="An hf_vanilla model folder or Hub id.")
    exporter.add_argument("output", help="Folder for the MarianMTModel and the tokenizer.")
    exporter.set_defaults(run=_export_marian)
    ct2 = commands.add_parser("export-ct2", help="Convert an hf_vanilla model into a CTranslate2 model folder.")
    ct2.add_argument("model", help="An hf_vanilla model folder or Hub id (with its tokenizer).")
    ct2.add_argument("output", help="Folder for the CTranslate2 model and the tokenizer files.")
    ct2.add_argument(
        "--quantization",
        help="CTranslate2 weight type: int8, int8_float32, int8_float16, int8_bfloat16, int16, "
        "float16, bfloat16 or float32 (default: float32, the model's own weights).",
    )
    ct2.add_argument("--force", action="store_true", help="Replace OUTPUT if it exists.")
    ct2.set_defaults(run=_export_ct2)
    attention = commands.add_parser(
        "attention",
        help="PNG heatmaps of every layer's and head's attention for one sentence (pair); for a pointer-generator, "
        "also p_gen.png: the probability that each output token was generated rather than copied.",
    )
    attention.add_argument("model", help="A model folder or a Hub id.")
    attention.add_argument("--source", required=True, help="The source sentence.")
    attention.add_argument("--target", help="The target sentence (default: the model's own translation).")
    attention.add_argument("--output", required=True, help="Folder for the PNGs and attention.npz.")
    attention.set_defaults(run=_attention)
    app = commands.add_parser("app", help="A Gradio demo of models on this machine: a tab for each model's task.")
    app.add_argument("models", nargs="+", metavar="MODEL", help="Model folders or Hub ids.")
    app.add_argument("--host", default="127.0.0.1", help="Address to serve on (0.0.0.0: every interface).")
    app.add_argument("--port", type=int, default=7860)
    app.add_argument(
        "--max-input-tokens", type=int, help="Longer inputs are refused with a message in the page (default: 200)."
    )
    app.set_defaults(run=_app)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main(sys.argv[1:])
