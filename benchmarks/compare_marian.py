"""hf_vanilla against transformers' own Transformer-base translation models, side by side in one process.

    python -m benchmarks.compare_marian --record             # CPU, fp32, docs/benchmarks.md's settings; recorded
    python -m benchmarks.compare_marian --device cuda --dtype bfloat16 --batch-size 64
    python -m benchmarks.compare_marian --device cuda --dtype bfloat16 --preset big --compile \
        --loss-chunk-tokens 4096 --parts train --skip-fsmt   # big, compiled, with and without the chunked loss
    python -m benchmarks.compare_marian --device cuda --dtype bfloat16 --parts decode --cache static

Builds hf_vanilla, `MarianMTModel` and `FSMTForConditionalGeneration` at Transformer-base size (6+6 layers, 512, 2048,
8 heads, one shared 32k vocabulary; `--preset big`: 1024, 4096, 16 heads; any size of `hf_vanilla.SIZES`).
MarianMTModel gets hf_vanilla's very weights (`to_marian`: the fused projections split, the d_model axis permuted
to Marian's sinusoid layout), so both compute the same function: the script checks that their logits agree before
timing anything.
FSMT gets the same shapes and seed. Prints a table and writes JSON (--json): training tokens/s (forward, backward,
Adam step, label smoothing 0.1) and peak memory at a fixed token batch; `generate()` target tokens/s, greedy and beam
4, at batch 1 and 16 on real English sentences with a fixed number of new tokens; the token-budget sampler's
padding against random batches; on CUDA, model FLOP utilisation. `--parts` picks which of these run.
`--compile` times training under `torch.compile` (every model; the warm-up steps, compilation included, are
`warmup_s`, and the graphs and graph breaks dynamo made are counted). `--loss-chunk-tokens N` adds a column:
hf_vanilla computing the output projection and loss N target positions at a time (`loss_chunk_tokens`), trained
only. `--cache static` decodes with `generate(cache_implementation="static")`, which on CUDA makes transformers
compile the decoding step (`--decode-compile-backend` forces that compilation with a backend, on any device).
--record writes the run to benchmarks/results/<date>-<device>.json: `environment` (`benchmarks.environment`'s
header), `setting`, `train` -> the preset's name, e.g. `base` (target-side MFU: 6 x parameters x target tokens/s over
the GPU's dense peak), `decode` (hf_vanilla's and Marian's tokens/s per setting), and every figure under `results`;
--json writes its `environment`, `setting` and `results`.
"""

import argparse
import json
import multiprocessing
import os
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import FSMTConfig, FSMTForConditionalGeneration

from hf_vanilla import SIZES, VanillaTransformerConfig, VanillaTransformerForConditionalGeneration
from hf_vanilla.convert import to_marian
from hf_vanilla.data.batching import TokenBudgetBatchSampler, random_batches

from benchmarks.environment import environment
from benchmarks.flag_checks import add_model_size, require_at_least

