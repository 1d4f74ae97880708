"""The steps every recipe takes, each a function of the run (`RunContext`), so that a recipe reads top to bottom like
section 5 of the paper and holds only what is its own: its data, its metric and its decoding.

A recipe (see recipes/wmt_ende.py) is:

    @dataclass
    class Arguments(RunSettings):            # the shared flags, plus the recipe's own: its data, its decoding
        dataset: str = setting("...")
        min_length: int | None = setting("...")                    # None: the preset's, or the model's own
        GENERATION_CONFIG = (*RunSettings.GENERATION_CONFIG, "min_length")  # set on the model when not None
    RECIPE_PRESETS = {"demo": dict(PAPER, model_size="demo", vocab_size=4000, ...)}   # settings each

    def main(args: Arguments) -> dict:
        run = start("name", args, RECIPE_PRESETS, task="translation")  # settings = flags over the preset; the
                                               # model's config (a new one trained for `task`); accelerator; seed
        corpus = ...                           # a DatasetDict: train, validation, test; a `translation` column of
                                               # {source: text, target: text} (other columns are the recipe's)
        check_before_training(run, corpus, dataset, "--dataset")
        build_tokenizer(run, corpus["train"], (source, target), dataset)      # run.tokenizer
        build_model(run)                       # run.model (or --init-from's) of run.config, decided in start
        def validation_metric(model, pairs) -> dict: ...       # greedy decodings of a few validation pairs
        def evaluate(model, pairs) -> Evaluation: ...  # the final decoding: figures (results.json fields),
                                                        # predictions, samples; may write files in run.output_dir
        extra = {"task": ...}                                    # the recipe's own results.json fields
        return train_and_evaluate(run, corpus, (source, target), validation_metric, evaluate, extra, finish)

    if __name__ == "__main__":
        run_recipe(main, parse_settings(Arguments), "name")   # training.flags: the command line of Arguments

(`setting` is `training.arguments.setting`, `PAPER` `training.presets.PAPER`, `build_model`
`training.model_building.build_model`, `finish` `hf_vanilla.publishing.finish`.)
A preset may set the recipe's own fields too (a flag left out is None: the preset's). `train_and_evaluate` trains,
keeps the final model (the average of the last checkpoints, or the best by --best-checkpoint-metric), evaluates on
the main process and hands the figures to `finish` (results.json, samples.jsonl, the card, the upload); a stop signal
ends the run after its checkpoint.
"""

import ctypes
import ctypes.util
import hashlib
import json
import logging
import os
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import torch
from accelerate import Accelerator
from accelerate.logging import get_logger
from accelerate.utils import set_seed
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from ..data.copyable import copyable_tokens
from ..data.encoding import EncodedPairs, encode_truncated_pairs, length_limits_text
from ..errors import error_line, user_exit
from ..evaluation import Evaluation
from ..modeling_vanilla import VanillaTransformerForConditionalGeneration
from ..tokenization import (
    PROVENANCE_FILE,
    BpeOptions,
    TokenizerMismatch,
    check_provenance,
    ensure_shared_tokenizer,
    load_tokenizer,
    text_fingerprint,
    write_tokenizer_folder,
)
from .accelerator import create_accelerator
from .arguments import RunSettings, resolve
from .checkpoints import CheckpointError, average_checkpoints, list_checkpoints
from .collectives import StepError, agreed_failure, broadcast_value
from .context import RunContext, TrainingResult
from .data_filters import record_evaluation, record_filter
from .host_memory import apply_host_malloc
from .interrupts import STOP_SIGNALS, RunInterrupted, interrupting, noted_signal
from .loop import BEST_DIR, train
from .model_building import run_config
from .preflight import (
    PreflightError,
    check_hub,
    check_splits,
    check_writable,
    refuse_deepspeed,
    refuse_metric_under_fsdp,
    run_checks,
)
from .run_folder import RunFolder, check_run_folder, claim_run_folder
from .schedule import scale_for_peak
from .validation import Validation

logger = get_logger(__name__)

# What a user can fix: stops the run with one line, no traceback.
USER_ERRORS = (PreflightError, TokenizerMismatch, CheckpointError, StepError)


