"""The steps both recipes take, each a function, so that each recipe reads top to bottom like section 5 of the paper:
start, data, checks, tokenizer, model, training, averaging, evaluation, results, card, upload."""

import hashlib
import json
import logging
import os
import platform
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import torch
from accelerate import Accelerator
from accelerate.logging import get_logger
from accelerate.utils import set_seed
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from .. import VanillaTransformerForConditionalGeneration
from ..cards import render_model_card
from ..data.encoding import EncodedPairs, encode_pairs
from ..tokenization import (
    PROVENANCE_FILE,
    TokenizerMismatch,
    check_provenance,
    ensure_shared_tokenizer,
    load_tokenizer,
    text_fingerprint,
    write_tokenizer_folder,
)
from .accelerator import create_accelerator
from .arguments import RecipeArguments, RunSettings, resolve
from .checkpoints import CheckpointError, average_checkpoints, list_checkpoints
from .collectives import StepError, agreed_failure, broadcast_value, one_line
from .loop import TrainingResult, train
from .preflight import (
    PreflightError,
    check_hub,
    check_splits,
    check_writable,
    refuse_deepspeed,
    refuse_metric_under_fsdp,
    run_checks,
)
from .presets import TrainingPreset, new_model
from .validation import Validation

logger = get_logger(__name__)

# What a user can fix: stops the run with one line, no traceback.
USER_ERRORS = (PreflightError, TokenizerMismatch, CheckpointError, StepError)


def run_recipe(main: Callable, args, name: str):
    """Runs a recipe's `main(args)`; an error the user can fix ends every process with one line on stderr (printed
    by the first process only) and exit status 1."""
    first_process = os.environ.get("RANK", "0") == "0"
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
        return main(args)
    except USER_ERRORS as error:
        raise SystemExit(f"{name}: {error}" if first_process else 1) from None


def start(
    project: str, args: RecipeArguments, presets: dict[str, TrainingPreset]
) -> tuple[Accelerator, TrainingPreset, Path]:
    """The preset, the output folder and the `Accelerator` (precision as launched unless --mixed-precision is given),
    seeded. DeepSpeed is refused before Accelerate starts it."""
    if args.preset not in presets:
        raise PreflightError(f"--preset must be one of {', '.join(sorted(presets))}, got {args.preset!r}")
    if args.eval_only and args.resume:
        raise PreflightError("--eval-only trains nothing: it cannot --resume")
    if args.eval_only and args.init_from is None:  # scoring a fresh random model would overwrite a run's results
        raise PreflightError("--eval-only scores --init-from MODEL (e.g. --init-from RUN/final --output-dir RUN-eval)")
    refuse_deepspeed()
    refuse_metric_under_fsdp(args.eval_metric_sentences)
    output_dir = Path(args.output_dir or f"runs/{project}")
    accelerator = create_accelerator(
        project, output_dir, args.mixed_precision, args.report_to, vars(args), args.torch_compile
    )
    set_seed(args.seed)
    return accelerator, presets[args.preset], output_dir


def settings_for(args: RecipeArguments, preset: TrainingPreset) -> RunSettings:
    """The run's settings: the command line resolved against the preset (a PreflightError for values that cannot
    work)."""
    from .. import VanillaTransformerConfig

    d_model = VanillaTransformerConfig.from_preset(preset.model_preset).d_model
    try:
        return resolve(args, preset, d_model)
    except ValueError as error:
        raise PreflightError(str(error)) from error


def check_before_training(
    accelerator: Accelerator,
    args: RecipeArguments,
    settings: RunSettings,
    corpus,
    source: str,
    flag: str,
    output_dir: Path,
) -> None:
    """What can fail after hours, checked in seconds on every process: the splits the run reads (from `source`,
    given by `flag`), the output folder, the Hub repo."""
    validate = settings.eval_every > 0 and not args.eval_only
    needed = {"train": flag, args.eval_split: "--eval-split", **({"validation": "--eval-every 0"} if validate else {})}
    run_checks(
        accelerator,
        [
            lambda: check_splits(corpus, needed, source),
            lambda: check_writable(output_dir),
            *([lambda: check_hub(args.push_to_hub)] if args.push_to_hub else []),
        ],
    )


