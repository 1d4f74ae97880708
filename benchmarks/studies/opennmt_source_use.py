"""How much OpenNMT-py 3.5.1's plain summarizer (`--system opennmt-py-no-copy`) reads its documents, and what the
initialisation of its embeddings has to do with it. A finished run's config is trained again for `--updates` (with its
tied embedding matrix drawn from normal(0, d^-0.5), the recipe's and fairseq's, under `--normal-embeddings`;
OpenNMT-py's param_init_glorot draws it Xavier-uniform), or a checkpoint of the run is taken as it is (`--checkpoint`);
then the validation subjects' log-likelihood is computed under each e-mail's own document and under the documents
shuffled (onmt_translate's GOLD SCORE: nats a subject, </s> counted; the gap is what the model takes from its source),
and the test split is decoded with the run's flags and scored as the run was.

    python -m benchmarks.peers --task summarization --system opennmt-py-no-copy --seed 1   # the run it starts from
    python -m benchmarks.studies.opennmt_source_use --updates 1000
    python -m benchmarks.studies.opennmt_source_use --updates 1000 --normal-embeddings
    python -m benchmarks.studies.opennmt_source_use --checkpoint model_step_3000.pt     # the run's own, no training

Each run alone on an idle machine: training takes the run's own time (about 22 minutes for 3,000 updates on 2 cores).
"""

import argparse
import json
import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import yaml

from hf_vanilla.errors import user_exit
from hf_vanilla.tokenization import load_tokenizer

from benchmarks.flag_checks import require_at_least
from benchmarks.peers.common.pieces import text_from_pieces
from benchmarks.peers.common.venvs import DEFAULT_ROOT, ensure_venv
from benchmarks.peers.comparison import work_folder
from benchmarks.peers.opennmt.summarization_table import ONMT_TRAIN_MAIN, summary_translate_flags
from benchmarks.peers.summarization import score_summary_file, summarization_settings

SYSTEM = "opennmt-py-no-copy"
PROGRAM = "opennmt_source_use"
GOLD = re.compile(r"GOLD SCORE: (-?[\d.]+)")
# OpenNMT-py's param_init_glorot (model_builder.py) with the one matrix of the vocabulary's rows, the embeddings tied
# to the generator, drawn from normal(0, d^-0.5) instead: every other matrix stays Xavier-uniform.
NORMAL_EMBEDDINGS = """
import torch, onmt.model_builder as builder
xavier = builder.xavier_uniform_
def init(param):
    if param.dim() == 2 and param.shape[0] == {vocab}:
        return torch.nn.init.normal_(param, 0.0, param.shape[1] ** -0.5)
    return xavier(param)
builder.xavier_uniform_ = init
"""


