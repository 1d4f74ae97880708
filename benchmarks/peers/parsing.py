"""Parsing's side of the comparison: the WSJ demo's settings a peer matches (`parsing_settings`, under the tree grammar
or with `--no-tree-grammar`), its splits written as a peer reads them (`export_trees`: the recipe's (words,
linearized tree) pairs (`treebank_splits`, its `as_pairs` with the preset's `tree_leaves`) one a line (`.words`,
`.tree`), as the demo's own whole-piece BPE pieces), with the test split's words and gold trees beside them
(`test.gold.jsonl`) for the recipe's own repair and EVALB; and its task's parts (`tasks.TASKS["parsing"]`)."""

import argparse
import json
import os
import sys
from pathlib import Path

from datasets import DatasetDict

from hf_vanilla.configuration_vanilla import VanillaGenerationConfig
from hf_vanilla.data.encoding import encode_truncated_pairs
from hf_vanilla.data.treebank import treebank_path, treebank_splits
from hf_vanilla.errors import user_exit
from hf_vanilla.evaluation.parsing import score_parses
from hf_vanilla.parsing import TreebankError
from hf_vanilla.tokenization import BpeOptions
from hf_vanilla.training.arguments import resolve
from hf_vanilla.training.model_building import run_config
from hf_vanilla.training.presets import PARSING_PRESETS

from benchmarks.peers import PROGRAM
from benchmarks.peers.common.pieces import SPLITS, Exported, shared_tokenizer, write_dictionary, write_sides
from benchmarks.peers.common.recipes import recipe_module
from benchmarks.peers.common.settings import DECODING_BATCHES, OVERRIDABLE, resolved_training

SIDES = ("words", "tree")  # the recipe's LANGUAGES: source and target, the exported files' suffixes


GOLD = "test.gold.jsonl"  # each test item's {"words", "gold", "leaves", "linearization"}, a JSON object a line


# The docs' NLTK data path (`NLTK_DATA=../shared/data/nltk_data`), used where NLTK_DATA is not set.
SHARED_NLTK_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "nltk_data"


def parsing_settings(preset: str = "demo", grammar: bool = True, **overrides) -> dict:
    """Every setting of the parsing recipe's `preset` that a peer has to match, as the recipe resolves it (its
    `Arguments` over `PARSING_PRESETS` by `resolve`; `grammar` False: `--no-tree-grammar`), the model's (`run_config`:
    its `tree_leaves` and `linearization`) and the decoding's (the model's generation config with the preset's decoding
    values over it, as `build_model` sets it), with `overrides` (names of `OVERRIDABLE`)."""
    unknown = set(overrides) - set(OVERRIDABLE)
    if unknown:
        raise ValueError(f"not overridable: {sorted(unknown)}")
    given = {name: value for name, value in overrides.items() if value is not None}
    run = resolve(recipe_module("ptb_parse").Arguments(preset=preset, tree_grammar=grammar, **given), PARSING_PRESETS)
    model = run_config(run, "parsing")
    decoding = VanillaGenerationConfig.from_model_config(model)
    decoding.update(**run.decoding)
    names = ("encoder_layers", "decoder_layers", "d_model", "num_attention_heads", "d_ff", "dropout")
    names += ("attention_dropout", "activation_dropout", "label_smoothing", "tie_word_embeddings", "scale_embedding")
    names += ("tree_leaves", "linearization")
    return {
        "task": "parsing",
        "preset": preset,
        "activation": model.activation_function,
        **{name: getattr(model, name) for name in names},
        "treebank": run.treebank,
        "tree_grammar": bool(run.tree_grammar),
        **resolved_training(run, model),
        "final_model": run.final_model,
        "max_length": run.max_length,
        "max_length_ratio": run.max_length_ratio,
        **{name: getattr(decoding, name) for name in DECODING_NAMES},
        **DECODING_BATCHES,
    }


DECODING_NAMES = ("num_beams", "length_penalty", "length_penalty_style", "max_length_offset")


def use_shared_nltk_data() -> None:
    """NLTK_DATA as the recipe's docs launch it: the caller's, else the docs' shared folder where it exists (for this
    process's NLTK and the recipe it launches)."""
    if "NLTK_DATA" in os.environ or not SHARED_NLTK_DATA.is_dir():
        return
    os.environ["NLTK_DATA"] = str(SHARED_NLTK_DATA)
    if "nltk.data" in sys.modules:  # NLTK reads NLTK_DATA once, when imported
        sys.modules["nltk.data"].path.insert(0, str(SHARED_NLTK_DATA))


def parse_corpus(settings: dict, treebank: str | None = None):
    """The recipe's splits of `treebank` (default: the preset's, `nltk`), read by `treebank_splits` and paired by
    the recipe's `as_pairs` with the model's `tree_leaves` and `linearization`, as the recipe reads them; and the
    treebank's name."""
    treebank = treebank or settings["treebank"]
    splits = treebank_splits(treebank_path(treebank))
    as_pairs = recipe_module("ptb_parse").as_pairs
    leaves, order = settings["tree_leaves"], settings.get("linearization", "top-down")
    return DatasetDict({split: as_pairs(trees, leaves, order) for split, trees in splits.items()}), treebank


