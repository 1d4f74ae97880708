"""Nothing is lost when a run is killed: real recipe processes (the tiny preset on the shared WMT sample) are killed
with SIGKILL at random moments — before the first update, during an update, while a checkpoint is being saved,
while checkpoints are averaged — and resumed with --resume until they finish; the final weights are then
bit-identical to those of a run never interrupted, for 1 process and for 2 gloo processes. SIGTERM and SIGINT save a
checkpoint at the next update and exit cleanly; in the other phases (before training, the final decoding) they end
the run in one line, nothing partial written, under the README's launch command."""

import json
import os
import random
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from runs import RECIPES, tiny_recipe, tiny_recipe_flags

TESTS = Path(__file__).resolve().parent
LAUNCHERS = {  # processes (or "fsdp": 2 processes, the model sharded by FSDP2) -> the command before the recipe
    1: ["accelerate", "launch", "--cpu", "--num_processes", "1"],
    2: ["accelerate", "launch", "--multi_gpu", "--num_processes", "2"],
    "fsdp": ["torchrun", "--nproc_per_node", "2", str(TESTS / "fsdp_on_cpu.py")],
}


def recipe_flags(output_dir: Path) -> list[str]:
    return tiny_recipe_flags(output_dir, "--eval-sentences", "2", "--num-beams", "1", "--log-every", "1")


def environment() -> dict:
    # One thread a process: the same arithmetic in every run, whatever else the machine does.
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


def launch(output_dir: Path, processes: int | str, resume: bool) -> subprocess.Popen:
    """The recipe under its launcher, in its own process group, its output in a file beside `output_dir`."""
    command = [*LAUNCHERS[processes], str(RECIPES / "wmt_ende.py"), *recipe_flags(output_dir)]
    log = output_dir.parent / f"{output_dir.name}.log"
    with log.open("a") as handle:
        return subprocess.Popen(
            command + (["--resume"] if resume else []),
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=environment(),
            start_new_session=True,
        )


