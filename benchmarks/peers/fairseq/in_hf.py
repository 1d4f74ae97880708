"""fairseq's `transformer` models inside hf_vanilla: separates the decoder from the model where the scores differ.

Each fairseq checkpoint of a finished `python -m benchmarks.peers` fairseq run of translation, or of summarization
without copying (the last update checkpoints and their average) is read in fairseq's own environment, its weights
mapped onto `VanillaTransformerForConditionalGeneration` (fairseq's sinusoids, sin and cos halves from position 2, as a
learned position table; its `</s>` as the decoder's start) and then, beside every checkpoint of the hf_vanilla runs
given, teacher-forced on the exported validation and test pieces (NLL in nats a token). The averaged (final) models are
decoded on the test split by `generate()` with the hf_vanilla run's generation settings and the recipe's test inputs,
and scored by the task's scorer (`run.TASKS`: sacreBLEU, ROUGE-1).

    python -m benchmarks.peers.fairseq.in_hf --fairseq-run /tmp/peers/translation-fairseq-1 \
        --hf-run /tmp/peers/translation-hf_vanilla-1 --venvs DIR
    python -m benchmarks.peers.fairseq.in_hf --task summarization \
        --fairseq-run /tmp/peers/summarization-fairseq-no-copy-1 --hf-run /tmp/peers/summarization-hf_vanilla-no-copy-2
"""

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from hf_vanilla.errors import user_exit

from benchmarks.peers.common.pieces import read_dictionary

PROGRAM = "fairseq_in_hf"
# Run in fairseq's environment: a checkpoint's float tensors and fairseq's own position table, as plain tensors.
DUMP = r"""
import sys, torch
from fairseq.modules.sinusoidal_positional_embedding import SinusoidalPositionalEmbedding
checkpoint, output, positions = sys.argv[1], sys.argv[2], int(sys.argv[3])
state = torch.load(checkpoint, map_location="cpu", weights_only=False)["model"]
tensors = {k: v.float() for k, v in state.items() if torch.is_tensor(v) and v.dtype.is_floating_point}
d_model = tensors["encoder.embed_tokens.weight"].shape[1]
# padding_idx 1: fairseq's position p (from 0) is row p + 2.
tensors["positions"] = SinusoidalPositionalEmbedding.get_embedding(positions + 2, d_model, 1)[2:].float()
torch.save(tensors, output)
"""
FAIRSEQ_SPECIALS = ("bos", "pad", "eos", "unk")  # fairseq's dictionary rows 0-3: <s>, <pad>, </s>, <unk>
# fairseq's tensors that hf_vanilla has no place for because it ties them, and its markers (a module's device, its
# state's version), which are float tensors too.
TIED_OR_MARKERS = ("decoder.embed_tokens.weight", "decoder.output_projection.weight", "positions")
MARKERS = ("._float_tensor", ".version")
TASKS_MAPPED = ("translation", "summarization")


def fairseq_rows_to_ids(dictionary: list[str], tokenizer) -> list[int]:
    """The tokenizer's id of each row of fairseq's embedding: its 4 specials, then `dictionary`'s pieces (dict.txt's
    first column, in order). Raises ValueError where a piece is not in the tokenizer's vocabulary."""
    vocabulary = tokenizer.get_vocab()
    unknown = [piece for piece in dictionary if piece not in vocabulary]
    if unknown:
        raise ValueError(f"{len(unknown)} of fairseq's pieces are not the tokenizer's (first: {unknown[0]!r})")
    specials = [getattr(tokenizer, f"{name}_token_id") for name in FAIRSEQ_SPECIALS]
    return specials + [vocabulary[piece] for piece in dictionary]


def _attention(fs: dict, prefix: str, names: str, part: str) -> torch.Tensor:
    return torch.cat([fs[f"{prefix}.{name}_proj.{part}"] for name in names])


