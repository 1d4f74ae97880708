"""What the pointer-generator's copy costs: training and decoding tokens/s of the same model with and without it, in
one process, on summarization-shaped data.

    python -m benchmarks.pointer_generator_speed                                  # demo size, CPU
    python -m benchmarks.pointer_generator_speed --model-size base --device cuda --dtype bfloat16 --repeats 7 \
        --json pointer_generator_speed.json

Both models get the same weights (the copy model adds only its gate) and the same data: `--documents` synthetic
documents of 120-400 tokens (uniform) with summaries of 10-60 tokens, half of each summary's tokens copied from its
document, ids drawn from one `--vocab-size` vocabulary with a fixed seed. Training: forward, backward and Adam step
(label smoothing 0.1) on `--train-batches` token-budget batches (`TokenBudgetBatchSampler`, `--max-tokens` per side);
tokens/s counts the batches' non-padding source and target tokens. Decoding: `generate()` with beam 4 on
`--decode-sentences` documents, `--decode-batch` at a time, exactly `--new-tokens` tokens per sentence (min = max
new tokens: untrained models stop anywhere); tokens/s counts the generated tokens. Each repeat times the plain model
and the copy model back to back, the first of the two alternating from one repeat to the next, so that a machine's
drift falls on both; the figures are min/median/max over `--repeats`, and the ratio of the medians (copy / plain).
"""

import argparse
import json
import statistics
import time

import torch
from tqdm.auto import tqdm

from hf_vanilla import VanillaTransformerConfig, VanillaTransformerForConditionalGeneration
from hf_vanilla.data.batching import TokenBudgetBatchSampler
from hf_vanilla.errors import user_exit

from benchmarks.environment import environment
from benchmarks.flag_checks import add_model_size, require_at_least

PAD, BOS, EOS = 0, 1, 2
SOURCE_LENGTHS, TARGET_LENGTHS = (120, 400), (10, 60)
MODELS = ("plain", "pointer-generator")


def summarization_data(documents: int, vocab: int, seed: int) -> list[tuple[list[int], list[int]]]:
    """(document, summary) id lists: lengths uniform in SOURCE_LENGTHS and TARGET_LENGTHS (</s> included), half of
    each summary's tokens taken from its document."""
    generator = torch.Generator().manual_seed(seed)
    pairs = []
    for _ in range(documents):
        source_length = int(torch.randint(SOURCE_LENGTHS[0], SOURCE_LENGTHS[1] + 1, (1,), generator=generator))
        target_length = int(torch.randint(TARGET_LENGTHS[0], TARGET_LENGTHS[1] + 1, (1,), generator=generator))
        source = torch.randint(4, vocab, (source_length - 1,), generator=generator)
        target = torch.randint(4, vocab, (target_length - 1,), generator=generator)
        copied = torch.rand(target_length - 1, generator=generator) < 0.5
        target[copied] = source[torch.randint(0, source_length - 1, (int(copied.sum()),), generator=generator)]
        pairs.append((source.tolist() + [EOS], target.tolist() + [EOS]))
    return pairs


def padded(rows: list[list[int]]) -> torch.Tensor:
    ids = torch.full((len(rows), max(map(len, rows))), PAD, dtype=torch.long)
    for row, tokens in enumerate(rows):
        ids[row, : len(tokens)] = torch.tensor(tokens)
    return ids


