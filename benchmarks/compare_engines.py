"""One model's weights in four decoding engines, in one process on the CPU: hf_vanilla's generate(), transformers'
MarianMTModel (the same weights through `hf_vanilla.convert.to_marian`) and CTranslate2 in float32 and int8
(`hf_vanilla.ct2.export_ct2`).

    python -m benchmarks.compare_engines --run-dir runs/wmt_ende          # the demo run (its final/ and samples.jsonl)

Speed: target tokens/s of greedy and beam-4 decoding at batch 1 and 16 on the first newstest2014 English sentences
(tokenized with the demo's tokenizer), every engine writing exactly --new-tokens tokens per sentence (min = max
length, so all do the same work whatever they write), on the demo model and on a Transformer-base-sized model
(6+6 layers, 512 wide, 32,000-token vocabulary, untrained weights: speed does not depend on what they learnt).
The engines run in alternation, --rounds times (their order rotated each round); each figure is the median and the
best round. BLEU: the demo run's test set (samples.jsonl: the held-out Bible verses the recipe scored), greedy and
beam 4 with length penalty |Y|^0.6, at most --max-new-tokens, which all four express (CTranslate2 has neither the
GNMT penalty nor the per-source length limit of the paper's decoding, so hf_vanilla's paper decoding is a separate
row); with how many outputs each engine shares with hf_vanilla, token for token.
"""

import argparse
import datetime
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

import hf_vanilla
from hf_vanilla.batch_decoding import generate_texts
from hf_vanilla.convert import to_marian
from hf_vanilla.ct2 import export_ct2, translate_options, vocabulary
from hf_vanilla.evaluation.bleu import sacrebleu_score

from benchmarks.environment import environment

SHARED_DATA = Path(os.environ.get("HF_VANILLA_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
NEWSTEST = SHARED_DATA / "wmt14-ende-sample" / "newstest2014-src.en"
ENGINES = ("hf_vanilla", "MarianMTModel", "CTranslate2 float32", "CTranslate2 int8")
SETTINGS = (("greedy", 1, 1), ("beam4", 4, 1), ("greedy", 1, 16), ("beam4", 4, 16))


class TorchEngine:
    """generate() of an hf_vanilla or Marian model on right-padded batches of token ids."""

    def __init__(self, model, pad: int, extra: dict):
        self.model, self.pad, self.extra = model.eval(), pad, extra

    def __call__(self, sources: list[list[int]], **settings) -> list[list[int]]:
        width = max(len(s) for s in sources)
        ids = torch.tensor([s + [self.pad] * (width - len(s)) for s in sources])
        mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in sources])
        with torch.no_grad():
            out = self.model.generate(input_ids=ids, attention_mask=mask, **settings, **self.extra)
        eos = self.model.config.eos_token_id
        return [row[: row.index(eos)] if eos in row else row for row in out[:, 1:].tolist()]


class CT2Engine:
    """ctranslate2.Translator.translate_batch on the tokenizer's source tokens (</s> included)."""

    def __init__(self, folder: Path, compute_type: str, tokens: list[str], threads: int):
        import ctranslate2

        self.translator = ctranslate2.Translator(
            str(folder), device="cpu", compute_type=compute_type, intra_threads=threads, inter_threads=1
        )
        self.tokens, self.ids = tokens, {token: i for i, token in enumerate(tokens)}

    def __call__(self, sources: list[list[int]], **options) -> list[list[int]]:
        batch = [[self.tokens[i] for i in source] for source in sources]
        results = self.translator.translate_batch(batch, max_batch_size=0, **options)
        return [[self.ids[t] for t in result.hypotheses[0]] for result in results]


def speed_settings(engine: str, beams: int, new_tokens: int) -> dict:
    """Fixed-length decoding: exactly `new_tokens` tokens per sentence in every engine."""
    if engine.startswith("CTranslate2"):
        return dict(
            beam_size=beams,
            patience=1,
            length_penalty=0.6 if beams > 1 else 0.0,
            max_decoding_length=new_tokens,
            min_decoding_length=new_tokens,
        )
    settings = dict(
        num_beams=beams,
        max_new_tokens=new_tokens,
        min_new_tokens=new_tokens,
        do_sample=False,
        early_stopping=True,
        length_penalty=0.6,
        forced_eos_token_id=None,
    )
    if engine == "hf_vanilla":
        settings["length_penalty_style"] = "power"
    return settings


