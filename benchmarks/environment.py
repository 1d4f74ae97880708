"""The one header every benchmark's record holds under `"environment"`: the machine (its CPU model, cores, GPU, if
any, and the boot of its kernel), the Python, torch and transformers versions, the commit and the date.

    {"machine": {"cpu_model": "AMD EPYC 9654 96-Core Processor", "processor": "x86_64", "cores": 2,
                 "cpu_generation": "family 25, model 17", "kernels": "AVX512", "gpu": null,
                 "boot_id": "d4efcd9a-d265-496c-97b7-b41d50de5707"},
     "python": "3.11.9", "torch": "2.13.0", "transformers": "5.24.0", "commit": "8532d85...",
     "date": "2026-11-29T00:30:00+00:00"}
"""

import datetime
import os
import platform
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cpuinfo() -> dict[str, str]:
    """/proc/cpuinfo's fields, the first processor's value of each ({} where Linux gives no such file)."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in lines:
        key, colon, value = line.partition(":")
        if colon:
            fields.setdefault(key.strip(), value.strip())
    return fields


def cpu_model() -> str | None:
    """The CPU's model name as Linux reports it (/proc/cpuinfo's first `model name`), None where it does not."""
    return cpuinfo().get("model name")


def cpu_generation() -> str | None:
    """The CPU's family and model numbers as Linux reports them (/proc/cpuinfo's first `cpu family` and `model`), as
    "family 25, model 17", None where it does not: one model name ("AMD EPYC") has covered two generations, one
    with AVX-512 and one without (docs/experiments.md, "seeds pooled over boots")."""
    fields = cpuinfo()
    family, model = fields.get("cpu family"), fields.get("model")
    return f"family {family}, model {model}" if family and model else None


def kernels() -> str:
    """The kernel path torch's CPU operators take here (`torch.backends.cpu.get_cpu_capability()`: "AVX512", "AVX2",
    "DEFAULT"...): it sets a computation's rounding, so one seed's figures match only between equal paths."""
    import torch

    return torch.backends.cpu.get_cpu_capability()


def boot_id() -> str | None:
    """The running kernel's boot id (/proc/sys/kernel/random/boot_id), None where Linux gives none: two virtual
    machines under one CPU name have run the same work at different speeds (docs/experiments.md, 2026-11-29), so
    speeds compare within one boot only."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def gpu_name() -> str | None:
    """The first CUDA device's name, None where torch sees none."""
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def git_commit() -> str:
    """This checkout's commit (`git rev-parse HEAD`), "unknown" outside a git checkout."""
    try:
        result = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return result.stdout.strip() if result.returncode == 0 else "unknown"


def machine() -> dict:
    """The machine a benchmark ran on: speeds compare on one CPU model (or one GPU) and one boot only."""
    return {
        "cpu_model": cpu_model(),
        "processor": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "cpu_generation": cpu_generation(),
        "kernels": kernels(),
        "gpu": gpu_name(),
        "boot_id": boot_id(),
    }


def environment(commit: str | None = None) -> dict:
    """The record's header (the module's docstring shows one); `commit` in place of the checkout's where given."""
    import torch
    import transformers

    return {
        "machine": machine(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "commit": commit or git_commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat(),
    }
