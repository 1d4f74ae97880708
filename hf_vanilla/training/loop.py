"""The one Accelerate training loop of both recipes: token-budget batches, update frequency, the paper's optimiser and
schedule, mixed precision, progress and logs, periodic atomic checkpoints and exact resume."""

import json
import math
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.logging import get_logger
from tqdm.auto import tqdm

from ..data.batching import TokenBudgetBatchSampler
from ..data.encoding import EncodedPairs
from .checkpoints import list_checkpoints, save_checkpoint
from .schedule import paper_optimizer, paper_scheduler

logger = get_logger(__name__)


@dataclass
class LoopSettings:
    max_steps: int
    max_tokens: int
    update_freq: int = 1
    warmup_steps: int = 4000
    lr_scale: float = 1.0
    save_every: int = 1000
    keep_last: int = 5
    log_every: int = 100
    max_train_minutes: float | None = None
    seed: int = 0


def settings_for_run(preset, args, num_processes: int, examples: EncodedPairs) -> LoopSettings:
    """A recipe's loop settings: its command-line values where given, else its preset's. Without --max-tokens, a
    batch holds the preset's tokens per step divided over processes and accumulated batches (at least the longest
    sentence); the preset's time budget applies only when --max-steps is not given."""
    longest = int(max(examples.source_lengths.max(), examples.target_lengths.max()))
    return LoopSettings(
        max_steps=args.max_steps or preset.max_steps,
        max_tokens=args.max_tokens or max(preset.tokens_per_step // (num_processes * args.update_freq), longest),
        update_freq=args.update_freq,
        warmup_steps=preset.warmup_steps,
        lr_scale=preset.lr_scale,
        save_every=args.save_every or preset.save_every,
        keep_last=args.keep_last or max(args.average_last or preset.average_last, 1),
        log_every=args.log_every,
        max_train_minutes=args.max_train_minutes if args.max_train_minutes is not None else (
            preset.max_train_minutes if args.max_steps is None else None
        ),
        seed=args.seed,
    )


class TrainingProgress:
    """Where training stands; saved in every checkpoint so that a resumed run continues with the next batch."""

    def __init__(self):
        self.step, self.epoch, self.position, self.train_seconds, self.tokens = 0, 0, 0, 0.0, 0

    def state_dict(self) -> dict:
        return dict(vars(self))

    def load_state_dict(self, state: dict) -> None:
        vars(self).update(state)


def train(
    accelerator: Accelerator,
    model,
    tokenizer,
    examples: EncodedPairs,
    settings: LoopSettings,
    output_dir: Path,
    resume: bool = False,
) -> dict:
    """Trains `model` on `examples` (source and target token ids) until `max_steps` updates (or
    `max_train_minutes`), checkpointing into `output_dir`. Returns the run's figures."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    sampler = TokenBudgetBatchSampler(
        examples.source_lengths.tolist(), examples.target_lengths.tolist(), settings.max_tokens, settings.seed,
        accelerator.num_processes, accelerator.process_index,
    )
    optimizer = paper_optimizer(model.parameters())
    # Not passed to prepare(): Accelerate would step it once per process, and the schedule counts updates.
    scheduler = paper_scheduler(optimizer, model.config.d_model, settings.warmup_steps, settings.lr_scale)
    model, optimizer = accelerator.prepare(model, optimizer)
    progress = TrainingProgress()
    accelerator.register_for_checkpointing(scheduler, progress)

    checkpoints = list_checkpoints(output_dir)
    if resume and checkpoints:
        accelerator.load_state(str(checkpoints[-1]))
        logger.info(f"Resumed from {checkpoints[-1]} at step {progress.step}", main_process_only=True)
    elif resume:
        logger.info(f"No complete checkpoint in {output_dir}: starting from scratch", main_process_only=True)

    model.train()
    padding = sampler.padding_fraction(sampler.all_batches(progress.epoch))
    log_file = output_dir / "train_log.jsonl"
    bar = tqdm(total=settings.max_steps, initial=progress.step, disable=not accelerator.is_main_process, desc="training")
    start, window_start, window_tokens, window_loss, window_updates = time.perf_counter(), time.perf_counter(), 0, 0.0, 0
    seconds_before = progress.train_seconds
    epoch_batches = sampler.batches(progress.epoch)
    last_loss = math.nan
    while progress.step < settings.max_steps:
        group = []
        while len(group) < settings.update_freq:
            if progress.position >= len(epoch_batches):
                progress.epoch, progress.position = progress.epoch + 1, 0
                epoch_batches = sampler.batches(progress.epoch)
            group.append(epoch_batches[progress.position])
            progress.position += 1
        batches = [examples.collate(b, tokenizer.pad_token_id) for b in group]
        pairs = np.concatenate(group)
        num_items = int(examples.target_lengths[pairs].sum())  # target tokens of the whole update
        window_tokens += int(examples.source_lengths[pairs].sum()) + num_items
        step_loss = 0.0
        for index, batch in enumerate(batches):
            batch = {k: v.to(accelerator.device) for k, v in batch.items()}
            sync = index == len(batches) - 1
            with nullcontext() if sync else accelerator.no_sync(model):
                loss = model(**batch, num_items_in_batch=num_items).loss
                accelerator.backward(loss)
            step_loss += float(loss.detach())
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        progress.step += 1
        window_loss += step_loss
        window_updates += 1
        last_loss = step_loss
        bar.update(1)

        finished = progress.step >= settings.max_steps
        if settings.max_train_minutes is not None:
            out_of_time = torch.tensor(
                float(seconds_before + time.perf_counter() - start > 60 * settings.max_train_minutes), device=accelerator.device
            )
            finished |= bool(accelerator.reduce(out_of_time, reduction="sum") > 0)
        if progress.step % settings.log_every == 0 or finished:
            now = time.perf_counter()
            tokens = int(accelerator.reduce(torch.tensor(window_tokens, device=accelerator.device), reduction="sum"))
            mean_loss = float(accelerator.reduce(torch.tensor(window_loss / window_updates, device=accelerator.device), reduction="mean"))
            metrics = {
                "step": progress.step,
                "epoch": progress.epoch,
                "loss": round(mean_loss, 4),
                "perplexity": round(math.exp(min(mean_loss, 50)), 2),
                "lr": scheduler.get_last_lr()[0],
                "tokens_per_second": round(tokens / (now - window_start), 1),
                "padding": round(padding, 4),
            }
            accelerator.log(metrics, step=progress.step)
            bar.set_postfix(loss=metrics["loss"], ppl=metrics["perplexity"], lr=f"{metrics['lr']:.2e}", tok_s=metrics["tokens_per_second"])
            if accelerator.is_main_process:
                with log_file.open("a") as handle:
                    handle.write(json.dumps(metrics) + "\n")
            progress.tokens += tokens
            window_start, window_tokens, window_loss, window_updates = now, 0, 0.0, 0
        if progress.step % settings.save_every == 0 or finished:
            progress.train_seconds = seconds_before + time.perf_counter() - start
            save_checkpoint(accelerator, output_dir, progress.step, model, tokenizer, progress.state_dict(), settings.keep_last)
        if finished:
            break
    bar.close()
    progress.train_seconds = seconds_before + time.perf_counter() - start
    model.eval()
    return {
        "steps": progress.step,
        "epochs": progress.epoch,
        "train_seconds": round(progress.train_seconds, 1),
        "train_tokens_per_second": round(progress.tokens / max(progress.train_seconds, 1e-9), 1),
        "final_loss": round(last_loss, 4),
        "padding_fraction": round(padding, 4),
        "train_tokens": progress.tokens,
        "model": accelerator.unwrap_model(model),
    }
