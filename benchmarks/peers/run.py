"""hf_vanilla beside fairseq, OpenNMT-py and Sockeye on the same data, tokenizer and budget: one command a run, one
JSON record a run.

    python benchmarks/peers/run.py --task translation --system fairseq --seed 1
    python benchmarks/peers/run.py --task translation --system opennmt-py --seed 1
    python benchmarks/peers/run.py --task translation --system sockeye --seed 1
    python benchmarks/peers/run.py --task translation --system hf_vanilla --seed 1
    python benchmarks/peers/run.py --task translation --system hf_vanilla-normal-init --seed 1  # N(0, 0.02), <s>
    python benchmarks/peers/run.py --task translation --system fairseq --seed 1 --max-updates 20 --save-every 5 \
        --eval-every 10 --test-limit 20 --results-dir /tmp/peers        # a short check of every step, no figure

A peer run makes or reuses the peer's own environment (`peer_venvs.INSTALL`, outside the repository), writes the
demo's splits in the demo's own shared BPE pieces (`split_pieces`), trains and decodes with the demo preset's settings
mapped flag by flag (`settings_table`, `opennmt_settings`, `sockeye_settings`, `summary_table`, `opennmt_summary`;
printed side by side), scores the outputs with the project's own scorers, and writes
`benchmarks/results/peers-<task>-<system>-seed<S>-<date>.json` (`peer_record`). `--system hf_vanilla` runs the
recipe itself (`accelerate launch --quiet --cpu --num_processes 1 recipes/wmt_ende.py --preset demo`) and records it
the same way; `--system hf_vanilla-ct2` decodes that run's CTranslate2 export (`ct2_row`).

    python benchmarks/peers/run.py --task summarization --system fairseq --seed 1          # the pointer-generator
    python benchmarks/peers/run.py --task summarization --system fairseq --seed 1 --peer-lr-scale 0.25  # its own rate
    python benchmarks/peers/run.py --task summarization --system fairseq-no-copy --seed 1  # its plain transformer
    python benchmarks/peers/run.py --task summarization --system opennmt-py --seed 1       # copy_attn
    python benchmarks/peers/run.py --task summarization --system opennmt-py-no-copy --seed 1
    python benchmarks/peers/run.py --task summarization --system hf_vanilla-no-copy --seed 1

    NLTK_DATA=../shared/data/nltk_data python benchmarks/peers/run.py --task parsing --system fairseq --seed 1
    python benchmarks/peers/run.py --task parsing --system hf_vanilla --seed 1             # under the tree grammar
    python benchmarks/peers/run.py --task parsing --system hf_vanilla-no-grammar --seed 1  # decoding freely

A task (`TASKS`) says how its splits are exported as the demo's pieces, how hypotheses are scored with the project's
own scorer (sacreBLEU; ROUGE against AESLC's @subject; the recipe's `delinearize` repair and EVALB F1 against the
gold trees), which recipe hf_vanilla runs and which of its results hold the quality. A peer runs the tasks its `Peer`
names: fairseq all three, OpenNMT-py translation and summarization (`opennmt_summary`), Sockeye translation. A task
may have a variant (`Variant`: a suffix of the system's name and the recipe's flags for it): summarization's systems
also run without the copy mechanism (`-no-copy`: fairseq's `transformer`, OpenNMT-py without `copy_attn`, the
recipe's `--no-pointer-generator`, each with the preset's settings for that model); parsing's recipe also runs
without its tree grammar (`-no-grammar`: `--no-tree-grammar`), which fairseq, decoding freely, has no variant of;
translation's recipe, which starts as fairseq's `transformer` does (its initialisation and </s>), also runs as it did
before (`-normal-init`: `--init-scheme normal --decoder-start bos`), which fairseq has no variant of.
Parsing reads NLTK's WSJ sample from NLTK_DATA (where it is not set, from the docs' `../shared/data/nltk_data` beside
the repository, where that exists).
"""

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hf_vanilla.data.summaries import SIDES
from hf_vanilla.errors import user_exit
from hf_vanilla.evaluation.bleu import sacrebleu_score, tokenized_bleu
from hf_vanilla.parsing import TreebankError