def parse_tokenizer(folder: Path, train_split, settings: dict, treebank: str, source: Path | None = None):
    """The demo's shared whole-piece BPE of `settings["vocab_size"]` pieces over words and trees
    (`BpeOptions(whitespace_only=True)`, as the recipe builds it): `shared_tokenizer`'s, trained into `folder` or read
    from `source`."""
    options = BpeOptions(whitespace_only=True)
    return shared_tokenizer(folder, train_split, settings["vocab_size"], treebank, source, SIDES, options)


def export_trees(corpus, tokenizer, folder: Path, settings: dict, test_limit: int | None = None) -> Exported:
    """Writes `folder/{train,valid,test}.{words,tree}` (pieces of every pair: the recipe filters and cuts none),
    `test.gold.jsonl` and `dict.txt` (`write_dictionary`); `test_limit` keeps the first N test items. The details
    hold the longest training pair in tokens (</s> counted), which fairseq's positions and batches must hold."""
    folder.mkdir(parents=True, exist_ok=True)
    counts, tokens, unknown, longest = {}, {}, 0, 0
    for split, stem in SPLITS.items():
        items = corpus[split]
        if split == "test" and test_limit is not None:
            items = items.select(range(min(test_limit, len(items))))
        examples, _ = encode_truncated_pairs(items, tokenizer, *SIDES)
        unknown += write_sides(examples, tokenizer, folder / stem, SIDES)
        if split == "test":
            shape = {"leaves": settings["tree_leaves"], "linearization": settings.get("linearization", "top-down")}
            lines = [{"words": p["words"], "gold": g, **shape} for p, g in zip(items["translation"], items["gold"])]
            (folder / GOLD).write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        if split == "train":
            longest = int(max(examples.source_lengths.max(), examples.target_lengths.max()))
        counts[stem] = len(examples)
        tokens[stem] = {"source": int(examples.source_lengths.sum()), "target": int(examples.target_lengths.sum())}
    write_dictionary(tokenizer, folder / "dict.txt")
    return Exported(folder, counts, {}, tokens, {"unk_pieces": unknown, "longest_train_tokens": longest})


def score_parse_file(hypotheses: list[str], folder: Path) -> dict:
    """The record's quality (EVALB F1) and every EVALB figure of `hypotheses` (linearized trees as text, in test
    order) against the exported gold trees, by the recipe's own scoring (`score_parses`: `delinearize` repair over
    each sentence's words for the trees' leaves, then EVALB, as `parse_and_score` scores the recipe's outputs)."""
    items = [json.loads(line) for line in (folder / GOLD).read_text(encoding="utf-8").splitlines()]
    if len(hypotheses) != len(items):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(items)} test items")
    words, gold = [item["words"] for item in items], [item["gold"] for item in items]
    shape = items[0] if items else {"leaves": "placeholder"}
    figures = score_parses(hypotheses, words, gold, shape["leaves"], shape.get("linearization", "top-down")).figures
    return {"quality": {"metric": "f1", "value": figures["evalb_f1"]}, "evalb": figures}


def parse_results(results: dict) -> dict:
    """The record's quality and EVALB figures from the parsing recipe's results.json."""
    names = [name for name in results if name.startswith("evalb_") or name == "repaired_share"]
    return {"quality": {"metric": "f1", "value": results["evalb_f1"]}, "evalb": {n: results[n] for n in names}}


def parse_test_inputs(settings: dict, test_limit: int | None) -> tuple[list[str], dict]:
    """The test sentences the recipe parses (the first `test_limit`), its words space-separated; no keywords: the
    grammar's processors need the model's tokenizer (`parse_keywords`)."""
    corpus, _ = parse_corpus(settings)
    return [pair["words"] for pair in corpus["test"]["translation"]][:test_limit], {}


def parse_keywords(settings: dict, tokenizer) -> dict:
    """`generate_texts`' keywords the recipe decodes the test split with: the tree grammar's processors where the
    settings decode under it (`parse_and_score`'s), none without."""
    from hf_vanilla.parsing.grammar import tree_grammar_for

    if not settings["tree_grammar"]:
        return {}
    order = settings.get("linearization", "top-down")
    return {"processors_for_batch": tree_grammar_for(tokenizer, settings["tree_leaves"], order)}


def parsing_task_settings(preset: str, grammar: bool, overrides: dict) -> dict:
    """The parsing demo's settings (`parsing_settings`), under the tree grammar or without it."""
    return parsing_settings(preset, grammar, **overrides)


def export_parsing(settings: dict, work: Path, args: argparse.Namespace) -> tuple[Exported, object]:
    """The WSJ demo's pairs (words, linearized tree) in its whole-piece BPE (trained in `work/tokenizer`, or
    --tokenizer-from's); a missing or unreadable treebank ends the run with the recipe's message."""
    try:
        corpus, treebank = parse_corpus(settings)
    except (FileNotFoundError, TreebankError) as error:
        raise user_exit(PROGRAM, str(error)) from error
    tokenizer = parse_tokenizer(work / "tokenizer", corpus["train"], settings, treebank, args.tokenizer_from)
    return export_trees(corpus, tokenizer, work / "data", settings, args.test_limit), tokenizer