def training_batches(pairs, max_tokens: int, count: int, seed: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The first `count` token-budget batches of epoch 0, as padded (source, labels)."""
    sampler = TokenBudgetBatchSampler(
        [len(s) for s, _ in pairs], [len(t) for _, t in pairs], max_tokens=max_tokens, seed=seed
    )
    batches = sampler.all_batches(0)
    if len(batches) < count:
        message = f"--documents gives {len(batches)} batches of --max-tokens {max_tokens}; {count} are timed."
        raise user_exit("pointer_generator_speed", message)
    return [(padded([pairs[i][0] for i in b]), padded([pairs[i][1] for i in b])) for b in batches[:count]]


def build_models(preset: str, vocab: int, seed: int) -> dict[str, VanillaTransformerForConditionalGeneration]:
    """The plain model and the copy model with its weights (and a gate of its own), dropout as the preset has it."""
    torch.manual_seed(seed)
    plain = VanillaTransformerForConditionalGeneration(VanillaTransformerConfig.from_size(preset, vocab_size=vocab))
    pointer = VanillaTransformerForConditionalGeneration(
        VanillaTransformerConfig.from_size(preset, vocab_size=vocab, pointer_generator=True)
    )
    missing, unexpected = pointer.load_state_dict(plain.state_dict(), strict=False)
    assert set(missing) == {"pointer_generator.gate.weight", "pointer_generator.gate.bias"} and not unexpected
    return dict(zip(MODELS, (plain, pointer), strict=True))


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def train_seconds(model, optimizer, batches, device, autocast) -> float:
    """Seconds of one forward, backward and Adam step on each batch."""
    synchronize(device)
    start = time.perf_counter()
    for source, labels in batches:
        with autocast:
            loss = model(input_ids=source, attention_mask=(source != PAD).long(), labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    synchronize(device)
    return time.perf_counter() - start


@torch.no_grad()
def decode_seconds(model, sources: list[torch.Tensor], new_tokens: int, device, autocast) -> float:
    """Seconds of beam-4 `generate()` of exactly `new_tokens` tokens for each batch of `sources`."""
    synchronize(device)
    start = time.perf_counter()
    for source in sources:
        with autocast:
            model.generate(
                source,
                attention_mask=(source != PAD).long(),
                num_beams=4,
                max_new_tokens=new_tokens,
                min_new_tokens=new_tokens,
            )
    synchronize(device)
    return time.perf_counter() - start


def spread(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_size(parser, "--model-preset", "demo", ["tiny", "demo", "base"])
    parser.add_argument("--vocab-size", type=int, default=32000, help="One shared vocabulary (default 32,000).")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"], help="autocast")
    parser.add_argument("--documents", type=int, default=512, help="Synthetic (document, summary) pairs.")
    parser.add_argument("--max-tokens", type=int, default=4096, help="Token budget of a training batch, per side.")
    parser.add_argument("--train-batches", type=int, default=4, help="Training batches timed per repeat.")
    parser.add_argument("--decode-sentences", type=int, default=16)
    parser.add_argument("--decode-batch", type=int, default=8)
    parser.add_argument("--new-tokens", type=int, default=30, help="Tokens generated per sentence.")
    parser.add_argument("--repeats", type=int, default=5, help="Paired repeats (plain and copy model each).")
    parser.add_argument("--parts", default="train,decode", help="train, decode or both (comma-separated).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="Also write the figures and the settings here.")
    args = parser.parse_args(argv)
    args.parts = [p for p in args.parts.split(",") if p]
    if not args.parts or set(args.parts) - {"train", "decode"}:
        parser.error(f"--parts takes train, decode or both, got {','.join(args.parts)!r}")
    require_at_least(parser, args, {"repeats": 1})
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype)
    autocast = torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32)
    pairs = summarization_data(args.documents, args.vocab_size, args.seed)
    batches = [
        (s.to(device), t.to(device))
        for s, t in training_batches(pairs, args.max_tokens, args.train_batches, args.seed)
    ]
    train_tokens = sum(int((s != PAD).sum() + (t != PAD).sum()) for s, t in batches)
    documents = [pairs[i][0] for i in range(args.decode_sentences)]
    sources = [
        padded(documents[i : i + args.decode_batch]).to(device) for i in range(0, len(documents), args.decode_batch)
    ]
    decode_tokens = len(documents) * args.new_tokens
    models = build_models(args.model_size, args.vocab_size, args.seed)
    optimizers = {}
    for name, model in models.items():
        model.to(device)
        optimizers[name] = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
        if "train" in args.parts:  # warm-up: one batch, the optimizer's state allocated
            train_seconds(model.train(), optimizers[name], batches[:1], device, autocast)
        if "decode" in args.parts:
            decode_seconds(model.eval(), sources[:1], 2, device, autocast)
    figures: dict[str, dict[str, list[float]]] = {part: {name: [] for name in MODELS} for part in args.parts}
    for repeat in tqdm(range(args.repeats), desc="paired repeats"):
        order = MODELS if repeat % 2 == 0 else MODELS[::-1]
        for name in order:
            if "train" in args.parts:
                seconds = train_seconds(models[name].train(), optimizers[name], batches, device, autocast)
                figures["train"][name].append(train_tokens / seconds)
            if "decode" in args.parts:
                seconds = decode_seconds(models[name].eval(), sources, args.new_tokens, device, autocast)
                figures["decode"][name].append(decode_tokens / seconds)

    results = {}
    print(
        f"\n{args.model_size}, vocabulary {args.vocab_size}, {args.device} {args.dtype}, {torch.get_num_threads()} "
        f"threads; {args.repeats} paired repeats; tokens/s (min / median / max)"
    )
    print(f"| part | {' | '.join(MODELS)} | copy / plain (medians) |")
    print("|---|---|---|---|")
    for part, by_model in figures.items():
        spreads = {name: spread(values) for name, values in by_model.items()}
        ratio = spreads["pointer-generator"]["median"] / spreads["plain"]["median"]
        cells = " | ".join(f"{s['min']:.0f} / {s['median']:.0f} / {s['max']:.0f}" for s in spreads.values())
        print(f"| {part} | {cells} | {ratio:.3f} |")
        results[part] = {"tokens_per_s": spreads, "ratio": ratio, "runs": by_model}
    if args.json:
        settings = {k: v for k, v in vars(args).items() if k != "json"}
        settings |= {
            "train_tokens": train_tokens,
            "train_batch_shapes": [list(s.shape) + list(t.shape) for s, t in batches],
        }
        settings |= {"threads": torch.get_num_threads()}
        with open(args.json, "w") as file:
            json.dump({"environment": environment(), "settings": settings, "results": results}, file, indent=1)


if __name__ == "__main__":
    main()