from ct2_row import CT2_DIFFERENCES, decode_with_ct2
from fairseq_peer import fairseq_table, run_fairseq
from opennmt_peer import opennmt_table, run_opennmt
from parse_pieces import SIDES as TREE_SIDES
from parse_pieces import (
    export_trees,
    parse_corpus,
    parse_keywords,
    parse_results,
    parse_test_inputs,
    parse_tokenizer,
    score_parse_file,
    use_shared_nltk_data,
)
from parse_table import parsing_settings
from peer_process import PeerJob, PeerRun
from peer_record import (
    RESULTS,
    device,
    machine_load,
    peak_child_rss_mb,
    peak_own_rss_mb,
    tuned_suffix,
    write_record,
)
from peer_venvs import DEFAULT_ROOT, ensure_venv, install_line
from settings_table import Row, as_records, demo_settings, fairseq_rows, render  # noqa: F401  (fairseq_rows public)
from sockeye_peer import run_sockeye, sockeye_rows
from split_pieces import LANGUAGES, Exported, demo_corpus, export_splits, shared_tokenizer, text_from_pieces
from summary_pieces import (
    export_summaries,
    score_summary_file,
    summary_corpus,
    summary_results,
    summary_test_inputs,
    summary_tokenizer,
)
from summary_table import summarization_settings

REPOSITORY = Path(__file__).resolve().parents[2]
NO_COPY = "-no-copy"  # a system's variant without the copy mechanism (summarization)
NO_GRAMMAR = "-no-grammar"  # the recipe's variant without the tree grammar (parsing)
NORMAL_INIT = "-normal-init"  # the recipe's variant with N(0, 0.02) projections and <s> (translation)


@dataclass(frozen=True)
class Peer:
    """A peer toolkit: its environment's name (`peer_venvs.INSTALL`), its side of the settings table (for the
    settings of any task it runs: `settings["task"]`), its run, and the tasks it runs."""

    venv: str
    rows: Callable[[dict], list[Row]]
    run: Callable[[PeerJob], PeerRun]
    tasks: tuple[str, ...] = ("translation",)


PEERS = {
    "fairseq": Peer("fairseq", fairseq_table, run_fairseq, ("translation", "summarization", "parsing")),
    "opennmt-py": Peer("opennmt", opennmt_table, run_opennmt, ("translation", "summarization")),
    "sockeye": Peer("sockeye", sockeye_rows, run_sockeye),
}
# The recipe's own figure counts its pauses, which a peer's may leave out: the comparison then errs against hf_vanilla.
RECIPE_TOKENS_BASIS = (
    "the recipe's source + target tokens (</s> included) / training seconds (its validation and checkpoint saving "
    "included)"
)
CT2 = "hf_vanilla-ct2"  # the CTranslate2 export of the hf_vanilla run of the same seed (and variant), in its own row
READY = ("hf_vanilla", CT2, *PEERS)  # the systems this script runs so far


@dataclass(frozen=True)
class Variant:
    """A task's systems with one of the recipe's features changed: the suffix of their names (`hf_vanilla-no-copy`),
    what it changes (for errors), the recipe's flags for it, and whether the peers have the variant too (False: the
    variant is the recipe's alone, e.g. without a feature that no peer has)."""

    suffix: str
    feature: str
    recipe_flags: tuple[str, ...]
    peers: bool = True


def no_keywords(settings: dict, tokenizer) -> dict:
    """No `generate_texts` keywords that need the model's tokenizer."""
    return {}


def nothing() -> None:
    """A task that needs nothing set up before its run."""


@dataclass(frozen=True)
class Task:
    """A task of the comparison. `settings(preset, base, overrides)`: the demo's settings a peer matches (`base`
    False: the task's `variant`'s); `export(settings, work, args)`: its splits written as the demo's own pieces, and
    the tokenizer; `score(hypotheses, exported folder)`: the record's `quality` and other figures by the project's
    own scorer; `recipe`: the script hf_vanilla runs; `from_results(results.json)`: the same figures from the
    recipe's results; `test_inputs(settings, test_limit)`: the test inputs the recipe decodes and `generate_texts`'
    keywords for them (`keywords(settings, tokenizer)`: those that need the model's tokenizer); `sides`: the exported
    files' suffixes; `variant`: the task's `Variant` (none: its systems have no other); `recipe_flags`: the recipe's
    flags as its docs launch it; `prepare()`: what the task sets up before a run (its data's environment)."""

    settings: Callable[[str, bool, dict], dict]
    export: Callable[[dict, Path, argparse.Namespace], tuple[Exported, object]]
    score: Callable[[list[str], Path], dict]
    recipe: str
    from_results: Callable[[dict], dict]
    test_inputs: Callable[[dict, int | None], tuple[list[str], dict]]
    sides: tuple[str, str]
    variant: Variant | None = None
    recipe_flags: tuple[str, ...] = ()
    keywords: Callable[[dict, object], dict] = no_keywords
    prepare: Callable[[], None] = nothing


