"""The one Accelerate training loop of both recipes: token-budget batches, update frequency, the paper's optimiser and
schedule, mixed precision as launched, validation, a truthful progress bar, checkpoints, exact resume, and a clean
stop on SIGTERM/SIGINT."""

import json
import math
import signal
import time
from contextlib import closing, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.logging import get_logger
from tqdm.auto import tqdm

from ..data.batching import TokenBudgetBatchSampler
from ..data.encoding import EncodedPairs
from .arguments import RunSettings
from .checkpoints import latest_valid_checkpoint, load_checkpoint, save_checkpoint, save_model_folder
from .collectives import StepError, agreed_failure, any_process
from .schedule import paper_optimizer, paper_scheduler
from .validation import Validation

logger = get_logger(__name__)

BEST_DIR = "best"
# With several processes, a stop signal is agreed on (an all-reduce) every this many updates.
SIGNAL_CHECK_EVERY = 10
# Under torch.compile, batch lengths are rounded up to a multiple of this (aligned shapes for tensor cores).
COMPILED_LENGTH_MULTIPLE = 8


@dataclass(frozen=True)
class TrainingResult:
    """What a training run did, for results.json and the card."""

    steps: int
    epochs: int
    train_seconds: float
    train_tokens: int
    train_tokens_per_second: float
    final_loss: float
    padding_fraction: float
    mixed_precision: str
    batch_tokens: int
    best_step: int | None = None
    best_valid_loss: float | None = None
    stopped_by_signal: str | None = None
    dynamo_backend: str = "no"  # torch.compile's backend (`accelerate launch --dynamo_backend` or --torch-compile)
    compiled_graphs: int = 0  # graphs torch.compile built in training: 1 plus its recompilations


