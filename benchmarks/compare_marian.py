"""hf_vanilla against transformers' own Transformer-base translation models, side by side in one process.

    python benchmarks/compare_marian.py --record             # CPU, fp32, the README's settings; the run recorded
    python benchmarks/compare_marian.py --device cuda --dtype bfloat16 --batch-size 64

Builds hf_vanilla, `MarianMTModel` and `FSMTForConditionalGeneration` at Transformer-base size (6+6 layers, 512, 2048,
8 heads, one shared 32k vocabulary). MarianMTModel gets hf_vanilla's very weights (`to_marian`: the fused projections
split, the d_model axis permuted to Marian's sinusoid layout), so both compute the same function: the script checks
that their logits agree before timing anything.
FSMT gets the same shapes and seed. Prints a table and writes JSON (--json): training tokens/s (forward, backward,
Adam step, label smoothing 0.1) and peak memory at a fixed token batch; `generate()` target tokens/s, greedy and beam
4, at batch 1 and 16 on real English sentences with a fixed number of new tokens; the token-budget sampler's
padding against random batches; on CUDA, model FLOP utilisation. --record writes the run to
benchmarks/results/<date>-<device>.json: `device`, `torch`, `transformers`, `date`, `train` -> `base` (target-side
MFU: 6 x parameters x target tokens/s over the GPU's dense peak), `decode` (hf_vanilla's and Marian's tokens/s per
setting), and every figure under `results`.
"""

import argparse
import datetime
import json
import multiprocessing
import os
import time
from pathlib import Path

import torch
import torch.nn.functional as F
import transformers
from transformers import FSMTConfig, FSMTForConditionalGeneration

from hf_vanilla import VanillaTransformerConfig, VanillaTransformerForConditionalGeneration
from hf_vanilla.convert import to_marian
from hf_vanilla.data.batching import TokenBudgetBatchSampler, random_batches

