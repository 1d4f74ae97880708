"""A run's last step, after training and evaluation: `results.json` with the settings really in force, the samples,
the model card (`hf_vanilla.cards`) and, with --push-to-hub, the upload (`hf_vanilla.hub`). The recipes hand it to
`training.run.train_and_evaluate`, so that the training library trains and this module publishes."""

import json
import os
import platform
import sys
from pathlib import Path

import torch
from accelerate import Accelerator

from .cards import render_model_card
from .evaluation import Evaluation
from .hub import PublishError, build_hub_folder, push_model_folder
from .training.collectives import StepError
from .training.context import RunContext
from .training.interrupts import deferred, hold_after_completion


def finish(run: RunContext, evaluation: Evaluation, extra: dict) -> dict:
    """On the main process, after evaluation: results.json, samples, the card (the run has then finished: a stop
    signal is only noted, `training.interrupts.hold_after_completion`), the trackers, the upload."""
    figures = {**evaluation.figures, "eval_split": run.settings.eval_split}
    results = results_record(run, figures, extra)
    with deferred():  # results, samples and card written whole: a stop signal waits for them, then finds the run done
        write_outputs(run.output_dir, results, evaluation.samples, run.model, run.settings.push_to_hub)
        hold_after_completion()
    logged = {f"test_{k}": v for k, v in figures.items() if isinstance(v, (int, float))}
    run.accelerator.log(logged, step=run.training.steps)
    if run.settings.push_to_hub:
        try:
            publish(run.output_dir, run.settings.push_to_hub)
        except PublishError as error:  # agreed on by every process (`train_and_evaluate`), in one line
            raise StepError(str(error)) from error
    return results


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


def results_record(run: RunContext, evaluation: dict, extra: dict) -> dict:
    """results.json: what was evaluated and how it was trained, with the settings really in force."""
    accelerator, settings = run.accelerator, run.settings
    return {
        **extra,
        **evaluation,
        **{k: v for k, v in vars(run.training).items()},
        "final_model": settings.final_model,
        "averaged_checkpoints": run.averaged,
        "preset": settings.preset,
        "training_preset": settings.as_dict(),
        "num_processes": accelerator.num_processes,
        "distributed_type": accelerator.distributed_type.value,
        "mixed_precision": accelerator.mixed_precision,
        "device": str(accelerator.device),
        "hardware": hardware_description(accelerator),
        # A CPU run's float sums, and so its figures, depend on the threads each process used (docs/corpora.md).
        "cpu_threads": torch.get_num_threads(),
        "host_malloc": run.host_malloc,
        "parameters": sum(p.numel() for p in run.model.parameters()),
        "seed": settings.seed,
        "init_from": settings.init_from,
        "eval_only": settings.eval_only,
        "filters": run.filters,  # what each filter kept and dropped of each split, and why
        **({"truncated": run.truncated} if settings.TRUNCATION is not None else {}),
        **({"copyable": run.copyable} if settings.COUNT_COPYABLE else {}),
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

    url = push_model_folder(build_hub_folder(output_dir, output_dir / "hub", repo_id), repo_id)
    print(f"published {repo_id}: {url}")
    return url