def train(bin_folder: Path, run: Path, out: Path, updates: int, normal_embeddings: bool) -> Path:
    """The run's onmt_train config again for `updates` updates into `out` (one checkpoint, at the end), with the
    embeddings drawn from normal(0, d^-0.5) where `normal_embeddings`; the checkpoint."""
    config = yaml.safe_load((run / SYSTEM / "train.yaml").read_text(encoding="utf-8"))
    config.update(train_steps=updates, save_checkpoint_steps=updates, keep_checkpoint=1, save_model=str(out / "model"))
    (out / "train.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    patch = NORMAL_EMBEDDINGS.format(vocab=config["src_vocab_size"]) if normal_embeddings else ""
    program = [str(bin_folder / "python"), "-c", patch + ONMT_TRAIN_MAIN, "-config", str(out / "train.yaml")]
    with open(out / "train.log", "w", encoding="utf-8") as log:
        subprocess.run(program, stdout=log, stderr=subprocess.STDOUT, check=True)
    return out / f"model_step_{updates}.pt"


def gold_score(bin_folder: Path, model: Path, documents: Path, subjects: Path, out: Path) -> float:
    """onmt_translate's mean log-likelihood of `subjects` (nats a subject) given `documents`, line by line."""
    command = [str(bin_folder / "onmt_translate"), "-model", str(model), "-src", str(documents), "-tgt", str(subjects),
               "-output", str(out / "gold.hyp"), "-beam_size", "1", "-max_length", "64"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    found = GOLD.search(done.stderr + done.stdout)
    if not found:
        raise ValueError(f"onmt_translate printed no GOLD SCORE for {documents}")
    return float(found.group(1))


def shuffled(documents: Path, out: Path, seed: int = 0) -> Path:
    """`documents`' lines in a seeded random order, written to `out`."""
    lines = documents.read_text(encoding="utf-8").splitlines()
    random.Random(seed).shuffle(lines)
    path = out / f"{documents.stem}.shuffled{documents.suffix}"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_summaries(bin_folder: Path, model: Path, run: Path, out: Path) -> dict:
    """The test split decoded with the run's flags (`summary_translate_flags` of the demo without copying) and scored
    as the run was: ROUGE-1, mean words, distinct summaries and the most frequent three."""
    flags = summary_translate_flags(summarization_settings("demo", copy=False))
    command = [str(bin_folder / "onmt_translate"), "-model", str(model), "-src", str(run / "data/test.text"),
               "-output", str(out / "test.hyp"), "-seed", "1", *flags]  # fmt: skip
    subprocess.run(command, capture_output=True, check=True)
    tokenizer = load_tokenizer(run / "tokenizer")
    summaries = [text_from_pieces(line, tokenizer) for line in (out / "test.hyp").read_text().splitlines()]
    rouge = score_summary_file(summaries, run / "data")["quality"]["value"]
    words = sum(len(s.split()) for s in summaries) / len(summaries)
    return {"rouge1": rouge, "words": round(words, 2), "distinct": len(set(summaries)),
            "most_frequent": Counter(summaries).most_common(3)}  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, help=f"A finished {SYSTEM} run's --work-dir (default: its seed's).")
    parser.add_argument("--seed", type=int, default=1, help="The run's seed, where --run is not given.")
    parser.add_argument("--venvs", type=Path, default=DEFAULT_ROOT, help="The peers' environments.")
    parser.add_argument("--updates", type=int, default=1000, help="Updates to train the run's config for.")
    parser.add_argument("--normal-embeddings", action="store_true", help="Embeddings from normal(0, d^-0.5).")
    parser.add_argument("--checkpoint", help="A checkpoint of the run's (its file name) to study, without training.")
    parser.add_argument("--out", type=Path, help="Where to write (default: beside the run, named for the study).")
    args = parser.parse_args(argv)
    require_at_least(parser, args, {"updates": 1})
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    args.run = work_folder(
        argparse.Namespace(task="summarization", system=SYSTEM, seed=args.seed, work_dir=args.run), {}
    )
    if not (args.run / SYSTEM / "train.yaml").is_file():
        raise user_exit(PROGRAM, f"{args.run} holds no {SYSTEM} run (no {SYSTEM}/train.yaml): run it first")
    checkpoint = args.run / SYSTEM / "checkpoints" / (args.checkpoint or "")
    if args.checkpoint and not checkpoint.is_file():
        raise user_exit(PROGRAM, f"no checkpoint {checkpoint}")
    name = args.checkpoint or f"{args.updates}-updates" + ("-normal-embeddings" * args.normal_embeddings)
    out = args.out or args.run / "source-use" / name
    out.mkdir(parents=True, exist_ok=True)
    bin_folder = ensure_venv("opennmt", args.venvs)
    model = checkpoint if args.checkpoint else train(bin_folder, args.run, out, args.updates, args.normal_embeddings)
    valid = args.run / "data"
    own = gold_score(bin_folder, model, valid / "valid.text", valid / "valid.summary", out)
    other = gold_score(bin_folder, model, shuffled(valid / "valid.text", out), valid / "valid.summary", out)
    figures = {"model": name, "validation_nats_own_document": own, "validation_nats_shuffled_documents": other,
               "source_gain_nats": round(own - other, 4)}  # fmt: skip
    figures |= test_summaries(bin_folder, model, args.run, out)
    (out / "figures.json").write_text(json.dumps(figures, indent=1), encoding="utf-8")
    json.dump(figures, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