def fairseq_to_hf_state(fs: dict, layers: tuple[int, int], row_ids: list[int], vocab_size: int) -> dict:
    """hf_vanilla's state dict (learned positions, tied embeddings) from fairseq's `transformer` state `fs` (with
    its position table under "positions"); `layers` = (encoder, decoder); fairseq's embedding row i becomes token
    `row_ids[i]`, and a token fairseq does not have keeps a zero row. A tensor of `fs` that has no place here (a
    pointer-generator's p_gen, say) is a ValueError."""
    left = [k for k in fs if not _is_mapped(k, layers)]
    if left:
        raise ValueError(f"{len(left)} of fairseq's tensors have no place in a `transformer` (first: {left[0]})")
    embedding = torch.zeros(vocab_size, fs["encoder.embed_tokens.weight"].shape[1])
    embedding[row_ids] = fs["encoder.embed_tokens.weight"]
    state = {"model.shared.weight": embedding}
    for side, count in zip(("encoder", "decoder"), layers):
        state[f"model.{side}.embed_positions.table.weight"] = fs["positions"]
        for i in range(count):
            f, h = f"{side}.layers.{i}", f"model.{side}.layers.{i}"
            for part in ("weight", "bias"):
                state[f"{h}.self_attn.qkv_proj.{part}"] = _attention(fs, f"{f}.self_attn", "qkv", part)
                for name in ("self_attn.out_proj", "self_attn_layer_norm", "final_layer_norm"):
                    state[f"{h}.{name}.{part}"] = fs[f"{f}.{name}.{part}"]
                for fc in ("fc1", "fc2"):
                    state[f"{h}.feed_forward.{fc}.{part}"] = fs[f"{f}.{fc}.{part}"]
                if side == "decoder":
                    state[f"{h}.encoder_attn.kv_proj.{part}"] = _attention(fs, f"{f}.encoder_attn", "kv", part)
                    for name in ("encoder_attn.q_proj", "encoder_attn.out_proj", "encoder_attn_layer_norm"):
                        state[f"{h}.{name}.{part}"] = fs[f"{f}.{name}.{part}"]
    return state


def _is_mapped(name: str, layers: tuple[int, int]) -> bool:
    """Whether `fairseq_to_hf_state` reads fairseq's tensor `name` (the shared embedding, a layer's, the positions) or
    hf_vanilla ties it to one it reads (or it is one of fairseq's `MARKERS`)."""
    if name in ("encoder.embed_tokens.weight", *TIED_OR_MARKERS) or name.endswith(MARKERS):
        return True
    found = re.fullmatch(r"(encoder|decoder)\.layers\.(\d+)\..+", name)
    return bool(found and int(found[2]) < layers[found[1] == "decoder"])


def mapped_model(fs: dict, config, row_ids: list[int]):
    """`VanillaTransformerForConditionalGeneration` with `config`'s shapes holding fairseq's weights `fs`."""
    from hf_vanilla import VanillaTransformerForConditionalGeneration

    config = config.__class__(**{**config.to_dict(), "position_embedding_type": "learned"})
    config.max_position_embeddings = fs["positions"].shape[0]
    model = VanillaTransformerForConditionalGeneration(config).eval()
    state = fairseq_to_hf_state(fs, (config.encoder_layers, config.decoder_layers), row_ids, config.vocab_size)
    missing, unexpected = model.load_state_dict(state, strict=False)
    left = [k for k in missing if not k.endswith("embed_tokens.weight") and k != "lm_head.weight"]
    if unexpected or left:
        raise ValueError(f"fairseq's weights do not fit: unexpected {unexpected[:3]}, missing {left[:3]}")
    model.tie_weights()
    return model


