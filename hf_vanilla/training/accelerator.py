"""The recipes' `Accelerator`: devices, processes, mixed precision and trackers exactly as `accelerate launch` set
them, with two CPU-only details made explicit."""

import os
from pathlib import Path

import torch
from accelerate import Accelerator
from accelerate.logging import get_logger

logger = get_logger(__name__)

_LAUNCHED_PROCESS_VARIABLES = ("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")

CPU_PROCESSES_HINT = (
    "`accelerate launch --cpu --num_processes N` starts one process unless it is given an MPI hostfile "
    "(--mpirun_hostfile). For N gloo processes on one CPU machine run "
    "`accelerate launch --multi_gpu --num_processes N "
    "...`: without a GPU the recipe runs each process on the CPU."
)


def single_process_despite_request() -> bool:
    """Whether Accelerate's `--cpu` launcher was asked for several processes (it then sets MASTER_ADDR) but started
    this one process alone (no MPI), so that training would silently run on one process."""
    return (
        os.environ.get("ACCELERATE_USE_CPU", "").lower() in ("1", "true", "yes")
        and "MASTER_ADDR" in os.environ
        and not any(name in os.environ for name in _LAUNCHED_PROCESS_VARIABLES)
    )


def create_accelerator(
    project: str,
    output_dir: Path,
    mixed_precision: str | None,
    report_to: str | None,
    config: dict,
    torch_compile: bool = False,
) -> Accelerator:
    """An `Accelerator` for a recipe. `mixed_precision=None` keeps what `accelerate launch` or `accelerate config` set
    (the recipe's flag only overrides it when given). Without any GPU (or other accelerator) it runs on the CPU, so
    that processes started by torchrun (`accelerate launch --multi_gpu`) form a gloo group instead of failing;
    `report_to` starts an Accelerate tracker (e.g. tensorboard) logging under `output_dir`, with `config` as its
    hyper-parameters. `torch_compile` asks for the inductor backend unless the launcher chose one."""
    launched_backend = os.environ.get("ACCELERATE_DYNAMO_BACKEND", "no").lower()
    accelerator = Accelerator(
        cpu=not torch.accelerator.is_available(),
        mixed_precision=mixed_precision,
        dynamo_backend="inductor" if torch_compile and launched_backend == "no" else None,
        log_with=report_to,
        project_dir=str(output_dir),
    )
    if single_process_despite_request():
        logger.warning(f"Running ONE process. {CPU_PROCESSES_HINT}", main_process_only=True)
    if report_to:
        hyper_parameters = {k: v for k, v in config.items() if isinstance(v, (int, float, str, bool))}
        accelerator.init_trackers(project, config=hyper_parameters)
    return accelerator
