"""Atomic checkpoints, resume and checkpoint averaging."""

import json
import os
import shutil
from pathlib import Path

import torch
from accelerate import Accelerator
from safetensors.torch import load_file, save_file

PREFIX = "checkpoint-"
STATE_FILE = "trainer_state.json"
MODEL_DIR = "model"


def save_checkpoint(accelerator: Accelerator, output_dir: Path, step: int, model, tokenizer, state: dict, keep_last: int) -> Path:
    """Writes `checkpoint-STEP` atomically: everything goes to a hidden temporary folder, which is renamed only once
    complete, so a run killed while saving never leaves a checkpoint that looks finished. Holds the model in HF
    format (`model/`, with the tokenizer), Accelerate's state (optimizer, scheduler, RNG of every process, registered
    objects) and `trainer_state.json`. Keeps the newest `keep_last` checkpoints."""
    output_dir = Path(output_dir)
    final = output_dir / f"{PREFIX}{step:08d}"
    temporary = output_dir / f".tmp-{PREFIX}{step:08d}"
    if accelerator.is_main_process and temporary.exists():
        shutil.rmtree(temporary)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(temporary), safe_serialization=True)
    if accelerator.is_main_process:
        accelerator.unwrap_model(model).save_pretrained(temporary / MODEL_DIR)
        tokenizer.save_pretrained(temporary / MODEL_DIR)
        (temporary / STATE_FILE).write_text(json.dumps({**state, "step": step}, indent=2))
        if final.exists():
            shutil.rmtree(final)
        os.replace(temporary, final)
        for old in list_checkpoints(output_dir)[:-keep_last] if keep_last > 0 else []:
            shutil.rmtree(old)
    accelerator.wait_for_everyone()
    return final


def list_checkpoints(output_dir: Path) -> list[Path]:
    """Complete checkpoints of `output_dir`, oldest first (temporary folders and folders without state excluded)."""
    output_dir = Path(output_dir)
    if not output_dir.is_dir():
        return []
    found = [p for p in output_dir.glob(f"{PREFIX}*") if p.is_dir() and (p / STATE_FILE).is_file() and (p / MODEL_DIR).is_dir()]
    return sorted(found, key=lambda p: int(p.name[len(PREFIX):]))


def read_state(checkpoint: Path) -> dict:
    return json.loads((Path(checkpoint) / STATE_FILE).read_text())


def average_checkpoints(checkpoints: list[Path], output: Path) -> Path:
    """Averages the weights of `checkpoints` (checkpoint folders or HF model folders) into a loadable model folder at
    `output`, with the newest checkpoint's config, generation config and tokenizer (the paper averages the last 5
    base or 20 big checkpoints)."""
    if not checkpoints:
        raise ValueError("No checkpoints to average.")
    folders = [Path(c) / MODEL_DIR if (Path(c) / MODEL_DIR).is_dir() else Path(c) for c in checkpoints]
    total: dict[str, torch.Tensor] = {}
    for folder in folders:
        weights_file = folder / "model.safetensors"
        if not weights_file.is_file():
            raise FileNotFoundError(f"{weights_file} not found: not a checkpoint or model folder.")
        weights = load_file(str(weights_file))
        if total and set(weights) != set(total):
            raise ValueError(f"{folder} holds different parameters from {folders[0]}: cannot average them.")
        for name, tensor in weights.items():
            total[name] = total.get(name, 0) + tensor.double()
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    newest = folders[-1]
    for file in newest.iterdir():
        if file.is_file() and file.name != "model.safetensors":
            shutil.copy2(file, output / file.name)
    reference = load_file(str(newest / "model.safetensors"))
    averaged = {name: (tensor / len(folders)).to(reference[name].dtype) for name, tensor in total.items()}
    save_file(averaged, str(output / "model.safetensors"), metadata={"format": "pt"})
    return output