@torch.no_grad()
def reference_nll(model, pairs: list[tuple[list[int], list[int]]], start_id: int, batch: int = 32) -> float:
    """Mean NLL (nats) of each reference token, </s> included, teacher-forced: `pairs` of (source ids, target ids),
    each ending with </s>; the decoder starts from `start_id` (fairseq's `</s>`, the recipe's `<s>`)."""
    pad = model.config.pad_token_id
    total, count = 0.0, 0
    for first in range(0, len(pairs), batch):
        sources, targets = zip(*pairs[first : first + batch])
        width, length = max(map(len, sources)), max(map(len, targets))
        ids = torch.tensor([s + [pad] * (width - len(s)) for s in sources])
        labels = torch.tensor([t + [-100] * (length - len(t)) for t in targets])
        inputs = torch.tensor([[start_id] + t[:-1] + [pad] * (length - len(t)) for t in targets])
        logits = model(input_ids=ids, attention_mask=(ids != pad).long(), decoder_input_ids=inputs).logits
        total += F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="sum").item()
        count += int((labels != -100).sum())
    return total / count


def piece_pairs(data: Path, split: str, tokenizer, sides: tuple[str, str]) -> list[tuple[list[int], list[int]]]:
    """The exported `split`'s (source, target) piece lines (`split.SIDE`) as id lists, each with </s>: what fairseq
    trained on."""
    sides = [(data / f"{split}.{side}").read_text(encoding="utf-8").splitlines() for side in sides]
    eos = tokenizer.eos_token_id
    return [tuple(tokenizer.convert_tokens_to_ids(line.split()) + [eos] for line in pair) for pair in zip(*sides)]


def fairseq_checkpoints(run: Path) -> list[Path]:
    """A fairseq run's update checkpoints (by update) and its average, as `python -m benchmarks.peers` left them (in
    the folder named for the system, `fairseq` or `fairseq-no-copy`)."""
    found = sorted(run.glob("fairseq*/checkpoints"))
    folder = found[0] if found else run / "fairseq" / "checkpoints"
    updates = sorted(folder.glob("checkpoint_*_*.pt"), key=lambda p: int(p.stem.rsplit("_", 1)[1]))
    return [*updates, folder / "averaged.pt"]


def hf_checkpoints(run: Path) -> list[Path]:
    """A recipe run's checkpoint models (by update) and its final (averaged) model."""
    return [*(p / "model" for p in sorted((run / "run").glob("checkpoint-*"))), run / "run" / "final"]


def dump_fairseq(python: Path, checkpoint: Path, folder: Path, positions: int) -> dict:
    """`checkpoint`'s tensors, read by fairseq's own `python` (`DUMP`)."""
    output = folder / (checkpoint.parent.parent.parent.name + "-" + checkpoint.stem + ".pt")
    done = subprocess.run([str(python), "-c", DUMP, str(checkpoint), str(output), str(positions)], capture_output=True)
    if done.returncode:
        raise RuntimeError(f"fairseq could not read {checkpoint}: {done.stderr.decode()[-800:]}")
    return torch.load(output, weights_only=True)


@dataclass(frozen=True)
class TestSplit:
    """What the final models are decoded on and scored by: the recipe's test inputs, `generate_texts`' keywords for
    them, the exported data folder and the task's scorer (`Task.score`)."""

    inputs: list[str]
    keywords: dict
    data: Path
    scorer: Callable[[list[str], Path], dict]


def score(model, start_id: int, splits: dict, test: TestSplit | None, tokenizer) -> dict:
    """One model's NLL on each split and, given the `test` split, its quality (`test_<metric>`) through
    `generate_texts` with the model's own generation settings."""
    from hf_vanilla.batch_decoding import generate_texts

    figures = {f"{name}_nll": round(reference_nll(model, pairs, start_id), 4) for name, pairs in splits.items()}
    if test is None:
        return figures
    outputs = generate_texts(
        model, tokenizer, test.inputs, progress=False, decoder_start_token_id=start_id, **test.keywords
    )
    quality = test.scorer(outputs, test.data)["quality"]
    figures[f"test_{quality['metric']}"] = quality["value"]
    return figures


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=TASKS_MAPPED, default="translation")
    parser.add_argument("--preset", default="demo", help="The recipe's preset the runs were made with.")
    parser.add_argument(
        "--fairseq-run", type=Path, action="append", required=True, help="A fairseq run's work dir (benchmarks.peers)"
    )
    parser.add_argument(
        "--hf-run", type=Path, action="append", required=True, help="An hf_vanilla run's work dir (benchmarks.peers)"
    )
    parser.add_argument("--venvs", type=Path, required=True, help="Where the peers' environments are.")
    parser.add_argument("--output", type=Path, help="A JSON file for the figures.")
    return parser.parse_args(argv)