def translation_settings(preset: str, base: bool, overrides: dict) -> dict:
    """The translation demo's settings (`demo_settings`), or (`base` False) its `-normal-init` variant's."""
    return demo_settings(preset, **overrides, **({} if base else dict(init_scheme="normal", decoder_start="bos")))


def export_translation(settings: dict, work: Path, args: argparse.Namespace) -> tuple[Exported, object]:
    """The Bible demo's splits in its shared BPE (trained in `work/tokenizer`, or --tokenizer-from's)."""
    corpus = demo_corpus(settings)
    tokenizer = shared_tokenizer(
        work / "tokenizer", corpus["train"], settings["vocab_size"], "bible", args.tokenizer_from
    )
    return export_splits(corpus, tokenizer, work / "data", settings, args.test_limit), tokenizer


def score_translation(hypotheses: list[str], folder: Path) -> dict:
    """sacreBLEU (with its signature) and the tokenized BLEU of `hypotheses` against the exported raw references."""
    references = (folder / f"test.raw.{LANGUAGES[1]}").read_text(encoding="utf-8").splitlines()
    return translation_quality(hypotheses, references)


def translation_quality(hypotheses: list[str], references: list[str]) -> dict:
    """The record's sacreBLEU (with its signature) and tokenized BLEU of `hypotheses` against `references`."""
    bleu, signature = sacrebleu_score(hypotheses, references)
    return {
        "quality": {"metric": "sacrebleu", "value": bleu, "signature": signature},
        "tokenized_bleu": tokenized_bleu(hypotheses, references, LANGUAGES[1]),
    }


def translation_results(results: dict) -> dict:
    """The translation recipe's sacreBLEU, signature and tokenized BLEU from its results.json."""
    return {
        "quality": {"metric": "sacrebleu", "value": results["sacrebleu"], "signature": results["sacrebleu_signature"]},
        "tokenized_bleu": results.get("tokenized_bleu"),
    }


def translation_inputs(settings: dict, test_limit: int | None) -> tuple[list[str], dict]:
    """The demo's test sources (the first `test_limit`), decoded with the model's own settings."""
    pairs = demo_corpus(settings)["test"]
    return [p[LANGUAGES[0]] for p in pairs["translation"]][:test_limit], {}


def summarization_task_settings(preset: str, copy: bool, overrides: dict) -> dict:
    """The summarization demo's settings (`summarization_settings`), with or without copying."""
    return summarization_settings(preset, copy, **overrides)


def export_summarization(settings: dict, work: Path, args: argparse.Namespace) -> tuple[Exported, object]:
    """The AESLC demo's splits in its lower-casing BPE (trained in `work/tokenizer`, or --tokenizer-from's)."""
    corpus, dataset = summary_corpus(settings)
    tokenizer = summary_tokenizer(work / "tokenizer", corpus["train"], settings, dataset, args.tokenizer_from)
    return export_summaries(corpus, tokenizer, work / "data", settings, args.test_limit), tokenizer


def parsing_task_settings(preset: str, grammar: bool, overrides: dict) -> dict:
    """The parsing demo's settings (`parsing_settings`), under the tree grammar or without it."""
    return parsing_settings(preset, grammar, **overrides)


def export_parsing(settings: dict, work: Path, args: argparse.Namespace) -> tuple[Exported, object]:
    """The WSJ demo's pairs (words, linearized tree) in its whole-piece BPE (trained in `work/tokenizer`, or
    --tokenizer-from's); a missing or unreadable treebank ends the run with the recipe's message."""
    try:
        corpus, treebank = parse_corpus(settings)
    except (FileNotFoundError, TreebankError) as error:
        raise user_exit("run.py", str(error)) from error
    tokenizer = parse_tokenizer(work / "tokenizer", corpus["train"], settings, treebank, args.tokenizer_from)
    return export_trees(corpus, tokenizer, work / "data", settings, args.test_limit), tokenizer


TASKS = {
    "translation": Task(
        settings=translation_settings,
        export=export_translation,
        score=score_translation,
        recipe="recipes/wmt_ende.py",
        from_results=translation_results,
        test_inputs=translation_inputs,
        sides=LANGUAGES,
        variant=Variant(
            NORMAL_INIT,
            "variant with N(0, 0.02) projections and a <s> decoder start",
            ("--init-scheme", "normal", "--decoder-start", "bos"),
            peers=False,
        ),
    ),
    "summarization": Task(
        settings=summarization_task_settings,
        export=export_summarization,
        score=score_summary_file,
        recipe="recipes/summarize.py",
        from_results=summary_results,
        test_inputs=summary_test_inputs,
        sides=SIDES,
        variant=Variant(NO_COPY, "variant without a copy mechanism", ("--no-pointer-generator",)),
    ),
    "parsing": Task(
        settings=parsing_task_settings,
        export=export_parsing,
        score=score_parse_file,
        recipe="recipes/ptb_parse.py",
        from_results=parse_results,
        test_inputs=parse_test_inputs,
        sides=TREE_SIDES,
        variant=Variant(NO_GRAMMAR, "variant without the tree grammar", ("--no-tree-grammar",), peers=False),
        recipe_flags=("--treebank", "nltk"),
        keywords=parse_keywords,
        prepare=use_shared_nltk_data,
    ),
}
VARIANTS = {task.variant.suffix: task.variant for task in TASKS.values() if task.variant is not None}


