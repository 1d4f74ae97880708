"""Checkpoints that hold the weights once, in safetensors, whatever the parallelism; exact resume; averaging.

A checkpoint folder `checkpoint-00001000/` holds:

- `model/`: the model in Hugging Face format (config, generation config, tokenizer, `model.safetensors`), gathered
  from every process (DDP or FSDP shards) by torch's distributed state-dict API; averaging and the Hub read it.
- `optimizer.safetensors` + `optimizer.json`: Adam's moments by parameter name, full (unsharded), and its settings.
- `trainer_state.json`: the step, data position, time, scheduler state, loss scaler, best validation so far.
- `rng-{process}.safetensors`: each process's random generators (dropout), for bit-identical continuation.
- `manifest.json`, written last: every file's size and SHA-256, checked on `--resume`, and the id of the run that
  wrote it (`training.run_folder`): averaging and resuming read only the checkpoints of the run being finished.

Nothing is pickled: every load reads safetensors or JSON. Files go to a hidden `.tmp-` folder, are flushed to disk
(fsync) and the folder is renamed only when complete, so a killed run or a power cut never leaves a complete-looking
checkpoint with missing bytes.
"""

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from accelerate import Accelerator
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    set_optimizer_state_dict,
)

from ..errors import error_line
from ..model_paths import CHECKPOINT_PREFIX
from .collectives import agreed_failure

PREFIX = CHECKPOINT_PREFIX
STATE_FILE = "trainer_state.json"
MODEL_DIR = "model"
MANIFEST = "manifest.json"
WEIGHTS = "model.safetensors"


class CheckpointError(RuntimeError):
    """A checkpoint that is incomplete or corrupted; the message names it and what is wrong."""


def _full(cpu_offload: bool = True) -> StateDictOptions:
    return StateDictOptions(full_state_dict=True, cpu_offload=cpu_offload)


def gathered_model_state(model) -> dict[str, torch.Tensor]:
    """The whole model's weights on the CPU, gathered from every process's shard (complete on the main process)."""
    return get_model_state_dict(model, options=_full())


def save_model_folder(accelerator: Accelerator, model, folder: Path, tokenizer=None) -> None:
    """The model (gathered from all processes) in Hugging Face format in `folder`, written by the main process. A
    failed write (disk full, file too large) is a `CheckpointError` on every process."""
    state = gathered_model_state(model)
    with _agreed(accelerator, f"could not save the model in {folder}"):
        if accelerator.is_main_process:
            accelerator.unwrap_model(model).save_pretrained(folder, state_dict=state, safe_serialization=True)
            if tokenizer is not None:
                tokenizer.save_pretrained(folder)


def _agreed(accelerator: Accelerator, what: str):
    """`agreed_failure` for checkpoint writes: an OSError or a safetensors write error on any process (disk full, a
    file over the size limit) becomes a `CheckpointError` on all of them."""

    def describe(error: BaseException) -> str:
        if isinstance(error, SafetensorError):  # safetensors' own writer reports I/O errors so
            return str(error).removeprefix("Error while serializing: ")
        return error.strerror if isinstance(error, OSError) and error.strerror else error_line(error)

    return agreed_failure(accelerator, CheckpointError, what, catch=(OSError, SafetensorError), describe=describe)


def _flatten_optimizer(state: dict) -> tuple[dict[str, torch.Tensor], dict]:
    tensors, settings = {}, {"param_groups": state["param_groups"], "scalars": {}}
    for name, values in state["state"].items():
        for key, value in values.items():
            if isinstance(value, torch.Tensor):
                tensors[f"{name}::{key}"] = value.contiguous()
            else:
                settings["scalars"][f"{name}::{key}"] = value
    return tensors, settings


def _unflatten_optimizer(tensors: dict[str, torch.Tensor], settings: dict) -> dict:
    state: dict[str, dict] = {}
    for flat, value in [*tensors.items(), *settings["scalars"].items()]:
        name, key = flat.rsplit("::", 1)
        state.setdefault(name, {})[key] = value
    return {"state": state, "param_groups": settings["param_groups"]}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def _fsync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _fsync_tree(folder: Path) -> None:
    """Flushes every file and folder under `folder`, and `folder` itself, to disk."""
    for path in sorted(folder.rglob("*")) + [folder]:
        _fsync(path)


