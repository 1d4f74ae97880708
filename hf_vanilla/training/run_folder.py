"""A run folder holds one run. `claim_run_folder` decides, before anything is written, whether a run may use
OUTPUT_DIR: a fresh run refuses a folder that holds another run's checkpoints, logs, results or model unless
--overwrite-output-dir (which first removes them) or --resume (which continues that run) is given. The run's id, in
OUTPUT_DIR/run.json, is written into the manifest of each checkpoint it saves, and averaging, resuming and the final
model read only the checkpoints of the run being finished (`RunFolder.owns`)."""

import json
import shutil
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..errors import error_line
from .checkpoints import PREFIX, checkpoint_run
from .preflight import PreflightError

RUN_FILE = "run.json"
# What a run writes in its folder (besides cache/, the encoded splits, named by their content and reusable by any
# run). Their presence means the folder holds a run; --overwrite-output-dir removes them and nothing else.
RUN_FILES = (
    RUN_FILE,
    "train_log.jsonl",
    "results.json",
    "samples.jsonl",
    "predictions.mrg",
    "predictions.jsonl",
    "README.md",
    "final",
    "best",
    "hub",
    "tokenizer",
    ".tmp-final",
)
# The files and folders (with checkpoints) that show a folder holds a run; a tokenizer (reused when its record
# matches) or the record of a run stopped before its first update does not.
RUN_MARKERS = ("train_log.jsonl", "results.json", "final", "best")


@dataclass(frozen=True)
class RunFolder:
    """The run writing OUTPUT_DIR: its id, and whether it also owns checkpoints whose manifest names no run (written
    before runs had ids: a --resume of such a folder adopts them)."""

    run_id: str
    adopts_unmarked: bool = False

    def owns(self, checkpoint: Path) -> bool:
        """Whether `checkpoint`'s manifest says this run wrote it."""
        writer = checkpoint_run(checkpoint)
        return writer == self.run_id or (writer is None and self.adopts_unmarked)


def prior_run(output_dir: Path) -> list[str]:
    """The names in `output_dir` that show it holds a run (checkpoints, log, results, final or best model)."""
    output_dir = Path(output_dir)
    if not output_dir.is_dir():
        return []
    found = sorted(p.name for p in output_dir.glob(f"{PREFIX}*")) + sorted(
        p.name for p in output_dir.glob(f".tmp-{PREFIX}*")
    )
    return [name for name in RUN_MARKERS if (output_dir / name).exists()] + found


def check_run_folder(output_dir: Path, resume: bool, overwrite: bool, init_from: str | None = None) -> None:
    """Refuses, in one line before anything is read or written, a fresh run into a folder that holds another run
    (`prior_run`), unless --resume or --overwrite-output-dir says what to do with it; and --overwrite-output-dir
    where it would remove --init-from's model."""
    if overwrite and init_from is not None and Path(init_from).exists():
        model, folder = Path(init_from).resolve(), Path(output_dir).resolve()
        if model == folder or folder in model.parents:
            raise PreflightError(
                f"--overwrite-output-dir would remove --init-from's model {init_from}: give another --output-dir"
            )
    found = prior_run(output_dir)
    if found and not resume and not overwrite:
        shown = ", ".join(found[:4]) + (f" and {len(found) - 4} more" if len(found) > 4 else "")
        raise PreflightError(
            f"{output_dir} holds another run ({shown}): give --resume to continue it, --overwrite-output-dir to "
            "replace it, or another --output-dir"
        )


def claim_run_folder(output_dir: Path, recipe: str, resume: bool, overwrite: bool, command: str) -> RunFolder:
    """The run's `RunFolder` (main process only): with --resume, the folder's run (one written before runs had ids is
    given one, and adopts the checkpoints that name no run); otherwise a new run, the old run's files removed first
    with --overwrite-output-dir (`RUN_FILES` and checkpoints; nothing else). Writes OUTPUT_DIR/run.json."""
    output_dir = Path(output_dir)
    if resume and (output_dir / RUN_FILE).is_file():
        try:
            return recorded_run(output_dir)
        except (OSError, ValueError, KeyError) as error:
            raise PreflightError(f"--resume: {output_dir / RUN_FILE} is unreadable ({error})") from error
    adopts = resume and any(output_dir.glob(f"{PREFIX}*"))
    try:
        if overwrite:
            remove_run(output_dir)
        run = RunFolder(uuid.uuid4().hex, adopts_unmarked=adopts)
        write_record(output_dir / RUN_FILE, run, recipe, command)
    except OSError as error:
        raise PreflightError(f"cannot prepare the output folder {output_dir}: {error_line(error)}") from error
    return run


def recorded_run(output_dir: Path) -> RunFolder | None:
    """The run that OUTPUT_DIR/run.json names (None without the file); an unreadable record raises."""
    record_file = Path(output_dir) / RUN_FILE
    if not record_file.is_file():
        return None
    record = json.loads(record_file.read_text())
    return RunFolder(record["run_id"], record.get("adopts_unmarked_checkpoints", False))


def write_record(record_file: Path, run: RunFolder, recipe: str, command: str) -> None:
    """OUTPUT_DIR/run.json: the run's id, recipe, start and command, written whole or not at all."""
    record = {
        "run_id": run.run_id,
        "recipe": recipe,
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "adopts_unmarked_checkpoints": run.adopts_unmarked,
    }
    record_file.parent.mkdir(parents=True, exist_ok=True)
    temporary = record_file.with_name(f".tmp-{RUN_FILE}")
    temporary.write_text(json.dumps(record, indent=1))
    temporary.replace(record_file)


def remove_run(output_dir: Path) -> None:
    """Removes what a run wrote in `output_dir` (`RUN_FILES`, checkpoints and unfinished checkpoints); files it did
    not write stay."""
    for path in [
        *(output_dir / name for name in RUN_FILES),
        *output_dir.glob(f"{PREFIX}*"),
        *output_dir.glob(f".tmp-{PREFIX}*"),
    ]:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
