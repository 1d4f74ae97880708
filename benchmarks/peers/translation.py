"""Translation's side of the comparison: the Bible demo's settings a peer matches (`demo_settings`), its splits written
as a peer reads them (`export_splits`: the training split filtered by the recipe's own rules, the raw held-out text
beside them for scoring), and its task's parts (`tasks.TASKS["translation"]`: settings, export, sacreBLEU scoring,
the recipe's figures, the test inputs)."""

import argparse
from pathlib import Path

from hf_vanilla.configuration_vanilla import VanillaGenerationConfig, VanillaTransformerConfig
from hf_vanilla.data.corpora import load_translation_corpus, select_pairs
from hf_vanilla.data.encoding import EncodedPairs
from hf_vanilla.evaluation.bleu import sacrebleu_score, tokenized_bleu
from hf_vanilla.training.arguments import DEFAULTS
from hf_vanilla.training.presets import WMT_PRESETS
from hf_vanilla.training.schedule import peak_learning_rate

from benchmarks.peers.common.pieces import (
    SPLITS,
    Exported,
    shared_tokenizer,
    write_dictionary,
    write_lines,
    write_sides,
)
from benchmarks.peers.common.settings import DECODING_BATCHES, OVERRIDABLE

LANGUAGES = ("en", "de")


def demo_settings(preset: str = "demo", **overrides) -> dict:
    """Every setting of the translation recipe's `preset` that a peer has to match, as the recipe resolves it: the
    run's (`WMT_PRESETS`, `DEFAULTS`), the model's (`VanillaTransformerConfig.from_size`) and the decoding's
    (`VanillaGenerationConfig.from_model_config`), with `overrides` (names of `OVERRIDABLE`) over them."""
    unknown = set(overrides) - set(OVERRIDABLE)
    if unknown:
        raise ValueError(f"not overridable: {sorted(unknown)}")
    run = {**DEFAULTS, **WMT_PRESETS[preset], **{k: v for k, v in overrides.items() if v is not None}}
    model = VanillaTransformerConfig.from_size(run["model_size"], init_scheme=run["init_scheme"])
    decoding = VanillaGenerationConfig.from_model_config(model)
    betas = tuple(float(b) for b in run["adam_betas"].split(","))
    return {
        "preset": preset,
        "encoder_layers": model.encoder_layers,
        "decoder_layers": model.decoder_layers,
        "d_model": model.d_model,
        "num_attention_heads": model.num_attention_heads,
        "d_ff": model.d_ff,
        "activation": model.activation_function,
        "dropout": model.dropout,
        "attention_dropout": model.attention_dropout,
        "activation_dropout": model.activation_dropout,
        "layer_norm_eps": model.layer_norm_eps,
        "label_smoothing": model.label_smoothing,
        "tie_word_embeddings": model.tie_word_embeddings,
        "scale_embedding": model.scale_embedding,
        "init_scheme": model.init_scheme,
        "decoder_start": run["decoder_start"],
        "vocab_size": run["vocab_size"],
        "adam_betas": betas,
        "adam_eps": run["adam_eps"],
        "warmup_steps": run["warmup_steps"],
        "lr_scale": run["lr_scale"],
        "peak_lr": peak_learning_rate(model.d_model, run["warmup_steps"], run["lr_scale"]),
        "tokens_per_step": run["tokens_per_step"],
        "max_steps": run["max_steps"],
        "save_every": run["save_every"],
        "keep_last": run["average_last"],  # the recipe keeps those it averages unless --keep-last says otherwise
        "average_last": run["average_last"],
        "eval_every": run["eval_every"],
        "max_length": run["max_length"],
        "max_length_ratio": run["max_length_ratio"],
        "max_source_words": run["max_source_words"],
        "max_train_source_words": run["max_train_source_words"],
        "num_beams": decoding.num_beams,
        "length_penalty": decoding.length_penalty,
        "length_penalty_style": decoding.length_penalty_style,
        "max_length_offset": decoding.max_length_offset,
        **DECODING_BATCHES,
    }


def demo_corpus(settings: dict, dataset: str = "bible"):
    """The recipe's splits of `dataset` (`recipes/wmt_ende.py`): empty sides dropped, the training split to
    `max_train_source_words` source words, the held-out splits to `max_source_words`."""
    corpus = load_translation_corpus(dataset, *LANGUAGES)
    limits = {
        split: settings["max_train_source_words"] if split == "train" else settings["max_source_words"]
        for split in corpus
    }
    return select_pairs(corpus, *LANGUAGES, limits)