def run_recipe(main: Callable, args, name: str):
    """Runs a recipe's `main(args)`; an error the user can fix ends every process with one line on stderr (printed
    by the first process only) and exit status 1; a stop signal outside the training loop's updates (which save a
    checkpoint and stop) ends it with one line saying what was kept and exit status 128 + the signal's number. A
    signal once the run's results are written is noted in one line and the run exits 0 (`finished_despite`)."""
    first_process = os.environ.get("RANK", "0") == "0"
    follow_launcher()
    if hasattr(signal, "SIGXFSZ"):  # a file over the size limit: an OSError (handled) rather than a silent death
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    logging.basicConfig(
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
        level=logging.INFO if first_process else logging.WARNING,
    )
    for noisy in ("httpx", "datasets", "transformers"):  # their INFO lines are per-file chatter
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        with interrupting(raises=first_process):
            results = main(args)
            late = noted_signal()
        return finished_despite(late, name, first_process, results)
    except USER_ERRORS as error:
        raise (user_exit(name, str(error)) if first_process else SystemExit(1)) from None
    except RunInterrupted as stop:  # a stop signal outside the training loop's updates: one line, no traceback
        if first_process:
            print(f"{name}: {stop.line()}", file=sys.stderr, flush=True)
        raise SystemExit(stop.exit_status()) from None


def finished_despite(late: str | None, name: str, first_process: bool, results: dict) -> dict:
    """`results`, the run finished: the stop signal `late` that came after its results were written (if any) is
    said in one line, and any other is ignored while the process exits (status 0)."""
    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)
    if late is not None and first_process:
        print(f"{name}: {late} received after the run had finished: its results are complete", file=sys.stderr)
    return results


# Linux's prctl option that has the kernel send a signal to a process when its parent ends.
PR_SET_PDEATHSIG = 1


def follow_launcher() -> None:
    """Under a launcher (`accelerate launch`, torchrun), asks the kernel (Linux) for SIGTERM when the launcher ends:
    a stop signal sent to the launcher alone (a scheduler's SIGTERM, `timeout`) then reaches the training process,
    which saves its checkpoint and exits as when signalled itself, instead of training on, orphaned. A process
    started directly (python recipes/...) keeps running when its parent ends, as any program does."""
    launched = "TORCHELASTIC_RUN_ID" in os.environ or any(key.startswith("ACCELERATE_") for key in os.environ)
    if not launched or not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() == 1:  # the launcher ended before the request: its signal would never come
        os.kill(os.getpid(), signal.SIGTERM)


def start(name: str, args: RunSettings, presets: dict[str, dict], *, task: str) -> RunContext:
    """The run: `args` resolved against their preset (`presets[args.preset]`), the model's configuration
    (`model_building.run_config`: a new model is trained for the recipe's `task`; --learning-rate turned into the
    schedule's scale for its real width), the output folder (refused when it holds another run, unless --resume or
    --overwrite-output-dir: `run_folder`), and the `Accelerator` (precision as launched unless --mixed-precision is
    given), seeded. DeepSpeed is refused before Accelerate starts it."""
    settings = resolve(args, presets)
    config = run_config(settings, task)
    if settings.learning_rate is not None:
        settings.lr_scale = scale_for_peak(settings.learning_rate, config.d_model, settings.warmup_steps)
    refuse_deepspeed()
    refuse_metric_under_fsdp(settings.eval_metric_sentences)
    output_dir = Path(settings.output_dir or default_output_dir(name, settings))
    check_run_folder(output_dir, settings.resume, settings.overwrite_output_dir, settings.init_from)
    accelerator = create_accelerator(
        name, output_dir, settings.mixed_precision, settings.report_to, vars(settings), settings.torch_compile
    )
    folder = None
    with agreed_failure(accelerator, PreflightError, catch=(PreflightError,), describe=str):
        if accelerator.is_main_process:
            check_writable(output_dir)
            folder = claim_run_folder(
                output_dir, name, settings.resume, settings.overwrite_output_dir, " ".join(sys.argv)
            )
    host_malloc = apply_host_malloc(settings.host_malloc, accelerator.device.type)
    set_seed(settings.seed)
    context = RunContext(name, settings, accelerator, output_dir, config, host_malloc=host_malloc)
    context.folder = broadcast_value(accelerator, folder)
    return context


