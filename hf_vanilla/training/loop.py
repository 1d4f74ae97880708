"""The one Accelerate training loop of every recipe: token-budget batches, update frequency, the paper's optimiser and
schedule, mixed precision as launched, validation, a truthful progress bar, checkpoints, exact resume, and a clean
stop on SIGTERM/SIGINT. `train` runs a `TrainingLoop`, whose methods are its named steps."""

import json
import math
import time
from contextlib import closing, nullcontext
from pathlib import Path

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.logging import get_logger
from tqdm.auto import tqdm

from ..data.batching import TokenBudgetBatchSampler
from ..data.encoding import EncodedPairs
from .arguments import RunSettings
from .checkpoints import (
    Trainable,
    keep_newest_checkpoints,
    latest_valid_checkpoint,
    load_checkpoint,
    save_checkpoint,
    save_model_folder,
)
from .collectives import StepError, agreed_failure, agreed_signal, any_process
from .context import RunContext, TrainingResult
from .interrupts import RunInterrupted, StopSignals
from .schedule import paper_optimizer, paper_scheduler
from .validation import Validation

logger = get_logger(__name__)

BEST_DIR = "best"
# With several processes, a stop signal is agreed on (an all-reduce) every this many updates.
SIGNAL_CHECK_EVERY = 10
# Under torch.compile, batch lengths are rounded up to a multiple of this (aligned shapes for tensor cores).
COMPILED_LENGTH_MULTIPLE = 8
# Why an update is the last (`TrainingLoop.should_stop`): the run's updates or minutes are spent, or a stop signal.
FINISHED, SIGNALLED = "finished", "signalled"


