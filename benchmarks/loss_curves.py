"""The training loss of the same model in fp32 and under bf16 autocast, update by update, in one process.

    python -m benchmarks.loss_curves --device cuda --preset base --steps 200 --json curves.json

Both runs start from the same initial weights (seed), draw the same dropout masks (the seed is set again before
each) and see the same batches, built once before either: a fixed synthetic translation task, not a corpus, because
the lent GPU machines hold neither the shared corpora nor `datasets`, and a fixed task makes the two runs differ by
their arithmetic alone. Each source is a sentence of 8 to 48 tokens drawn from a Zipf distribution over the
vocabulary (like word frequencies); its target is the source reversed, each token replaced by its image under a
fixed permutation of the vocabulary, then </s>: the loss starts near ln(vocabulary), falls as the model learns the
tokens' frequencies, and further only as it learns the mapping, which takes the attention over the source. Rows are
right-padded, so masks matter.

Training: the model's own label-smoothed loss, the paper's Adam (beta2 0.98, epsilon 1e-9; fused on CUDA) and
inverse-square-root schedule (`hf_vanilla.training.schedule`) with `--warmup` updates of warmup, as the recipes use
them. "bf16" is mixed precision as the recipes run it (`--mixed-precision bf16`): fp32 weights and optimiser,
forward and backward under `torch.autocast(dtype=bfloat16)`; "fp32" is plain fp32 (no TF32: the float32 matmul
precision is recorded). Losses are read back once at the end, not at every update.

The JSON (--json): `environment` (`benchmarks.environment`'s header), `setting`, `curves` (`fp32`, `bf16`: the loss
of every update), `seconds` of each run, and `summary`: each curve's first loss and mean of the last 10, the largest
|difference| between the curves and the difference of the last-10 means relative to fp32's.
"""

import argparse
import json
import math
import time
from pathlib import Path

import torch

from hf_vanilla import SIZES, VanillaTransformerConfig, VanillaTransformerForConditionalGeneration
from hf_vanilla.training.schedule import paper_optimizer, paper_scheduler

from benchmarks.environment import environment
from benchmarks.flag_checks import add_model_size, require_at_least

PAD, BOS, EOS = 0, 1, 2
PRECISIONS = ("fp32", "bf16")


def synthetic_batches(steps: int, batch_size: int, vocab: int, seed: int, lengths: tuple[int, int] = (8, 48)):
    """`steps` batches of the reversal-and-permutation task (see the module's docstring): (input_ids,
    attention_mask, labels) each, right-padded, labels -100 on padding."""
    generator = torch.Generator().manual_seed(seed)
    content = vocab - 3  # ids 0, 1, 2 are <pad>, <s>, </s>
    zipf = 1.0 / torch.arange(1, content + 1, dtype=torch.float64) ** 1.1
    permutation = torch.randperm(content, generator=generator) + 3
    batches = []
    for _ in range(steps):
        sizes = torch.randint(lengths[0], lengths[1] + 1, (batch_size,), generator=generator)
        width = int(sizes.max())
        tokens = torch.multinomial(zipf, batch_size * width, replacement=True, generator=generator) + 3
        input_ids = tokens.view(batch_size, width).masked_fill(torch.arange(width) >= sizes[:, None], PAD)
        labels = torch.full((batch_size, width + 1), -100)
        for row, size in enumerate(sizes.tolist()):
            labels[row, :size] = permutation[input_ids[row, :size].flip(0) - 3]
            labels[row, size] = EOS
        batches.append((input_ids, (input_ids != PAD).long(), labels))
    return batches


def loss_curve(config: VanillaTransformerConfig, batches, device, bf16: bool, warmup: int, seed: int):
    """The loss of every update of a fresh model (initialised from `seed`) trained on `batches`, and the seconds."""
    torch.manual_seed(seed)
    model = VanillaTransformerForConditionalGeneration(config).to(device).train()
    optimizer = paper_optimizer(model.parameters(), fused=device.type == "cuda")
    scheduler = paper_scheduler(optimizer, config.d_model, warmup)
    torch.manual_seed(seed)  # the same dropout masks in both runs
    losses = []
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for input_ids, attention_mask, labels in batches:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            loss = model(
                input_ids=input_ids.to(device),
                attention_mask=attention_mask.to(device),
                labels=labels.to(device),
            ).loss
        loss.backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.detach())
    curve = torch.stack(losses).float().cpu().tolist()  # the one read-back
    return curve, time.perf_counter() - start


def summary(curves: dict[str, list[float]]) -> dict:
    fp32, bf16 = curves["fp32"], curves["bf16"]
    tail = min(10, len(fp32))
    last = {name: sum(curve[-tail:]) / tail for name, curve in curves.items()}
    return {
        "fp32_first": round(fp32[0], 4),
        "bf16_first": round(bf16[0], 4),
        "fp32_last10_mean": round(last["fp32"], 4),
        "bf16_last10_mean": round(last["bf16"], 4),
        "max_abs_difference": round(max(abs(a - b) for a, b in zip(fp32, bf16)), 4),
        "last10_relative_difference": round((last["bf16"] - last["fp32"]) / last["fp32"], 4),
        "finite": all(math.isfinite(value) for curve in curves.values() for value in curve),
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    add_model_size(parser, "--preset", "base", sorted(SIZES))
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--steps", type=int, default=200, help="Updates per run.")
    parser.add_argument("--batch-size", type=int, default=96, help="Sentences per batch (~2,700 tokens a side).")
    parser.add_argument("--warmup", type=int, default=400, help="Warmup updates of the paper's schedule.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-length", type=int, default=48, help="Longest source sentence (tokens).")
    parser.add_argument("--every", type=int, default=20, help="Print the curves every this many updates.")
    parser.add_argument("--json", help="Write the curves and summary here.")
    args = parser.parse_args(argv)
    counts = dict.fromkeys(("steps", "batch_size", "warmup", "every"), 1)
    require_at_least(parser, args, {**counts, "max_length": 8, "vocab_size": 4})  # 4: the 3 special tokens and more
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    device = torch.device(args.device)
    config = VanillaTransformerConfig.from_size(
        args.model_size,
        vocab_size=args.vocab_size,
        pad_token_id=PAD,
        bos_token_id=BOS,
        eos_token_id=EOS,
        decoder_start_token_id=BOS,
        max_position_embeddings=max(1024, args.max_length + 2),
    )
    batches = synthetic_batches(args.steps, args.batch_size, args.vocab_size, args.seed, (8, args.max_length))
    curves, seconds = {}, {}
    for name in PRECISIONS:
        curves[name], seconds[name] = loss_curve(config, batches, device, name == "bf16", args.warmup, args.seed)
    record = {
        "environment": environment(),
        "setting": dict(
            vars(args),
            float32_matmul_precision=torch.get_float32_matmul_precision(),
            target_tokens=sum(int((labels != -100).sum()) for _, _, labels in batches),
        ),
        "curves": {name: [round(value, 5) for value in curve] for name, curve in curves.items()},
        "seconds": {name: round(value, 2) for name, value in seconds.items()},
        "summary": summary(curves),
    }
    print(f"{'update':>8}{'fp32':>10}{'bf16':>10}{'bf16-fp32':>12}")
    for step in sorted({0, *range(args.every - 1, args.steps, args.every), args.steps - 1}):
        a, b = curves["fp32"][step], curves["bf16"][step]
        print(f"{step + 1:>8}{a:>10.4f}{b:>10.4f}{b - a:>12.4f}")
    print(f"seconds: {record['seconds']}")
    print(f"summary: {record['summary']}")
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=2) + "\n")
    return record


if __name__ == "__main__":
    main()
