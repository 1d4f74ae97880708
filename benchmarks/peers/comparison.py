"""One run of the comparison: the preset's settings for the task and system (`run_settings`), the system run
(`run_system`: a peer, hf_vanilla's recipe or its CTranslate2 export), and its record written (`compare`)."""

import argparse
import sys
import time
from pathlib import Path

from benchmarks.environment import environment
from benchmarks.peers import PROGRAM
from benchmarks.peers.common.records import device, machine_load, peak_child_rss_mb, tuned_suffix, write_record
from benchmarks.peers.common.settings import Row, as_records, render
from benchmarks.peers.recipe.runs import run_ct2, run_hf_vanilla
from benchmarks.peers.systems import CT2, PEERS, exported_system, run_peer
from benchmarks.peers.tasks import TASKS, split_system


def run_settings(args: argparse.Namespace) -> dict:
    """The preset's settings for the task and system (its variant's: `-no-copy`, `-no-grammar`), with the short
    check's overrides and what a peer's labelled variant sets (`Peer.settings`: `opennmt-py-force-copy`,
    `sockeye-post-norm`); where these save fewer checkpoints than the preset averages, the average of those saved (as
    the recipe averages the newest it has; fairseq's averaging wants as many as it is told)."""
    overrides = dict(max_steps=args.max_updates, save_every=args.save_every, eval_every=args.eval_every)
    system, suffix = split_system(args.system)
    task, base = TASKS[args.task], not suffix
    settings = task.settings(args.preset, base, overrides)
    saved = settings["max_steps"] // settings["save_every"]
    if 0 < saved < settings["average_last"]:
        settings = task.settings(args.preset, base, {**overrides, "average_last": saved})
    settings = {**settings, **(PEERS[system].settings if system in PEERS else {})}
    return settings if args.peer_lr_scale is None else {**settings, "peer_lr_scale": args.peer_lr_scale}


def tuned_rows(settings: dict) -> list[Row]:
    """The rows of what was tuned for the peer (`--peer-lr-scale`), none where nothing was."""
    if not settings.get("peer_lr_scale"):
        return []
    return [
        Row(
            "learning rate tuned for the peer",
            f"lr_scale {settings['lr_scale']} (the preset's)",
            f"lr_scale {settings['peer_lr_scale']} (--peer-lr-scale)",
            "the preset's rate does not train this peer; the preset gives its own model without copying a rate of "
            "its own the same way (its `variants`)",
            matched=False,
        )
    ]


def short_check(args: argparse.Namespace) -> bool:
    """Whether the run departs from the preset's budget (its figures then are no benchmark)."""
    return any(v is not None for v in (args.max_updates, args.save_every, args.eval_every, args.test_limit))


def work_folder(args: argparse.Namespace, settings: dict) -> Path:
    """--work-dir, else /tmp/peers/TASK-SYSTEM-SEED; a CTranslate2 row's is that of the run it exports."""
    ct2 = split_system(args.system)[0] == CT2
    folder_system = (exported_system(args.system) if ct2 else args.system) + tuned_suffix(settings)
    return args.work_dir or Path("/tmp/peers") / f"{args.task}-{folder_system}-{args.seed}"


def compare(args: argparse.Namespace) -> dict:
    """Runs `args.system` on `args.task` (the command line's arguments) and writes its record; returns the record."""
    TASKS[args.task].prepare()
    settings = run_settings(args)
    work = work_folder(args, settings)
    work.mkdir(parents=True, exist_ok=True)
    system = split_system(args.system)[0]
    peer = PEERS.get(system, PEERS["fairseq"])  # hf_vanilla's run is shown against fairseq's flags
    print(
        render(peer.rows(settings) + tuned_rows(settings), args.system if system in PEERS else "fairseq"), flush=True
    )
    start = time.perf_counter()
    figures = run_system(args, settings, work)
    wall = figures.pop("wall_s", time.perf_counter() - start)
    peak_rss = figures.pop("peak_rss_mb", peak_child_rss_mb())
    rows = figures.pop("rows") + tuned_rows(settings)
    record = {
        "environment": environment(),
        "task": args.task,
        "system": args.system,
        "seed": args.seed,
        **figures,
        "wall_s": round(wall, 1),
        "peak_rss_mb": peak_rss,
        "device": device(args.threads),
        "short_check": short_check(args),
        **machine_load(args.threads),
        "settings": as_records(rows),
        "resolved_settings": {k: list(v) if isinstance(v, tuple) else v for k, v in settings.items()},
        "command": " ".join([Path(sys.executable).name, "-m", PROGRAM, *sys.argv[1:]]),
    }
    path = write_record(record, args.results_dir)
    quality = record["quality"]
    print(f"[peers] {args.system}: {quality['metric']} {quality['value']}, {record['wall_s']} s; record: {path}")
    return record


def run_system(args: argparse.Namespace, settings: dict, work: Path) -> dict:
    """The run of `args.system`."""
    system = split_system(args.system)[0]
    if system == "hf_vanilla":
        return run_hf_vanilla(args, settings, work)
    if system == CT2:
        return run_ct2(args, settings, work)
    return run_peer(args, settings, work)