def kill(process: subprocess.Popen, output_dir: Path) -> None:
    """SIGKILL to the launcher's process group and to every process started for `output_dir` (torchrun's workers
    live in process groups of their own)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:  # the group has ended
        pass
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if str(output_dir).encode() in cmdline.read_bytes():
                os.kill(int(cmdline.parent.name), signal.SIGKILL)
        except (OSError, ValueError):  # gone meanwhile, or not ours to kill
            pass
    process.wait()


def output_of(output_dir: Path) -> str:
    return (output_dir.parent / f"{output_dir.name}.log").read_text()[-3000:]


def logged_updates(output_dir: Path) -> int:
    log = output_dir / "train_log.jsonl"
    return sum(1 for line in log.read_text().splitlines() if '"loss"' in line) if log.exists() else 0


# Each moment makes a condition on the output folder, polled every few milliseconds; the run is killed when it holds.
MOMENTS = {
    "before the first update": lambda: lambda out: (out / "tokenizer").exists() and not logged_updates(out),
    "during an update": lambda: (lambda after: lambda out: logged_updates(out) >= after)(random.randint(1, 11)),
    "while a checkpoint is saved": lambda: lambda out: any(out.glob(".tmp-checkpoint-*")),
    "while checkpoints are averaged": lambda: lambda out: (out / ".tmp-final").exists() or (out / "final").exists(),
}


def run_killed_at(output_dir: Path, processes: int, moments: list[str], timeout: float = 900) -> list[str]:
    """Runs the recipe until it completes, killing it (SIGKILL to the whole process group) at each moment in turn and
    resuming it; a moment that does not come before the run completes is not hit. Returns the moments hit."""
    hit = []
    for moment in moments + [None]:
        process = launch(output_dir, processes, resume=bool(hit))
        condition = MOMENTS[moment]() if moment else None
        deadline = time.monotonic() + timeout
        while process.poll() is None:
            if time.monotonic() > deadline:
                kill(process, output_dir)
                pytest.fail(f"the run did not finish in {timeout} s")
            if condition is not None and condition(output_dir):
                kill(process, output_dir)
                break
            time.sleep(0.003)
        else:
            assert process.returncode == 0, output_of(output_dir)
            return hit  # completed
        hit.append(moment)
    raise AssertionError("unreachable: the last launch has no moment to be killed at")


def final_weights(output_dir: Path) -> dict:
    return load_file(str(output_dir / "final" / "model.safetensors"))


@pytest.mark.slow
@pytest.mark.parametrize("processes", [1, 2, "fsdp"])
def test_killed_at_random_moments_and_resumed_ends_bit_identical(processes, tmp_path):
    seed = int(os.environ.get("HF_VANILLA_KILL_SEED", time.time_ns() % 10_000))
    random.seed(seed)
    straight = tmp_path / "straight"
    assert run_killed_at(straight, processes, []) == []
    moments = list(MOMENTS) + random.sample(list(MOMENTS)[1:3], 2)
    interrupted = tmp_path / "interrupted"
    hit = run_killed_at(interrupted, processes, moments)
    print(f"\n{processes} process(es), seed {seed}: {len(hit)} kills, at: {'; '.join(hit)}")
    assert len(hit) >= 3, hit
    reference, resumed = final_weights(straight), final_weights(interrupted)
    assert reference.keys() == resumed.keys()
    for name, tensor in reference.items():
        assert (tensor == resumed[name]).all(), name  # bit-identical
    results = [json.loads((folder / "results.json").read_text()) for folder in (straight, interrupted)]
    assert results[0]["sacrebleu"] == results[1]["sacrebleu"] and results[0]["steps"] == results[1]["steps"]
    assert results[0]["distributed_type"] == (
        "FSDP" if processes == "fsdp" else "NO" if processes == 1 else "MULTI_CPU"
    )


@pytest.mark.slow
def test_fsdp_training_computes_what_ddp_computes(tmp_path):
    """The same run with the model sharded by FSDP2 and replicated by DDP (2 processes each): the same updates up
    to floating-point order."""
    runs = {kind: tmp_path / str(kind) for kind in ("fsdp", 2)}
    for kind, folder in runs.items():
        run_killed_at(folder, kind, [])
    sharded, replicated = final_weights(runs["fsdp"]), final_weights(runs[2])
    for name, tensor in replicated.items():
        torch.testing.assert_close(sharded[name], tensor, rtol=1e-4, atol=1e-5, msg=name)
    logs = [
        [json.loads(line) for line in (folder / "train_log.jsonl").read_text().splitlines()]
        for folder in runs.values()
    ]
    losses = [[entry["loss"] for entry in log if "loss" in entry] for log in logs]
    assert losses[0] == pytest.approx(losses[1], abs=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_saves_at_the_next_update_and_exits_cleanly(stop, tmp_path):
    output_dir = tmp_path / "run"
    log = tmp_path / "run.log"
    process = tiny_recipe(
        output_dir,
        "--eval-sentences",
        "2",
        "--num-beams",
        "1",
        "--log-every",
        "1",
        "--max-steps",
        "1000",
        "--save-every",
        "1000",
    )
    deadline = time.monotonic() + 600
    while logged_updates(output_dir) < 2 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.01)
    sent = time.monotonic()
    process.send_signal(stop)
    process.wait(timeout=120)
    stderr = log.read_text()
    print(f"\n{stop.name}: exited {time.monotonic() - sent:.1f} s after the signal")
    assert process.returncode == 0, stderr[-3000:]
    assert f"{stop.name} received: stopped after update" in stderr and "--resume" in stderr
    (checkpoint,) = output_dir.glob("checkpoint-*")
    step = json.loads((checkpoint / "trainer_state.json").read_text())["step"]
    assert 2 <= step < 1000 and step == logged_updates(output_dir)
    assert not (output_dir / "results.json").exists()  # a preempted run stops; --resume finishes it


def processes_of(output_dir: Path) -> list[int]:
    """The process ids whose command line names `output_dir` (the launcher and its training processes)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if str(output_dir).encode() in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
        except (OSError, ValueError):
            pass
    return found