def required_paths(args: argparse.Namespace) -> list[Path]:
    """What the comparison reads: the exported dictionary, every fairseq checkpoint and every recipe checkpoint."""
    return [args.fairseq_run[0] / "data" / "dict.txt", *fairseq_models(args), *hf_models(args)]


def fairseq_models(args: argparse.Namespace) -> list[Path]:
    return [path for run in args.fairseq_run for path in fairseq_checkpoints(run)]


def hf_models(args: argparse.Namespace) -> list[Path]:
    return [path for run in args.hf_run for path in hf_checkpoints(run)]


def test_split(args: argparse.Namespace, task) -> TestSplit:
    """The `task`'s (`run.TASKS`) test inputs as the recipe decodes them (`Task.test_inputs` of its settings)."""
    inputs, keywords = task.test_inputs(task.settings(args.preset, True, {}), None)
    return TestSplit(inputs, keywords, args.fairseq_run[0] / "data", task.score)


def main(argv: list[str] | None = None) -> None:
    from hf_vanilla import VanillaTransformerForConditionalGeneration
    from hf_vanilla.configuration_vanilla import VanillaGenerationConfig, VanillaTransformerConfig
    from hf_vanilla.tokenization import load_tokenizer

    from benchmarks.peers.tasks import TASKS

    args = parse_args(argv)
    for path in required_paths(args):
        if not path.exists():
            raise user_exit(
                PROGRAM,
                f"{path} is missing: first python -m benchmarks.peers --task {args.task}, fairseq and hf_vanilla",
            )
    data = args.fairseq_run[0] / "data"
    tokenizer = load_tokenizer(args.fairseq_run[0] / "tokenizer")
    try:
        row_ids = fairseq_rows_to_ids(read_dictionary(data / "dict.txt"), tokenizer)
    except ValueError as error:
        raise user_exit(PROGRAM, f"{data / 'dict.txt'} is not the runs' tokenizer's: {error}") from None
    task = TASKS[args.task]
    splits = {name: piece_pairs(data, name, tokenizer, task.sides) for name in ("valid", "test")}
    test, final = test_split(args, task), hf_checkpoints(args.hf_run[0])[-1]
    config, generation = (
        VanillaTransformerConfig.from_pretrained(final),
        VanillaGenerationConfig.from_pretrained(final),
    )
    python, rows = args.venvs / "fairseq" / "bin" / "python", []
    with tempfile.TemporaryDirectory() as folder:
        for checkpoint in fairseq_models(args):
            try:
                model = mapped_model(dump_fairseq(python, checkpoint, Path(folder), 1024), config, row_ids)
            except ValueError as error:
                raise user_exit(PROGRAM, f"{checkpoint}: {error}") from None
            model.generation_config = generation  # the recipe's decoding, as the hf_vanilla run's final model has it
            decoded = test if checkpoint.name == "averaged.pt" else None  # the model fairseq-generate scored
            rows.append({"checkpoint": str(checkpoint), **score(model, 2, splits, decoded, tokenizer)})
            print(json.dumps(rows[-1]), flush=True)
    for checkpoint in hf_models(args):
        model = VanillaTransformerForConditionalGeneration.from_pretrained(checkpoint).eval()
        start = model.generation_config.decoder_start_token_id
        decoded = test if checkpoint.name == "final" else None
        rows.append({"checkpoint": str(checkpoint), **score(model, start, splits, decoded, tokenizer)})
        print(json.dumps(rows[-1]), flush=True)
    if args.output:
        args.output.write_text(json.dumps({"command": " ".join(sys.argv), "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
