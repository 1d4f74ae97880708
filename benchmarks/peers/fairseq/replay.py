"""The recipe's training step beside fairseq's, update by update, on the same weights and the same batches.

fairseq-train (its own environment, the translation demo's flags with every dropout at 0) runs the first `--updates`
updates on a finished `python -m benchmarks.peers` fairseq run's binarized data and records each update's sentences,
learning rate and loss sums, its initial weights and its weights after the last update (`RECORD`). hf_vanilla then
replays those updates from fairseq's initial weights (mapped as `in_hf` maps them, the decoder starting with `</s>` as
fairseq's): the recipe's loss (`model(..., num_items_in_batch=target tokens)`), its optimizer (`paper_optimizer`) at
each update's rate. Where the two steps are one computation, each update's summed NLL agrees to float32 rounding and
the weights end where fairseq's end, up to what Adam makes of rounding in near-zero gradients.

    python -m benchmarks.peers.fairseq.replay --fairseq-run /tmp/peers/translation-fairseq-5 --venvs DIR \
        --updates 60 --output replay.json
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch.nn.functional as F

from hf_vanilla.data.encoding import EncodedPairs
from hf_vanilla.errors import user_exit
from hf_vanilla.training.arguments import DEFAULTS
from hf_vanilla.training.presets import WMT_PRESETS

from benchmarks.peers.common.pieces import read_dictionary
from benchmarks.peers.fairseq.in_hf import (
    dump_fairseq,
    fairseq_rows_to_ids,
    fairseq_to_hf_state,
    mapped_model,
    piece_pairs,
)
from benchmarks.peers.fairseq.translation_table import fairseq_train_flags
from benchmarks.peers.translation import demo_settings

PROGRAM = "fairseq_replay"
STATES = ("initial", "last")
POSITIONS = 1024  # rows of fairseq's position table the mapped model gets, as in_hf's
# Run by fairseq's python: argv OUT, then fairseq-train's arguments. Writes OUT/updates.json (one entry an update:
# its learning rate, the dataset ids of its batch, the criterion's loss and NLL sums in nats, its target tokens) and
# OUT/initial.pt, OUT/last.pt (the model's state as a checkpoint holds it, read back by `dump_fairseq`).
RECORD = r"""
import json, sys, torch
from fairseq import trainer as fairseq_trainer
from fairseq.criterions import label_smoothed_cross_entropy as smoothed
from fairseq_cli import train

out, updates, sums = sys.argv[1], [], []
last = int(sys.argv[sys.argv.index("--max-update") + 1])
criterion_forward, train_step = smoothed.LabelSmoothedCrossEntropyCriterion.forward, fairseq_trainer.Trainer.train_step


def dump(model, name):
    torch.save({"model": model.state_dict()}, f"{out}/{name}.pt")


def forward(self, model, sample, reduce=True):
    loss, sample_size, logging = criterion_forward(self, model, sample, reduce)
    if model.training:
        sums.append({"loss_sum": float(loss), "nll_sum": float(logging["nll_loss"]), "tokens": int(sample_size)})
    return loss, sample_size, logging


def recorded_step(self, samples, raise_oom=False):
    if not updates:
        dump(self.model, "initial")
    rate = self.get_lr()
    output = train_step(self, samples, raise_oom)
    ids = [i for sample in samples if sample for i in sample["id"].tolist()]
    updates.append({"update": self.get_num_updates(), "lr": rate, "ids": ids, **sums[-1]})
    if self.get_num_updates() == last:
        dump(self.model, "last")
        json.dump(updates, open(f"{out}/updates.json", "w"))
    return output


smoothed.LabelSmoothedCrossEntropyCriterion.forward = forward
fairseq_trainer.Trainer.train_step = recorded_step
sys.argv = ["fairseq-train", *sys.argv[2:]]
train.cli_main()
"""


def replay_flags(settings: dict, seed: int, updates: int) -> list[str]:
    """fairseq-train's flags of the demo (`fairseq_train_flags`) for `updates` updates, every dropout 0 (the two
    runs draw different masks), no checkpoint and no validation, a log line each update."""
    off = {"--dropout": 0.0, "--attention-dropout": 0.0, "--activation-dropout": 0.0}
    quiet = {"--no-save": None, "--disable-validation": None, "--log-format": "json", "--log-interval": 1}
    return fairseq_train_flags(settings, seed, {**off, "--max-update": updates, **quiet})


def record_fairseq(python: Path, bin_folder: Path, flags: list[str], folder: Path) -> list[dict]:
    """fairseq-train's updates on `bin_folder` under `flags`, recorded by fairseq's own `python` (`RECORD`) into
    `folder`; fairseq's log is `folder/train.log`."""
    with open(folder / "train.log", "w") as log:
        done = subprocess.run([str(python), "-c", RECORD, str(folder), str(bin_folder), "--cpu", *flags], stdout=log,
                              stderr=subprocess.STDOUT)  # fmt: skip
    if done.returncode or not (folder / "updates.json").exists():
        tail = (folder / "train.log").read_text()[-800:]
        raise RuntimeError(f"fairseq-train stopped (exit {done.returncode}) before its last update: {tail}")
    return json.loads((folder / "updates.json").read_text())


