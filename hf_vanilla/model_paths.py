"""Whether a model name is a path on this machine or a Hub id, and what is wrong with a path before anything is
loaded. Standard library only: the console script (`hf_vanilla_cli`) reads this file without importing the package
(torch and transformers take seconds), so that a model that is not there is refused at once, in one line, instead of
after the Hub's retries."""

import re
from pathlib import Path

# The name of each checkpoint folder a run writes begins with this (`training.checkpoints`, which reads it here).
CHECKPOINT_PREFIX = "checkpoint-"
# A string that could name a Hub repository: "name" or "owner/name" (letters, digits, "-", "_", ".").
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def is_local_path(name: str) -> bool:
    """True when `name` can only be meant as a path here: it exists, starts with ".", "/" or "~", cannot be a Hub
    id, or its first folder exists here (`runs/base` with a `runs/` folder beside you is a run, not the Hub user
    "runs"). Other names ("owner/name" with no folder "owner" here, or one word) may be Hub ids."""
    path = Path(name)
    if path.exists() or name.startswith((".", "/", "~")) or not HUB_ID.match(name):
        return True
    return len(path.parts) > 1 and Path(path.parts[0]).is_dir()


def model_path_problem(name: str) -> str | None:
    """What keeps `name` from being a model folder, in the user's words, or None: a local path that does not exist
    ("no model at PATH (no such folder)"), a run folder given for its model ("RUN is a run folder; its model is
    RUN/final"), a folder without a model's config.json, a file. None also for a name left to the Hub
    (`is_local_path`)."""
    path = Path(name)
    if path.is_dir():
        if (path / "config.json").is_file():
            return None
        for inner in ("final", "best"):
            if (path / inner / "config.json").is_file():
                return f"{name} is a run folder; its model is {path / inner}"
        return f"no model at {name} (the folder holds no config.json)"
    if path.exists():
        return f"no model at {name} (a file, not a model folder)"
    if not is_local_path(name):
        return None
    if name.startswith("~") and path.expanduser().exists():
        return f"no model at {name} (~ is not expanded here: give the path as {path.expanduser()})"
    return f"no model at {name} (no such folder)"


def folder_problem(name: str) -> str | None:
    """The line "no folder NAME" when `name` (always a path here: a recipe's output folder) is no folder; else None."""
    return None if Path(name).is_dir() else f"no folder {name}"


def checkpoints_problem(run_dir: str) -> str | None:
    """The line saying that `run_dir` (a recipe's output folder, for `average-checkpoints`) is no folder or holds no
    checkpoint folder at all, or None (whether they are complete is checked when they are read)."""
    if not Path(run_dir).is_dir():
        return f"no folder {run_dir}"
    if not any(path.is_dir() for path in Path(run_dir).glob(f"{CHECKPOINT_PREFIX}*")):
        return f"no checkpoint in {run_dir} (no {CHECKPOINT_PREFIX}* folders)"
    return None