def _write_manifest(folder: Path, run_id: str | None = None) -> None:
    files = {
        str(path.relative_to(folder)): {"bytes": path.stat().st_size, "sha256": _sha256(path)}
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != MANIFEST
    }
    (folder / MANIFEST).write_text(json.dumps({"files": files, "run": run_id}, indent=1))


def _rng_state() -> dict[str, torch.Tensor]:
    state = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def _set_rng_state(state: dict[str, torch.Tensor]) -> None:
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])


@dataclass(frozen=True)
class Trainable:
    """What a checkpoint saves and a resume restores besides the progress: the model (as Accelerate prepared it), its
    optimizer and its learning-rate schedule."""

    model: torch.nn.Module
    optimizer: object
    scheduler: object

    def parts(self) -> tuple:
        """(model, optimizer, scheduler), the objects themselves (`dataclasses.astuple` would copy them)."""
        return self.model, self.optimizer, self.scheduler


def save_checkpoint(
    accelerator: Accelerator,
    output_dir: Path,
    step: int,
    trainable: Trainable,
    tokenizer,
    state: dict,
    run_id: str | None = None,
) -> Path:
    """Writes `checkpoint-STEP` (see the module docstring), its manifest naming the run `run_id` (`RunFolder.run_id`),
    atomically and durably (`keep_newest_checkpoints` then removes the older ones). Every process takes part
    (gathering shards); the main process writes the shared files. A failed write removes the unfinished folder and
    is a `CheckpointError` on every process; the checkpoints saved before are untouched."""
    output_dir, model, optimizer, scheduler = Path(output_dir), *trainable.parts()
    final = output_dir / f"{PREFIX}{step:08d}"
    temporary = output_dir / f".tmp-{PREFIX}{step:08d}"
    try:
        with _agreed(accelerator, f"could not save {final.name} in {output_dir}"):
            if accelerator.is_main_process and temporary.exists():
                shutil.rmtree(temporary)
        save_model_folder(accelerator, model, temporary / MODEL_DIR, tokenizer)
        optimizer_state = get_optimizer_state_dict(model, _inner(optimizer), options=_full())
        with _agreed(accelerator, f"could not save {final.name} in {output_dir}"):
            if accelerator.is_main_process:
                tensors, settings = _flatten_optimizer(optimizer_state)
                save_file(tensors, str(temporary / "optimizer.safetensors"))
                (temporary / "optimizer.json").write_text(json.dumps(settings))
                scaler = accelerator.scaler.state_dict() if accelerator.scaler is not None else None
                scheduler_state = {k: v for k, v in scheduler.state_dict().items() if k != "lr_lambdas"}
                full_state = {
                    **state,
                    "step": step,
                    "scheduler": scheduler_state,
                    "scaler": scaler,
                    "num_processes": accelerator.num_processes,
                }
                (temporary / STATE_FILE).write_text(json.dumps(full_state, indent=2))
        with _agreed(accelerator, f"could not save {final.name} in {output_dir}"):  # (no collective inside a block)
            save_file(_rng_state(), str(temporary / f"rng-{accelerator.process_index}.safetensors"))
        with _agreed(accelerator, f"could not save {final.name} in {output_dir}"):
            if accelerator.is_main_process:
                _write_manifest(temporary, run_id)
                _fsync_tree(temporary)
                if final.exists():
                    shutil.rmtree(final)
                os.replace(temporary, final)
                _fsync(output_dir)  # the rename itself
    except CheckpointError as error:
        if accelerator.is_main_process:
            shutil.rmtree(temporary, ignore_errors=True)
        raise CheckpointError(f"{error}; the checkpoints saved before are intact") from None
    return final


def keep_newest_checkpoints(
    accelerator: Accelerator, saved: Path, keep_last: int, owned: Callable[[Path], bool] | None = None
) -> None:
    """Removes all but the newest `keep_last` complete checkpoints beside `saved`, the one just written, of those
    `owned` (`RunFolder.owns`: the run's own; 0 keeps all); a failure is a `CheckpointError` on every process."""
    output_dir = saved.parent
    with _agreed(accelerator, f"saved {saved.name}, but could not remove the older checkpoints of {output_dir}"):
        if accelerator.is_main_process:
            kept = list_checkpoints(output_dir, owned)
            for old in kept[:-keep_last] if keep_last > 0 else []:
                shutil.rmtree(old)


def _inner(optimizer) -> torch.optim.Optimizer:
    """The torch optimizer behind Accelerate's wrapper."""
    return getattr(optimizer, "optimizer", optimizer)


