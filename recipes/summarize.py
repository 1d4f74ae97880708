"""Abstractive summarization with the Transformer and a pointer-generator copy mechanism (Deaton, Jacobs, Kenealy and
See; See, Liu and Manning, 2017), under Accelerate.

    CPU="--config_file configs/accelerate/cpu.yaml --num_cpu_threads_per_process $(nproc)"
    accelerate launch $CPU recipes/summarize.py --preset demo                         # offline AESLC demo, 2 CPU cores
    accelerate launch $CPU recipes/summarize.py --preset demo --no-pointer-generator  # the same without copying
    accelerate launch --config_file configs/accelerate/gpu.yaml recipes/summarize.py --preset summarization \
        --dataset cnn_dailymail
    accelerate launch --config_file configs/accelerate/gpu.yaml recipes/summarize.py --dataset train.jsonl \
        --validation-file dev.jsonl --test-file test.jsonl \
        --text-column document --summary-column summary

Documents and summaries -> the shared BPE -> token ids, long documents and summaries truncated (--max-source-tokens,
--max-target-tokens) -> the same batching, loop, checkpoints and averaging as the translation recipe -> beam 4, the
GNMT length penalty, no repeated trigram, no stutter -> ROUGE-1/2/L/Lsum F1 (and the best-reference score where items
have several) -> predictions.jsonl, results.json and model card -> (optionally) the Hub. The decoding flags' values are
chosen on the validation split with `recipes/tune_summary_decoding.py`.
"""

import json
import os
from dataclasses import dataclass
from pathlib import Path

import settings_first  # noqa: F401  (first: the flags below are read and checked before torch loads)

from hf_vanilla.decoding_settings import least_values
from hf_vanilla.hub_reach import SUMMARIES_OFFLINE
from hf_vanilla.model_paths import is_local_path
from hf_vanilla.training.arguments import CopySettings, RunSettings, decoding_setting, setting
from hf_vanilla.training.flags import parse_settings
from hf_vanilla.training.preflight import PreflightError
from hf_vanilla.training.presets import SUMMARIZATION_PRESETS