@pytest.mark.slow
@pytest.mark.parametrize("processes", [1, 2])
def test_a_stop_signal_to_the_launcher_alone_reaches_every_training_process(processes, tmp_path):
    """SIGTERM to `accelerate launch` only (what `timeout` and schedulers send), not to its process group: every
    training process saves its checkpoint and exits (before, the single process trained on, orphaned)."""
    output_dir = tmp_path / "run"
    command = [*LAUNCHERS[processes], str(RECIPES / "wmt_ende.py"), *recipe_flags(output_dir)]
    command += ["--max-steps", "100000", "--save-every", "100000"]
    with (tmp_path / "run.log").open("w") as handle:
        launcher = subprocess.Popen(
            command, stdout=handle, stderr=subprocess.STDOUT, env=environment(), start_new_session=True
        )
    try:
        deadline = time.monotonic() + 600
        while logged_updates(output_dir) < 2 and time.monotonic() < deadline and launcher.poll() is None:
            time.sleep(0.05)
        assert logged_updates(output_dir) >= 2, output_of(output_dir)
        launcher.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 120
        while processes_of(output_dir) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = processes_of(output_dir)
        assert not left, f"{left} still running 120 s after the launcher's SIGTERM\n{output_of(output_dir)}"
    finally:
        kill(launcher, output_dir)
    (checkpoint,) = output_dir.glob("checkpoint-*")
    step = json.loads((checkpoint / "trainer_state.json").read_text())["step"]
    assert 2 <= step < 100000 and "SIGTERM received: stopped after update" in output_of(output_dir)


# The README's launch commands: `--quiet` leaves a failed process's one line without the launcher's traceback.
QUIET_LAUNCHERS = {
    1: ["accelerate", "launch", "--quiet", "--cpu", "--num_processes", "1"],
    2: ["accelerate", "launch", "--quiet", "--multi_gpu", "--num_processes", "2"],
}