def verify_checkpoint(checkpoint: Path) -> None:
    """Raises `CheckpointError` naming what is wrong unless every file of the manifest is there with its size and
    SHA-256, and every safetensors file opens."""
    checkpoint = Path(checkpoint)
    manifest = _read_manifest(checkpoint)
    for name in (f"{MODEL_DIR}/{WEIGHTS}", "optimizer.safetensors", STATE_FILE):
        _listed(checkpoint, manifest, name)
    for name, expected in manifest.items():
        _check_file(checkpoint, name, expected)


def checkpoint_run(checkpoint: Path) -> str | None:
    """The id of the run that wrote `checkpoint` (its manifest's `run`; None: none, or unreadable)."""
    try:
        return json.loads((checkpoint / MANIFEST).read_text()).get("run")
    except (OSError, ValueError, AttributeError):
        return None


def _read_manifest(checkpoint: Path) -> dict:
    """The checkpoint's manifest: file name -> its size and SHA-256."""
    try:
        return json.loads((checkpoint / MANIFEST).read_text())["files"]
    except (OSError, ValueError, KeyError) as error:
        raise CheckpointError(f"{checkpoint.name}: no readable {MANIFEST} ({error})") from error


def _listed(checkpoint: Path, manifest: dict, name: str) -> dict:
    """What the manifest records for the file `name`; a `CheckpointError` when it records nothing."""
    if name not in manifest:
        raise CheckpointError(f"{checkpoint.name}: {name} is missing from its manifest")
    return manifest[name]


def _check_file(checkpoint: Path, name: str, expected: dict) -> None:
    """Raises `CheckpointError` unless the checkpoint's file `name` has the size and SHA-256 its manifest records
    (and, for safetensors, opens)."""
    path = checkpoint / name
    if not path.is_file():
        raise CheckpointError(f"{checkpoint.name}/{name} is missing")
    if path.stat().st_size != expected["bytes"]:
        raise CheckpointError(
            f"{checkpoint.name}/{name} has {path.stat().st_size} bytes, {expected['bytes']} were written"
        )
    if _sha256(path) != expected["sha256"]:
        raise CheckpointError(f"{checkpoint.name}/{name} is corrupted (its SHA-256 differs from the one written)")
    if name.endswith(".safetensors"):
        check_safetensors(path)


def check_safetensors(path: Path) -> None:
    """Raises `CheckpointError` unless `path` is a safetensors file whose header and tensors can be read."""
    try:
        with safe_open(str(path), "pt") as handle:
            for key in handle.keys():
                handle.get_slice(key)
    except (SafetensorError, OSError, ValueError) as error:
        raise CheckpointError(f"{path}: not a readable safetensors file ({error})") from error


def list_checkpoints(output_dir: Path, owned=None) -> list[Path]:
    """Complete checkpoints of `output_dir`, oldest first (temporary folders and folders without state excluded); with
    `owned` (e.g. `RunFolder.owns`), only those for which it holds."""
    output_dir = Path(output_dir)
    if not output_dir.is_dir():
        return []
    found = [
        p
        for p in output_dir.glob(f"{PREFIX}*")
        if p.is_dir() and p.name[len(PREFIX) :].isdigit() and (p / STATE_FILE).is_file() and (p / MODEL_DIR).is_dir()
    ]
    found = [p for p in found if owned is None or owned(p)]
    return sorted(found, key=lambda p: int(p.name[len(PREFIX) :]))


def latest_valid_checkpoint(output_dir: Path, report=print, owned=None) -> Path | None:
    """The newest checkpoint (of those `owned`, see `list_checkpoints`) that passes `verify_checkpoint`; each one
    skipped is reported in one line."""
    for checkpoint in reversed(list_checkpoints(output_dir, owned)):
        try:
            verify_checkpoint(checkpoint)
            return checkpoint
        except CheckpointError as error:
            report(f"skipping checkpoint {error}; trying the previous one")
    return None


def read_state(checkpoint: Path) -> dict:
    return json.loads((Path(checkpoint) / STATE_FILE).read_text())


