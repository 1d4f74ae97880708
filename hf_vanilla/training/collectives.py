"""The few collectives the recipes need beyond Accelerate's: agreeing on a flag, sharing a main-process value."""

import torch
from accelerate import Accelerator


def any_process(accelerator: Accelerator, flag: bool) -> bool:
    """Whether `flag` holds on any process (one all-reduce; no collective with a single process)."""
    if accelerator.num_processes == 1:
        return flag
    return bool(accelerator.reduce(torch.tensor(float(flag), device=accelerator.device), reduction="sum") > 0)


def broadcast_value(accelerator: Accelerator, value):
    """The main process's `value` (any picklable object, sent between the run's own processes) on every process."""
    if accelerator.num_processes == 1:
        return value
    from accelerate.utils import broadcast_object_list

    holder = [value]
    broadcast_object_list(holder, from_process=0)
    return holder[0]
