"""Where a CPU training update of the demo models spends its time: `torch.profiler` over updates (forward, backward,
Adam) of the translation, parsing and summarization demos' models (the last with the copy mechanism), each on batches
of its demo's shape, the operators by self CPU time side by side.

    python -m benchmarks.studies.profile_demo_step                 # every demo, this machine's threads
    OMP_NUM_THREADS=1 python -m benchmarks.studies.profile_demo_step --updates 5
    python -m benchmarks.studies.profile_demo_step --host-malloc system  # malloc's defaults (the recipes: reuse)

Shapes (token ids drawn with a fixed seed, the demos' 4,000-token vocabulary): translation, 2,000 tokens a batch as
rows of 30 source and 35 target tokens (Bible verses); summarization, 6,000 tokens a batch as rows of 96 source tokens
(an AESLC body cut at the preset's limit) and 8 target tokens (a subject), half of each subject copied from its body;
parsing, 2,000 tokens a batch as rows of 25 source tokens (a WSJ sentence) and 90 target tokens (its linearized tree).
"""

import argparse
import time
from collections.abc import Callable

import torch
from torch.profiler import ProfilerActivity, profile

from hf_vanilla import VanillaTransformerConfig, VanillaTransformerForConditionalGeneration
from hf_vanilla.training.host_memory import HOST_MALLOC_CHOICES, apply_host_malloc

from benchmarks.flag_checks import require_at_least

SHAPES = {  # demo -> (model preset, tokens a batch, source length, target length)
    "translation": ("demo", 2000, 30, 35),
    "parsing": ("demo_parsing", 2000, 25, 90),
    "summarization": ("demo_summarization", 6000, 96, 8),
}


def batch(source: int, target: int, tokens: int, vocab: int, seed: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    rows = tokens // max(source, target)  # the sampler's budget bounds each side's padded size
    ids = torch.randint(4, vocab, (rows, source), generator=generator)
    ids[:, -1] = 2
    labels = torch.randint(4, vocab, (rows, target), generator=generator)
    copied = torch.rand(rows, target, generator=generator) < 0.5
    labels[copied] = ids.gather(1, torch.randint(0, source - 1, (rows, target), generator=generator))[copied]
    labels[:, -1] = 2
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}


def demo_update(name: str) -> Callable[[], None]:
    """One training update (forward, backward, Adam) of demo `name`'s model on a fixed batch of its shape."""
    preset, tokens, source, target = SHAPES[name]
    torch.manual_seed(0)
    config = VanillaTransformerConfig.from_size(preset, vocab_size=4000, unk_token_id=3)
    model = VanillaTransformerForConditionalGeneration(config).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    inputs = batch(source, target, tokens, config.vocab_size, seed=1)

    def update():
        model(**inputs).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return update


def profile_demo(name: str, updates: int, rows: int) -> tuple[float, list[tuple[str, float]]]:
    """(milliseconds an update, [(operator, share of self CPU time)] of the `rows` largest)."""
    update = demo_update(name)
    update()  # warm-up
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        start = time.perf_counter()
        for _ in range(updates):
            update()
        seconds = time.perf_counter() - start
    events = [e for e in profiler.key_averages() if e.self_cpu_time_total > 0]
    total = sum(e.self_cpu_time_total for e in events)
    top = sorted(events, key=lambda e: -e.self_cpu_time_total)[:rows]
    return 1000 * seconds / updates, [(e.key, 100 * e.self_cpu_time_total / total) for e in top]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--updates", type=int, default=5, help="Profiled updates per demo (after one warm-up).")
    parser.add_argument("--rows", type=int, default=12, help="Operators shown per demo.")
    parser.add_argument("--demos", nargs="+", choices=list(SHAPES), default=list(SHAPES), help="The demos profiled.")
    parser.add_argument(
        "--host-malloc", choices=HOST_MALLOC_CHOICES, default="reuse", help="Memory allocation, as the recipes' flag."
    )
    args = parser.parse_args(argv)
    require_at_least(parser, args, {"updates": 1, "rows": 1})
    host_malloc = apply_host_malloc(args.host_malloc, "cpu")
    threads, capability = torch.get_num_threads(), torch.backends.cpu.get_cpu_capability()
    print(f"torch {torch.__version__}, {threads} threads, {capability}, host_malloc {host_malloc}")
    for name in args.demos:
        milliseconds, top = profile_demo(name, args.updates, args.rows)
        print(f"\n{name}: {milliseconds:.0f} ms an update (profiled)\n| operator | self CPU |\n|---|---|")
        for key, share in top:
            print(f"| `{key}` | {share:.1f}% |")


if __name__ == "__main__":
    main()
