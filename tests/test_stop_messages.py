"""A stop names the signal it got, warns only of what it abandoned, and a run that finished exits 0 (issue 67), with
real signals to real recipe processes: Ctrl-C reaching a launcher and its training process together (the launcher
passes it on as SIGTERM, or ends on it and the kernel sends SIGTERM: the same stop, not a second one), and a SIGINT
that comes once the run's results are written."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hf_vanilla.training.interrupts import (
    AFTER_COMPLETION,
    RunInterrupted,
    hold_after_completion,
    interrupting,
    noted_signal,
)

from runs import RECIPES, tiny_recipe_flags

# Launchers of one training process, as each meets Ctrl-C: torchrun's agent sends its workers SIGTERM; another ends
# at once, and the kernel sends the training process SIGTERM (the parent-death signal the recipe asks for under a
# launcher, `training.run.follow_launcher`).
LAUNCHERS = {
    "passes it on as SIGTERM": "import signal, subprocess, sys\n"
    "child = subprocess.Popen(sys.argv[1:])\n"
    "signal.signal(signal.SIGINT, lambda number, frame: child.send_signal(signal.SIGTERM))\n"
    "sys.exit(child.wait())\n",
    "ends on it": "import os, signal, subprocess, sys\n"
    "child = subprocess.Popen(sys.argv[1:])\n"
    "signal.signal(signal.SIGINT, lambda number, frame: os._exit(130))\n"
    "sys.exit(child.wait())\n",
}


def logged_updates(output_dir: Path) -> int:
    log = output_dir / "train_log.jsonl"
    return sum('"loss"' in line for line in log.read_text().splitlines()) if log.exists() else 0


def wait_for(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"no {what} after {seconds} s"
        time.sleep(0.05)


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_ctrl_c_under_a_launcher_is_named_sigint_and_warns_of_no_validation(launcher, tmp_path):
    output_dir, log = tmp_path / "run", tmp_path / "run.log"
    flags = tiny_recipe_flags(output_dir, "--max-steps", "100000", "--save-every", "100000", "--eval-every", "1000")
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "ACCELERATE_MIXED_PRECISION": "no", "PYTHONUNBUFFERED": "1"}
    recipe = [sys.executable, str(RECIPES / "wmt_ende.py"), *flags, "--log-every", "1"]
    with log.open("w") as handle:
        launcher = subprocess.Popen(
            [sys.executable, "-c", LAUNCHERS[launcher], *recipe],
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=environment,
            start_new_session=True,
        )
    try:
        wait_for(lambda: logged_updates(output_dir) >= 2, 600, "second update")
        os.killpg(launcher.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the launcher and its training process
        launcher.wait(timeout=60)
        wait_for(lambda: "--resume to continue" in log.read_text(), 120, "line of the stopped run")
    finally:
        try:
            os.killpg(launcher.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    text = log.read_text()
    assert "SIGINT received: stopped after update" in text and "SIGTERM" not in text, text[-3000:]
    assert "validation" not in text.split("SIGINT:", 1)[1], text[-3000:]  # none was due: none abandoned
    (checkpoint,) = output_dir.glob("checkpoint-*")
    assert json.loads((checkpoint / "trainer_state.json").read_text())["step"] >= 2


def test_a_signal_once_the_results_are_written_leaves_a_finished_run_exiting_0(tmp_path):
    """A real SIGINT the moment results.json, the samples and the card are written: the run is complete; it says
    so in one line and exits 0, not 130."""
    output_dir = tmp_path / "run"
    flags = tiny_recipe_flags(output_dir, "--max-steps", "2", "--eval-sentences", "2", "--num-beams", "1")
    script = (
        "import os, runpy, signal, sys\n"
        "import hf_vanilla.publishing as publishing\n"
        "written = publishing.write_outputs\n"
        "def write_then_signal(*args, **kwargs):\n"
        "    written(*args, **kwargs)\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "publishing.write_outputs = write_then_signal\n"
        f"sys.argv = ['wmt_ende.py', *{flags!r}]\n"
        f"runpy.run_path({str(RECIPES / 'wmt_ende.py')!r}, run_name='__main__')\n"
    )
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=environment, timeout=600, cwd=RECIPES
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.strip().splitlines()[-1] == (
        "wmt_ende: SIGINT received after the run had finished: its results are complete"
    )
    assert json.loads((output_dir / "results.json").read_text())["steps"] == 2


def test_after_completion_a_first_signal_is_noted_and_a_second_acts():
    with pytest.raises(RunInterrupted) as stopped, interrupting():
        hold_after_completion()
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # Python runs a handler between bytecodes
            pass
        assert noted_signal() == "SIGINT"
        os.kill(os.getpid(), signal.SIGTERM)  # the user insists (an upload under way, say)
        for _ in range(1000):
            pass
    assert stopped.value.signal_name == "SIGTERM" and stopped.value.advice == AFTER_COMPLETION
    with interrupting():
        assert noted_signal() is None  # a new run starts unfinished
