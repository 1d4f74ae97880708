"""WMT14 translation as in sections 5 and 6.1 of the paper, under Accelerate.

    accelerate launch --config_file configs/accelerate/cpu.yaml --num_cpu_threads_per_process $(nproc) \
        recipes/wmt_ende.py --preset demo                           # offline demo, 2 CPU cores, ~15 min
    accelerate launch --config_file configs/accelerate/gpu.yaml recipes/wmt_ende.py --preset base --dataset wmt14
    accelerate launch --config_file configs/accelerate/multi_gpu.yaml recipes/wmt_ende.py --preset big  # 8 GPUs
    accelerate launch --config_file configs/accelerate/fsdp.yaml recipes/wmt_ende.py --preset big_enfr \
        --dataset wmt14 --target-lang fr

Shared BPE -> token-budget batches -> the paper's Adam and schedule (validation loss along the way) -> checkpoints
-> checkpoint averaging -> beam search (beam 4, alpha 0.6, max source length + 50) -> sacreBLEU and tokenized BLEU
-> results.json and model card -> (optionally) the Hub.
"""

from dataclasses import dataclass, field
from pathlib import Path

import settings_first  # noqa: F401  (first: the flags below are read and checked before torch loads)

from hf_vanilla.hub_reach import TRANSLATION_OFFLINE
from hf_vanilla.training.arguments import RunSettings
from hf_vanilla.training.flags import parse_settings
from hf_vanilla.training.presets import WMT_PRESETS

# The presets whose default corpus is the offline Bible demo corpus.
OFFLINE_PRESETS = ("demo", "smoke", "tiny")


@dataclass
class Arguments(RunSettings):
    preset: str = field(
        default="demo",
        metadata={
            "help": "base, big, big_enfr (the paper), demo (offline Bible corpus, 2 CPU cores, 12 minutes), smoke (a "
            "one-minute try of every step, offline) or tiny (tests)."
        },
    )
    dataset: str | None = field(
        default=None,
        metadata={
            "help": "wmt14, bible, a folder of train/valid/test.{en,de} files, or JSONL/parquet with a "
            "`translation` column. Default: bible for demo, smoke and tiny, wmt14 otherwise."
        },
    )
    source_lang: str = field(default="en", metadata={"help": "The language translated from (a wmt14 pair's code)."})
    target_lang: str = field(default="de", metadata={"help": "The language translated into (a wmt14 pair's code)."})
    moses_detokenize: bool = field(default=False, metadata={"help": "Undo Moses tokenization of the corpus first."})
    METRICS = {"bleu": "valid_sacrebleu"}
    OFFLINE_CORPORA = TRANSLATION_OFFLINE

    def corpus_name(self) -> str:
        """The corpus the run reads: --dataset, else the preset's (the Bible for the offline presets)."""
        return self.dataset or ("bible" if self.preset in OFFLINE_PRESETS else "wmt14")

    def hub_dataset(self) -> str | None:
        return "wmt14" if self.corpus_name() == "wmt14" else None


def main(args: Arguments) -> dict:
    from hf_vanilla.data.corpora import load_translation_corpus, selected_pairs
    from hf_vanilla.evaluation import Evaluation
    from hf_vanilla.evaluation.translation import translate_and_score
    from hf_vanilla.publishing import finish
    from hf_vanilla.training.collectives import agreed_failure
    from hf_vanilla.training.data_filters import record_selection
    from hf_vanilla.training.model_building import build_model
    from hf_vanilla.training.preflight import PreflightError
    from hf_vanilla.training.run import build_tokenizer, check_before_training, start, train_and_evaluate

    # Start: the settings (command line over preset), Accelerator (precision as launched), seed.
    run = start("wmt_ende", args, WMT_PRESETS, task="translation")
    settings = run.settings
    languages = (settings.source_lang, settings.target_lang)
    dataset = settings.corpus_name()

    # Data, and everything that can be checked before the first update. The demo corpus keeps its presets' stated
    # word limits in every split; a corpus of one's own is scored whole unless --skip-invalid-size-inputs-valid-test.
    for main_turn in (True, False):  # the main process first (it prepares the datasets cache), then the others
        with agreed_failure(run.accelerator, PreflightError, catch=(ValueError, FileNotFoundError), describe=str):
            if run.is_main_process == main_turn:
                corpus = load_translation_corpus(dataset, *languages, settings.moses_detokenize)
    whole = () if settings.filters_held_out(dataset == "bible") else ("validation", "test")
    limits = {split: settings.word_limit(split) for split in corpus}
    corpus, counts = selected_pairs(corpus, *languages, limits, whole)
    record_selection(run, counts, whole)
    check_before_training(run, corpus, dataset, "--dataset", split_files(dataset, languages))

    # Tokenizer (trained on the training split, or --init-from's) and model.
    tokenizer = build_tokenizer(run, corpus["train"], languages, dataset)
    build_model(run)

    # The metric: BLEU of greedy decodings in validation, of the paper's beam search at the end.
    def validation_bleu(model, pairs) -> dict:
        scored = translate_and_score(
            model, tokenizer, *sides(pairs, languages), settings.target_lang, progress=False, num_beams=1
        )
        return {"valid_sacrebleu": scored.figures["sacrebleu"]}

    def evaluate(model, pairs) -> Evaluation:
        return translate_and_score(model, tokenizer, *sides(pairs, languages), settings.target_lang)

    # Training, averaging, evaluation, results, card, upload.
    extra = {"task": "translation", "dataset": dataset, "source_lang": languages[0], "target_lang": languages[1]}
    return train_and_evaluate(run, corpus, languages, validation_bleu, evaluate, extra, finish)


def split_files(dataset: str, languages: tuple[str, str]) -> dict[str, str]:
    """What gives each held-out split of a folder corpus (its two files), for the line that says one is missing."""
    if not Path(dataset).is_dir():
        return {}
    return {
        split: f"{Path(dataset) / stem}.{languages[0]} and .{languages[1]}"
        for split, stem in (("validation", "valid"), ("test", "test"))
    }


def sides(pairs, languages: tuple[str, str]) -> tuple[list[str], list[str]]:
    """The source and target sentences of a `translation` dataset."""
    return [p[languages[0]] for p in pairs["translation"]], [p[languages[1]] for p in pairs["translation"]]


if __name__ == "__main__":
    arguments = parse_settings(Arguments, description=__doc__.split("\n\n")[0], presets=WMT_PRESETS)
    from hf_vanilla.training.run import run_recipe

    run_recipe(main, arguments, "wmt_ende")