def translation_tokenizer(folder: Path, train_split, vocab_size: int, source: Path | None = None):
    """The Bible demo's shared BPE of `vocab_size` pieces over both languages (`shared_tokenizer`'s: trained into
    `folder`, or read from `source`, a finished demo run's `tokenizer` folder)."""
    return shared_tokenizer(folder, train_split, vocab_size, "bible", source, LANGUAGES)


def encode(pairs, tokenizer) -> EncodedPairs:
    """The ids of `pairs` as the recipe encodes them: each side ending with </s>."""
    sources = tokenizer([p[LANGUAGES[0]] for p in pairs["translation"]], verbose=False)["input_ids"]
    targets = tokenizer([p[LANGUAGES[1]] for p in pairs["translation"]], verbose=False)["input_ids"]
    return EncodedPairs.from_lists(sources, targets)


def export_splits(corpus, tokenizer, folder: Path, settings: dict, test_limit: int | None = None) -> Exported:
    """Writes `folder/{train,valid,test}.{en,de}` (pieces), `test.raw.{en,de}` (the text scored against) and
    `dict.txt` (`write_dictionary`). The training split keeps the pairs the recipe trains on (`length_filter` with
    the preset's `max_length` and `max_length_ratio`); `test_limit` keeps the first N test pairs (a short check)."""
    folder.mkdir(parents=True, exist_ok=True)
    counts, tokens, dropped = {}, {}, {}
    for split, stem in SPLITS.items():
        pairs = corpus[split]
        if split == "test" and test_limit is not None:
            pairs = pairs.select(range(min(test_limit, len(pairs))))
        examples = encode(pairs, tokenizer)
        if split == "train":
            examples, dropped = examples.length_filter(settings["max_length"], settings["max_length_ratio"])
        write_sides(examples, tokenizer, folder / stem, LANGUAGES)
        if split == "test":
            for side in LANGUAGES:
                write_lines(folder / f"test.raw.{side}", [pair[side] for pair in pairs["translation"]])
        counts[stem] = len(examples)
        tokens[stem] = {"source": int(examples.source_lengths.sum()), "target": int(examples.target_lengths.sum())}
    write_dictionary(tokenizer, folder / "dict.txt")
    return Exported(folder, counts, dropped, tokens)


def translation_settings(preset: str, base: bool, overrides: dict) -> dict:
    """The translation demo's settings (`demo_settings`), or (`base` False) its `-normal-init` variant's."""
    return demo_settings(preset, **overrides, **({} if base else dict(init_scheme="normal", decoder_start="bos")))


def export_translation(settings: dict, work: Path, args: argparse.Namespace) -> tuple[Exported, object]:
    """The Bible demo's splits in its shared BPE (trained in `work/tokenizer`, or --tokenizer-from's)."""
    corpus = demo_corpus(settings)
    tokenizer = translation_tokenizer(work / "tokenizer", corpus["train"], settings["vocab_size"], args.tokenizer_from)
    return export_splits(corpus, tokenizer, work / "data", settings, args.test_limit), tokenizer


def score_translation(hypotheses: list[str], folder: Path) -> dict:
    """sacreBLEU (with its signature) and the tokenized BLEU of `hypotheses` against the exported raw references."""
    references = (folder / f"test.raw.{LANGUAGES[1]}").read_text(encoding="utf-8").splitlines()
    return translation_quality(hypotheses, references)


def translation_quality(hypotheses: list[str], references: list[str]) -> dict:
    """The record's sacreBLEU (with its signature) and tokenized BLEU of `hypotheses` against `references`."""
    bleu, signature = sacrebleu_score(hypotheses, references)
    return {
        "quality": {"metric": "sacrebleu", "value": bleu, "signature": signature},
        "tokenized_bleu": tokenized_bleu(hypotheses, references, LANGUAGES[1]),
    }


def translation_results(results: dict) -> dict:
    """The translation recipe's sacreBLEU, signature and tokenized BLEU from its results.json."""
    return {
        "quality": {"metric": "sacrebleu", "value": results["sacrebleu"], "signature": results["sacrebleu_signature"]},
        "tokenized_bleu": results.get("tokenized_bleu"),
    }


def translation_inputs(settings: dict, test_limit: int | None) -> tuple[list[str], dict]:
    """The demo's test sources (the first `test_limit`), decoded with the model's own settings."""
    pairs = demo_corpus(settings)["test"]
    return [p[LANGUAGES[0]] for p in pairs["translation"]][:test_limit], {}