def batch_tokens(settings: RunSettings, num_processes: int, examples: EncodedPairs) -> int:
    """Padded source (and target) tokens per batch and process: --max-tokens, else the preset's tokens per update
    divided over processes and accumulated batches, at least the longest pair."""
    if settings.max_tokens is not None:
        return settings.max_tokens
    longest = int(max(examples.source_lengths.max(), examples.target_lengths.max()))
    return max(settings.tokens_per_step // (num_processes * settings.update_freq), longest)


class Progress:
    """Where training stands, saved in every checkpoint (`state_dict`) so that a resumed run continues with the next
    batch; and its tqdm bar (on the main process), over updates, or over minutes when the run is bounded by time
    only."""

    STATE = (
        "step",
        "epoch",
        "position",
        "train_seconds",
        "tokens",
        "best_step",
        "best_valid_loss",
        "best_value",
        "validations_since_best",
    )

    def __init__(self):
        self.step, self.epoch, self.position, self.train_seconds, self.tokens = 0, 0, 0, 0.0, 0
        # The best validation so far by --best-checkpoint-metric (its value, its update and that update's loss), and
        # the validations since, for --patience.
        self.best_step, self.best_valid_loss, self.best_value, self.validations_since_best = None, None, None, 0
        self.by_minutes, self.bar = False, None

    def state_dict(self) -> dict:
        return {key: getattr(self, key) for key in self.STATE}

    def load_state_dict(self, state: dict) -> None:
        for key in self.STATE:
            if key in state:
                setattr(self, key, state[key])

    def show(self, accelerator: Accelerator, settings: RunSettings) -> None:
        """Opens the bar at the current update (or minute)."""
        self.by_minutes = settings.max_steps is None
        self.bar = tqdm(
            total=settings.max_train_minutes if self.by_minutes else settings.max_steps,
            initial=round(self.train_seconds / 60, 2) if self.by_minutes else self.step,
            disable=not accelerator.is_main_process,
            desc="training",
            unit="min" if self.by_minutes else "update",
            dynamic_ncols=True,
        )

    def advance(self, seconds: float) -> None:
        """One more update, `seconds` into training."""
        if self.by_minutes:
            self.bar.n = min(round(seconds / 60, 2), self.bar.total)
            self.bar.refresh()
        else:
            self.bar.update(1)

    def show_figures(self, **figures) -> None:
        self.bar.set_postfix(**figures)

    def write(self, line: str) -> None:
        """A line above the bar."""
        self.bar.write(line)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def train(run: RunContext, examples: EncodedPairs, validation: Validation | None = None) -> TrainingResult:
    """Trains `run.model` on `examples` until `settings.max_steps` updates (or `max_train_minutes`), checkpointing into
    `run.output_dir` (with `run.tokenizer`, when set), resuming from there with `settings.resume`, validating every
    `eval_every` updates when `validation` is given."""
    loop = TrainingLoop(run, examples, validation)
    if run.settings.resume:
        loop.resume()
    return loop.run()


class TrainingLoop:
    """The steps of `train`, each a method: set-up, `resume`, then in `run` each update (`update`), the decision to
    stop (`should_stop`), `log`, `validate` and `checkpoint`."""

    def __init__(self, run: RunContext, examples: EncodedPairs, validation: Validation | None):
        accelerator, settings, model = run.accelerator, run.settings, run.model
        run.output_dir.mkdir(parents=True, exist_ok=True)
        largest = int(max(examples.source_ids.max(initial=0), examples.target_ids.max(initial=0)))
        vocabulary = model.config.vocab_size
        if largest >= vocabulary:  # checked once here: the model does not check in training (a host sync)
            raise ValueError(f"the training pairs hold token id {largest}, outside the model's {vocabulary}")
        self.max_tokens = batch_tokens(settings, accelerator.num_processes, examples)
        self.sampler = TokenBudgetBatchSampler(
            examples.source_lengths,
            examples.target_lengths,
            self.max_tokens,
            settings.seed,
            accelerator.num_processes,
            accelerator.process_index,
        )
        # Adam's fused kernel on a GPU (one launch for all parameters); the CPU keeps the default, no faster there.
        fused = accelerator.device.type == "cuda"
        optimizer = paper_optimizer(
            model.to(accelerator.device).parameters(), settings.betas, settings.adam_eps, fused=fused
        )
        # Not passed to prepare(): Accelerate would step it once per process, and the schedule counts updates.
        self.scheduler = paper_scheduler(
            optimizer,
            model.config.d_model,
            settings.warmup_steps,
            settings.lr_scale,
            settings.max_steps,
            settings.cooldown_steps,
        )
        self.pad_token_id = model.config.pad_token_id  # the tokenizer's (`new_model`, or --init-from's own)
        self.model, self.optimizer = accelerator.prepare(model, optimizer)  # compiles the model under a dynamo backend
        self.trainable = Trainable(self.model, self.optimizer, self.scheduler)
        self.backend = accelerator.state.dynamo_plugin.backend.value.lower()
        self.compiled = self.backend != "no"
        self.pad_to_multiple_of = COMPILED_LENGTH_MULTIPLE if self.compiled else 1
        self.graphs_before = _compiled_graphs() if self.compiled else 0
        self.context, self.accelerator, self.settings = run, accelerator, settings
        self.examples, self.validation = examples, validation
        self.progress, self.signals = Progress(), StopSignals()
        self.log_file = run.output_dir / "train_log.jsonl"
        self.last_loss = math.nan
        self.stopped_early = False

    def resume(self) -> None:
        """Continues from the newest complete checkpoint of the output folder, if any (dropping the log lines written
        after it), else starts from scratch."""
        accelerator, output_dir = self.accelerator, self.context.output_dir
        folder = self.context.folder
        checkpoint = latest_valid_checkpoint(
            output_dir,
            report=lambda line: logger.warning(line, main_process_only=True),
            owned=folder.owns if folder is not None else None,
        )
        if checkpoint is None:
            logger.info(f"No complete checkpoint in {output_dir}: starting from scratch", main_process_only=True)
            return
        state = load_checkpoint(accelerator, checkpoint, self.trainable)
        self.progress.load_state_dict(state)
        logger.info(f"Resumed from {checkpoint} at update {self.progress.step}", main_process_only=True)
        with agreed_failure(accelerator, StepError, f"could not rewrite {self.log_file}", catch=(OSError,)):
            if accelerator.is_main_process:
                _truncate_log(self.log_file, self.progress.step)

    def run(self) -> TrainingResult:
        """Updates until the last, each followed by its log line, validation and checkpoint when due."""
        settings, progress = self.settings, self.progress
        self.model.train()
        self.padding = self.sampler.padding_fraction(self.sampler.all_batches(progress.epoch))
        self.seconds_before = progress.train_seconds
        self.start = self.window_start = time.perf_counter()
        self.window_tokens = self.window_updates = 0
        self.window_loss = torch.zeros((), device=self.accelerator.device)  # read back only when logging: no sync
        self.epoch_batches = self.sampler.batches(progress.epoch)
        progress.show(self.accelerator, settings)
        with self.signals.installed(), closing(progress):  # the bar closed before any error's one line
            while settings.max_steps is None or progress.step < settings.max_steps:
                self.update()
                logging_now = progress.step % settings.log_every == 0 or self.out_of_updates()
                stop = self.should_stop(logging_now)
                finished = stop is not None
                if logging_now or finished:
                    self.log()
                paused = time.perf_counter()
                if self.validation is not None and settings.eval_every:
                    due = progress.step % settings.eval_every == 0
                    if stop == SIGNALLED:  # no validation begun: only one that was due is said to be skipped
                        if due:
                            logger.warning(
                                f"{self.signals.received}: the validation due at update {progress.step} is skipped",
                                main_process_only=True,
                            )
                    elif due or finished:
                        finished |= self.validate()
                if progress.step % settings.save_every == 0 or finished:
                    self.checkpoint()
                self.window_start += time.perf_counter() - paused  # validation and saving are not training speed
                if finished:
                    break
        progress.train_seconds = self.elapsed()
        self.model.eval()
        return self.result()

    def elapsed(self) -> float:
        """Seconds of training, those before a resume included."""
        return self.seconds_before + time.perf_counter() - self.start

    def out_of_updates(self) -> bool:
        return self.settings.max_steps is not None and self.progress.step >= self.settings.max_steps

    def update(self) -> None:
        """One update: the next --update-freq batches, forward and backward each (gradients synchronised on the
        last), then the optimizer's and the schedule's step."""
        accelerator, progress, examples = self.accelerator, self.progress, self.examples
        group = []
        while len(group) < self.settings.update_freq:
            if progress.position >= len(self.epoch_batches):
                progress.epoch, progress.position = progress.epoch + 1, 0
                self.epoch_batches = self.sampler.batches(progress.epoch)
            group.append(self.epoch_batches[progress.position])
            progress.position += 1
        pairs = np.concatenate(group)
        num_items = int(examples.target_lengths[pairs].sum())  # target tokens of the whole update
        self.window_tokens += int(examples.source_lengths[pairs].sum()) + num_items
        for index, indices in enumerate(group):
            batch = {
                k: v.to(accelerator.device, non_blocking=True)
                for k, v in examples.collate(indices, self.pad_token_id, self.pad_to_multiple_of).items()
            }
            sync = index == len(group) - 1
            with nullcontext() if sync else accelerator.no_sync(self.model):
                loss = self.model(**batch, num_items_in_batch=num_items).loss  # prepare() added the autocast
                accelerator.backward(loss)
            self.window_loss += loss.detach()
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        progress.step += 1
        self.window_updates += 1
        progress.advance(self.elapsed())

    def should_stop(self, logging_now: bool) -> str | None:
        """Why this update is the last, or None: FINISHED (--max-steps reached, --max-train-minutes spent) or
        SIGNALLED (a stop signal received by any process, named alike on every process: `agreed_signal`); the clock
        and the signals are read after every update, and agreed on (one all-reduce each) every SIGNAL_CHECK_EVERY
        updates with several processes, and when logging. Every process takes part in the same collectives."""
        accelerator, settings, signals = self.accelerator, self.settings, self.signals
        finished = self.out_of_updates()
        stop_check = accelerator.num_processes == 1 or self.progress.step % SIGNAL_CHECK_EVERY == 0
        if settings.max_train_minutes is not None and (stop_check or logging_now):
            finished |= any_process(accelerator, self.elapsed() > 60 * settings.max_train_minutes)
        if stop_check:
            signals.received = agreed_signal(accelerator, signals.received)
            if signals.received is not None:
                logger.warning(
                    f"{signals.received}: saving a checkpoint at update {self.progress.step} and stopping",
                    main_process_only=True,
                )
                return SIGNALLED
        return FINISHED if finished else None

    def log(self) -> None:
        """The mean loss, learning rate and speed since the last log line: train_log.jsonl, trackers, the bar."""
        accelerator, progress = self.accelerator, self.progress
        now = time.perf_counter()
        tokens = int(accelerator.reduce(torch.tensor(self.window_tokens, device=accelerator.device), "sum"))
        mean_loss = float(accelerator.reduce(self.window_loss / self.window_updates, reduction="mean"))
        self.last_loss = mean_loss
        metrics = {
            "step": progress.step,
            "epoch": progress.epoch,
            "loss": round(mean_loss, 4),
            "perplexity": round(math.exp(min(mean_loss, 50)), 2),
            "lr": self.scheduler.get_last_lr()[0],
            "tokens_per_second": round(tokens / (now - self.window_start), 1),
            "padding": round(self.padding, 4),
        }
        self.write_log(metrics)
        progress.show_figures(loss=metrics["loss"], lr=f"{metrics['lr']:.2e}", tok_s=metrics["tokens_per_second"])
        progress.tokens += tokens
        self.window_start, self.window_tokens, self.window_updates = now, 0, 0
        self.window_loss.zero_()

    def write_log(self, metrics: dict) -> None:
        """One line of train_log.jsonl (written by the main process; a failure stops every process), and the
        trackers."""
        self.accelerator.log(metrics, step=self.progress.step)
        with agreed_failure(self.accelerator, StepError, f"could not write {self.log_file}", catch=(OSError,)):
            if self.accelerator.is_main_process:
                with self.log_file.open("a") as handle:
                    handle.write(json.dumps(metrics) + "\n")

    def validate(self) -> bool:
        """The validation figures, logged; the model saved in OUTPUT_DIR/best when its --best-checkpoint-metric is
        the best yet (the lowest loss, the highest other figure). Returns whether training ends here: --patience, or a
        stop signal during validation (the same on every process: the figures and the signals are agreed on)."""
        progress, settings = self.progress, self.settings
        try:
            figures = self.validation(self.accelerator, self.model, self.signals)
        except RunInterrupted as stop:  # in the validation metric's decoding
            self.signals.received = stop.signal_name
            figures = None
        if figures is None:  # a stop signal: the update is complete, and its checkpoint is saved next
            self.signals.received = agreed_signal(self.accelerator, self.signals.received)
            self.model.train()
            logger.warning(
                f"{self.signals.received}: validation at update {progress.step} abandoned; saving a checkpoint and "
                "stopping",
                main_process_only=True,
            )
            return True
        self.write_log({"step": progress.step, **figures})
        if self.accelerator.is_main_process:
            progress.write(f"update {progress.step}: " + ", ".join(f"{k} {v}" for k, v in figures.items()))
        value = figures[metric_figure(settings)]
        lower_is_better = settings.best_checkpoint_metric == "loss"
        if progress.best_value is None or (
            value < progress.best_value if lower_is_better else value > progress.best_value
        ):
            progress.best_step, progress.best_valid_loss, progress.best_value = (
                progress.step,
                figures["valid_loss"],
                value,
            )
            progress.validations_since_best = 0
            save_model_folder(self.accelerator, self.model, self.context.output_dir / BEST_DIR, self.context.tokenizer)
            return False
        progress.validations_since_best += 1
        if settings.patience and progress.validations_since_best >= settings.patience:
            logger.info(
                f"--patience {settings.patience}: {settings.best_checkpoint_metric} has not improved on update "
                f"{progress.best_step}'s {progress.best_value} in {settings.patience} validations; stopping",
                main_process_only=True,
            )
            self.stopped_early = True
            return True
        return False

    def checkpoint(self) -> None:
        """checkpoint-STEP, with the progress so far (`training.checkpoints.save_checkpoint`)."""
        self.progress.train_seconds = self.elapsed()
        folder = self.context.folder  # the run writing the folder (`training.run_folder`)
        saved = save_checkpoint(
            self.accelerator,
            self.context.output_dir,
            self.progress.step,
            self.trainable,
            self.context.tokenizer,
            self.progress.state_dict(),
            folder.run_id if folder is not None else None,
        )
        keep_newest_checkpoints(self.accelerator, saved, self.settings.keep_last, folder.owns if folder else None)

    def result(self) -> TrainingResult:
        progress = self.progress
        return TrainingResult(
            steps=progress.step,
            epochs=progress.epoch,
            train_seconds=round(progress.train_seconds, 1),
            train_tokens=progress.tokens,
            train_tokens_per_second=round(progress.tokens / max(progress.train_seconds, 1e-9), 1),
            final_loss=round(self.last_loss, 4),
            padding_fraction=round(self.padding, 4),
            mixed_precision=self.accelerator.mixed_precision,
            batch_tokens=self.max_tokens,
            best_step=progress.best_step,
            best_valid_loss=progress.best_valid_loss,
            best_checkpoint_metric=self.settings.best_checkpoint_metric if progress.best_step is not None else None,
            best_value=progress.best_value,
            stopped_early=self.stopped_early,
            stopped_by_signal=self.signals.received,
            dynamo_backend=self.backend,
            compiled_graphs=_compiled_graphs() - self.graphs_before if self.compiled else 0,
        )


def metric_figure(settings: RunSettings) -> str:
    """The validation figure that --best-checkpoint-metric names: valid_loss, or the recipe's (`METRICS`)."""
    return (
        "valid_loss"
        if settings.best_checkpoint_metric == "loss"
        else settings.METRICS[settings.best_checkpoint_metric]
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