def run_tokenizer(
    accelerator: Accelerator,
    args: RecipeArguments,
    output_dir: Path,
    train_split,
    languages: tuple[str, str],
    settings: RunSettings,
    dataset: str,
    whitespace_only: bool = False,
):
    """The tokenizer of `--init-from` (recorded as such in OUTPUT_DIR/tokenizer), or the shared BPE trained for this
    run on its training split; either way a tokenizer folder from another run is refused."""
    if args.init_from is None:
        return prepare_shared_tokenizer(
            accelerator, output_dir, train_split, languages, settings.vocab_size, dataset, whitespace_only
        )
    if args.vocab_size is not None:
        raise PreflightError("--vocab-size cannot change the vocabulary of --init-from's model")
    folder = output_dir / "tokenizer"
    expected = {"init_from": args.init_from}

    def describe(error: BaseException) -> str:
        if isinstance(error, TokenizerMismatch):
            return str(error)
        return f"--init-from {args.init_from}: cannot load its tokenizer ({str(error).splitlines()[0]})"

    with agreed_failure(accelerator, PreflightError, catch=(TokenizerMismatch, OSError), describe=describe):
        if accelerator.is_main_process:
            if (folder / "tokenizer.json").exists():
                check_provenance(folder, expected)
            else:
                write_tokenizer_folder(folder, AutoTokenizer.from_pretrained(args.init_from), expected)
    return AutoTokenizer.from_pretrained(folder)


def prepare_shared_tokenizer(
    accelerator: Accelerator,
    output_dir: Path,
    train_split,
    languages: tuple[str, str],
    vocab_size: int,
    dataset: str,
    whitespace_only: bool = False,
) -> PreTrainedTokenizerFast:
    """The run's tokenizer, in `output_dir/tokenizer`: trained once by the main process on the training split's
    source and target text, with a record of what it was trained on (`dataset`, `languages`, `vocab_size`, a
    fingerprint of the text); a later run (or `--resume`) reuses it only if that record matches, and otherwise stops
    with `TokenizerMismatch` on every process (see `hf_vanilla.tokenization.ensure_shared_tokenizer`), as it does
    when the folder cannot be written."""
    folder = Path(output_dir) / "tokenizer"

    def describe(error: BaseException) -> str:
        return str(error) if isinstance(error, TokenizerMismatch) else f"cannot write {folder}: {one_line(error)}"

    with agreed_failure(accelerator, TokenizerMismatch, catch=(TokenizerMismatch, OSError), describe=describe):
        if accelerator.is_main_process:
            ensure_shared_tokenizer(folder, train_split, languages, vocab_size, dataset, whitespace_only)
    return load_tokenizer(folder)


def run_model(
    args: RecipeArguments, settings: RunSettings, tokenizer, **overrides
) -> VanillaTransformerForConditionalGeneration:
    """`--init-from`'s model, or a new one of the preset's size; the command line's dropout, label smoothing and
    decoding settings applied to either."""
    overrides = {**overrides, **settings.model_overrides}
    if args.init_from is not None:
        try:
            model = VanillaTransformerForConditionalGeneration.from_pretrained(args.init_from, **overrides)
        except OSError as error:
            raise PreflightError(f"--init-from {args.init_from}: {str(error).splitlines()[0]}") from error
        if model.config.vocab_size != len(tokenizer):
            raise PreflightError(f"--init-from {args.init_from}: its tokenizer and model disagree on the vocabulary")
    else:
        model = new_model(settings.model_preset, tokenizer, **overrides)
    model.generation_config.update(**settings.decoding)
    if model.generation_config.num_beams == 1:  # greedy: the beam-search settings would make the config invalid
        model.generation_config.update(early_stopping=False, length_penalty=1.0)
    return model


def encoded_split(
    accelerator: Accelerator, pairs, tokenizer, languages: tuple[str, str], output_dir: Path, split: str
) -> EncodedPairs:
    """A split's token ids, encoded once by the main process into OUTPUT_DIR/cache (a file named by the fingerprints
    of the tokenizer and of the split's text) and read from there by the other processes."""
    key = None
    with agreed_failure(accelerator, StepError, f"cannot read the tokenizer in {output_dir}", catch=(OSError,)):
        if accelerator.is_main_process:
            record = json.loads((output_dir / "tokenizer" / PROVENANCE_FILE).read_text())
            same_text = split == "train" and "text_sha256" in record  # the tokenizer's own text, hashed already
            text = record["text_sha256"] if same_text else text_fingerprint(pairs, languages)
            vocabulary = hashlib.sha256((output_dir / "tokenizer" / "tokenizer.json").read_bytes()).hexdigest()
            key = hashlib.sha256(f"{vocabulary} {text} {languages}".encode()).hexdigest()[:16]
    key = broadcast_value(accelerator, key)
    with accelerator.main_process_first():
        return encode_pairs(pairs, tokenizer, *languages, cache_file=output_dir / "cache" / f"{split}-{key}.arrow")