def default_output_dir(name: str, settings: RunSettings) -> str:
    """Where a run writes without --output-dir: runs/NAME for the recipe's default preset (the demo, whose folder the
    README names), runs/NAME-PRESET for any other, so that a one-minute smoke try never meets the demo's run."""
    default_preset = type(settings).__dataclass_fields__["preset"].default
    return f"runs/{name}" if settings.preset == default_preset else f"runs/{name}-{settings.preset}"


def check_before_training(
    run: RunContext, corpus, source: str, flag: str, suppliers: dict[str, str] | None = None
) -> None:
    """What can fail after hours, checked in seconds on every process: the splits the run reads (from `source`,
    given by `flag`; `suppliers` names the flag that gives each other split, e.g. {"test": "--test-file"}), the
    output folder, the Hub repo. Then keeps the first --max-train-samples pairs of `corpus["train"]`, when given."""
    settings = run.settings
    validate = settings.eval_every > 0 and not settings.eval_only
    needed = {"train": f"choose another {flag}", settings.eval_split: "choose another --eval-split"}
    if validate:
        needed["validation"] = "validate nothing with --eval-every 0"
    for split, supplier in (suppliers or {}).items():
        if split in needed and split != "train":
            needed[split] = f"give {supplier} or {needed[split]}"
    run_checks(
        run.accelerator,
        [
            lambda: check_splits(corpus, needed, source),
            lambda: check_writable(run.output_dir),
            *([lambda: check_hub(settings.push_to_hub)] if settings.push_to_hub else []),
        ],
    )
    if settings.max_train_samples is not None and not settings.eval_only:
        total, count = len(corpus["train"]), settings.max_train_samples
        corpus["train"] = first(corpus["train"], count)
        dropped = {f"after the first {count:,} (--max-train-samples)": total - len(corpus["train"])}
        record_filter(run, "train", f"--max-train-samples {count}", total, dropped)


def build_tokenizer(
    run: RunContext, train_split, languages: tuple[str, str], dataset: str, options: BpeOptions | None = None
) -> PreTrainedTokenizerFast:
    """`run.tokenizer`: the tokenizer of `--init-from` (recorded as such in OUTPUT_DIR/tokenizer), or the shared BPE
    trained for this run on `train_split`'s `languages` with the BPE `options` (see `prepare_shared_tokenizer`);
    either way a tokenizer folder from another run is refused. Where the recipe truncates sources
    (`RunSettings.TRUNCATION`), the limit is its `model_max_length`, saved with every checkpoint and the final model,
    where `hf-vanilla summarize` and the app read it (`batch_decoding.recorded_input_limit`)."""
    settings, accelerator = run.settings, run.accelerator
    if settings.init_from is None:
        run.tokenizer = prepare_shared_tokenizer(
            accelerator, run.output_dir, train_split, languages, settings.vocab_size, dataset, options
        )
        return record_input_limit(run)
    folder = run.output_dir / "tokenizer"
    expected = {"init_from": settings.init_from}

    def describe(error: BaseException) -> str:
        if isinstance(error, TokenizerMismatch):
            return str(error)
        return f"--init-from {settings.init_from}: cannot load its tokenizer ({error_line(error)})"

    with agreed_failure(accelerator, PreflightError, catch=(TokenizerMismatch, OSError), describe=describe):
        if accelerator.is_main_process:
            if (folder / "tokenizer.json").exists():
                check_provenance(folder, expected)
            else:
                write_tokenizer_folder(folder, AutoTokenizer.from_pretrained(settings.init_from), expected)
    run.tokenizer = AutoTokenizer.from_pretrained(folder)
    return record_input_limit(run)


def record_input_limit(run: RunContext) -> PreTrainedTokenizerFast:
    """`run.tokenizer`, its `model_max_length` the run's source-token limit where the recipe truncates (else as
    it is)."""
    if run.settings.token_limits[0] is not None:
        run.tokenizer.model_max_length = run.settings.token_limits[0]
    return run.tokenizer