SHARED_DATA = (
    Path(os.environ.get("HF_VANILLA_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    / "wmt14-ende-sample"
)
VOCAB = 32000
PAD, BOS, EOS = 0, 1, 2
PARTS = ("train", "memory", "decode", "sampler")
CHUNKED = "hf_vanilla chunked"  # the column of --loss-chunk-tokens


def vanilla_model(
    preset: str = "base", vocab: int = VOCAB, loss_chunk_tokens: int = 0
) -> VanillaTransformerForConditionalGeneration:
    config = VanillaTransformerConfig.from_size(
        preset,
        vocab_size=vocab,
        pad_token_id=PAD,
        bos_token_id=BOS,
        eos_token_id=EOS,
        decoder_start_token_id=BOS,
        loss_chunk_tokens=loss_chunk_tokens,
    )
    torch.manual_seed(0)
    return VanillaTransformerForConditionalGeneration(config)


def fsmt_model(preset: str = "base", vocab: int = VOCAB) -> FSMTForConditionalGeneration:
    """FSMT (fairseq's WMT19 port) at the same size: its own layout, same seed, shared embeddings and output."""
    size = VanillaTransformerConfig.from_size(preset)
    config = FSMTConfig(
        langs=["en", "de"],
        src_vocab_size=vocab,
        tgt_vocab_size=vocab,
        d_model=size.d_model,
        encoder_layers=size.encoder_layers,
        decoder_layers=size.decoder_layers,
        encoder_attention_heads=size.num_attention_heads,
        decoder_attention_heads=size.num_attention_heads,
        encoder_ffn_dim=size.d_ff,
        decoder_ffn_dim=size.d_ff,
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


def english_batches(tokens_per_sentence: int, count: int, vocab: int = VOCAB) -> torch.Tensor:
    """`count` real English sentences (newstest2014) as ids of exactly `tokens_per_sentence` tokens: their bytes
    folded into the vocabulary (the models are untrained, so only shapes and real-text variety matter), ending in
    </s>. Falls back to a fixed random stream when the shared data is absent."""
    source = SHARED_DATA / "newstest2014-src.en"
    rows = []
    if source.exists():
        for line in source.read_text(encoding="utf-8").splitlines()[:count]:
            folded = enumerate(line.encode()[: tokens_per_sentence - 1])
            ids = [3 + (b * 131 + i * 17) % (vocab - 3) for i, b in folded]
            ids += [3 + (len(ids) * 7919) % (vocab - 3)] * (tokens_per_sentence - 1 - len(ids))
            rows.append(ids + [EOS])
    while len(rows) < count:
        generator = torch.Generator().manual_seed(len(rows))
        rows.append(torch.randint(3, vocab, (tokens_per_sentence - 1,), generator=generator).tolist() + [EOS])
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


def dynamo_counts() -> tuple[int, int]:
    """Graphs torch.compile has built in this process so far, and the graph breaks it met."""
    from torch._dynamo.utils import counters

    return counters["stats"]["unique_graphs"], sum(counters["graph_break"].values())


@dataclass(frozen=True)
class Runtime:
    """Where a model is timed: its device, the autocast dtype (float32: none), and the torch.compile backend that
    compiles it (None: run eagerly)."""

    device: torch.device
    dtype: torch.dtype
    compile_backend: str | None = None

    def autocast(self) -> torch.autocast:
        return torch.autocast(self.device.type, dtype=self.dtype, enabled=self.dtype != torch.float32)


def training_speed(model, source, target, runtime: Runtime, steps: int, own_loss: bool) -> dict:
    """Tokens/s of `steps` training steps after 2 warm-up steps (`torch.compile`d with `runtime.compile_backend`
    when given: the warm-up then includes the compilation); on CUDA also peak memory and MFU."""
    device, dtype, compile_backend = runtime.device, runtime.dtype, runtime.compile_backend
    model.to(device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    source, target = source.to(device), target.to(device)
    autocast = runtime.autocast()
    stepped = torch.compile(model, backend=compile_backend) if compile_backend else model
    graphs_before, breaks_before = dynamo_counts() if compile_backend else (0, 0)
    start = time.perf_counter()
    with autocast:
        for _ in range(2):
            train_step(stepped, source, target, optimizer, own_loss)
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    warmup = time.perf_counter() - start
    start = time.perf_counter()
    with autocast:
        for _ in range(steps):
            train_step(stepped, source, target, optimizer, own_loss)
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / steps
    figures = {
        "train_tokens_per_s": round((source.numel() + target.numel()) / seconds, 1),
        "train_step_s": round(seconds, 4),
        "warmup_s": round(warmup, 2),
    }
    if compile_backend:
        graphs, breaks = dynamo_counts()
        figures["compiled_graphs"], figures["graph_breaks"] = graphs - graphs_before, breaks - breaks_before
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


def build_model(name: str, preset: str, vocab: int, loss_chunk_tokens: int):
    """One of the compared models by its column name, at size `preset`."""
    if name == "hf_vanilla":
        return vanilla_model(preset, vocab)
    if name == CHUNKED:
        return vanilla_model(preset, vocab, loss_chunk_tokens)
    if name == "MarianMTModel":
        return to_marian(vanilla_model(preset, vocab))
    if name == "FSMT":
        return fsmt_model(preset, vocab)
    raise ValueError(f"unknown model {name!r}")


def _cpu_peak_memory(name: str, batch: int, length: int, queue, preset: str, vocab: int, chunk: int) -> None:
    """Runs in a fresh process: the peak resident memory that 3 training steps of model `name` add to the memory
    its weights already take (gradients, Adam state, activations). The peak is reset first (/proc/self/clear_refs),
    because a spawned process inherits its parent's peak."""
    model = build_model(name, preset, vocab, chunk)
    source, target = english_batches(length, batch, vocab), english_batches(length, batch, vocab).roll(1, 0)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    Path("/proc/self/clear_refs").write_text("5")
    before = _resident_mib("VmRSS")
    for _ in range(3):
        train_step(model.train(), source, target, optimizer, name.startswith("hf_vanilla"))
    queue.put(_resident_mib("VmHWM") - before)


def cpu_peak_memory(name: str, batch: int, length: int, preset: str, vocab: int, chunk: int) -> float:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_cpu_peak_memory, args=(name, batch, length, queue, preset, vocab, chunk))
    process.start()
    value = queue.get()
    process.join()
    return round(value, 1)


def _seconds_per_call(call, device: torch.device, repeats: int, warmups: int = 1):
    """Mean wall time of `call()` over `repeats` calls after `warmups` warm-up calls (synchronising CUDA around the
    timed calls), the last call's result, and the warm-up calls' wall time."""
    start = time.perf_counter()
    for _ in range(warmups):
        call()
    if device.type == "cuda":
        torch.cuda.synchronize()
    warmup = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(repeats):
        result = call()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / repeats, result, warmup


def generation_speed(
    model, source, runtime: Runtime, num_beams: int, new_tokens: int, repeats: int, cache: str = "dynamic"
) -> tuple[float, float]:
    """Target tokens/s of `generate()` writing exactly `new_tokens` tokens per sentence, and the wall seconds of the
    warm-up calls. `cache="static"` decodes with a static cache (2 warm-up calls: on CUDA transformers compiles the
    step, with CUDA graphs); `runtime.compile_backend` forces that compilation with this backend on any device."""
    from transformers import CompileConfig

    device, compile_backend = runtime.device, runtime.compile_backend
    model.to(device).eval()
    source = source.to(device)
    kwargs = dict(
        num_beams=num_beams,
        max_new_tokens=new_tokens,
        min_new_tokens=new_tokens,
        do_sample=False,
        num_return_sequences=1,
    )
    if num_beams > 1:  # beam-only flags: set on a greedy call, transformers warns that they are ignored
        kwargs |= dict(early_stopping=True, length_penalty=0.6)
    if cache == "static":
        kwargs["cache_implementation"] = "static"
        if compile_backend:
            config = CompileConfig(backend=compile_backend)
            config._compile_all_devices = True  # transformers compiles on CUDA only unless told otherwise
            kwargs["compile_config"] = config
    with torch.no_grad(), runtime.autocast():
        seconds, out, warmup = _seconds_per_call(
            lambda: model.generate(input_ids=source, attention_mask=torch.ones_like(source), **kwargs),
            device,
            repeats,
            warmups=2 if cache == "static" else 1,
        )
    model.cpu()
    return round(source.shape[0] * (out.shape[1] - 1) / seconds, 1), round(warmup, 2)


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


def run_record(results: dict, setting: dict, header: dict, target_tokens: int) -> dict:
    """The run as benchmarks/results/ keeps it (see the module's docstring), under `header` (`environment`)."""
    ours, marian = results["hf_vanilla"], results["MarianMTModel"]
    return {
        "environment": header,
        "setting": setting,
        "train": {
            setting["model_size"]: {
                "tokens_per_second": ours.get("train_tokens_per_s"),
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


def parse_parts(text: str) -> list[str]:
    parts = [part.strip() for part in text.split(",") if part.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown or not parts:
        raise argparse.ArgumentTypeError(f"unknown part(s) {unknown or text!r}; choose from {','.join(PARTS)}")
    return parts


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    add_model_size(parser, "--preset", "base", sorted(SIZES))
    parser.add_argument("--vocab-size", type=int, default=VOCAB, help="One shared vocabulary (default 32,000).")
    parser.add_argument("--batch-size", type=int, default=16, help="Training batch (sentences).")
    parser.add_argument("--length", type=int, default=32, help="Source and target tokens per training sentence.")
    parser.add_argument("--train-steps", type=int, default=5)
    parser.add_argument("--new-tokens", type=int, default=32, help="Tokens generated per sentence.")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--parts",
        type=parse_parts,
        default=list(PARTS),
        help=f"What to measure, comma-separated (default all: {','.join(PARTS)}); `memory` is the CPU's peak "
        "(on CUDA, `train` gives it).",
    )
    parser.add_argument("--compile", action="store_true", help="Train under torch.compile (every model).")
    parser.add_argument("--compile-backend", default="inductor", help="torch.compile's backend for --compile.")
    parser.add_argument(
        "--loss-chunk-tokens",
        type=int,
        default=0,
        help="Also train hf_vanilla with its loss computed this many target positions at a time (0: not).",
    )
    parser.add_argument("--cache", default="dynamic", choices=["dynamic", "static"], help="generate()'s KV cache.")
    parser.add_argument(
        "--decode-compile-backend",
        help="With --cache static: compile the decoding step with this backend on any device (default: "
        "transformers' own choice, inductor on CUDA only).",
    )
    parser.add_argument("--skip-fsmt", action="store_true")
    parser.add_argument("--json", help="Also write the figures here (rewritten after each model).")
    parser.add_argument("--record", action="store_true", help="Also write benchmarks/results/<date>-<device>.json.")
    args = parser.parse_args(argv)
    counts = dict.fromkeys(("batch_size", "length", "train_steps", "new_tokens", "repeats"), 1)
    require_at_least(parser, args, {"vocab_size": 4, **counts})  # a vocabulary holds the 3 special tokens and more
    if args.loss_chunk_tokens < 0:
        parser.error(f"--loss-chunk-tokens must not be negative, got {args.loss_chunk_tokens}")
    if args.decode_compile_backend and args.cache != "static":
        parser.error("--decode-compile-backend needs --cache static (a dynamic cache is not compiled)")
    return args


def compared_models(args: argparse.Namespace) -> dict:
    """The models side by side, by column name: hf_vanilla, Marian with its weights, then the chunked and FSMT."""
    vanilla = vanilla_model(args.model_size, args.vocab_size)
    models = {"hf_vanilla": vanilla, "MarianMTModel": to_marian(vanilla)}
    if args.loss_chunk_tokens and set(args.parts) & {"train", "memory"}:
        models[CHUNKED] = vanilla_model(args.model_size, args.vocab_size, args.loss_chunk_tokens)
    if not args.skip_fsmt:
        models["FSMT"] = fsmt_model(args.model_size, args.vocab_size)
    return models


def decoding_figures(model, args: argparse.Namespace, runtime: Runtime) -> dict:
    """`generate()`'s tokens/s and warm-up seconds, greedy and beam 4 at batch 1 and 16 (with a static cache, also
    the graphs and graph breaks of its compilation)."""
    figures = {}
    graphs_before, breaks_before = dynamo_counts()
    for batch in (1, 16):
        prompts = english_batches(args.length, batch, args.vocab_size)
        for beams, label in ((1, "greedy"), (4, "beam4")):
            speed, warmup = generation_speed(model, prompts, runtime, beams, args.new_tokens, args.repeats, args.cache)
            figures[f"generate_{label}_b{batch}_tok_s"] = speed
            figures[f"generate_{label}_b{batch}_warmup_s"] = warmup
    if args.cache == "static":
        graphs, breaks = dynamo_counts()
        figures["decode_compiled_graphs"] = graphs - graphs_before
        figures["decode_graph_breaks"] = breaks - breaks_before
    return figures


def model_figures(name: str, model, source, target, args: argparse.Namespace) -> dict:
    """Every figure of `args.parts` but the sampler's for the model of column `name`."""
    device, dtype, parts = torch.device(args.device), getattr(torch, args.dtype), set(args.parts)
    figures = {}
    if "train" in parts:
        runtime = Runtime(device, dtype, args.compile_backend if args.compile else None)
        figures.update(training_speed(model, source, target, runtime, args.train_steps, name.startswith("hf_vanilla")))
    if "memory" in parts and device.type == "cpu":
        figures["peak_memory_mib"] = cpu_peak_memory(
            name, args.batch_size, args.length, args.model_size, args.vocab_size, args.loss_chunk_tokens
        )
    if "decode" in parts and name != CHUNKED:  # in eval, the chunked model is hf_vanilla itself
        figures.update(decoding_figures(model, args, Runtime(device, dtype, args.decode_compile_backend)))
    return figures


def print_table(results: dict, setting: dict, names: list[str]) -> None:
    """The figures of the models `names` side by side, hf_vanilla's over Marian's in the last column."""
    columns = list(dict.fromkeys(key for name in names for key in results[name]))
    columns.remove("max_logit_difference_vs_marian")
    print(f"\nsetting: {setting}")
    print(f"{'figure':32}" + "".join(f"{n:>20}" for n in names) + f"{'vanilla/marian':>16}")
    for key in columns:
        row = [results[n].get(key, float("nan")) for n in names]
        ratio = row[0] / row[1] if row[1] else float("nan")
        print(f"{key:32}" + "".join(f"{v:>20}" for v in row) + f"{ratio:>16.2f}")
    difference = results["hf_vanilla"]["max_logit_difference_vs_marian"]
    print(f"max |logit difference| hf_vanilla vs MarianMTModel with the same weights: {difference:.2e}")
    if "sampler" in results:
        print(f"padding: {results['sampler']}")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    device = torch.device(args.device)
    models = compared_models(args)
    source = english_batches(args.length, args.batch_size, args.vocab_size)
    target = source.roll(1, 0)
    results = {name: {} for name in models}
    results["hf_vanilla"]["max_logit_difference_vs_marian"] = check_same_function(
        models["hf_vanilla"], models["MarianMTModel"], source[:16], target[:16]
    )
    setting, header = dict(vars(args), threads=torch.get_num_threads()), environment()

    def write_json() -> None:
        if args.json:
            record = {"environment": header, "setting": setting, "results": results}
            Path(args.json).write_text(json.dumps(record, indent=2))

    for name, model in models.items():
        results[name].update(model_figures(name, model, source, target, args))
        write_json()
    if "sampler" in args.parts:
        results["sampler"] = sampler_padding(4096)
    write_json()
    print_table(results, setting, list(models))
    if args.record:
        record = run_record(results, setting, header, args.batch_size * args.length)
        name = "cpu" if device.type == "cpu" else torch.cuda.get_device_name(device).replace(" ", "-")
        path = Path(__file__).parent / "results" / f"{header['date'][:10]}-{name}.json"
        path.write_text(json.dumps(record, indent=2) + "\n")
        print(f"recorded in {path}")


if __name__ == "__main__":
    main()
