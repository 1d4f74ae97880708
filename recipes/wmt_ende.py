"""WMT14 translation as in sections 5 and 6.1 of the paper, under Accelerate.

    accelerate launch recipes/wmt_ende.py --preset demo                      # offline demo, 2 CPU cores, ~15 min
    accelerate launch recipes/wmt_ende.py --preset base --dataset wmt14      # the paper's base model, English-German
    accelerate launch --multi_gpu --num_processes 8 --mixed_precision bf16 recipes/wmt_ende.py --preset big
    accelerate launch recipes/wmt_ende.py --preset big_enfr --dataset wmt14 --target-lang fr

Shared BPE -> token-budget batches -> the paper's Adam and schedule (validation loss along the way) -> checkpoints
-> checkpoint averaging -> beam search (beam 4, alpha 0.6, max source length + 50) -> sacreBLEU and tokenized BLEU
-> results.json and model card -> (optionally) the Hub.
"""

from dataclasses import dataclass, field

from transformers import HfArgumentParser

from hf_vanilla.data.corpora import load_translation_corpus, select_pairs
from hf_vanilla.evaluation.translation import translate_and_score
from hf_vanilla.hub import PublishError
from hf_vanilla.training.arguments import RecipeArguments
from hf_vanilla.training.collectives import StepError, agreed_failure
from hf_vanilla.training.preflight import PreflightError
from hf_vanilla.training.presets import WMT_PRESETS
from hf_vanilla.training.run import (
    check_before_training,
    finish,
    first,
    run_model,
    run_recipe,
    run_tokenizer,
    settings_for,
    start,
    train_and_average,
)


@dataclass
class Arguments(RecipeArguments):
    preset: str = field(
        default="demo",
        metadata={"help": "base, big, big_enfr (the paper) or demo (offline Bible corpus, 2 CPU cores)."},
    )
    dataset: str | None = field(
        default=None,
        metadata={
            "help": "wmt14, bible, a folder of train/valid/test.{en,de} files, or JSONL/parquet with a "
            "`translation` column. Default: bible for demo, wmt14 otherwise."
        },
    )
    source_lang: str = field(default="en")
    target_lang: str = field(default="de")
    moses_detokenize: bool = field(default=False, metadata={"help": "Undo Moses tokenization of the corpus first."})


def main(args: Arguments) -> dict:
    # Start: preset, Accelerator (precision as launched), seed.
    accelerator, preset, output_dir = start("wmt_ende", args, WMT_PRESETS)
    settings = settings_for(args, preset)
    languages = (args.source_lang, args.target_lang)
    dataset = args.dataset or ("bible" if args.preset == "demo" else "wmt14")

    # Data, and everything that can be checked before the first update.
    for main_turn in (True, False):  # the main process first (it prepares the datasets cache), then the others
        with agreed_failure(accelerator, PreflightError, catch=(ValueError, FileNotFoundError), describe=str):
            if accelerator.is_main_process == main_turn:
                corpus = load_translation_corpus(dataset, *languages, args.moses_detokenize)
    corpus = select_pairs(corpus, *languages, {split: settings.word_limit(split) for split in corpus})
    check_before_training(accelerator, args, settings, corpus, dataset, "--dataset", output_dir)

    # Tokenizer (trained on the training split, or --init-from's) and model.
    tokenizer = run_tokenizer(accelerator, args, output_dir, corpus["train"], languages, settings, dataset)
    model = run_model(args, settings, tokenizer)

    # Training, then the average of the last checkpoints.
    def validation_bleu(current, held) -> dict:
        figures, _ = translate_and_score(
            current, tokenizer, *sides(held, languages), args.target_lang, progress=False, num_beams=1
        )
        return {"valid_sacrebleu": figures["sacrebleu"]}

    model, training, averaged = train_and_average(
        accelerator,
        args,
        model,
        tokenizer,
        corpus,
        languages,
        settings,
        preset.tokens_per_step,
        output_dir,
        validation_bleu,
    )
    if training.stopped_by_signal:
        return {"steps": training.steps, "stopped_by_signal": training.stopped_by_signal}

    # Evaluation with the paper's decoding, results, card, upload: on the main process (a failure stops them all).
    results = {}
    with agreed_failure(accelerator, StepError, "could not finish the run", catch=(OSError, PublishError)):
        if accelerator.is_main_process:
            held_out = first(corpus[args.eval_split], args.eval_sentences)
            model = model.to(accelerator.device).eval()
            evaluation, samples = translate_and_score(model, tokenizer, *sides(held_out, languages), args.target_lang)
            extra = {
                "task": "translation",
                "dataset": dataset,
                "source_lang": args.source_lang,
                "target_lang": args.target_lang,
            }
            results = finish(
                accelerator, args, settings, training, model, averaged, evaluation, samples, extra, output_dir
            )
    accelerator.end_training()
    return results


def sides(pairs, languages: tuple[str, str]) -> tuple[list[str], list[str]]:
    """The source and target sentences of a `translation` dataset."""
    return [p[languages[0]] for p in pairs["translation"]], [p[languages[1]] for p in pairs["translation"]]


if __name__ == "__main__":
    (arguments,) = HfArgumentParser(Arguments).parse_args_into_dataclasses()
    run_recipe(main, arguments, "wmt_ende")