def replay(model, examples: EncodedPairs, updates: list[dict], betas, eps: float) -> list[dict]:
    """`updates` (fairseq's: the ids of each update's pairs and its learning rate) applied to `model` by the recipe's
    training step: its batch of those pairs (`EncodedPairs.collate`), the loss the recipe asks of the model (summed
    over the batch's target tokens, divided by their number) and `paper_optimizer` at the update's rate. Each update's
    row: the NLL and loss sums (nats) of the model before its step, beside fairseq's."""
    from hf_vanilla.training.schedule import paper_optimizer

    optimizer, pad, rows = paper_optimizer(model.parameters(), betas, eps), model.config.pad_token_id, []
    model.train()
    for update in updates:
        batch = examples.collate(update["ids"], pad)
        items = int(examples.target_lengths[update["ids"]].sum())
        output = model(**batch, num_items_in_batch=items)
        output.loss.backward()
        for group in optimizer.param_groups:
            group["lr"] = update["lr"]
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        logits, labels = output.logits.detach().flatten(0, 1), batch["labels"].flatten()
        nll = F.cross_entropy(logits, labels, reduction="sum").item()
        rows.append({
            "update": update["update"], "lr": update["lr"], "tokens": items,
            "nll_sum": nll, "fairseq_nll_sum": update["nll_sum"],
            "loss_sum": output.loss.item() * items, "fairseq_loss_sum": update["loss_sum"],
        })  # fmt: skip
    return rows


def drift(state: dict, start: dict, reference: dict) -> dict:
    """Each tensor of `reference` (fairseq's weights after the last update, mapped): how far it moved from `start`
    and how far `state` (the replay's) is from it, as Frobenius norms."""
    return {
        name: {"moved": (value - start[name]).norm().item(), "differs": (state[name] - value).norm().item()}
        for name, value in reference.items()
        if "embed_positions" not in name  # fairseq's fixed sinusoids, not trained
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--fairseq-run", type=Path, required=True, help="A fairseq translation run's work dir (benchmarks.peers)"
    )
    parser.add_argument("--venvs", type=Path, required=True, help="Where the peers' environments are.")
    parser.add_argument("--preset", default="demo", choices=sorted(WMT_PRESETS), help="The run's recipe preset.")
    parser.add_argument("--updates", type=int, default=60, help="How many updates to compare (at least 2).")
    parser.add_argument("--seed", type=int, default=1, help="fairseq's --seed: its initial weights and batches.")
    parser.add_argument("--output", type=Path, help="A JSON file for every update's figures and every tensor's.")
    args = parser.parse_args(argv)
    if args.updates < 2:
        parser.error(f"--updates must be at least 2 (the first update runs at learning rate 0), not {args.updates}")
    return args


def summary(rows: list[dict], tensors: dict) -> dict:
    """The largest relative difference of an update's NLL sum, and the median and largest ratio of a tensor's
    distance from fairseq's to the distance it moved."""
    ratios = sorted(t["differs"] / max(t["moved"], 1e-30) for t in tensors.values())
    return {
        "largest_relative_nll_difference": max(
            abs(r["nll_sum"] - r["fairseq_nll_sum"]) / r["fairseq_nll_sum"] for r in rows
        ),  # fmt: skip
        "median_weight_ratio": ratios[len(ratios) // 2],
        "largest_weight_ratio": ratios[-1],
    }


def main(argv: list[str] | None = None) -> None:
    from hf_vanilla import VanillaTransformerConfig
    from hf_vanilla.tokenization import load_tokenizer
    from hf_vanilla.training.model_building import tokenizer_fields

    args = parse_args(argv)
    run, python = args.fairseq_run, args.venvs / "fairseq" / "bin" / "python"
    for path in (run / "data" / "dict.txt", run / "tokenizer", run / "fairseq" / "bin", python):
        if not path.exists():
            raise user_exit(
                PROGRAM, f"{path} is missing: first python -m benchmarks.peers --task translation --system fairseq"
            )
    settings = demo_settings(args.preset)
    tokenizer = load_tokenizer(run / "tokenizer")
    row_ids = fairseq_rows_to_ids(read_dictionary(run / "data" / "dict.txt"), tokenizer)
    size = {**DEFAULTS, **WMT_PRESETS[args.preset]}["model_size"]
    config = VanillaTransformerConfig.from_size(size, **tokenizer_fields(tokenizer, "eos"))  # fairseq's start </s>
    config.dropout = config.attention_dropout = config.activation_dropout = 0.0
    with tempfile.TemporaryDirectory() as folder:
        print(f"{PROGRAM}: fairseq-train, {args.updates} updates, dropout 0", file=sys.stderr, flush=True)
        updates = record_fairseq(python, run / "fairseq" / "bin", replay_flags(settings, args.seed, args.updates),
                                 Path(folder))  # fmt: skip
        initial, last = (dump_fairseq(python, Path(folder) / f"{name}.pt", Path(folder), POSITIONS) for name in STATES)
    model = mapped_model(initial, config, row_ids)
    layers = (config.encoder_layers, config.decoder_layers)
    start, reference = (fairseq_to_hf_state(s, layers, row_ids, config.vocab_size) for s in (initial, last))
    print(f"{PROGRAM}: the same updates by the recipe's step", file=sys.stderr, flush=True)
    examples = EncodedPairs.from_lists(*zip(*piece_pairs(run / "data", "train", tokenizer, ("en", "de"))))
    rows = replay(model, examples, updates, settings["adam_betas"], settings["adam_eps"])
    tensors = drift(model.state_dict(), start, reference)
    for row in rows[:3] + rows[9::10]:
        print(f"update {row['update']:4d}  lr {row['lr']:.3e}  NLL sum {row['nll_sum']:.3f} / fairseq "
              f"{row['fairseq_nll_sum']:.3f}")  # fmt: skip
    figures = summary(rows, tensors)
    print(json.dumps(figures))
    if args.output:
        record = {"command": " ".join(sys.argv), **figures, "updates": rows, "tensors": tensors}
        args.output.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