SHARED_DATA = (
    Path(os.environ.get("HF_VANILLA_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    / "wmt14-ende-sample"
)
BASE = dict(d_model=512, layers=6, heads=8, d_ff=2048, vocab=32000)
PAD, BOS, EOS = 0, 1, 2


def vanilla_model() -> VanillaTransformerForConditionalGeneration:
    config = VanillaTransformerConfig.from_preset(
        "base",
        vocab_size=BASE["vocab"],
        pad_token_id=PAD,
        bos_token_id=BOS,
        eos_token_id=EOS,
        decoder_start_token_id=BOS,
    )
    torch.manual_seed(0)
    return VanillaTransformerForConditionalGeneration(config)


def fsmt_model() -> FSMTForConditionalGeneration:
    """FSMT (fairseq's WMT19 port) at the same size: its own layout, same seed, shared embeddings and output."""
    config = FSMTConfig(
        langs=["en", "de"],
        src_vocab_size=BASE["vocab"],
        tgt_vocab_size=BASE["vocab"],
        d_model=BASE["d_model"],
        encoder_layers=BASE["layers"],
        decoder_layers=BASE["layers"],
        encoder_attention_heads=BASE["heads"],
        decoder_attention_heads=BASE["heads"],
        encoder_ffn_dim=BASE["d_ff"],
        decoder_ffn_dim=BASE["d_ff"],
        activation_function="relu",
        dropout=0.1,
        attention_dropout=0.0,
        activation_dropout=0.0,
        scale_embedding=True,
        tie_word_embeddings=True,
        max_position_embeddings=1024,
        pad_token_id=PAD,
        bos_token_id=BOS,
        eos_token_id=EOS,
        decoder_start_token_id=BOS,
        forced_eos_token_id=None,
    )
    torch.manual_seed(0)
    return FSMTForConditionalGeneration(config)


def english_batches(tokens_per_sentence: int, count: int) -> torch.Tensor:
    """`count` real English sentences (newstest2014) as ids of exactly `tokens_per_sentence` tokens: their bytes
    folded into the vocabulary (the models are untrained, so only shapes and real-text variety matter), ending in
    </s>. Falls back to a fixed random stream when the shared data is absent."""
    source = SHARED_DATA / "newstest2014-src.en"
    rows = []
    if source.exists():
        for line in source.read_text(encoding="utf-8").splitlines()[:count]:
            folded = enumerate(line.encode()[: tokens_per_sentence - 1])
            ids = [3 + (b * 131 + i * 17) % (BASE["vocab"] - 3) for i, b in folded]
            ids += [3 + (len(ids) * 7919) % (BASE["vocab"] - 3)] * (tokens_per_sentence - 1 - len(ids))
            rows.append(ids + [EOS])
    while len(rows) < count:
        generator = torch.Generator().manual_seed(len(rows))
        rows.append(torch.randint(3, BASE["vocab"], (tokens_per_sentence - 1,), generator=generator).tolist() + [EOS])
    return torch.tensor(rows)


def smoothed_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=-100, label_smoothing=0.1)


def train_step(model, source: torch.Tensor, target: torch.Tensor, optimizer, own_loss: bool) -> None:
    if own_loss:  # hf_vanilla's own label-smoothed loss
        loss = model(input_ids=source, labels=target).loss
    else:
        decoder_input_ids = torch.cat([torch.full_like(target[:, :1], BOS), target[:, :-1]], dim=1)
        loss = smoothed_loss(model(input_ids=source, decoder_input_ids=decoder_input_ids).logits, target)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def training_speed(model, source, target, device, dtype, steps: int, own_loss: bool) -> dict:
    model.to(device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    source, target = source.to(device), target.to(device)
    autocast = torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32)
    with autocast:
        for _ in range(2):
            train_step(model, source, target, optimizer, own_loss)
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    with autocast:
        for _ in range(steps):
            train_step(model, source, target, optimizer, own_loss)
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / steps
    figures = {
        "train_tokens_per_s": round((source.numel() + target.numel()) / seconds, 1),
        "train_step_s": round(seconds, 4),
    }
    if device.type == "cuda":
        figures["peak_memory_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
        parameters = sum(p.numel() for p in model.parameters())
        flops = 6 * parameters * (source.numel() + target.numel()) / 2  # ~6 N per token, counted once per side
        figures["mfu"] = round(flops / seconds / peak_flops(device, dtype), 4)
    model.cpu()
    return figures


def peak_flops(device: torch.device, dtype: torch.dtype) -> float:
    name = torch.cuda.get_device_name(device)
    dense_bf16 = {"H100": 989e12, "H200": 989e12, "A100": 312e12, "L4": 121e12}
    for key, value in dense_bf16.items():
        if key in name:
            return value if dtype != torch.float32 else value / 2
    return float("nan")


def _resident_mib(field: str) -> float:
    """A memory figure of this process from /proc/self/status (Linux): VmRSS now, or VmHWM, its peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def _cpu_peak_memory(name: str, batch: int, length: int, queue) -> None:
    """Runs in a fresh process: the peak resident memory that 3 training steps of model `name` add to the memory
    its weights already take (gradients, Adam state, activations). The peak is reset first (/proc/self/clear_refs),
    because a spawned process inherits its parent's peak."""
    builders = {"hf_vanilla": vanilla_model, "MarianMTModel": lambda: to_marian(vanilla_model()), "FSMT": fsmt_model}
    model = builders[name]()
    source, target = english_batches(length, batch), english_batches(length, batch).roll(1, 0)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    Path("/proc/self/clear_refs").write_text("5")
    before = _resident_mib("VmRSS")
    for _ in range(3):
        train_step(model.train(), source, target, optimizer, name == "hf_vanilla")
    queue.put(_resident_mib("VmHWM") - before)


def cpu_peak_memory(name: str, batch: int, length: int) -> float:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_cpu_peak_memory, args=(name, batch, length, queue))
    process.start()
    value = queue.get()
    process.join()
    return round(value, 1)


def _seconds_per_call(call, device: torch.device, repeats: int):
    """Mean wall time of `call()` over `repeats` calls after one warm-up call (synchronising CUDA around the timed
    calls), and the last call's result."""
    call()
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        result = call()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / repeats, result


def generation_speed(model, source, device, dtype, num_beams: int, new_tokens: int, repeats: int) -> float:
    model.to(device).eval()
    source = source.to(device)
    kwargs = dict(
        num_beams=num_beams,
        max_new_tokens=new_tokens,
        min_new_tokens=new_tokens,
        do_sample=False,
        early_stopping=True,
        length_penalty=0.6 if num_beams > 1 else 1.0,
        num_return_sequences=1,
    )
    autocast = torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32)
    with torch.no_grad(), autocast:
        seconds, out = _seconds_per_call(
            lambda: model.generate(input_ids=source, attention_mask=torch.ones_like(source), **kwargs), device, repeats
        )
    model.cpu()
    return round(source.shape[0] * (out.shape[1] - 1) / seconds, 1)


