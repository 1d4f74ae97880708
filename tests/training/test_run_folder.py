"""A run folder holds one run: a second run into it is refused unless --resume or --overwrite-output-dir says what to
do; --overwrite-output-dir starts clean; averaging, resuming and the final model read only the run's own
checkpoints (their manifests name the run that wrote them)."""

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file

from hf_vanilla.training.checkpoints import MANIFEST, latest_valid_checkpoint, list_checkpoints
from hf_vanilla.training.preflight import PreflightError
from hf_vanilla.training.run_folder import RUN_FILE, RunFolder, check_run_folder, claim_run_folder, remove_run

from runs import recipe, run_loop, wmt_args


def tiny_run(output_dir, **overrides) -> dict:
    """The translation recipe, in process: the tiny model on the shared WMT sample, a checkpoint every 2 updates."""
    settings = dict(preset="tiny", max_steps=4, save_every=2, keep_last=3, average_last=3, max_tokens=400)
    return recipe("wmt_ende").main(wmt_args(output_dir, **{**settings, **overrides}))


def weights(folder) -> dict[str, torch.Tensor]:
    return load_file(str(folder / "model.safetensors"))


def test_a_second_run_into_a_run_folder_is_refused_and_overwrite_starts_clean(tmp_path):
    """Issue 45's first case: a 2-update run into the folder of a finished 4-update run reported steps 2 and saved the
    average of the old run's checkpoints as its model."""
    folder = tmp_path / "run"
    tiny_run(folder)
    old_final = weights(folder / "final")
    old_log = (folder / "train_log.jsonl").read_text()
    with pytest.raises(PreflightError, match=r"holds another run .*--resume.*--overwrite-output-dir"):
        tiny_run(folder, max_steps=2)
    assert (folder / "train_log.jsonl").read_text() == old_log  # refused before anything was written
    assert all(torch.equal(t, weights(folder / "final")[n]) for n, t in old_final.items())

    results = tiny_run(folder, max_steps=2, overwrite_output_dir=True)
    assert results["steps"] == 2 and results["averaged_checkpoints"] == ["checkpoint-00000002"]
    assert [p.name for p in list_checkpoints(folder)] == ["checkpoint-00000002"]
    steps = [json.loads(line)["step"] for line in (folder / "train_log.jsonl").read_text().splitlines()]
    assert max(steps) == 2
    # The final model is this run's one checkpoint (an average of one), not the old run's average.
    new_final, checkpoint = weights(folder / "final"), weights(folder / "checkpoint-00000002" / "model")
    assert all(torch.equal(tensor, checkpoint[name]) for name, tensor in new_final.items())
    assert not all(torch.equal(tensor, new_final[name]) for name, tensor in old_final.items())


def test_the_final_average_and_resume_read_only_the_runs_own_checkpoints(tmp_path):
    """A checkpoint written by another run (its manifest says so), newer than the run's own, is neither resumed from
    nor averaged."""
    folder = tmp_path / "run"
    tiny_run(folder)
    run = RunFolder(json.loads((folder / RUN_FILE).read_text())["run_id"])
    foreign = folder / "checkpoint-00000008"
    shutil.copytree(folder / "checkpoint-00000004", foreign)
    manifest = json.loads((foreign / MANIFEST).read_text())
    (foreign / MANIFEST).write_text(json.dumps({**manifest, "run": "another-run"}))
    assert [p.name for p in list_checkpoints(folder, run.owns)] == ["checkpoint-00000002", "checkpoint-00000004"]
    assert latest_valid_checkpoint(folder, owned=run.owns).name == "checkpoint-00000004"
    assert latest_valid_checkpoint(folder).name == "checkpoint-00000008"  # what a run without its id would take

    results = tiny_run(folder, resume=True)
    assert results["steps"] == 4  # resumed at its own update 4, not the foreign 8
    assert results["averaged_checkpoints"] == ["checkpoint-00000002", "checkpoint-00000004"]


def test_a_resumed_folder_from_before_run_ids_adopts_its_unmarked_checkpoints(tmp_path):
    output_dir, _ = tmp_path / "loop", None
    run_loop(output_dir, max_steps=4)  # the loop alone: checkpoints whose manifest names no run
    assert json.loads((output_dir / "checkpoint-00000004" / MANIFEST).read_text())["run"] is None
    run = claim_run_folder(output_dir, "test", resume=True, overwrite=False, command="test")
    assert run.adopts_unmarked and run.owns(output_dir / "checkpoint-00000004")
    again = claim_run_folder(output_dir, "test", resume=True, overwrite=False, command="test")
    assert again == run  # the record in run.json is the run's from now on
    fresh = RunFolder("other")
    assert not fresh.owns(output_dir / "checkpoint-00000004")


def test_overwrite_removes_only_what_a_run_writes(tmp_path):
    folder = tmp_path / "run"
    for name in ("checkpoint-00000002/model", "final", "best", "tokenizer", ".tmp-checkpoint-00000004", "cache"):
        (folder / name).mkdir(parents=True)
    for name in ("train_log.jsonl", "results.json", "samples.jsonl", "README.md", "notes.txt", "cache/a.arrow"):
        (folder / name).write_text("x")
    with pytest.raises(PreflightError, match="holds another run"):
        check_run_folder(folder, resume=False, overwrite=False)
    check_run_folder(folder, resume=True, overwrite=False)
    check_run_folder(folder, resume=False, overwrite=True)
    remove_run(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["cache", "notes.txt"]
    check_run_folder(folder, resume=False, overwrite=False)  # encoded splits (reusable) and others' files: no run
    check_run_folder(tmp_path / "absent", resume=False, overwrite=False)
    (folder / "final").mkdir()
    with pytest.raises(PreflightError, match="--overwrite-output-dir would remove --init-from's model"):
        check_run_folder(folder, resume=False, overwrite=True, init_from=str(folder / "final"))
    check_run_folder(folder, resume=False, overwrite=True, init_from=str(tmp_path))  # a folder above it: untouched


def test_resume_and_overwrite_together_are_refused_before_anything_runs(tmp_path):
    with pytest.raises(PreflightError, match="--resume .* --overwrite-output-dir .*: give one"):
        tiny_run(tmp_path / "run", resume=True, overwrite_output_dir=True)
    assert not (tmp_path / "run").exists()