def signalled_when(output_dir: Path, processes: int, ready, stop: signal.Signals, flags=()) -> tuple[int, str]:
    """The recipe under the README's launcher, sent `stop` once `ready(its output)` holds: to its training process
    alone with one process (the launcher's own reaction to Ctrl-C is Accelerate's, docs/guarantees.md), to the
    launcher's process group with two (torchrun forwards it to its workers, which live in sessions of their own).
    Returns the launcher's exit status and the output written after the signal."""
    command = [*QUIET_LAUNCHERS[processes], str(RECIPES / "wmt_ende.py"), *recipe_flags(output_dir), *flags]
    log = output_dir.parent / f"{output_dir.name}.log"
    with log.open("w") as handle:
        launcher = subprocess.Popen(command, stdout=handle, stderr=handle, env=environment(), start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while not ready(log.read_text()) and launcher.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert launcher.poll() is None, f"the run ended before the moment\n{log.read_text()[-3000:]}"
        sent_at = len(log.read_text())
        if processes == 1:
            for pid in processes_of(output_dir):
                if pid != launcher.pid:
                    try:
                        os.kill(pid, stop)
                    except ProcessLookupError:  # a short-lived helper process, gone meanwhile
                        pass
        else:
            os.killpg(launcher.pid, stop)
        launcher.wait(timeout=120)
    finally:
        kill(launcher, output_dir)
    return launcher.returncode, log.read_text()[sent_at:]


@pytest.mark.slow
@pytest.mark.parametrize("processes", [1, 2])
def test_a_signal_during_the_final_decoding_writes_no_results_and_resume_finishes(processes, tmp_path):
    output_dir = tmp_path / "run"
    flags = ["--max-steps", "4", "--save-every", "2", "--eval-sentences", "50", "--num-beams", "4"]
    status, after = signalled_when(output_dir, processes, lambda text: "decoding:" in text, signal.SIGINT, flags)
    lines = [line for line in after.splitlines() if "SIGINT received" in line]
    assert lines == [
        "wmt_ende: SIGINT received: stopped during the final evaluation, no results written; run the same command "
        f"with --resume to average (if due) and evaluate the trained model, or score {output_dir}/final with "
        f"--eval-only --init-from {output_dir}/final --output-dir {output_dir}-eval"
    ], after
    assert status != 0
    if processes == 1:
        assert "Traceback" not in after, after  # the training process's line, and the quiet launcher's nothing
    else:  # no process failed on a collective another left: the only traceback is torchrun's for its signal
        assert "[rank" not in after and after.count("Traceback") == 1 and "SignalException" in after, after
    assert not (output_dir / "results.json").exists() and not (output_dir / "samples.jsonl").exists()
    assert (output_dir / "final" / "model.safetensors").is_file()
    finished = subprocess.run(
        [*QUIET_LAUNCHERS[processes], str(RECIPES / "wmt_ende.py"), *recipe_flags(output_dir), *flags, "--resume"],
        capture_output=True,
        text=True,
        env=environment(),
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert json.loads((output_dir / "results.json").read_text())["steps"] == 4


@pytest.mark.slow
@pytest.mark.parametrize("processes", [1, 2])
def test_a_signal_before_training_ends_in_one_line_and_the_same_command_runs_again(processes, tmp_path):
    output_dir = tmp_path / "run"
    status, after = signalled_when(output_dir, processes, lambda text: "Moses detokenization" in text, signal.SIGTERM)
    assert status == 1 and after.count("wmt_ende: SIGTERM received") == 1, after
    if processes == 1:
        assert "Traceback" not in after, after
    else:  # torchrun's own traceback for the signal it received, and none from a training process
        assert "[rank" not in after and after.count("Traceback") == 1 and "SignalException" in after, after
    assert (
        "wmt_ende: SIGTERM received: stopped before training, nothing to resume yet: run the same command "
        "again" in after
    )
    from hf_vanilla.training.run_folder import check_run_folder

    check_run_folder(output_dir, resume=False, overwrite=False)  # not refused as another run


@pytest.mark.slow
@pytest.mark.parametrize(
    "flags, message",
    [
        (["--preset", "dmo"], "wmt_ende: --preset must be one of"),
        (["--max-stps", "3"], "error: unrecognized arguments: --max-stps 3 (did you mean --max-steps?)"),
        (["--vocab-size", "1200"], "holds a tokenizer trained for other data"),  # not the first run's vocabulary
    ],
)
def test_a_recipe_error_under_the_readme_launcher_ends_in_at_most_three_lines(flags, message, tmp_path):
    output_dir = tmp_path / "run"
    if "--vocab-size" in flags:
        first = subprocess.run(
            [
                *QUIET_LAUNCHERS[1],
                str(RECIPES / "wmt_ende.py"),
                *recipe_flags(output_dir),
                "--max-steps",
                "1",
                "--save-every",
                "1",
                "--eval-sentences",
                "1",
                "--num-beams",
                "1",
            ],
            capture_output=True,
            text=True,
            env=environment(),
        )
        assert first.returncode == 0, first.stderr[-2000:]
        flags = [*flags, "--resume"]
    failed = subprocess.run(
        [*QUIET_LAUNCHERS[1], str(RECIPES / "wmt_ende.py"), *recipe_flags(output_dir), *flags],
        capture_output=True,
        text=True,
        env=environment(),
    )
    assert failed.returncode == 1 and "Traceback" not in failed.stderr, failed.stderr
    ending = error_ending(failed.stderr)
    assert len(ending) <= 3 and message in ending[-1], ending


def error_ending(stderr: str) -> list[str]:
    """The lines after the last progress bar, log line or Accelerate's notice of the launch settings it defaulted."""
    lines = [line for line in re.split(r"[\r\n]", stderr) if line.strip()]
    chatter = re.compile(r"%\||^\d\d:\d\d:\d\d (INFO|WARNING) |^The following values were not passed|^\t|^To avoid")
    last = max((index for index, line in enumerate(lines) if chatter.search(line)), default=-1)
    return lines[last + 1 :]