def decoding_matmul_bound(
    model: VanillaTransformerForConditionalGeneration,
    sentences: int,
    beams: int,
    device,
    dtype,
    plain: bool,
    repeats: int = 10,
) -> float:
    """Target tokens/s of a decoding step that did nothing but its weight matmuls (every decoder projection that
    runs at each step, the cross-attention K/V excepted as they are computed once, and the output projection) on
    sentences x beams rows: with `nn.Linear`'s GEMM (`plain`), which MarianMTModel and FSMT use, or as hf_vanilla's
    `VanillaLinear` computes them. The first over MarianMTModel's measured speed is the best ratio a PyTorch
    implementation of the same GEMMs could reach."""
    decoder = model.model.decoder.named_modules()
    linears = [m for name, m in decoder if isinstance(m, torch.nn.Linear) and "kv_proj" not in name]
    linears.append(model.lm_head)
    model.to(device)
    inputs = {m.in_features: torch.randn(sentences * beams, m.in_features, device=device) for m in linears}
    autocast = torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32)

    def step() -> None:
        for linear in linears:
            if plain:
                torch.nn.Linear.forward(linear, inputs[linear.in_features])
            else:
                linear(inputs[linear.in_features])

    with torch.no_grad(), autocast:
        seconds, _ = _seconds_per_call(step, device, repeats)
    model.cpu()
    return round(sentences / seconds, 1)


def check_same_function(vanilla, marian, source, target) -> float:
    vanilla.eval(), marian.eval()
    decoder_input_ids = torch.cat([torch.full_like(target[:, :1], BOS), target[:, :-1]], dim=1)
    with torch.no_grad():
        ours = vanilla(input_ids=source, decoder_input_ids=decoder_input_ids).logits
        theirs = marian(input_ids=source, decoder_input_ids=decoder_input_ids).logits
    difference = (ours - theirs).abs().max().item()
    if difference > 1e-3:
        raise RuntimeError(f"hf_vanilla and MarianMTModel disagree by {difference}: the weight mapping is wrong")
    return difference


def sampler_padding(max_tokens: int) -> dict:
    """The token-budget sampler's padding on the shared WMT sample against random batches of the same mean size."""
    from hf_vanilla.tokenization import train_shared_bpe

    if not (SHARED_DATA / "train.en").exists():
        return {}
    english = (SHARED_DATA / "train.en").read_text(encoding="utf-8").splitlines()
    german = (SHARED_DATA / "train.de").read_text(encoding="utf-8").splitlines()
    tokenizer = train_shared_bpe(english + german, vocab_size=8000, show_progress=False)
    source = [len(ids) for ids in tokenizer(english)["input_ids"]]
    target = [len(ids) for ids in tokenizer(german)["input_ids"]]
    sampler = TokenBudgetBatchSampler(source, target, max_tokens, seed=0)
    batches = sampler.batches(0)
    mean_size = max(1, round(len(source) / len(batches)))
    return {
        "sampler_max_tokens": max_tokens,
        "sampler_padding": round(sampler.padding_fraction(batches), 4),
        "random_padding": round(sampler.padding_fraction(random_batches(len(source), mean_size)), 4),
    }


