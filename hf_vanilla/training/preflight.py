"""Checks a recipe makes before its first update, so that what would fail after hours of training fails in seconds,
in one line, on every process. Standard library only at import (a recipe reads its settings, which raise
`PreflightError`, before torch loads: `recipes/settings_first.py`)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import error_line

if TYPE_CHECKING:
    from accelerate import Accelerator


class PreflightError(ValueError):
    """Something that would make the run fail later; the message says what and how to proceed."""


def refuse_deepspeed() -> None:
    """DeepSpeed's engine steps the optimizer at every `backward`, which breaks --update-freq and the update-counted
    schedule of the recipes; they refuse it before Accelerate starts it."""
    if os.environ.get("ACCELERATE_USE_DEEPSPEED", "false").lower() in ("1", "true", "yes"):
        raise PreflightError(
            "the recipes do not run under DeepSpeed (its engine would step the optimizer at every micro-batch, "
            "breaking --update-freq and the schedule); use FSDP or DDP through `accelerate config`"
        )


def refuse_metric_under_fsdp(eval_metric_sentences: int) -> None:
    """--eval-metric-sentences decodes on the main process alone; under FSDP every forward gathers the shards from
    all processes, so the others would wait for it forever."""
    if eval_metric_sentences and os.environ.get("ACCELERATE_USE_FSDP", "false").lower() in ("1", "true", "yes"):
        raise PreflightError(
            "--eval-metric-sentences decodes on the main process alone, which FSDP's sharded model cannot do: "
            "leave it at 0 under FSDP (the validation loss is still computed)"
        )


def check_writable(folder: Path) -> None:
    """`folder` exists (or is created) and a file can be written in it."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-test-{uuid.uuid4().hex}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise PreflightError(f"cannot write to the output folder {folder}: {error.strerror or error}") from error


def check_splits(corpus: Mapping, needed: dict[str, str], source: str) -> None:
    """Each split of `needed` (split -> what the user can do without it, e.g. "choose another --eval-split") is in
    `corpus` and holds examples (the recipes' length and word-count limits may have left none)."""
    available = sorted(corpus)
    for split, remedy in needed.items():
        if split not in available:
            splits = ", ".join(available) or "none"
            raise PreflightError(f"{source} has no {split!r} split (it has {splits}): {remedy}")
        if len(corpus[split]) == 0:
            raise PreflightError(f"the {split!r} split of {source} is empty (after the recipe's limits): {remedy}")


def check_hub(repo_id: str, token: str | None = None) -> None:
    """The repo id is valid, a Hugging Face token is set, and the Hub answers for it (who it belongs to)."""
    from huggingface_hub import HfApi, get_token
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as error:
        raise PreflightError(f"--push-to-hub {repo_id!r} is not a valid repo id: {error}") from error
    token = token or get_token()
    if not token:
        raise PreflightError("--push-to-hub needs a Hugging Face token: run `hf auth login` or set HF_TOKEN")
    try:
        HfApi(token=token).whoami()
    except Exception as error:  # offline mode, no network, a revoked token: all mean no upload after training
        raise PreflightError(
            f"--push-to-hub {repo_id}: the Hugging Face Hub cannot be reached or refuses the token "
            f"({error_line(error)})"
        ) from error


def run_checks(accelerator: Accelerator, checks: Iterable[Callable[[], None]]) -> None:
    """Runs `checks` on the main process; the first failure stops every process with `PreflightError`."""
    from .collectives import agreed_failure  # torch: not needed to read a recipe's settings

    with agreed_failure(accelerator, PreflightError, catch=(PreflightError,), describe=str):
        if accelerator.is_main_process:
            for check in checks:
                check()