def split_system(system: str) -> tuple[str, str]:
    """A system's name without its variant's suffix (one of `VARIANTS`), and that suffix ("" for none)."""
    for suffix in VARIANTS:
        if system.endswith(suffix):
            return system[: -len(suffix)], suffix
    return system, ""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=TASKS, default="translation")
    systems = (*READY, *(system + suffix for system in READY for suffix in VARIANTS))
    parser.add_argument("--system", choices=systems, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--preset", default="demo", help="The recipe's preset whose settings are matched.")
    parser.add_argument("--work-dir", type=Path, help="Data, checkpoints, logs (default: /tmp/peers/TASK-SYSTEM-S).")
    parser.add_argument("--venvs", type=Path, default=DEFAULT_ROOT, help="Where the peers' environments go.")
    parser.add_argument("--tokenizer-from", type=Path, help="A finished demo run's tokenizer folder to reuse.")
    parser.add_argument("--results-dir", type=Path, default=RESULTS, help="Where the record is written.")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads of the peer (default: torch's).")
    parser.add_argument(
        "--peer-lr-scale",
        type=float,
        help="A peer's lr_scale instead of the preset's (the record and its table say so): for a peer that the "
        "preset's rate does not train, as the preset gives its own model without copying a rate of its own.",
    )
    short = parser.add_argument_group("a short check (the record then says so; not a figure)")
    short.add_argument("--max-updates", type=int, help="Updates instead of the preset's.")
    short.add_argument("--save-every", type=int, help="Updates between checkpoints instead of the preset's.")
    short.add_argument("--eval-every", type=int, help="Updates between validations instead of the preset's.")
    short.add_argument("--test-limit", type=int, help="Decode and score only the first N test pairs.")
    args = parser.parse_args(argv)
    for name in ("max_updates", "save_every", "test_limit", "threads"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    system, suffix = split_system(args.system)
    if args.peer_lr_scale is not None and (system not in PEERS or args.peer_lr_scale <= 0):
        parser.error(f"--peer-lr-scale is a positive scale of a peer's rate ({', '.join(PEERS)}), not {system}'s")
    if system in PEERS and args.task not in PEERS[system].tasks:
        parser.error(f"{system} runs {', '.join(PEERS[system].tasks)} here, not {args.task}")
    if system.startswith(CT2) and args.task != "translation":
        parser.error(f"{CT2} decodes a translation model: CTranslate2 has no copy mechanism")
    variant = TASKS[args.task].variant
    if suffix and (variant is None or variant.suffix != suffix):
        parser.error(f"{args.task} has no {VARIANTS[suffix].feature}: --system {system}, without {suffix}")
    if suffix and system not in ("hf_vanilla", CT2) and not variant.peers:
        parser.error(
            f"{system} has no {variant.feature} (only hf_vanilla's {args.task} recipe has it): "
            f"--system {system}, without {suffix}"
        )
    return args


def run_settings(args: argparse.Namespace) -> dict:
    """The preset's settings for the task and system (its variant's: `-no-copy`, `-no-grammar`), with the short
    check's overrides; where these save fewer checkpoints than the preset averages, the average of those saved (as
    the recipe averages the newest it has; fairseq's averaging wants as many as it is told)."""
    overrides = dict(max_steps=args.max_updates, save_every=args.save_every, eval_every=args.eval_every)
    task, base = TASKS[args.task], not split_system(args.system)[1]
    settings = task.settings(args.preset, base, overrides)
    saved = settings["max_steps"] // settings["save_every"]
    if 0 < saved < settings["average_last"]:
        settings = task.settings(args.preset, base, {**overrides, "average_last": saved})
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
    the test split at the demo's beam (`ct2_row`) and scored; its training figures are that run's."""
    output, exported = work / "run", exported_system(args.system)
    if not (output / "results.json").is_file():
        raise user_exit("run.py", f"{output} holds no finished {exported} run: run --system {exported} first")
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
    """How the export's decoding differs from the recipe's (`ct2_row.CT2_DIFFERENCES`)."""
    return [Row(name, ours, theirs, "CTranslate2 cannot express it", matched=False)
            for name, ours, theirs in CT2_DIFFERENCES]  # fmt: skip


def recipe_decoding(
    model_folder: Path, test_limit: int | None, task: str = "translation", settings: dict | None = None
) -> tuple[list, Callable[..., list[str]]]:
    """The task's test split (its first `test_limit` items, read as the recipe does: `Task.test_inputs`) and a function
    decoding it with the final model's beam search (its generation config: the demo's beam) and the recipe's keywords
    (`Task.keywords`: parsing's grammar where the settings have it), any `generate()` keywords passed to it added."""
    from hf_vanilla import VanillaTransformerForConditionalGeneration
    from hf_vanilla.decoding import generate_texts
    from hf_vanilla.tokenization import load_tokenizer

    settings = settings or TASKS[task].settings("demo", True, {})
    sources, keywords = TASKS[task].test_inputs(settings, test_limit)
    model = VanillaTransformerForConditionalGeneration.from_pretrained(model_folder)
    tokenizer = load_tokenizer(model_folder)
    keywords = {**keywords, **TASKS[task].keywords(settings, tokenizer)}

    def decode(**generate_kwargs) -> list[str]:
        return generate_texts(model, tokenizer, sources, progress=False, **keywords, **generate_kwargs)

    return sources, decode


def decoding_args(description: str, argv: list[str] | None, repeats: int | None = None) -> argparse.Namespace:
    """The arguments of a benchmark that decodes a run's final model over its demo's test split (`recipe_decoding`):
    `--task`, `--model` (a folder holding config.json), `--test-limit`, and `--repeats` (default `repeats`) where
    `repeats` is given; each count at least 1."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", choices=TASKS, required=True)
    parser.add_argument("--model", type=Path, required=True, help="A run's final model folder (its demo's).")
    parser.add_argument("--test-limit", type=int, help="Decode the test split's first N items only.")
    if repeats is not None:
        parser.add_argument("--repeats", type=int, default=repeats)
    args = parser.parse_args(argv)
    for flag, value in (("--repeats", getattr(args, "repeats", None)), ("--test-limit", args.test_limit)):
        if value is not None and value < 1:
            parser.error(f"{flag} must be at least 1, got {value}")
    if not (args.model / "config.json").is_file():
        parser.error(f"--model {args.model}: no config.json there (a run's final model folder is needed)")
    return args


def timed_decoding(
    model_folder: Path,
    test_limit: int | None,
    threads: int | None,
    task: str = "translation",
    settings: dict | None = None,
) -> float:
    """Sentences a second of `recipe_decoding` over the task's test split, on `threads` CPU threads."""
    import torch

    sources, decode = recipe_decoding(model_folder, test_limit, task, settings)
    if threads:
        torch.set_num_threads(threads)
    start = time.perf_counter()
    decode()
    return round(len(sources) / (time.perf_counter() - start), 2)


def exported_system(system: str) -> str:
    """The hf_vanilla system (of the same variant) whose run a CTranslate2 system exports."""
    return "hf_vanilla" + split_system(system)[1]


def work_folder(args: argparse.Namespace, settings: dict) -> Path:
    """--work-dir, else /tmp/peers/TASK-SYSTEM-SEED; a CTranslate2 row's is that of the run it exports."""
    ct2 = split_system(args.system)[0] == CT2
    folder_system = (exported_system(args.system) if ct2 else args.system) + tuned_suffix(settings)
    return args.work_dir or Path("/tmp/peers") / f"{args.task}-{folder_system}-{args.seed}"


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
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
    figures = run_fairseq_or_recipe(args, settings, work)
    wall = figures.pop("wall_s", time.perf_counter() - start)
    peak_rss = figures.pop("peak_rss_mb", peak_child_rss_mb())
    rows = figures.pop("rows") + tuned_rows(settings)
    record = {
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
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
    }
    path = write_record(record, args.results_dir)
    quality = record["quality"]
    print(f"[peers] {args.system}: {quality['metric']} {quality['value']}, {record['wall_s']} s; record: {path}")
    return record


def run_fairseq_or_recipe(args: argparse.Namespace, settings: dict, work: Path) -> dict:
    """The run of `args.system`."""
    system = split_system(args.system)[0]
    if system == "hf_vanilla":
        return run_hf_vanilla(args, settings, work)
    if system == CT2:
        return run_ct2(args, settings, work)
    return run_peer(args, settings, work)


if __name__ == "__main__":
    main()