def training_examples(
    accelerator: Accelerator, pairs, tokenizer, languages: tuple[str, str], settings: RunSettings, output_dir: Path
) -> EncodedPairs:
    """The training pairs' token ids, length-filtered (the count dropped is logged)."""
    examples = encoded_split(accelerator, pairs, tokenizer, languages, output_dir, "train")
    try:
        examples, dropped = examples.length_filter(settings.max_length, settings.max_length_ratio)
    except ValueError as error:  # every pair filtered out: before the first update, one line
        raise PreflightError(f"{error}: raise --max-length or --max-length-ratio") from error
    logger.info(
        f"Length filter (at most {settings.max_length} tokens a side, ratio {settings.max_length_ratio}): kept "
        f"{dropped['kept']:,} of {dropped['total']:,} training pairs ({dropped['too_long']:,} too long, "
        f"{dropped['length_ratio']:,} beyond the ratio)",
        main_process_only=True,
    )
    return examples


def interrupted(accelerator: Accelerator, training: TrainingResult, output_dir: Path) -> bool:
    """Whether a stop signal ended training (its checkpoint saved): the run then stops without averaging or
    evaluating, so that a preempted job exits quickly, and `--resume` continues it."""
    if training.stopped_by_signal is None:
        return False
    logger.warning(
        f"{training.stopped_by_signal} received: stopped after update {training.steps}, checkpoint saved in "
        f"{output_dir}; run the same command with --resume to continue",
        main_process_only=True,
    )
    accelerator.end_training()
    return True


def validation_for(
    accelerator: Accelerator,
    pairs,
    tokenizer,
    languages: tuple[str, str],
    output_dir: Path,
    settings: RunSettings,
    tokens_per_step: int,
    metric: Callable[[torch.nn.Module], dict],
) -> Validation:
    """Validation on `pairs` (encoded once, like the training split), with `metric` (decoding a few of them) when
    --eval-metric-sentences asks for it."""
    examples = encoded_split(accelerator, pairs, tokenizer, languages, output_dir, "validation")
    return Validation(
        examples,
        max_tokens=4 * tokens_per_step,
        pad_token_id=tokenizer.pad_token_id,
        metric=metric if settings.eval_metric_sentences else None,
    )


def train_and_average(
    accelerator: Accelerator,
    args: RecipeArguments,
    model,
    tokenizer,
    corpus,
    languages: tuple[str, str],
    settings: RunSettings,
    tokens_per_step: int,
    output_dir: Path,
    metric: Callable[[torch.nn.Module, object], dict],
) -> tuple[torch.nn.Module, TrainingResult, list[str]]:
    """Training (validated every --eval-every updates; `metric(model, pairs)` scores a few decoded validation pairs),
    then the average of the newest checkpoints, loaded: the model to evaluate, the training figures, the averaged
    checkpoints.
    With --eval-only, the model as given; after a stop signal (`interrupted`), the model as trained so far."""
    if args.eval_only:
        return model, untrained_result(accelerator), []
    examples = training_examples(accelerator, corpus["train"], tokenizer, languages, settings, output_dir)
    validation = None
    if settings.eval_every > 0:
        held = first(corpus["validation"], settings.eval_metric_sentences)
        validation = validation_for(
            accelerator,
            corpus["validation"],
            tokenizer,
            languages,
            output_dir,
            settings,
            tokens_per_step,
            lambda current: metric(current, held),
        )
    training = train(accelerator, model, tokenizer, examples, settings, output_dir, args.resume, validation)
    if interrupted(accelerator, training, output_dir):
        return model, training, []
    final, averaged = average_final(accelerator, output_dir, settings.average_last)
    return VanillaTransformerForConditionalGeneration.from_pretrained(final), training, averaged


def first(pairs, count: int | None):
    """The first `count` rows of a dataset (all of them for None)."""
    return pairs if count is None else pairs.select(range(min(count, len(pairs))))


