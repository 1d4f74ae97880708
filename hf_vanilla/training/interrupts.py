"""Stop signals (SIGINT from Ctrl-C, SIGTERM from a scheduler or `timeout`) in every phase of a run: outside the
training loop a signal raises `RunInterrupted`, which the recipe turns into one line and an exit status (no
traceback, nothing partial written); inside it, `StopSignals` records the signal so that the update in progress
finishes and its checkpoint is saved, and stops validation between batches; once the run's work is done
(`hold_after_completion`), a signal is only noted, and the run exits 0.

A stop is named by the signal that started it, and only that signal again acts at once: Ctrl-C reaches a launcher
and its training process alike, and the launcher passes it on as SIGTERM (torchrun's agent), or ends on it and has
the kernel send SIGTERM (`training.run.follow_launcher`): the same stop, never a second one."""

import signal
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class RunInterrupted(BaseException):
    """A stop signal that ended a phase of the run; `advice` says what was kept and how to go on. A BaseException, as
    KeyboardInterrupt is, so that no `except Exception` on the way takes it for an error."""

    def __init__(self, signal_name: str, advice: str = ""):
        super().__init__(signal_name, advice)
        self.signal_name, self.advice = signal_name, advice

    def exit_status(self) -> int:
        """128 + the signal's number, as a shell reports a program the signal ended."""
        return 128 + int(signal.Signals[self.signal_name])

    def line(self) -> str:
        advice = self.advice or "stopped before training, nothing to resume yet: run the same command again"
        return f"{self.signal_name} received: {advice}"


# A signal that arrives while a collective is under way waits for it to end (`deferred`): a process that left a
# collective half-way would leave the others waiting on it, or failing with the connection it closed.
# With several processes only the first raises: the others hold the signal and learn of the stop through the
# collective they meet next (`agreed_failure`), so that none leaves the others waiting in a collective.
# `stopping` names the stop under way (its first signal), `complete` says that the run's results are written
# (`hold_after_completion`).
_deferral = {"depth": 0, "pending": None, "raises": True, "stopping": None, "complete": False}
# What a second stop signal after the run's results were written says (an upload under way, say).
AFTER_COMPLETION = "stopped after the run had finished and written its results"


def _raise(number, frame):
    name = signal.Signals(number).name
    if _deferral["stopping"] not in (None, name):
        return  # another signal for the stop under way (a launcher passing Ctrl-C on as SIGTERM): the same stop
    if _deferral["complete"]:  # the results are written: noted, and a second signal acts
        if _deferral["pending"] is None:
            _deferral["pending"] = name
            return
        raise RunInterrupted(name, AFTER_COMPLETION)
    if _deferral["depth"] or not _deferral["raises"]:
        _deferral["pending"] = _deferral["pending"] or name  # the first one names the stop
        return
    _deferral["stopping"] = name
    raise RunInterrupted(name)


@contextmanager
def deferred():
    """Inside the block (a collective), a stop signal is held back; it raises `RunInterrupted` once the block ends."""
    _deferral["depth"] += 1
    try:
        yield
    finally:
        _deferral["depth"] -= 1
    waiting = _deferral["pending"] is not None and not _deferral["complete"]
    if not _deferral["depth"] and _deferral["raises"] and waiting:
        name, _deferral["pending"] = _deferral["pending"], None
        _deferral["stopping"] = name
        raise RunInterrupted(name)


@contextmanager
def interrupting(raises: bool = True):
    """SIGINT and SIGTERM raise `RunInterrupted` inside the block (the handlers before it restored after); with
    `raises` False (a process other than the first), they are only held (see `_deferral`)."""
    _deferral.update(raises=raises, pending=None, stopping=None, complete=False)
    previous = {number: signal.getsignal(number) for number in STOP_SIGNALS}
    for number in STOP_SIGNALS:
        signal.signal(number, _raise)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def hold_after_completion() -> None:
    """The run's results are written: from here on a first stop signal is only noted (`noted_signal` names it) and
    the run exits 0, as a finished run does; a second one acts (`RunInterrupted`, `AFTER_COMPLETION`)."""
    _deferral["complete"] = True


def noted_signal() -> str | None:
    """The stop signal noted since `hold_after_completion`, if any."""
    return _deferral["pending"] if _deferral["complete"] else None


class StopSignals:
    """Records SIGTERM / SIGINT (what schedulers and Ctrl-C send) instead of dying mid-update, the first one naming the
    stop; the same signal again acts at once (the handler before, e.g. `interrupting`'s), the other one is the same
    stop passed on by a launcher. Inside `raising()`, a signal raises `RunInterrupted` instead, for work that can be
    abandoned (a process's own decoding)."""

    def __init__(self):
        self.received: str | None = None
        self.raise_now = False

    @contextmanager
    def installed(self):
        def handler(number, frame):
            if self.received is None:
                self.received = _deferral["stopping"] = signal.Signals(number).name
                if self.raise_now:
                    raise RunInterrupted(self.received)
                return
            if signal.Signals(number).name != self.received:
                return  # the stop passed on by a launcher (Ctrl-C as SIGTERM): the same stop
            signal.signal(number, previous[number])  # the same signal again acts at once, as the handler before
            signal.raise_signal(number)

        previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
        for number in previous:
            signal.signal(number, handler)
        try:
            yield self
        finally:
            for number, old in previous.items():
                signal.signal(number, old)

    @contextmanager
    def raising(self):
        """A signal received inside the block (or before it) raises `RunInterrupted`."""
        if self.received is not None:
            raise RunInterrupted(self.received)
        self.raise_now = True
        try:
            yield
        finally:
            self.raise_now = False
