"""The systems a comparison runs: the peers (`PEERS`: each one's environment, its side of the settings table, its run
and the tasks it runs; a peer's labelled variant of its own defaults is a system of its own), hf_vanilla's recipe and
its CTranslate2 export (`CT2`), and the run of a peer (`run_peer`: its environment made or reused, the task's splits
exported, the peer run and scored)."""

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.peers.common.jobs import PeerJob, PeerRun
from benchmarks.peers.common.pieces import text_from_pieces
from benchmarks.peers.common.settings import Row, render
from benchmarks.peers.common.venvs import ensure_venv, install_line
from benchmarks.peers.fairseq.runner import fairseq_table, run_fairseq
from benchmarks.peers.opennmt.runner import opennmt_table, run_opennmt
from benchmarks.peers.sockeye.runner import run_sockeye
from benchmarks.peers.sockeye.translation_table import sockeye_rows
from benchmarks.peers.tasks import TASKS, split_system


@dataclass(frozen=True)
class Peer:
    """A peer toolkit: its environment's name (`venvs.INSTALL`), its side of the settings table (for the
    settings of any task it runs: `settings["task"]`), its run, the tasks it runs, and what it sets over the task's
    settings (`settings`: none for the peer in its own defaults; a labelled variant's departure from them, such as
    `opennmt-py-force-copy`, read by the peer's table and flags)."""

    venv: str
    rows: Callable[[dict], list[Row]]
    run: Callable[[PeerJob], PeerRun]
    tasks: tuple[str, ...] = ("translation",)
    settings: dict = field(default_factory=dict)


PEERS = {
    "fairseq": Peer("fairseq", fairseq_table, run_fairseq, ("translation", "summarization", "parsing")),
    "opennmt-py": Peer("opennmt", opennmt_table, run_opennmt, ("translation", "summarization")),
    "sockeye": Peer("sockeye", sockeye_rows, run_sockeye),
    # Labelled variants of a peer's own defaults: OpenNMT-py's copy model with copy_attn_force (the recipe's
    # force_copy; OpenNMT-py's default and its Summarization example leave it off), Sockeye post-norm (the paper's
    # layer order; Sockeye's default is pre-norm with a final norm).
    "opennmt-py-force-copy": Peer(
        "opennmt", opennmt_table, run_opennmt, ("summarization",), settings={"peer_force_copy": True}
    ),
    "sockeye-post-norm": Peer("sockeye", sockeye_rows, run_sockeye, settings={"peer_post_norm": True}),
}


CT2 = "hf_vanilla-ct2"  # the CTranslate2 export of the hf_vanilla run of the same seed (and variant), in its own row


READY = ("hf_vanilla", CT2, *PEERS)  # the systems a comparison runs


def exported_system(system: str) -> str:
    """The hf_vanilla system (of the same variant) whose run a CTranslate2 system exports."""
    return "hf_vanilla" + split_system(system)[1]


def run_peer(args: argparse.Namespace, settings: dict, work: Path) -> dict:
    """Exports the task's splits, runs the peer, scores it; the record's figures."""
    task, peer = TASKS[args.task], PEERS[split_system(args.system)[0]]
    bin_folder = ensure_venv(peer.venv, args.venvs)
    exported, tokenizer = task.export(settings, work, args)
    job = PeerJob(exported.folder, work / args.system, bin_folder, settings, args.seed, args.threads,
                  exported.counts["test"], exported.tokens["train"], args.task, task.sides)  # fmt: skip
    done = peer.run(job)
    hypotheses = [text_from_pieces(line, tokenizer) for line in done.hypotheses]
    job.work.mkdir(parents=True, exist_ok=True)
    (job.work / "hypotheses.txt").write_text("".join(h + "\n" for h in hypotheses), encoding="utf-8")
    rows = peer.rows(settings)
    return {
        **task.score(hypotheses, exported.folder),
        "train_tokens_per_s": done.train_tokens_per_s,
        "train_tokens_per_s_basis": done.train_tokens_basis,
        "decode_sentences_per_s": done.decode_sentences_per_s,
        "train_s": round(done.train_seconds, 1),
        "decode_s": round(done.decode_seconds, 1),
        "train_stats": done.train_stats,
        "averaged_checkpoints": done.averaged,
        "data": {"pairs": exported.counts, "tokens": exported.tokens, "train_dropped": exported.dropped}
        | exported.details,
        "install": install_line(peer.venv),
        "peer_commands": done.commands,
        "settings_table": render(rows, args.system),
        "rows": rows,
    }