def build_engines(model, tokenizer, workdir: Path, threads: int) -> dict:
    tokens = vocabulary(tokenizer, model.config.vocab_size)
    export_ct2(model, workdir / "float32", tokenizer=tokenizer, force=True)
    export_ct2(model, workdir / "int8", tokenizer=tokenizer, quantization="int8", force=True)
    pad = model.config.pad_token_id
    return {
        "hf_vanilla": TorchEngine(model, pad, {}),
        "MarianMTModel": TorchEngine(to_marian(model), pad, {}),
        "CTranslate2 float32": CT2Engine(workdir / "float32", "float32", tokens, threads),
        "CTranslate2 int8": CT2Engine(workdir / "int8", "int8", tokens, threads),
    }


def measure_speed(engines: dict, sentences: list[list[int]], args) -> dict:
    """tokens/s of each engine and setting: all rounds, their median and best."""
    runs = {name: {f"{label}_b{size}": [] for label, _, size in SETTINGS} for name in engines}
    for name, engine in engines.items():  # warm-up: one batch of each setting
        for _, beams, size in SETTINGS:
            engine(sentences[:size], **speed_settings(name, beams, 4))
    names = list(engines)
    for round_ in range(args.rounds):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        for label, beams, size in SETTINGS:
            count = args.sentences_b1 if size == 1 else args.sentences_b16
            for name in order:
                settings = speed_settings(name, beams, args.new_tokens)
                written, start = 0, time.perf_counter()
                for first in range(0, count, size):
                    written += sum(len(out) for out in engines[name](sentences[first : first + size], **settings))
                runs[name][f"{label}_b{size}"].append(round(written / (time.perf_counter() - start), 1))
                print(f"round {round_ + 1} {label} batch {size} {name}: {runs[name][f'{label}_b{size}'][-1]} tokens/s")
    return {
        name: {key: {"median": statistics.median(v), "best": max(v), "runs": v} for key, v in settings.items()}
        for name, settings in runs.items()
    }


def measure_bleu(engines: dict, model, tokenizer, run_dir: Path, args) -> dict:
    """sacreBLEU of each engine on the demo run's test set, greedy and beam 4, and how many of its outputs are
    hf_vanilla's token for token; and hf_vanilla's paper decoding (as the recipe scored it)."""
    samples = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    samples = samples[: args.bleu_sentences]
    sources = [tokenizer(s["source"]).input_ids for s in samples]
    references = [s["reference"] for s in samples]
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    tokens = vocabulary(tokenizer, model.config.vocab_size)
    results = {}
    for beams in (1, 4):
        common = dict(
            num_beams=beams,
            length_penalty=0.6,
            length_penalty_style="power",
            max_new_tokens=args.max_new_tokens,
            early_stopping=True,
        )
        outputs = {}
        for name, engine in engines.items():
            if name.startswith("CTranslate2"):
                settings = translate_options(model.generation_config, tokens, **common)
            else:
                settings = {k: v for k, v in common.items() if name == "hf_vanilla" or k != "length_penalty_style"}
                settings["forced_eos_token_id"] = None
            written = [None] * len(sources)
            for first in range(0, len(order), 16):
                chunk = order[first : first + 16]
                for index, out in zip(chunk, engine([sources[i] for i in chunk], **settings)):
                    written[index] = out
            outputs[name] = written
        for name, written in outputs.items():
            hypotheses = [tokenizer.decode(ids, skip_special_tokens=True).strip() for ids in written]
            score, signature = sacrebleu_score(hypotheses, references)
            results[f"{name}, {'greedy' if beams == 1 else 'beam 4'}"] = {
                "sacrebleu": score,
                "sentences": len(written),
                "same_tokens_as_hf_vanilla": sum(a == b for a, b in zip(written, outputs["hf_vanilla"])),
                "at_length_limit": sum(len(ids) >= args.max_new_tokens for ids in written),
            }
    paper = generate_texts(model, tokenizer, [s["source"] for s in samples], progress=False)
    results["hf_vanilla, paper decoding (beam 4, GNMT 0.6, source + 50)"] = {
        "sacrebleu": sacrebleu_score(paper, references)[0],
        "same_text_as_recipe_samples": sum(h == s["hypothesis"] for h, s in zip(paper, samples)),
    }
    results["signature"] = signature
    return results