def load_checkpoint(accelerator: Accelerator, checkpoint: Path, trainable: Trainable) -> dict:
    """Restores the model (into its shards), the optimizer, the schedule, the loss scaler and this process's random
    generators from `checkpoint`; returns its trainer state."""
    checkpoint, model, optimizer, scheduler = Path(checkpoint), *trainable.parts()
    state = read_state(checkpoint)
    if state.get("num_processes", accelerator.num_processes) != accelerator.num_processes:
        raise CheckpointError(
            f"{checkpoint.name} was written by {state['num_processes']} processes; resuming it with "
            f"{accelerator.num_processes} would change the batches: launch {state['num_processes']} processes"
        )
    # The module itself, not torch.compile's wrapper (whose parameter names start with `_orig_mod.`).
    module = accelerator.unwrap_model(model, keep_torch_compile=False)
    load_full_weights(module, load_file(str(checkpoint / MODEL_DIR / WEIGHTS)))
    settings = json.loads((checkpoint / "optimizer.json").read_text())
    optimizer_state = _unflatten_optimizer(load_file(str(checkpoint / "optimizer.safetensors")), settings)
    set_optimizer_state_dict(model, _inner(optimizer), optimizer_state, options=StateDictOptions(full_state_dict=True))
    scheduler.load_state_dict({**scheduler.state_dict(), **state["scheduler"]})
    if state.get("scaler") and accelerator.scaler is not None:
        accelerator.scaler.load_state_dict(state["scaler"])
    rng_file = checkpoint / f"rng-{accelerator.process_index}.safetensors"
    if rng_file.is_file():
        _set_rng_state(load_file(str(rng_file)))
    return state


@torch.no_grad()
def load_full_weights(model: torch.nn.Module, weights: dict[str, torch.Tensor]) -> None:
    """Copies full (unsharded) `weights`, saved with one name per tied matrix, into `model`'s parameters, each
    process keeping its own shard of a parameter that FSDP2 sharded (a DTensor)."""
    from torch.distributed.tensor import DTensor, distribute_tensor

    missing = [name for name, _ in model.named_parameters() if name not in weights]
    if missing:
        raise CheckpointError(f"the checkpoint's weights lack {', '.join(missing[:3])}")
    for name, parameter in model.named_parameters():  # one name per tied matrix, the one saved
        full = weights[name].to(parameter.device, parameter.dtype)
        if isinstance(parameter, DTensor):
            full = distribute_tensor(full, parameter.device_mesh, parameter.placements)
        parameter.copy_(full)


def average_checkpoints(checkpoints: list[Path], output: Path) -> Path:
    """Averages the weights of `checkpoints` (checkpoint folders or HF model folders) into a loadable model folder at
    `output`, with the newest checkpoint's config, generation config and tokenizer (the paper averages the last 5
    base or 20 big checkpoints). A missing or unreadable weights file is a `CheckpointError` naming its folder."""
    if not checkpoints:
        raise ValueError("No checkpoints to average.")
    folders = [Path(c) / MODEL_DIR if (Path(c) / MODEL_DIR).is_dir() else Path(c) for c in checkpoints]
    total: dict[str, torch.Tensor] = {}
    for checkpoint, folder in zip(map(Path, checkpoints), folders):
        weights_file = folder / WEIGHTS
        if not weights_file.is_file():
            raise CheckpointError(f"{weights_file} not found: not a checkpoint or model folder.")
        if (checkpoint / MANIFEST).is_file():  # a recipe's checkpoint: size, SHA-256 and header of its weights
            name = f"{MODEL_DIR}/{WEIGHTS}"
            _check_file(checkpoint, name, _listed(checkpoint, _read_manifest(checkpoint), name))
        else:
            check_safetensors(weights_file)
        weights = load_file(str(weights_file))
        if total and set(weights) != set(total):
            raise CheckpointError(f"{folder} holds different parameters from {folders[0]}: cannot average them.")
        for name, tensor in weights.items():
            if name in total and tensor.shape != total[name].shape:
                raise CheckpointError(
                    f"{folder}: {name} has shape {tuple(tensor.shape)}, not {tuple(total[name].shape)}."
                )
            total[name] = total.get(name, 0) + tensor.double()
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    newest = folders[-1]
    for file in newest.iterdir():
        if file.is_file() and file.name != WEIGHTS:
            shutil.copy2(file, output / file.name)
    reference = load_file(str(newest / WEIGHTS))
    averaged = {name: (tensor / len(folders)).to(reference[name].dtype) for name, tensor in total.items()}
    save_file(averaged, str(output / WEIGHTS), metadata={"format": "pt"})
    return output