def finish(
    accelerator: Accelerator,
    args: RecipeArguments,
    settings: RunSettings,
    training: TrainingResult,
    model,
    averaged: list[str],
    evaluation: dict,
    samples: list[dict],
    extra: dict,
    output_dir: Path,
) -> dict:
    """On the main process, after evaluation: results.json, samples, the card, the trackers, the upload."""
    evaluation = {**evaluation, "eval_split": args.eval_split}
    results = results_record(accelerator, args, settings, training, model, averaged, evaluation, extra)
    write_outputs(output_dir, results, samples, model, args.push_to_hub)
    figures = {f"test_{k}": v for k, v in evaluation.items() if isinstance(v, (int, float))}
    accelerator.log(figures, step=training.steps)
    if args.push_to_hub:
        publish(output_dir, args.push_to_hub)
    return results


def average_final(accelerator: Accelerator, output_dir: Path, average_last: int) -> tuple[Path, list[str]]:
    """The average of the newest `average_last` checkpoints in OUTPUT_DIR/final (the paper: 5 base, 20 big)."""
    names: list[str] = []
    what = f"could not average the last checkpoints into {output_dir / 'final'}"
    with agreed_failure(accelerator, CheckpointError, what, catch=(CheckpointError, OSError, ValueError)):
        if accelerator.is_main_process:
            checkpoints = list_checkpoints(output_dir)[-average_last:]
            average_checkpoints(checkpoints, output_dir / "final")
            names = [p.name for p in checkpoints]
    return output_dir / "final", broadcast_value(accelerator, names)


def hardware_description(accelerator: Accelerator) -> str:
    """What ran the model, for results.json and the card: the GPU's name, or the CPU's cores."""
    if accelerator.device.type == "cuda":
        return f"{accelerator.num_processes} x {torch.cuda.get_device_name(accelerator.device)}"
    return f"CPU ({os.cpu_count()} cores, {cpu_model() or platform.machine()})"


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The processor's model name (Linux's /proc/cpuinfo), or None: the figures of a CPU run hold for that model."""
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return " ".join(line.partition(":")[2].split()) or None
    except OSError:
        pass
    return None


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


def results_record(
    accelerator: Accelerator,
    args: RecipeArguments,
    settings: RunSettings,
    training: TrainingResult,
    model,
    averaged: list[str],
    evaluation: dict,
    extra: dict,
) -> dict:
    """results.json: what was evaluated and how it was trained, with the settings really in force."""
    return {
        **extra,
        **evaluation,
        **{k: v for k, v in vars(training).items()},
        "averaged_checkpoints": averaged,
        "preset": args.preset,
        "training_preset": settings.as_dict(),
        "num_processes": accelerator.num_processes,
        "distributed_type": accelerator.distributed_type.value,
        "mixed_precision": accelerator.mixed_precision,
        "device": str(accelerator.device),
        "hardware": hardware_description(accelerator),
        "parameters": sum(p.numel() for p in model.parameters()),
        "seed": args.seed,
        "init_from": args.init_from,
        "eval_only": args.eval_only,
        "command": " ".join(sys.argv),
    }


def write_outputs(output_dir: Path, results: dict, samples: list[dict], model, repo_id: str | None) -> None:
    """results.json and samples.jsonl in OUTPUT_DIR (and results.json beside the final model), and the model card
    rendered from them as OUTPUT_DIR/README.md."""
    text = json.dumps(results, indent=2, ensure_ascii=False)
    (output_dir / "results.json").write_text(text)
    if (output_dir / "final" / "config.json").is_file():
        (output_dir / "final" / "results.json").write_text(text)
    with (output_dir / "samples.jsonl").open("w", encoding="utf-8") as handle:
        for sample in samples:
            handle.write(json.dumps(sample, ensure_ascii=False) + "\n")
    card = render_model_card(results, model.config, model.generation_config, repo_id or output_dir.name)
    card.save(output_dir / "README.md")
    print(json.dumps({k: v for k, v in results.items() if k != "training_preset"}, indent=2, ensure_ascii=False))
    for sample in samples[:5]:
        print(f"\nSRC: {sample['source']}\nREF: {sample['reference']}\nOUT: {sample['hypothesis']}")


def publish(output_dir: Path, repo_id: str) -> str:
    """Builds OUTPUT_DIR/hub from the run and uploads it to `repo_id`."""
    from ..hub import build_hub_folder, push_model_folder

    url = push_model_folder(build_hub_folder(output_dir, output_dir / "hub", repo_id), repo_id)
    print(f"published {repo_id}: {url}")
    return url