# The demo's corpus: AESLC as its authors publish it, in the shared data beside the repository.
SHARED_DATA = Path(os.environ.get("HF_VANILLA_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
DEMO_CORPUS = SHARED_DATA / "aeslc" / "enron_subject_line"
# The presets whose default corpus is the demo's AESLC folder.
DEMO_PRESETS = ("demo", "smoke", "tiny")
# The ROUGE figures a validation reports (`evaluation.rouge.ROUGE_TYPES`, which imports nltk: named here so that the
# flags are read before it loads; a test holds the two equal).
ROUGE_FIGURES = ("rouge1", "rouge2", "rougeL", "rougeLsum")


@dataclass
class Arguments(CopySettings):
    preset: str = setting(
        "summarization (Transformer-base, a GPU), small (small corpora such as AESLC, a GPU), demo (AESLC, 2 CPU "
        "cores), smoke (a one-minute try of every step on AESLC) or tiny (tests).",
        "demo",
    )
    dataset: str | None = setting(
        "aeslc, cnn_dailymail, xsum, samsum (the Hub), a folder in AESLC's layout, or a JSONL/CSV/parquet training "
        "file. Default: AESLC's folder in ../shared/data/aeslc/enron_subject_line beside the repository "
        "($HF_VANILLA_SHARED_DATA for ../shared/data) for demo, smoke and tiny, aeslc otherwise."
    )
    text_column: str | None = setting("The documents' column of a file (default text) or of a Hub corpus.")
    summary_column: str | None = setting("The summaries' column of a file (default summary) or of a Hub corpus.")
    validation_file: str | None = setting("The validation split of a --dataset file.")
    test_file: str | None = setting("The test split of a --dataset file.")
    max_source_tokens: int | None = setting("Documents are cut to this many tokens (</s> counted).")
    max_target_tokens: int | None = setting("Summaries are cut to this many tokens in training (</s> counted).")
    whole_word_copy: bool | None = setting(
        "A pointer-generator copies a piece that continues a word only right after the source token before it, so "
        "that copied words are whole, never spliced from pieces of two words (--no-whole-word-copy: any piece from "
        "anywhere). Saved in the model's generation config. Default: on where the tokenizer marks word starts (the "
        "recipe's always do)."
    )
    lowercase: bool | None = setting(
        "The tokenizer lower-cases documents and summaries (saved in its files: every loader of the model does the "
        "same), so that a word is one token wherever it stands. Default: the preset's."
    )
    no_repeat_ngram_size: int | None = decoding_setting("no_repeat_ngram_size", "summarization")
    no_stutter_span_size: int | None = decoding_setting("no_stutter_span_size", "summarization")
    min_new_tokens: int | None = decoding_setting("min_new_tokens", "summarization")
    max_new_tokens: int | None = decoding_setting("max_new_tokens", "summarization")
    GENERATION_CONFIG = (
        *RunSettings.GENERATION_CONFIG,
        "no_repeat_ngram_size",
        "no_stutter_span_size",
        "min_new_tokens",
        "max_new_tokens",
    )
    TRUNCATION = ("max_source_tokens", "max_target_tokens")
    METRICS = {name: f"valid_{name}" for name in ROUGE_FIGURES}
    COUNT_COPYABLE = True
    OFFLINE_CORPORA = SUMMARIES_OFFLINE
    AT_LEAST = {
        **RunSettings.AT_LEAST,
        **dict.fromkeys(("max_source_tokens", "max_target_tokens"), 2),
        **least_values(GENERATION_CONFIG),
    }

    def hub_dataset(self) -> str | None:
        """The Hub corpus the run reads (a name that is no path here), if any."""
        name = self.dataset or ("aeslc" if self.preset not in DEMO_PRESETS else None)
        return name if name is not None and not is_local_path(name) else None


def default_dataset(preset: str) -> str:
    """The demo corpus for the demo, smoke and tiny presets (a one-line error where it is absent), the Hub's AESLC
    else."""
    if preset not in DEMO_PRESETS:
        return "aeslc"
    if not DEMO_CORPUS.is_dir():
        raise PreflightError(
            f"the demo corpus is not at {DEMO_CORPUS}: set HF_VANILLA_SHARED_DATA to the shared data folder or give "
            "--dataset (aeslc, a folder in AESLC's layout or a JSONL/CSV/parquet file)"
        )
    return str(DEMO_CORPUS)


def main(args: Arguments) -> dict:
    from accelerate.logging import get_logger

    from hf_vanilla.data.summaries import SIDES
    from hf_vanilla.evaluation import Evaluation
    from hf_vanilla.evaluation.rouge import ROUGE_TYPES
    from hf_vanilla.evaluation.summarization import summarize_and_score
    from hf_vanilla.publishing import finish
    from hf_vanilla.tokenization import BpeOptions, reads_lowercase, whole_word_copy_ids
    from hf_vanilla.training.model_building import build_model
    from hf_vanilla.training.run import build_tokenizer, check_before_training, start, train_and_evaluate

    # Start: the settings (command line over preset), the model's configuration (with or without the copy mechanism,
    # trained for summarization whatever its size, and so decoding with `DECODING["summarization"]`) checked before
    # any data is read, Accelerator (precision as launched), seed.
    run = start("summarize", args, SUMMARIZATION_PRESETS, task="summarization")
    settings = run.settings
    dataset = settings.dataset or default_dataset(settings.preset)

    # Data, and everything that can be checked before the first update.
    corpus, held_out = read_corpus(run, dataset)
    suppliers = {"validation": "--validation-file", "test": "--test-file"}
    check_before_training(run, corpus, dataset, "--dataset", suppliers)
    lead = lead_before_training(run, corpus)

    # Tokenizer (trained on the training split, or --init-from's) and model.
    tokenizer = build_tokenizer(
        run, corpus["train"], SIDES, dataset, BpeOptions(prefix_space=True, lowercase=bool(settings.lowercase))
    )
    model = build_model(run)
    try:  # whole-word copying: the pieces that continue a word, in a pointer-generator's decoding
        model.generation_config.word_continuation_ids = whole_word_copy_ids(
            tokenizer, model.config.pointer_generator, settings.whole_word_copy, "--whole-word-copy"
        )
    except ValueError as error:
        raise PreflightError(str(error)) from None

    # The metric: ROUGE of greedy summaries in validation (--best-checkpoint-metric may choose the final model by
    # one of them), ROUGE of the beam search at the end (predictions.jsonl).
    def validation_rouge(model, items) -> dict:
        scored = summarize_and_score(
            model, tokenizer, items["text"], items["references"], settings.max_source_tokens, False, num_beams=1
        )
        return {f"valid_{name}": scored.figures[name] for name in ROUGE_TYPES}

    def evaluate(model, items) -> Evaluation:
        evaluation = summarize_and_score(
            model, tokenizer, items["text"], items["references"], settings.max_source_tokens
        )
        rows = [
            {"source": text, "reference": references[0], "prediction": prediction}
            | ({"references": references} if len(references) > 1 else {})
            for text, references, prediction in zip(items["text"], items["references"], evaluation.predictions)
        ]
        with (run.output_dir / "predictions.jsonl").open("w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        return evaluation

    # Training, averaging, evaluation, results, card, upload.
    extra = {
        "task": "summarization",
        "dataset": dataset,
        "pointer_generator": run.model.config.pointer_generator,
        "whole_word_copy": bool(getattr(run.model.generation_config, "word_continuation_ids", None)),
        "lowercase": reads_lowercase(tokenizer),
        "max_source_tokens": settings.max_source_tokens,
        "max_target_tokens": settings.max_target_tokens,
        **({"held_out": held_out} if held_out else {}),
        "lead_baseline": lead,
    }
    results = train_and_evaluate(run, corpus, SIDES, validation_rouge, evaluate, extra, finish)
    if "rouge1" in results:
        get_logger(__name__).info(
            f"ROUGE-1 / 2 / L {results['rouge1']} / {results['rouge2']} / {results['rougeL']} against the lead "
            f"baseline's {lead['rouge1']} / {lead['rouge2']} / {lead['rougeL']} (the first {lead['k']} words)",
            main_process_only=True,
        )
    return results


def read_corpus(run, dataset: str) -> tuple:
    """The corpus `dataset` as pairs (`data.summaries.as_pairs`), read by the main process first (it prepares the
    datasets cache), then by the others, and the record of the rows held out of a single training file
    (`data.summaries.hold_out`; {} else). What cannot be read stops every process in one line (`PreflightError`).
    `run` is the run's `training.context.RunContext`."""
    from hf_vanilla.data.summaries import as_pairs, hold_out, load_summarization_corpus
    from hf_vanilla.errors import error_line
    from hf_vanilla.training.collectives import agreed_failure

    settings, held_out = run.settings, {}
    for main_turn in (True, False):
        with agreed_failure(run.accelerator, PreflightError, catch=(ValueError, OSError), describe=error_line):
            if run.is_main_process == main_turn:
                corpus = load_summarization_corpus(
                    dataset,
                    settings.text_column,
                    settings.summary_column,
                    settings.validation_file,
                    settings.test_file,
                )
                if Path(dataset).is_file():  # one file of documents and summaries: its own held-out rows
                    corpus, held_out = hold_out(corpus)
                corpus = as_pairs(corpus)
    return corpus, held_out


def lead_before_training(run, corpus) -> dict:
    """The lead baseline of the evaluation split (`evaluation.summarization.lead_baseline`, k chosen on validation),
    computed and logged by the main process before the first update: the figure a model of a new corpus has to
    beat, recorded in results.json and the card ({} on the other processes). `run` is the run's
    `training.context.RunContext`, `corpus` its `datasets.DatasetDict`."""
    from accelerate.logging import get_logger

    from hf_vanilla.errors import error_line
    from hf_vanilla.evaluation.summarization import lead_baseline
    from hf_vanilla.training.collectives import agreed_failure
    from hf_vanilla.training.run import first

    settings, lead = run.settings, {}
    with agreed_failure(run.accelerator, PreflightError, catch=(ValueError,), describe=error_line):
        if run.is_main_process:
            lead = lead_baseline(corpus["validation"], first(corpus[settings.eval_split], settings.eval_sentences))
            get_logger(__name__).info(
                f"Lead baseline ({settings.eval_split}): the first {lead['k']} words of each document (k chosen on "
                f"validation from {lead['ks'][0]}-{lead['ks'][1]}: ROUGE-1 {lead['validation_rouge1']}) score "
                f"ROUGE-1 / 2 / L {lead['rouge1']} / {lead['rouge2']} / {lead['rougeL']}: the baseline to beat"
            )
    return lead


if __name__ == "__main__":
    arguments = parse_settings(Arguments, description=__doc__.split("\n\n")[0], presets=SUMMARIZATION_PRESETS)
    from hf_vanilla.training.run import run_recipe

    run_recipe(main, arguments, "summarize")