def prepare_shared_tokenizer(
    accelerator: Accelerator,
    output_dir: Path,
    train_split,
    languages: tuple[str, str],
    vocab_size: int,
    dataset: str,
    options: BpeOptions | None = None,
) -> PreTrainedTokenizerFast:
    """The run's tokenizer, in `output_dir/tokenizer`: trained once by the main process on the training split's
    source and target text with the BPE `options`, with a record of what it was trained on (`dataset`, `languages`,
    `vocab_size`, the options, a fingerprint of the text); a later run (or `--resume`) reuses it only if that record
    matches, and otherwise stops with `TokenizerMismatch` on every process (see
    `hf_vanilla.tokenization.ensure_shared_tokenizer`), as it does when the folder cannot be written."""
    folder = Path(output_dir) / "tokenizer"

    def describe(error: BaseException) -> str:
        return str(error) if isinstance(error, TokenizerMismatch) else f"cannot write {folder}: {error_line(error)}"

    with agreed_failure(accelerator, TokenizerMismatch, catch=(TokenizerMismatch, OSError), describe=describe):
        if accelerator.is_main_process:
            ensure_shared_tokenizer(folder, train_split, languages, vocab_size, dataset, options)
    return load_tokenizer(folder)


def encoded_split(
    accelerator: Accelerator,
    pairs,
    tokenizer,
    languages: tuple[str, str],
    output_dir: Path,
    split: str,
    token_limits: tuple[int | None, int | None] = (None, None),
) -> tuple[EncodedPairs, dict]:
    """A split's token ids, encoded once by the main process into OUTPUT_DIR/cache (a file named by the fingerprints
    of the tokenizer and of the split's text, and the limits) and read from there by the other processes; sides
    longer than `token_limits` (source, target; </s> counted) are cut to them. Returns the pairs and the counts
    `{"sources_truncated", "targets_truncated", "total"}` (`data.encoding.encode_truncated_pairs`)."""
    key = None
    with agreed_failure(accelerator, StepError, f"cannot read the tokenizer in {output_dir}", catch=(OSError,)):
        if accelerator.is_main_process:
            record = json.loads((output_dir / "tokenizer" / PROVENANCE_FILE).read_text())
            same_text = split == "train" and "text_sha256" in record  # the tokenizer's own text, hashed already
            text = record["text_sha256"] if same_text else text_fingerprint(pairs, languages)
            vocabulary = hashlib.sha256((output_dir / "tokenizer" / "tokenizer.json").read_bytes()).hexdigest()
            key = hashlib.sha256(f"{vocabulary} {text} {languages} {token_limits}".encode()).hexdigest()[:16]
    key = broadcast_value(accelerator, key)
    cache_file = output_dir / "cache" / f"{split}-{key}.arrow"
    with accelerator.main_process_first():
        return encode_truncated_pairs(pairs, tokenizer, *languages, cache_file, *token_limits)


def encode_split(run: RunContext, pairs, languages: tuple[str, str], split: str) -> EncodedPairs:
    """`encoded_split` with the run's truncation (--max-source-tokens, --max-target-tokens where the recipe has them:
    `RunSettings.TRUNCATION`), whose counts are logged and kept in `run.truncated[split]` for results.json."""
    limits = run.settings.token_limits
    examples, counts = encoded_split(run.accelerator, pairs, run.tokenizer, languages, run.output_dir, split, limits)
    if run.settings.TRUNCATION is not None:
        run.truncated[split] = counts
        logger.info(
            f"Truncation ({split}): {counts['sources_truncated']:,} of {counts['total']:,} sources cut to "
            f"{limits[0]} tokens, {counts['targets_truncated']:,} targets cut to {limits[1]}",
            main_process_only=True,
        )
    if run.settings.COUNT_COPYABLE:
        run.copyable[split] = copyable = copyable_tokens(examples, run.tokenizer.all_special_ids)
        logger.info(
            f"Copyable ({split}): {copyable['summary_tokens_in_source']}% of the target tokens occur in their "
            f"source as the model reads it, the first target token in {copyable['first_token_in_source']}% "
            f"({copyable['tokens_per_summary']} tokens a target): the most a copy mechanism can copy",
            main_process_only=True,
        )
    return examples


