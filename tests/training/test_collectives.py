"""A failure on one process stops every process with the same one line (`agreed_failure`), never leaving the others
waiting in a collective: with 2 gloo processes under torchrun, the main process alone fails in averaging the last
checkpoints, in preparing the tokenizer folder and (slow: a whole short run) in the upload at the end of the recipe;
both processes must end, each with the same error, the first one printing it in one line without a traceback."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from accelerate import Accelerator

from hf_vanilla.training.collectives import StepError, agreed_failure

from runs import tiny_recipe_flags

TESTS = Path(__file__).resolve().parents[1]


def launch(scenario: str, output_dir: Path, *flags: str) -> subprocess.CompletedProcess:
    """tests/failing_on_main.py under torchrun with 2 processes; a hang fails the test at the timeout."""
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",  # a free port
        "--nproc_per_node",
        "2",
        str(TESTS / "failing_on_main.py"),
        scenario,
        str(output_dir),
        *flags,
    ]
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "HF_TOKEN": "", "HF_HOME": str(output_dir.parent / "hf")}
    return subprocess.run(command, capture_output=True, text=True, env=environment, timeout=600)


def assert_agreed(done: subprocess.CompletedProcess, output_dir: Path, name: str, error: str, start: str) -> str:
    """Both processes stopped with `error` and the same message starting with `start`, printed once, in one line,
    by the first process as `name: message`; returns the message."""
    assert done.returncode != 0, done.stderr[-3000:]
    stopped = [json.loads((output_dir / f"stopped-{rank}.json").read_text()) for rank in (0, 1)]
    assert stopped[0] == stopped[1], stopped  # the same error on both: neither was killed waiting
    assert stopped[0]["type"] == error and stopped[0]["message"].startswith(start), stopped[0]
    message = stopped[0]["message"]
    assert "\n" not in message
    assert done.stderr.count(f"{name}: {message}\n") == 1, done.stderr[-3000:]
    # No process shows a traceback (torchrun's own report of the failed workers follows their output).
    assert not re.search(r'File "[^"]*(hf_vanilla|recipes|failing_on_main)', done.stderr), done.stderr[-3000:]
    return message


def test_a_failed_average_on_the_main_process_stops_both(tmp_path):
    output_dir = tmp_path / "run"
    done = launch("average", output_dir)
    message = assert_agreed(
        done, output_dir, "worker", "CheckpointError", f"could not average the last checkpoints into {output_dir}"
    )
    assert "checkpoint-00000002/model/model.safetensors not found" in message


def test_a_tokenizer_folder_holding_other_files_stops_both(tmp_path):
    output_dir = tmp_path / "run"
    done = launch("tokenizer", output_dir)
    assert_agreed(
        done, output_dir, "worker", "TokenizerMismatch", f"{output_dir / 'tokenizer'} holds files but no tokenizer"
    )
    assert not (output_dir / ".tmp-tokenizer").exists()


@pytest.mark.slow
def test_a_failed_upload_at_the_end_of_a_run_stops_both(tmp_path):
    output_dir = tmp_path / "run"
    flags = tiny_recipe_flags(output_dir, "--max-steps", "2", "--eval-sentences", "2", "--num-beams", "1")
    done = launch("publish", output_dir, *flags, "--push-to-hub", "someone/tiny")
    assert_agreed(done, output_dir, "wmt_ende", "StepError", "could not finish the run: No Hugging Face token")
    assert json.loads((output_dir / "results.json").read_text())["num_processes"] == 2  # the run itself finished


def test_an_unexpected_error_keeps_its_traceback_on_its_own_process():
    """With one process, an exception of a type the block does not expect is raised as it is; an expected one
    becomes the agreed type with the block's description."""
    accelerator = Accelerator(cpu=True)
    with pytest.raises(KeyError):
        with agreed_failure(accelerator, StepError, "writing", catch=(OSError,)):
            raise KeyError("x")
    with pytest.raises(StepError, match="^writing: No space left on device: /out/log$") as error:
        with agreed_failure(accelerator, StepError, "writing", catch=(OSError,)):
            raise OSError(28, "No space left on device", "/out/log")
    assert isinstance(error.value.__cause__, OSError)
    with agreed_failure(accelerator, StepError, "writing"):
        pass
