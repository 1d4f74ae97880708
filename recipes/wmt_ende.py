"""WMT14 English-German translation as in section 6.1 of the paper, under Accelerate.

    accelerate launch recipes/wmt_ende.py --preset demo                      # offline demo, 2 CPU cores, ~15 min
    accelerate launch recipes/wmt_ende.py --preset base --dataset wmt14      # the paper's base model
    accelerate launch --multi_gpu --num_processes 8 recipes/wmt_ende.py --preset big --dataset wmt14

Shared BPE -> token-budget batches -> the paper's Adam and schedule -> atomic checkpoints -> checkpoint averaging
-> beam search (beam 4, alpha 0.6, max source length + 50) -> sacreBLEU and tokenized BLEU -> results.json.
"""

from dataclasses import dataclass, field
from pathlib import Path

from accelerate.utils import set_seed
from transformers import HfArgumentParser

from hf_vanilla.data.corpora import load_translation_corpus, select_pairs
from hf_vanilla.data.encoding import encode_pairs
from hf_vanilla.decoding import generate_texts
from hf_vanilla.evaluation.bleu import sacrebleu_score, tokenized_bleu
from hf_vanilla.tokenization import prepare_shared_tokenizer
from hf_vanilla.training.accelerator import create_accelerator
from hf_vanilla.training.finish import finish_run
from hf_vanilla.training.loop import settings_for_run, train
from hf_vanilla.training.presets import WMT_PRESETS, new_model


@dataclass
class Arguments:
    preset: str = field(default="demo", metadata={"help": "base, big (the paper) or demo (offline, 2 CPU cores)."})
    dataset: str | None = field(
        default=None,
        metadata={"help": "wmt14, bible, a folder of train/valid/test.{en,de} files, or JSONL/parquet with a "
                  "`translation` column. Default: bible for demo, wmt14 otherwise."},
    )
    output_dir: str = field(default="runs/wmt_ende", metadata={"help": "Checkpoints, tokenizer, results.json."})
    max_steps: int | None = field(default=None, metadata={"help": "Updates to run (default: the preset's)."})
    max_tokens: int | None = field(
        default=None,
        metadata={"help": "Padded source (and target) tokens per batch and process. Default: the preset's tokens per "
                  "step divided by processes x update-freq (the paper: 25,000 per step)."},
    )
    update_freq: int = field(default=1, metadata={"help": "Batches accumulated per update (simulates more GPUs)."})
    resume: bool = field(default=False, metadata={"help": "Continue from the newest complete checkpoint."})
    push_to_hub: str | None = field(default=None, metadata={"help": "Hub repo id to publish the final model to."})
    seed: int = field(default=1, metadata={"help": "Seed of initialisation, batching and dropout."})
    source_lang: str = field(default="en")
    target_lang: str = field(default="de")
    moses_detokenize: bool = field(default=False, metadata={"help": "Undo Moses tokenization of the corpus first."})
    max_train_minutes: float | None = field(default=None, metadata={"help": "Stop training after this long."})
    eval_sentences: int | None = field(default=None, metadata={"help": "Translate only the first N held-out sentences."})
    eval_split: str = field(default="test", metadata={"help": "Held-out split to score (test or validation)."})
    mixed_precision: str = field(default="no", metadata={"help": "no, fp16 or bf16 (Accelerate)."})
    report_to: str | None = field(default=None, metadata={"help": "An Accelerate tracker, e.g. tensorboard."})
    log_every: int = field(default=50)
    save_every: int | None = field(default=None, metadata={"help": "Updates between checkpoints (default: preset)."})
    keep_last: int | None = field(default=None, metadata={"help": "Checkpoints kept (default: those averaged)."})
    average_last: int | None = field(default=None, metadata={"help": "Checkpoints averaged (default: preset)."})


def main(args: Arguments) -> dict:
    if args.preset not in WMT_PRESETS:
        raise SystemExit(f"--preset must be one of {sorted(WMT_PRESETS)}, got {args.preset!r}")
    preset = WMT_PRESETS[args.preset]
    output_dir = Path(args.output_dir)
    accelerator = create_accelerator("wmt_ende", output_dir, args.mixed_precision, args.report_to, vars(args))
    set_seed(args.seed)
    output_dir.mkdir(parents=True, exist_ok=True)
    dataset = args.dataset or ("bible" if args.preset == "demo" else "wmt14")
    with accelerator.main_process_first():
        corpus = load_translation_corpus(dataset, args.source_lang, args.target_lang, args.moses_detokenize)
    limits = {split: preset.word_limit(split) for split in corpus}
    corpus = select_pairs(corpus, args.source_lang, args.target_lang, limits)
    tokenizer = prepare_shared_tokenizer(
        accelerator, output_dir, corpus["train"], (args.source_lang, args.target_lang), preset.vocab_size
    )
    examples = encode_pairs(corpus["train"], tokenizer, args.source_lang, args.target_lang)

    model = new_model(preset.model_preset, tokenizer)
    settings = settings_for_run(preset, args, accelerator.num_processes, examples)
    stats = train(accelerator, model, tokenizer, examples, settings, output_dir, resume=args.resume)

    def evaluate(final_model) -> dict:
        held_out = corpus[args.eval_split]
        if args.eval_sentences:
            held_out = held_out.select(range(min(args.eval_sentences, len(held_out))))
        sources = [pair[args.source_lang] for pair in held_out["translation"]]
        references = [pair[args.target_lang] for pair in held_out["translation"]]
        hypotheses = generate_texts(final_model, tokenizer, sources)
        bleu, signature = sacrebleu_score(hypotheses, references)
        samples = [{"source": s, "reference": r, "hypothesis": h} for s, r, h in zip(sources, references, hypotheses)]
        return {
            "sacrebleu": bleu,
            "sacrebleu_signature": signature,
            "tokenized_bleu": tokenized_bleu(hypotheses, references, args.target_lang),
            "eval_split": args.eval_split,
            "eval_sentences": len(sources),
            "samples": samples,
        }

    results = finish_run(
        accelerator, output_dir, stats, preset, args, evaluate,
        extra={"dataset": dataset, "task": "translation", "source_lang": args.source_lang, "target_lang": args.target_lang},
    )
    accelerator.end_training()
    return results


if __name__ == "__main__":
    (arguments,) = HfArgumentParser(Arguments).parse_args_into_dataclasses()
    main(arguments)