def first_sentences(tokenizer, count: int) -> list[list[int]]:
    lines = [line for line in NEWSTEST.read_text(encoding="utf-8").splitlines() if line.strip()][:count]
    return [tokenizer(line).input_ids[:63] for line in lines]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-dir", required=True, help="A wmt_ende demo run: its final/ model and samples.jsonl.")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--new-tokens", type=int, default=32, help="Tokens each engine writes per sentence (speed).")
    parser.add_argument("--sentences-b1", type=int, default=8, help="Sentences decoded one at a time per round.")
    parser.add_argument("--sentences-b16", type=int, default=32, help="Sentences decoded 16 at a time per round.")
    parser.add_argument("--max-new-tokens", type=int, default=128, help="Length limit of the BLEU decoding.")
    parser.add_argument("--bleu-sentences", type=int, help="Score only the first N test sentences (a quick check).")
    parser.add_argument("--skip-base", action="store_true")
    parser.add_argument("--skip-bleu", action="store_true", help="Measure speed only.")
    parser.add_argument("--json", help="Default: benchmarks/results/<date>-cpu-engines.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    import ctranslate2

    run_dir = Path(args.run_dir)
    model = AutoModelForSeq2SeqLM.from_pretrained(run_dir / "final").eval()
    tokenizer = AutoTokenizer.from_pretrained(run_dir / "final")
    sentences = first_sentences(tokenizer, max(args.sentences_b1, args.sentences_b16))
    results = {}
    with tempfile.TemporaryDirectory() as workdir:
        engines = build_engines(model, tokenizer, Path(workdir) / "demo", args.threads)
        results["demo"] = {}
        if not args.skip_bleu:
            results["demo"]["bleu"] = measure_bleu(engines, model, tokenizer, run_dir, args)
            print(json.dumps(results["demo"]["bleu"], indent=1))
        results["demo"]["speed"] = measure_speed(engines, sentences, args)
        if not args.skip_base:
            config = hf_vanilla.VanillaTransformerConfig.from_size("base", vocab_size=32000)
            torch.manual_seed(0)
            base = hf_vanilla.VanillaTransformerForConditionalGeneration(config).eval()
            engines = build_engines(base, tokenizer, Path(workdir) / "base", args.threads)
            results["base"] = {"speed": measure_speed(engines, sentences, args)}
    setting = dict(
        vars(args),
        ctranslate2=ctranslate2.__version__,
        torch_threads=torch.get_num_threads(),
        demo_parameters=sum(p.numel() for p in model.parameters()),
        note="a machine shared with other processes",
    )
    print(f"\nsetting: {setting}")
    for size, figures in results.items():
        print(f"\n{size}: tokens/s, median (best) of {args.rounds} rounds")
        print(f"{'setting':14}" + "".join(f"{name:>26}" for name in ENGINES))
        for label, _, batch in SETTINGS:
            key = f"{label}_b{batch}"
            row = [f"{figures['speed'][n][key]['median']} ({figures['speed'][n][key]['best']})" for n in ENGINES]
            print(f"{key:14}" + "".join(f"{cell:>26}" for cell in row))
    output = Path(args.json or Path(__file__).parent / "results" / f"{datetime.date.today()}-cpu-engines.json")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps({"environment": environment(), "setting": setting, "results": results}, indent=2))
    print(f"written to {output}")


if __name__ == "__main__":
    main()
