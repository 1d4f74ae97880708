"""hf_vanilla's own rows of the comparison: the task's recipe launched as its docs launch it (`run_hf_vanilla`, its
command `recipe_command`), and its CTranslate2 export decoded (`run_ct2`); each gives the record's figures as a peer's
run does."""

import argparse
import json
import os
import subprocess
import time
from pathlib import Path

from hf_vanilla.errors import user_exit

from benchmarks.peers import PROGRAM
from benchmarks.peers.common.records import peak_child_rss_mb, peak_own_rss_mb
from benchmarks.peers.common.settings import Row
from benchmarks.peers.recipe.ct2 import CT2_DIFFERENCES, decode_with_ct2
from benchmarks.peers.recipe.decoding import timed_decoding
from benchmarks.peers.systems import PEERS, exported_system
from benchmarks.peers.tasks import TASKS, split_system
from benchmarks.peers.translation import LANGUAGES, demo_corpus, translation_quality

REPOSITORY = Path(__file__).resolve().parents[3]


# The recipe's own figure counts its pauses, which a peer's may leave out: the comparison then errs against hf_vanilla.
RECIPE_TOKENS_BASIS = (
    "the recipe's source + target tokens (</s> included) / training seconds (its validation and checkpoint saving "
    "included)"
)


def recipe_command(args: argparse.Namespace, output: Path) -> list[str]:
    """The task's recipe launched as its docs launch it (`Task.recipe_flags`), with the run's seed, the short
    check's budget and, for a variant's system (`-no-copy`, `-no-grammar`), the variant's flags."""
    task = TASKS[args.task]
    command = ["accelerate", "launch", "--quiet", "--cpu", "--num_processes", "1", task.recipe]
    if args.threads:  # accelerate launch sets the threads itself (OMP_NUM_THREADS) from this flag
        command[6:6] = ["--num_cpu_threads_per_process", str(args.threads)]
    command += ["--preset", args.preset, "--seed", str(args.seed), "--output-dir", str(output)]
    command += ["--overwrite-output-dir", *task.recipe_flags]
    command += list(task.variant.recipe_flags) if split_system(args.system)[1] else []
    for flag, value in (("--max-steps", args.max_updates), ("--save-every", args.save_every)):
        command += [flag, str(value)] if value is not None else []
    command += ["--eval-every", str(args.eval_every)] if args.eval_every is not None else []
    command += ["--eval-sentences", str(args.test_limit)] if args.test_limit is not None else []
    return command


def run_hf_vanilla(args: argparse.Namespace, settings: dict, work: Path) -> dict:
    """The recipe itself, launched as its docs launch it, then its final model's test decoding timed."""
    output = work / "run"
    command = recipe_command(args, output)
    env = dict(os.environ, **({"OMP_NUM_THREADS": str(args.threads)} if args.threads else {}))
    start = time.perf_counter()
    subprocess.run(command, cwd=REPOSITORY, check=True, env=env)
    train_and_test_s = time.perf_counter() - start
    results = json.loads((output / "results.json").read_text())
    speed = timed_decoding(output / "final", args.test_limit, args.threads, args.task, settings)
    return {
        **TASKS[args.task].from_results(results),
        "train_tokens_per_s": results["train_tokens_per_second"],
        "train_tokens_per_s_basis": RECIPE_TOKENS_BASIS,
        "decode_sentences_per_s": speed,
        "train_s": results["train_seconds"],
        "recipe_s": round(train_and_test_s, 1),
        "averaged_checkpoints": results.get("averaged_checkpoints"),
        "recipe_command": " ".join(command),
        "rows": PEERS["fairseq"].rows(settings),
    }


def run_ct2(args: argparse.Namespace, settings: dict, work: Path) -> dict:
    """The CTranslate2 export of the finished hf_vanilla run of the same seed (`work`: that run's folder), decoded on
    the test split at the demo's beam (`recipe.ct2`) and scored; its training figures are that run's."""
    output, exported = work / "run", exported_system(args.system)
    if not (output / "results.json").is_file():
        raise user_exit(PROGRAM, f"{output} holds no finished {exported} run: run --system {exported} first")
    results = json.loads((output / "results.json").read_text())
    pairs = demo_corpus(settings)["test"]["translation"][: args.test_limit]
    references = [p[LANGUAGES[1]] for p in pairs]
    done = decode_with_ct2(output / "final", [p[LANGUAGES[0]] for p in pairs], args.threads)
    return {
        **translation_quality(done["outputs"], references),
        "train_tokens_per_s": results["train_tokens_per_second"],
        "train_tokens_per_s_basis": RECIPE_TOKENS_BASIS + ": the hf_vanilla run whose model is exported",
        "decode_sentences_per_s": round(len(pairs) / done["seconds"], 2),
        "train_s": results["train_seconds"],
        "wall_s": round(results["train_seconds"] + done["seconds"], 1),
        "wall_s_basis": "the exported run's training seconds + CTranslate2's decoding seconds",
        "peak_rss_mb": max(peak_child_rss_mb(), peak_own_rss_mb()),
        "exported_run": str(output),
        "ct2_options": done["options"],
        "rows": ct2_rows(),
    }


def ct2_rows() -> list[Row]:
    """How the export's decoding differs from the recipe's (`recipe.ct2.CT2_DIFFERENCES`)."""
    return [Row(name, ours, theirs, "CTranslate2 cannot express it", matched=False)
            for name, ours, theirs in CT2_DIFFERENCES]  # fmt: skip
