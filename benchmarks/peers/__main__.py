"""hf_vanilla beside fairseq, OpenNMT-py and Sockeye on the same data, tokenizer and budget: one command a run, one
JSON record a run.

    python -m benchmarks.peers --task translation --system fairseq --seed 1
    python -m benchmarks.peers --task translation --system opennmt-py --seed 1
    python -m benchmarks.peers --task translation --system sockeye --seed 1            # pre-norm, its default
    python -m benchmarks.peers --task translation --system sockeye-post-norm --seed 1  # the paper's layer order
    python -m benchmarks.peers --task translation --system hf_vanilla --seed 1
    python -m benchmarks.peers --task translation --system hf_vanilla-normal-init --seed 1  # N(0, 0.02), <s>
    python -m benchmarks.peers --task translation --system fairseq --seed 1 --max-updates 20 --save-every 5 \
        --eval-every 10 --test-limit 20 --results-dir /tmp/peers        # a short check of every step, no figure

A peer run makes or reuses the peer's own environment (`common.venvs.INSTALL`, outside the repository), writes the
demo's splits in the demo's own shared BPE pieces (`translation`, `summarization`, `parsing`), trains and decodes
with the demo preset's settings mapped flag by flag (each peer's `translation_table`, `summarization_table`,
`parsing_table`; printed side by side), scores the outputs with the project's own scorers, and writes
`benchmarks/results/peers-<task>-<system>-seed<S>-<date>.json` (`common.records`). `--system hf_vanilla` runs the
recipe itself (`accelerate launch --quiet --cpu --num_processes 1 recipes/wmt_ende.py --preset demo`) and records it
the same way; `--system hf_vanilla-ct2` decodes that run's CTranslate2 export (`recipe.ct2`).

    python -m benchmarks.peers --task summarization --system fairseq --seed 1          # the pointer-generator
    python -m benchmarks.peers --task summarization --system fairseq --seed 1 --peer-lr-scale 0.25  # its own rate
    python -m benchmarks.peers --task summarization --system fairseq-no-copy --seed 1  # its plain transformer
    python -m benchmarks.peers --task summarization --system opennmt-py --seed 1       # copy_attn, its defaults
    python -m benchmarks.peers --task summarization --system opennmt-py-force-copy --seed 1  # copy_attn_force
    python -m benchmarks.peers --task summarization --system opennmt-py-no-copy --seed 1
    python -m benchmarks.peers --task summarization --system hf_vanilla-no-copy --seed 1

    NLTK_DATA=../shared/data/nltk_data python -m benchmarks.peers --task parsing --system fairseq --seed 1
    python -m benchmarks.peers --task parsing --system hf_vanilla --seed 1             # under the tree grammar
    python -m benchmarks.peers --task parsing --system hf_vanilla-no-grammar --seed 1  # decoding freely

A task (`tasks.TASKS`) says how its splits are exported as the demo's pieces, how hypotheses are scored with the
project's own scorer (sacreBLEU; ROUGE against AESLC's @subject; the recipe's `delinearize` repair and EVALB F1 against
the gold trees), which recipe hf_vanilla runs and which of its results hold the quality. A peer runs the tasks its
`Peer` (`systems.PEERS`) names: fairseq all three, OpenNMT-py translation and summarization, Sockeye translation. A
task may have a variant (`Variant`: a suffix of the system's name and the recipe's flags for it): summarization's
systems also run without the copy mechanism (`-no-copy`: fairseq's `transformer`, OpenNMT-py without `copy_attn`, the
recipe's `--no-pointer-generator`, each with the preset's settings for that model); parsing's recipe also runs without
its tree grammar (`-no-grammar`: `--no-tree-grammar`), which fairseq, decoding freely, has no variant of; translation's
recipe, which starts as fairseq's `transformer` does (its initialisation and </s>), also runs as it did before
(`-normal-init`: `--init-scheme normal --decoder-start bos`), which fairseq has no variant of. A peer runs in its own
defaults; where the recipe's setting departs from them, the peer with the recipe's is a labelled system of its own
(`Peer.settings`): `opennmt-py-force-copy` (`copy_attn_force true`, the recipe's force_copy) and `sockeye-post-norm`
(the paper's layer order; Sockeye's default is pre-norm). Parsing reads NLTK's WSJ sample from NLTK_DATA (where it is
not set, from the docs' `../shared/data/nltk_data` beside the repository, where that exists).
"""

import argparse
from pathlib import Path

from benchmarks.peers import PROGRAM
from benchmarks.peers.common.records import RESULTS
from benchmarks.peers.common.venvs import DEFAULT_ROOT
from benchmarks.peers.comparison import compare
from benchmarks.peers.systems import CT2, PEERS, READY
from benchmarks.peers.tasks import TASKS, VARIANTS, split_system


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=f"python -m {PROGRAM}", description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=TASKS, default="translation")
    # A peer's labelled variant of its own defaults (`Peer.settings`) takes no task's variant besides.
    plain = [system for system in READY if system not in PEERS or not PEERS[system].settings]
    systems = (*READY, *(system + suffix for system in plain for suffix in VARIANTS))
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


def main(argv: list[str] | None = None) -> dict:
    """Runs the comparison's command line (`argv`, else the process's): one system, one record."""
    return compare(parse_args(argv))


if __name__ == "__main__":
    main()