def run_record(results: dict, setting: dict, device: torch.device, target_tokens: int) -> dict:
    """The run as benchmarks/results/ keeps it (see the module's docstring)."""
    ours, marian = results["hf_vanilla"], results["MarianMTModel"]
    return {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "date": datetime.date.today().isoformat(),
        "setting": setting,
        "train": {
            "base": {
                "tokens_per_second": ours["train_tokens_per_s"],
                "mfu": ours.get("mfu"),
                "peak_memory_mib": ours.get("peak_memory_mib"),
                "batch_tokens": 2 * target_tokens,
            }
        },
        "decode": [
            {"setting": f"{label}-b{batch}", "ours": ours[key], "marian": marian[key]}
            for batch in (1, 16)
            for label in ("greedy", "beam4")
            if (key := f"generate_{label}_b{batch}_tok_s") in ours
        ],
        "results": results,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--batch-size", type=int, default=16, help="Training batch (sentences).")
    parser.add_argument("--length", type=int, default=32, help="Source and target tokens per training sentence.")
    parser.add_argument("--train-steps", type=int, default=5)
    parser.add_argument("--new-tokens", type=int, default=32, help="Tokens generated per sentence.")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--skip-fsmt", action="store_true")
    parser.add_argument("--json", help="Also write the figures here.")
    parser.add_argument("--record", action="store_true", help="Also write benchmarks/results/<date>-<device>.json.")
    args = parser.parse_args()
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)

    vanilla = vanilla_model()
    models = {"hf_vanilla": vanilla, "MarianMTModel": to_marian(vanilla)}
    if not args.skip_fsmt:
        models["FSMT"] = fsmt_model()
    source = english_batches(args.length, args.batch_size)
    target = source.roll(1, 0)
    results = {name: {} for name in models}
    results["hf_vanilla"]["max_logit_difference_vs_marian"] = check_same_function(
        vanilla, models["MarianMTModel"], source, target
    )
    for name, model in models.items():
        results[name].update(
            training_speed(model, source, target, device, dtype, args.train_steps, name == "hf_vanilla")
        )
        if device.type == "cpu":
            results[name]["peak_memory_mib"] = cpu_peak_memory(name, args.batch_size, args.length)
        for batch in (1, 16):
            prompts = english_batches(args.length, batch)
            for beams, label in ((1, "greedy"), (4, "beam4")):
                results[name][f"generate_{label}_b{batch}_tok_s"] = generation_speed(
                    model, prompts, device, dtype, beams, args.new_tokens, args.repeats
                )
    results["matmul_bound"] = {
        kind: {
            f"generate_{label}_b{batch}_tok_s": decoding_matmul_bound(
                vanilla, batch, beams, device, dtype, kind == "nn.Linear"
            )
            for batch in (1, 16)
            for beams, label in ((1, "greedy"), (4, "beam4"))
        }
        for kind in ("nn.Linear", "hf_vanilla")
    }
    results["sampler"] = sampler_padding(4096)
    setting = dict(vars(args), threads=torch.get_num_threads(), torch=torch.__version__)

    columns = [key for key in results["hf_vanilla"] if key != "max_logit_difference_vs_marian"]
    names = list(models)
    print(f"\nsetting: {setting}")
    print(f"{'figure':32}" + "".join(f"{n:>16}" for n in names) + f"{'vanilla/marian':>16}")
    for key in columns:
        row = [results[n].get(key, float("nan")) for n in names]
        ratio = row[0] / row[1] if row[1] else float("nan")
        print(f"{key:32}" + "".join(f"{v:>16}" for v in row) + f"{ratio:>16.2f}")
    print(
        "a decoding step that did nothing but its weight matmuls (tokens/s), with nn.Linear's GEMM and as "
        "hf_vanilla computes them, each over MarianMTModel's measured speed:"
    )
    bounds = results["matmul_bound"]
    for key in bounds["nn.Linear"]:
        plain, ours = bounds["nn.Linear"][key], bounds["hf_vanilla"][key]
        marian = results["MarianMTModel"][key]
        print(f"{key:32}{plain:>16}{plain / marian:>8.2f}{ours:>16}{ours / marian:>8.2f}")
    difference = results["hf_vanilla"]["max_logit_difference_vs_marian"]
    print(f"max |logit difference| hf_vanilla vs MarianMTModel with the same weights: {difference:.2e}")
    print(f"padding: {results['sampler']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"setting": setting, "results": results}, indent=2))
    if args.record:
        record = run_record(results, setting, device, args.batch_size * args.length)
        name = "cpu" if device.type == "cpu" else record["device"].replace(" ", "-")
        path = Path(__file__).parent / "results" / f"{record['date']}-{name}.json"
        path.write_text(json.dumps(record, indent=2) + "\n")
        print(f"recorded in {path}")


if __name__ == "__main__":
    main()
