"""What every peer run shares: the job it is given (`PeerJob`), what it gives back (`PeerRun`), its environment
variables and the logged subprocess each of its steps is."""

import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class PeerJob:
    """One peer run's inputs: the exported pieces (`translation.export_splits`), a folder of its own, the bin folder
    of its environment, the demo's settings (`translation.demo_settings`), the seed, its CPU threads (None: the
    peer's default), the test pairs it must decode (checked), the training split's tokens ({"source", "target"},
    </s> counted), the task (`tasks.TASKS`: translation unless said) and the suffixes of its exported files (source,
    target: `en`, `de` for translation)."""

    data: Path
    work: Path
    bin_folder: Path
    settings: dict
    seed: int
    threads: int | None
    test_pairs: int | None
    train_tokens: dict
    task: str = "translation"
    sides: tuple[str, str] = ("en", "de")


@dataclass
class PeerRun:
    """What a peer run produced: hypotheses in test order (pieces), and its timings and logged figures.
    `train_tokens_per_s` counts source and target tokens a second, as hf_vanilla's recipe does; `train_tokens_basis`
    says how it was derived from the peer's own log."""

    hypotheses: list[str]
    train_seconds: float
    train_tokens_per_s: float
    train_tokens_basis: str
    train_stats: dict
    decode_seconds: float
    decode_sentences_per_s: float
    averaged: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)


def environment(threads: int | None, **extra: str) -> dict:
    """The peer's environment variables: hf_vanilla's PYTHONPATH removed (the peer sees its own packages), `threads`
    capping its CPU threads, and `extra`."""
    env = dict(os.environ, **extra)
    env.pop("PYTHONPATH", None)
    if threads:
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    return env


def run_logged(command: list[str], log: Path, env: dict, commands: list[str]) -> float:
    """Runs `command` (appended to `commands`), its output to `log`; returns its seconds. A failure raises with the
    log's last lines."""
    commands.append(" ".join(command))
    start = time.perf_counter()
    with open(log, "w") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    seconds = time.perf_counter() - start
    if done.returncode:
        tail = "".join(log.read_text().splitlines(keepends=True)[-15:])
        raise RuntimeError(f"{command[0]} failed ({done.returncode}), see {log}:\n{tail}")
    return seconds


def newest_numbered(folder: Path, pattern: re.Pattern, count: int, tool: str) -> list[Path]:
    """The `count` files of `folder` whose names `pattern` matches with the highest update number (its group 1; 0,
    the untrained start some peers save, left out), oldest first: the checkpoints to average. Fewer raise."""
    found = sorted((int(m[1]), path) for path in folder.iterdir() if (m := pattern.fullmatch(path.name)) and int(m[1]))
    if len(found) < count:
        raise ValueError(f"{tool} left {len(found)} checkpoints in {folder}, {count} to average")
    return [path for _, path in found[-count:]]