def batch_tokens(settings: RunSettings, num_processes: int, examples: EncodedPairs) -> int:
    """Padded source (and target) tokens per batch and process: --max-tokens, else the preset's tokens per update
    divided over processes and accumulated batches, at least the longest pair."""
    if settings.max_tokens is not None:
        return settings.max_tokens
    longest = int(max(examples.source_lengths.max(), examples.target_lengths.max()))
    return max(settings.tokens_per_step // (num_processes * settings.update_freq), longest)


class TrainingProgress:
    """Where training stands; saved in every checkpoint so that a resumed run continues with the next batch."""

    def __init__(self):
        self.step, self.epoch, self.position, self.train_seconds, self.tokens = 0, 0, 0, 0.0, 0
        self.best_step, self.best_valid_loss = None, None

    def state_dict(self) -> dict:
        return dict(vars(self))

    def load_state_dict(self, state: dict) -> None:
        vars(self).update({key: state[key] for key in vars(self) if key in state})


class StopSignals:
    """Records SIGTERM / SIGINT (what schedulers and Ctrl-C send) instead of dying mid-update."""

    def __init__(self):
        self.received: str | None = None

    @contextmanager
    def installed(self):
        def handler(number, frame):
            self.received = signal.Signals(number).name
            signal.signal(number, previous[number])  # a second signal acts at once

        previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
        for number in previous:
            signal.signal(number, handler)
        try:
            yield self
        finally:
            for number, old in previous.items():
                signal.signal(number, old)


class Progress:
    """A tqdm bar over updates, or over minutes when the run is bounded by time only."""

    def __init__(self, accelerator: Accelerator, settings: RunSettings, step: int, seconds: float):
        self.by_minutes = settings.max_train_minutes is not None and settings.max_steps >= 10**9
        total = settings.max_train_minutes if self.by_minutes else settings.max_steps
        initial = round(seconds / 60, 2) if self.by_minutes else step
        self.bar = tqdm(
            total=total,
            initial=initial,
            disable=not accelerator.is_main_process,
            desc="training",
            unit="min" if self.by_minutes else "update",
            dynamic_ncols=True,
        )

    def update(self, seconds: float) -> None:
        if self.by_minutes:
            self.bar.n = min(round(seconds / 60, 2), self.bar.total)
            self.bar.refresh()
        else:
            self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


def train(
    accelerator: Accelerator,
    model,
    tokenizer,
    examples: EncodedPairs,
    settings: RunSettings,
    output_dir: Path,
    resume: bool = False,
    validation: Validation | None = None,
) -> TrainingResult:
    """Trains `model` on `examples` until `settings.max_steps` updates (or `max_train_minutes`), checkpointing into
    `output_dir`, validating every `eval_every` updates when `validation` is given."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    largest = int(max(examples.source_ids.max(initial=0), examples.target_ids.max(initial=0)))
    if largest >= model.config.vocab_size:  # checked once here: the model does not check in training (a host sync)
        raise ValueError(f"the training pairs hold token id {largest}, outside the model's {model.config.vocab_size}")
    max_tokens = batch_tokens(settings, accelerator.num_processes, examples)
    sampler = TokenBudgetBatchSampler(
        examples.source_lengths,
        examples.target_lengths,
        max_tokens,
        settings.seed,
        accelerator.num_processes,
        accelerator.process_index,
    )
    # Adam's fused kernel on a GPU (one launch for all parameters); the CPU keeps the default, no faster there.
    fused = accelerator.device.type == "cuda"
    optimizer = paper_optimizer(model.to(accelerator.device).parameters(), fused=fused)
    # Not passed to prepare(): Accelerate would step it once per process, and the schedule counts updates.
    scheduler = paper_scheduler(optimizer, model.config.d_model, settings.warmup_steps, settings.lr_scale)
    model, optimizer = accelerator.prepare(model, optimizer)  # compiles the model when a dynamo backend is set
    backend = accelerator.state.dynamo_plugin.backend.value.lower()
    compiled = backend != "no"
    pad_to_multiple_of = COMPILED_LENGTH_MULTIPLE if compiled else 1
    graphs_before = _compiled_graphs() if compiled else 0
    progress = TrainingProgress()
    log_file = output_dir / "train_log.jsonl"

    if resume:
        checkpoint = latest_valid_checkpoint(
            output_dir, report=lambda line: logger.warning(line, main_process_only=True)
        )
        if checkpoint is not None:
            progress.load_state_dict(load_checkpoint(accelerator, checkpoint, model, optimizer, scheduler))
            logger.info(f"Resumed from {checkpoint} at update {progress.step}", main_process_only=True)
            with agreed_failure(accelerator, StepError, f"could not rewrite {log_file}", catch=(OSError,)):
                if accelerator.is_main_process:
                    _truncate_log(log_file, progress.step)
        else:
            logger.info(f"No complete checkpoint in {output_dir}: starting from scratch", main_process_only=True)

    model.train()
    padding = sampler.padding_fraction(sampler.all_batches(progress.epoch))
    seconds_before = progress.train_seconds
    start = window_start = time.perf_counter()
    window_tokens = window_updates = 0
    window_loss = torch.zeros((), device=accelerator.device)  # read back only when logging: no sync per update
    last_loss = math.nan
    epoch_batches = sampler.batches(progress.epoch)
    bar = Progress(accelerator, settings, progress.step, seconds_before)
    signals = StopSignals()

    def elapsed() -> float:
        return seconds_before + time.perf_counter() - start

    def write_log(metrics: dict) -> None:
        accelerator.log(metrics, step=progress.step)
        with agreed_failure(accelerator, StepError, f"could not write {log_file}", catch=(OSError,)):
            if accelerator.is_main_process:
                with log_file.open("a") as handle:
                    handle.write(json.dumps(metrics) + "\n")

    with signals.installed(), closing(bar):  # the bar closed before any error's one line
        while progress.step < settings.max_steps:
            group = []
            while len(group) < settings.update_freq:
                if progress.position >= len(epoch_batches):
                    progress.epoch, progress.position = progress.epoch + 1, 0
                    epoch_batches = sampler.batches(progress.epoch)
                group.append(epoch_batches[progress.position])
                progress.position += 1
            pairs = np.concatenate(group)
            num_items = int(examples.target_lengths[pairs].sum())  # target tokens of the whole update
            window_tokens += int(examples.source_lengths[pairs].sum()) + num_items
            for index, indices in enumerate(group):
                batch = {
                    k: v.to(accelerator.device, non_blocking=True)
                    for k, v in examples.collate(indices, tokenizer.pad_token_id, pad_to_multiple_of).items()
                }
                sync = index == len(group) - 1
                with nullcontext() if sync else accelerator.no_sync(model):
                    loss = model(**batch, num_items_in_batch=num_items).loss  # prepare() added the autocast
                    accelerator.backward(loss)
                window_loss += loss.detach()
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            progress.step += 1
            window_updates += 1
            bar.update(elapsed())

            finished = progress.step >= settings.max_steps
            logging_now = progress.step % settings.log_every == 0 or finished
            if settings.max_train_minutes is not None and logging_now:
                finished |= any_process(accelerator, elapsed() > 60 * settings.max_train_minutes)
            stop_check = accelerator.num_processes == 1 or progress.step % SIGNAL_CHECK_EVERY == 0
            if stop_check and any_process(accelerator, signals.received is not None):
                finished = True
                signals.received = signals.received or "SIGTERM"
                logger.warning(
                    f"{signals.received}: saving a checkpoint at update {progress.step} and stopping",
                    main_process_only=True,
                )
            if logging_now or finished:
                now = time.perf_counter()
                tokens = int(accelerator.reduce(torch.tensor(window_tokens, device=accelerator.device), "sum"))
                mean_loss = float(accelerator.reduce(window_loss / window_updates, reduction="mean"))
                last_loss = mean_loss
                metrics = {
                    "step": progress.step,
                    "epoch": progress.epoch,
                    "loss": round(mean_loss, 4),
                    "perplexity": round(math.exp(min(mean_loss, 50)), 2),
                    "lr": scheduler.get_last_lr()[0],
                    "tokens_per_second": round(tokens / (now - window_start), 1),
                    "padding": round(padding, 4),
                }
                write_log(metrics)
                bar.bar.set_postfix(
                    loss=metrics["loss"], lr=f"{metrics['lr']:.2e}", tok_s=metrics["tokens_per_second"]
                )
                progress.tokens += tokens
                window_start, window_tokens, window_updates = now, 0, 0
                window_loss.zero_()
            paused = time.perf_counter()
            if (
                validation is not None
                and settings.eval_every
                and (progress.step % settings.eval_every == 0 or finished)
            ):
                figures = validation(accelerator, model)
                write_log({"step": progress.step, **figures})
                if accelerator.is_main_process:
                    bar.bar.write(f"update {progress.step}: " + ", ".join(f"{k} {v}" for k, v in figures.items()))
                if progress.best_valid_loss is None or figures["valid_loss"] < progress.best_valid_loss:
                    progress.best_step, progress.best_valid_loss = progress.step, figures["valid_loss"]
                    save_model_folder(accelerator, model, output_dir / BEST_DIR, tokenizer)
            if progress.step % settings.save_every == 0 or finished:
                progress.train_seconds = elapsed()
                save_checkpoint(
                    accelerator,
                    output_dir,
                    progress.step,
                    model,
                    optimizer,
                    scheduler,
                    tokenizer,
                    progress.state_dict(),
                    settings.keep_last,
                )
            window_start += time.perf_counter() - paused  # validation and saving are not training speed
            if finished:
                break
    progress.train_seconds = elapsed()
    model.eval()
    return TrainingResult(
        steps=progress.step,
        epochs=progress.epoch,
        train_seconds=round(progress.train_seconds, 1),
        train_tokens=progress.tokens,
        train_tokens_per_second=round(progress.tokens / max(progress.train_seconds, 1e-9), 1),
        final_loss=round(last_loss, 4),
        padding_fraction=round(padding, 4),
        mixed_precision=accelerator.mixed_precision,
        batch_tokens=max_tokens,
        best_step=progress.best_step,
        best_valid_loss=progress.best_valid_loss,
        stopped_by_signal=signals.received,
        dynamo_backend=backend,
        compiled_graphs=_compiled_graphs() - graphs_before if compiled else 0,
    )


def _compiled_graphs() -> int:
    """How many graphs torch.compile has built in this process (each recompilation one more)."""
    from torch._dynamo.utils import counters

    return counters["stats"]["unique_graphs"]


def _truncate_log(log_file: Path, step: int) -> None:
    """Drops the log lines of updates after `step` (written by a run killed after its last checkpoint): the resumed
    run logs them again."""
    if log_file.is_file():
        lines = [line for line in log_file.read_text().splitlines() if line.strip()]
        kept = [line for line in lines if _logged_step(line) <= step]
        log_file.write_text("".join(line + "\n" for line in kept))


def _logged_step(line: str) -> int:
    try:
        return int(json.loads(line).get("step", 0))
    except ValueError:  # a line cut short by a kill
        return 1 << 62
