"""The few collectives the recipes need beyond Accelerate's: agreeing on a flag, sharing a main-process value, and
agreeing on a failure, so that an error on one process stops every process instead of leaving the others waiting."""

import signal
from collections.abc import Callable
from contextlib import contextmanager

import torch
from accelerate import Accelerator

from ..errors import error_line
from .interrupts import RunInterrupted, deferred

# How a stop signal inside an agreed block travels to the other processes (before any error's message).
INTERRUPTED = "\x00interrupted:"


class StepError(RuntimeError):
    """A step of a run that failed on one process (writing its log or results, the upload, the validation metric),
    raised on every process by `agreed_failure`; the message says what failed."""


def any_process(accelerator: Accelerator, flag: bool) -> bool:
    """Whether `flag` holds on any process (one all-reduce; no collective with a single process)."""
    if accelerator.num_processes == 1:
        return flag
    return bool(accelerator.reduce(torch.tensor(float(flag), device=accelerator.device), reduction="sum") > 0)


def agreed_signal(accelerator: Accelerator, name: str | None) -> str | None:
    """The stop signal any process received (`name`: this one's, or None), the same on every process, so that every
    process names the stop by the signal that was sent (one all-reduce; none with a single process)."""
    if accelerator.num_processes == 1:
        return name
    number = int(signal.Signals[name]) if name else 0
    agreed = int(accelerator.reduce(torch.tensor(number, device=accelerator.device), reduction="max"))
    return signal.Signals(agreed).name if agreed else None


def broadcast_value(accelerator: Accelerator, value):
    """The main process's `value` (any picklable object, sent between the run's own processes) on every process."""
    if accelerator.num_processes == 1:
        return value
    from accelerate.utils import broadcast_object_list

    holder = [value]
    with deferred():
        broadcast_object_list(holder, from_process=0)
    return holder[0]


@contextmanager
def agreed_failure(
    accelerator: Accelerator,
    error_type: type[Exception],
    what: str = "",
    catch: tuple[type[BaseException], ...] = (Exception,),
    describe: Callable[[BaseException], str] = error_line,
):
    """Runs the block on every process (typically work of the main process alone, followed by a collective), then
    agrees on how it went: an exception inside the block on any process is raised on every process, after all of them
    have left the block, so that none waits alone in a later collective.

    An exception of a `catch` type becomes `error_type("WHAT: DESCRIPTION")` on every process (the first process's
    to fail, by rank; `describe(error)` is one line). Any other exception (a bug) is re-raised as it is, traceback
    included, on its own process, while the others raise `error_type` naming it. A stop signal (`RunInterrupted`)
    on any process is raised as such on every process. One all-gather of a short string (none with a single
    process):

        with agreed_failure(accelerator, CheckpointError, "could not average the checkpoints"):
            if accelerator.is_main_process:
                average_checkpoints(...)
    """
    problem = failure = None
    try:
        yield
    except RunInterrupted as stop:
        failure, problem = stop, f"{INTERRUPTED}{stop.signal_name}"
    except Exception as error:  # every exception is agreed on; the unexpected ones are re-raised below
        failure = error
        expected = isinstance(error, catch)
        text = describe(error) if expected else f"{type(error).__name__}: {error_line(error)}"
        if not expected:
            text += f" (process {accelerator.process_index} shows its traceback)"
        problem = f"{what}: {text}" if what else text
    if accelerator.num_processes == 1:
        problems = [problem]
    else:
        from accelerate.utils import gather_object

        with deferred():
            problems = gather_object([problem])
    first = next((message for message in problems if message), None)
    if first is None:
        return
    if isinstance(failure, RunInterrupted):
        raise failure
    stopped = next((message for message in problems if message and message.startswith(INTERRUPTED)), None)
    if stopped is not None:
        raise RunInterrupted(stopped.removeprefix(INTERRUPTED))
    if failure is not None and not isinstance(failure, catch):
        raise failure
    raise error_type(first) from failure
