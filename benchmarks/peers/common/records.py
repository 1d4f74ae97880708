"""One peer run's record: `benchmarks/results/peers-<task>-<system>-seed<S>-<date>.json`, one JSON object a run, under
the header every benchmark writes (`benchmarks.environment`)."""

import datetime
import json
import os
import re
import resource
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[2] / "results"
# The systems a record may name; a variant adds a suffix (`fairseq-no-copy`).
SYSTEMS = ("hf_vanilla", "fairseq", "opennmt-py", "sockeye", "supar")
# The keys every record holds; `quality` is {"metric": ..., "value": ...}.
REQUIRED = (
    "task",
    "system",
    "seed",
    "quality",
    "train_tokens_per_s",
    "decode_sentences_per_s",
    "wall_s",
    "peak_rss_mb",
    "environment",
    "device",
    "settings",
    "command",
)


def peak_child_rss_mb() -> float:
    """The largest resident set of any finished child process of this one (Linux reports KiB), in MiB."""
    return round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)


def peak_own_rss_mb() -> float:
    """The largest resident set of this process so far, in MiB."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def device(threads: int | None) -> dict:
    """What the run used of the machine (the record's `environment` names the machine): the CPU, on `threads` of its
    cores (None: the peer's default)."""
    return {"kind": "cpu", "threads": threads}


def machine_load(threads: int | None) -> dict:
    """The machine's load averages at the end of a run, and whether others shared its cores: the 15-minute load
    above the run's own threads (all cores when `threads` is None) by more than half a core. A shared run's quality
    stands; its speeds are no figure (`render_tables.verdict_block` leaves them out)."""
    one, five, fifteen = os.getloadavg()
    own = threads or os.cpu_count() or 1
    return {"load_average": [round(one, 2), round(five, 2), round(fifteen, 2)], "machine_shared": fifteen > own + 0.5}


def schema_problems(record: dict) -> list[str]:
    """What makes `record` not a peer record (empty when it is one)."""
    problems = [f"missing {key}" for key in REQUIRED if key not in record]
    if not known_system(record.get("system")):
        problems.append(f"system {record.get('system')!r} is none of {SYSTEMS} (or one with a variant's -suffix)")
    quality = record.get("quality")
    if not (isinstance(quality, dict) and set(quality) >= {"metric", "value"}):
        problems.append("quality must be {'metric': ..., 'value': ...}")
    for key in ("train_tokens_per_s", "decode_sentences_per_s", "wall_s", "peak_rss_mb"):
        if key in record and not (isinstance(record[key], int | float) and record[key] >= 0):
            problems.append(f"{key} must be a number of at least 0, got {record[key]!r}")
    if not isinstance(record.get("settings"), list) or not record.get("settings"):
        problems.append("settings must be the side-by-side table's rows")
    return problems


def known_system(system) -> bool:
    """Whether `system` is one of `SYSTEMS` or one of them with a variant's suffix (`fairseq-no-copy`)."""
    return isinstance(system, str) and any(system == s or system.startswith(s + "-") for s in SYSTEMS)


def tuned_suffix(settings: dict) -> str:
    """`-lr_scale<X>` for a run whose peer trained at `--peer-lr-scale X`, else ""."""
    scale = settings.get("peer_lr_scale")
    return f"-lr_scale{scale:g}" if scale else ""


def record_path(folder: Path, record: dict, day: datetime.date | None = None) -> Path:
    """`folder/peers-<task>-<system>[-lr_scale<X>]-seed<S>-<date>[-<cpu model>].json` (`tuned_suffix`; the CPU model
    where the record's environment names it, in lower case and dashes): a run again on the same machine and day
    replaces its record, a run on another machine has its own."""
    day = day or datetime.date.today()
    system = record["system"] + tuned_suffix(record.get("resolved_settings", {}))
    cpu_model = record.get("environment", {}).get("machine", {}).get("cpu_model") or ""
    model = re.sub(r"[^a-z0-9]+", "-", cpu_model.lower()).strip("-")
    name = f"peers-{record['task']}-{system}-seed{record['seed']}-{day.isoformat()}" + (f"-{model}" if model else "")
    return Path(folder) / f"{name}.json"


def write_record(record: dict, folder: Path = RESULTS) -> Path:
    """Writes `record` (checked by `schema_problems`) to `record_path` and returns the path."""
    problems = schema_problems(record)
    if problems:
        raise ValueError(f"not a peer record: {'; '.join(problems)}")
    path = record_path(folder, record)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n")
    return path
