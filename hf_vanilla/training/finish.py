"""The end of a recipe run: average checkpoints, evaluate, write results.json and samples, publish."""

import json
import os
import platform
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import torch
from accelerate import Accelerator

from .. import VanillaTransformerForConditionalGeneration
from .checkpoints import average_checkpoints, list_checkpoints


def hardware_description(accelerator: Accelerator) -> str:
    """What trained the model, for results.json and the card: the GPU's name, or the CPU's cores."""
    if accelerator.device.type == "cuda":
        return f"{accelerator.num_processes} x {torch.cuda.get_device_name(accelerator.device)}"
    return f"CPU ({os.cpu_count()} cores, {platform.machine()})"


def finish_run(
    accelerator: Accelerator,
    output_dir: Path,
    stats: dict,
    preset,
    args,
    evaluate: Callable[[torch.nn.Module], dict],
    extra: dict,
) -> dict:
    """On the main process: averages the last `average_last` checkpoints into `output_dir/final` (or copies the last
    model there), evaluates it with `evaluate`, writes `results.json` and `samples.jsonl` (source, reference,
    output) beside it, and pushes `final` to the Hub when asked. Other processes wait and get the results too."""
    output_dir = Path(output_dir)
    results: dict = {}
    if accelerator.is_main_process:
        average_last = args.average_last or preset.average_last
        checkpoints = list_checkpoints(output_dir)[-average_last:]
        final = average_checkpoints(checkpoints, output_dir / "final")
        model = VanillaTransformerForConditionalGeneration.from_pretrained(final).to(accelerator.device).eval()
        evaluation = evaluate(model)
        samples = evaluation.pop("samples")
        with (output_dir / "samples.jsonl").open("w", encoding="utf-8") as handle:
            for sample in samples:
                handle.write(json.dumps(sample, ensure_ascii=False) + "\n")
        trained = stats.copy()
        trained.pop("model")
        results = {
            **extra,
            **evaluation,
            **trained,
            "averaged_checkpoints": [p.name for p in checkpoints],
            "preset": args.preset,
            "training_preset": asdict(preset),
            "num_processes": accelerator.num_processes,
            "mixed_precision": args.mixed_precision,
            "device": str(accelerator.device),
            "hardware": hardware_description(accelerator),
            "parameters": sum(p.numel() for p in model.parameters()),
            "seed": args.seed,
        }
        (output_dir / "results.json").write_text(json.dumps(results, indent=2, ensure_ascii=False))
        (final / "results.json").write_text(json.dumps(results, indent=2, ensure_ascii=False))
        print(json.dumps({k: v for k, v in results.items() if k != "training_preset"}, indent=2, ensure_ascii=False))
        for sample in samples[:5]:
            print(f"\nSRC: {sample['source']}\nREF: {sample['reference']}\nOUT: {sample['hypothesis']}")
        if args.push_to_hub:
            from ..hub import build_hub_folder, push_model_folder

            url = push_model_folder(build_hub_folder(output_dir, output_dir / "hub", args.push_to_hub), args.push_to_hub)
            print(f"published {args.push_to_hub}: {url}")
    accelerator.wait_for_everyone()
    return results