def training_examples(run: RunContext, pairs, languages: tuple[str, str]) -> EncodedPairs:
    """The training pairs' token ids, truncated if the recipe asks (`encode_split`) and length-filtered (the count
    dropped is logged)."""
    settings = run.settings
    examples = encode_split(run, pairs, languages, "train")
    limits = settings.pair_token_limits
    try:
        examples, dropped = examples.length_filter(limits, settings.max_length_ratio)
    except ValueError as error:  # every pair filtered out: before the first update, one line
        raise PreflightError(f"{error}: raise --max-length or --max-length-ratio") from error
    side = " a side" if limits[0] == limits[1] else ""
    flags = "--max-length" if side else "--max-length, --max-source-length, --max-target-length"
    reasons = {
        f"with more than {length_limits_text(*limits)}{side} ({flags})": dropped["too_long"],
        f"with a length ratio above {settings.max_length_ratio} (--max-length-ratio)": dropped["length_ratio"],
    }
    bounds = [f"at most {length_limits_text(*limits)}{side}"] if any(limits) else []
    bounds += [f"ratio {settings.max_length_ratio}"] if settings.max_length_ratio else []
    what = f"Length filter ({', '.join(bounds) or 'none: no --max-length or --max-length-ratio'})"
    record_filter(run, "train", what, dropped["total"], reasons)
    return examples


def end_run_after_stop_signal(run: RunContext) -> bool:
    """Ends the run (its trackers) when a stop signal ended its training, its checkpoint saved, and says so: the run
    then stops without averaging or evaluating, so that a preempted job exits quickly, and `--resume` continues it.
    Returns whether it ended the run."""
    if run.training.stopped_by_signal is None:
        return False
    logger.warning(
        f"{run.training.stopped_by_signal} received: stopped after update {run.training.steps}, checkpoint saved in "
        f"{run.output_dir}; run the same command with --resume to continue",
        main_process_only=True,
    )
    run.accelerator.end_training()
    return True


def validation_for(
    run: RunContext, pairs, languages: tuple[str, str], metric: Callable[[torch.nn.Module], dict]
) -> Validation:
    """Validation on `pairs` (encoded once, like the training split), with `metric` (decoding a few of them) when
    --eval-metric-sentences asks for it."""
    examples = encode_split(run, pairs, languages, "validation")
    return Validation(
        examples,
        max_tokens=4 * run.settings.tokens_per_step,
        pad_token_id=run.tokenizer.pad_token_id,
        metric=metric if run.settings.eval_metric_sentences else None,
    )


def train_and_average(
    run: RunContext, corpus, languages: tuple[str, str], metric: Callable[[torch.nn.Module, object], dict]
) -> TrainingResult:
    """`run.model` trained on `corpus["train"]` (validated every --eval-every updates on `corpus["validation"]`;
    `metric(model, pairs)` scores a few decoded validation pairs), then replaced by the final model (--final-model:
    the average of the newest checkpoints, or the best by --best-checkpoint-metric), loaded; sets and returns
    `run.training` (and `run.averaged`).
    With --eval-only, the model stays as given; after a stop signal, the model as trained so far."""
    settings = run.settings
    if settings.eval_only:
        run.training = untrained_result(run.accelerator)
        return run.training
    examples = training_examples(run, corpus["train"], languages)
    validation = None
    if settings.eval_every > 0:
        held = first(corpus["validation"], settings.eval_metric_sentences)
        validation = validation_for(run, corpus["validation"], languages, lambda current: metric(current, held))
    run.training = train(run, examples, validation)
    if run.training.stopped_by_signal is not None:
        return run.training
    try:
        if settings.final_model == "best":
            final = best_final(run)
        else:
            final, run.averaged = average_final(run.accelerator, run.output_dir, settings.average_last, run.folder)
    except RunInterrupted as stop:  # training itself stops at its next update, saved; this is the final model
        advice = f"stopped after training, before the final model was written; {resume_advice(run)}"
        raise RunInterrupted(stop.signal_name, advice) from None
    run.model = VanillaTransformerForConditionalGeneration.from_pretrained(final)
    return run.training


