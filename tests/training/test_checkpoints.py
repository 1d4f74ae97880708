"""Checkpoints (`hf_vanilla.training.checkpoints`): averaging gives the mean; under faults, a corrupted or truncated
newest checkpoint is reported in one line and the previous one resumed (ending bit-identical to an uninterrupted
run), averaging refuses a corrupted input by name, and a save that fails for lack of space leaves the earlier
checkpoints intact and stops the run with one clear line."""

import errno
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from hf_vanilla import VanillaTransformerForConditionalGeneration
from hf_vanilla.training import checkpoints
from hf_vanilla.training.checkpoints import CheckpointError, average_checkpoints, list_checkpoints, verify_checkpoint

from runs import run_loop, tiny_model, tiny_recipe


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-10] ^= 0xFF
    path.write_bytes(bytes(data))


def bad_header(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(b"\xff" * 8 + data[8:])  # the header length no longer fits the file


CORRUPTIONS = {
    "truncated weights": (lambda c: truncate(c / "model" / "model.safetensors"), "model/model.safetensors has"),
    "a flipped byte in the optimizer state": (lambda c: flip_a_byte(c / "optimizer.safetensors"), "is corrupted"),
    "missing optimizer state": (lambda c: (c / "optimizer.safetensors").unlink(), "optimizer.safetensors is missing"),
    "a bad safetensors header": (lambda c: bad_header(c / "model" / "model.safetensors"), "is corrupted"),
    "no manifest": (lambda c: (c / "manifest.json").unlink(), "no readable manifest.json"),
}


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_a_corrupted_newest_checkpoint_is_reported_and_the_previous_one_resumed(corruption, tmp_path, caplog):
    _, straight = run_loop(tmp_path / "straight", 6)
    interrupted = tmp_path / "interrupted"
    run_loop(interrupted, 4)
    damage, message = CORRUPTIONS[corruption]
    damage(interrupted / "checkpoint-00000004")
    with pytest.raises(CheckpointError, match=message):
        verify_checkpoint(interrupted / "checkpoint-00000004")
    with caplog.at_level("WARNING"):
        result, resumed = run_loop(interrupted, 6, resume=True)
    skipped = [r.getMessage() for r in caplog.records if "skipping checkpoint" in r.getMessage()]
    assert len(skipped) == 1 and "checkpoint-00000004" in skipped[0] and "\n" not in skipped[0], skipped
    assert result.steps == 6
    for (name, a), b in zip(straight.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name  # bit-identical, from checkpoint 2


@pytest.mark.parametrize("damage", [truncate, flip_a_byte], ids=["truncated", "a flipped byte in a weight"])
def test_averaging_refuses_a_corrupted_checkpoint_by_name(tmp_path, damage):
    run_loop(tmp_path, 4)
    damage(tmp_path / "checkpoint-00000004" / "model" / "model.safetensors")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hf_vanilla_cli",
            "average-checkpoints",
            str(tmp_path),
            "--last",
            "2",
            "--output",
            str(tmp_path / "avg"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("hf-vanilla: ") and "checkpoint-00000004/model/model.safetensors" in line


def test_a_save_that_fails_for_lack_of_space_keeps_the_earlier_checkpoints(tmp_path, monkeypatch):
    run_loop(tmp_path, 2)
    before = {p: p.stat().st_size for p in (tmp_path / "checkpoint-00000002").rglob("*")}

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(checkpoints, "save_file", disk_full)
    with pytest.raises(CheckpointError) as error:
        run_loop(tmp_path, 4, resume=True)
    assert str(error.value) == (
        f"could not save checkpoint-00000004 in {tmp_path}: No space left on device; the checkpoints saved before "
        "are intact"
    )
    assert [p.name for p in list_checkpoints(tmp_path)] == ["checkpoint-00000002"]
    assert not list(tmp_path.glob(".tmp-*"))
    assert {p: p.stat().st_size for p in (tmp_path / "checkpoint-00000002").rglob("*")} == before
    verify_checkpoint(tmp_path / "checkpoint-00000002")


def test_a_run_keeps_only_its_newest_checkpoints(tmp_path):
    """--keep-last 2 over checkpoints at updates 2, 4 and 6: the older one goes once the newest is saved."""
    run_loop(tmp_path, 6, keep_last=2, average_last=2)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["checkpoint-00000004", "checkpoint-00000006"]


@pytest.mark.slow
def test_a_real_file_size_limit_stops_the_recipe_with_one_line(tmp_path):
    """RLIMIT_FSIZE set on the running recipe after its first checkpoint: the next file too large to write."""
    output_dir = tmp_path / "run"
    log = tmp_path / "run.log"
    process = tiny_recipe(output_dir, "--max-steps", "1000", "--save-every", "3", "--eval-every", "0")
    deadline = time.monotonic() + 600
    while not (output_dir / "checkpoint-00000003").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    resource.prlimit(process.pid, resource.RLIMIT_FSIZE, (100_000, 100_000))  # smaller than the weights
    try:
        process.wait(timeout=300)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
    lines = log.read_text().strip().splitlines()
    assert process.returncode == 1 and "Traceback" not in log.read_text(), lines[-20:]
    assert lines[-1].startswith("wmt_ende: could not save ") and "File too large" in lines[-1]
    assert lines[-1].endswith("the checkpoints saved before are intact")
    for checkpoint in list_checkpoints(output_dir):
        verify_checkpoint(checkpoint)
    assert json.loads((list_checkpoints(output_dir)[0] / "trainer_state.json").read_text())["step"] == 3


def test_averaging_checkpoints_gives_the_mean_and_a_loadable_model(tmp_path):
    folders = []
    for value in (1.0, 2.0, 6.0):
        model = tiny_model()
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.fill_(value)
        model.save_pretrained(tmp_path / f"m{value}")
        folders.append(tmp_path / f"m{value}")
    averaged = average_checkpoints(folders, tmp_path / "avg")
    weights = load_file(str(averaged / "model.safetensors"))
    assert all(torch.all(t == 3.0) for t in weights.values())
    loaded = VanillaTransformerForConditionalGeneration.from_pretrained(averaged)
    assert float(loaded.lm_head.weight.detach()[5, 5]) == 3.0