def train_and_evaluate(
    run: RunContext,
    corpus,
    languages: tuple[str, str],
    validation_metric: Callable[[torch.nn.Module, object], dict],
    evaluate: Callable[[torch.nn.Module, object], Evaluation],
    extra: dict,
    finish: Callable[[RunContext, Evaluation, dict], dict],
) -> dict:
    """The second half of every recipe, once its data, tokenizer and model are there: `train_and_average`, then, on
    the main process, `evaluate(model, held_out)` (the recipe's decoding and metric on the first --eval-sentences
    pairs of --eval-split: an `evaluation.Evaluation`, its figures, predictions and samples) and
    `finish(run, evaluation, extra)` (`hf_vanilla.publishing.finish`: results, card, upload; `extra`, the
    recipe's own results fields). A failure there stops every process; a stop signal in training ends
    the run at once (`end_run_after_stop_signal`). Returns results.json's record (on the main process)."""
    held_out = first(corpus[run.settings.eval_split], run.settings.eval_sentences)
    record_evaluation(run, len(corpus[run.settings.eval_split]), len(held_out))
    if run.settings.TRUNCATION is not None or run.settings.COUNT_COPYABLE:  # counted before training, as the others'
        encode_split(run, held_out, languages, "evaluation")  # (the recipe's decoding cuts them at the same limit)
    training = train_and_average(run, corpus, languages, validation_metric)
    if end_run_after_stop_signal(run):
        return {"steps": training.steps, "stopped_by_signal": training.stopped_by_signal}
    results = {}
    try:
        with agreed_failure(run.accelerator, StepError, "could not finish the run", catch=(OSError, StepError)):
            if run.is_main_process:
                model = run.model.to(run.accelerator.device).eval()
                results = finish(run, evaluate(model, held_out), extra)
    except RunInterrupted as stop:
        advice = f"stopped during the final evaluation, no results written; {resume_advice(run)}"
        raise RunInterrupted(stop.signal_name, advice) from None
    run.accelerator.end_training()
    model_folder = run.settings.init_from if run.settings.eval_only else run.output_dir / "final"
    logger.info(f"Model: {model_folder}; results: {run.output_dir / 'results.json'}", main_process_only=True)
    return results


def resume_advice(run: RunContext) -> str:
    """How to finish an interrupted run's evaluation."""
    if run.settings.eval_only:
        return "run the same command with --overwrite-output-dir to score the model again"
    final = run.output_dir / "final"
    return (
        "run the same command with --resume to average (if due) and evaluate the trained model, or score "
        f"{final} with --eval-only --init-from {final} --output-dir {run.output_dir}-eval"
    )


def first(pairs, count: int | None):
    """The first `count` rows of a dataset (all of them for None)."""
    return pairs if count is None else pairs.select(range(min(count, len(pairs))))


def average_final(
    accelerator: Accelerator, output_dir: Path, average_last: int, folder: RunFolder | None = None
) -> tuple[Path, list[str]]:
    """The average of the newest `average_last` checkpoints (of the run `folder`, when given) in OUTPUT_DIR/final (the
    paper: 5 base, 20 big), written beside it and renamed into place when complete."""
    names: list[str] = []
    final = output_dir / "final"
    what = f"could not average the last checkpoints into {final}"
    with agreed_failure(accelerator, CheckpointError, what, catch=(CheckpointError, OSError, ValueError)):
        if accelerator.is_main_process:
            checkpoints = list_checkpoints(output_dir, folder.owns if folder is not None else None)[-average_last:]
            replace_folder(final, lambda temporary: average_checkpoints(checkpoints, temporary))
            names = [p.name for p in checkpoints]
    return final, broadcast_value(accelerator, names)


def best_final(run: RunContext) -> Path:
    """OUTPUT_DIR/best (the best validation of this run by --best-checkpoint-metric) copied whole into
    OUTPUT_DIR/final."""
    output_dir, accelerator = run.output_dir, run.accelerator
    final = output_dir / "final"
    what = f"could not copy the best model into {final}"
    with agreed_failure(accelerator, CheckpointError, what, catch=(OSError, CheckpointError)):
        if accelerator.is_main_process:
            if run.training.best_step is None:
                raise CheckpointError(f"no validation of this run saved a model in {output_dir / BEST_DIR}")
            replace_folder(final, lambda temporary: shutil.copytree(output_dir / BEST_DIR, temporary))
    accelerator.wait_for_everyone()
    return final


def replace_folder(folder: Path, write: Callable[[Path], object]) -> None:
    """`folder` replaced by what `write(temporary)` writes into a hidden folder beside it: whole or not at all."""
    temporary = folder.with_name(f".tmp-{folder.name}")
    shutil.rmtree(temporary, ignore_errors=True)
    write(temporary)
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(temporary, folder)


def untrained_result(accelerator: Accelerator) -> TrainingResult:
    """The training figures of an --eval-only run."""
    return TrainingResult(
        steps=0,
        epochs=0,
        train_seconds=0.0,
        train_tokens=0,
        train_tokens_per_second=0.0,
        final_loss=float("nan"),
        padding_fraction=0.0,
        mixed_precision=accelerator.mixed_precision,
        batch_tokens=0,
    )
