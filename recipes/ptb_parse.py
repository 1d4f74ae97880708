"""English constituency parsing as translation (section 6.3 of the paper), under Accelerate.

    NLTK_DATA=../shared/data/nltk_data accelerate launch --config_file configs/accelerate/cpu.yaml \
        --num_cpu_threads_per_process $(nproc) recipes/ptb_parse.py --preset demo --treebank nltk
    accelerate launch --config_file configs/accelerate/gpu.yaml recipes/ptb_parse.py --preset parsing \
        --treebank /data/ptb/parsed/mrg/wsj

Trees -> (words, linearized tree) pairs -> the same tokenizer, batching, loop, checkpoints and averaging as the
translation recipe -> beam 21, alpha 0.3 (the demo: 3.0), max input + 300, under the tree grammar (or freely, as the
paper: --no-tree-grammar) -> `delinearize` repair -> EVALB -> results.json and model card -> (optionally) the Hub.
"""

from dataclasses import dataclass, field

import settings_first  # noqa: F401  (first: the flags below are read and checked before torch loads)

from hf_vanilla.training.arguments import CopySettings
from hf_vanilla.training.flags import parse_settings
from hf_vanilla.training.presets import PARSING_PRESETS

LANGUAGES = ("words", "tree")  # the two sides of each pair


@dataclass
class Arguments(CopySettings):
    preset: str = field(
        default="demo",
        metadata={
            "help": "parsing (the paper), demo (NLTK's WSJ sample, 2 CPU cores, about 13 minutes) or smoke (a "
            "one-minute try of every step on NLTK's sample)."
        },
    )
    treebank: str = field(
        default="nltk",
        metadata={"help": "nltk (NLTK's WSJ sample on NLTK's data path) or the folder of LDC's parsed/mrg/wsj."},
    )
    tree_leaves: str | None = field(
        default=None,
        metadata={
            "help": "What stands for each word in the output trees: placeholder (XX, the paper's setup), pos "
            "(its tag) or words (copied); default: the preset's (demo: words). EVALB ignores tags either way."
        },
    )
    linearization: str | None = field(
        default=None,
        metadata={
            "help": "The order the output trees are written in: top-down (the paper's, Vinyals et al., 2015: "
            "`(S (NP The cat )NP ...`) or in-order (Liu & Zhang, 2017: each label after its first child, `The (NP cat "
            ")NP (S ...`); default: the preset's (demo: in-order). EVALB scores the recovered trees either way."
        },
    )
    tree_grammar: bool = field(
        default=True,
        metadata={
            "help": "Decode under the grammar of trees over the input words (hf_vanilla.parsing.grammar): every "
            "hypothesis a well-formed tree prefix. --no-tree-grammar decodes freely as the paper did; either way "
            "`delinearize` repairs what comes out."
        },
    )
    subtree_substitution: float | None = field(
        default=None,
        metadata={
            "help": "New training trees per training tree, each a training tree with one constituent swapped for one "
            "of the same label from another tree (Shi et al., 2021; hf_vanilla.parsing.augmentation). Default: 0, "
            "none (at the demo's updates it cost F1: docs/experiments.md)."
        },
    )
    MODEL_CONFIG = (*CopySettings.MODEL_CONFIG, "tree_leaves", "linearization")
    AT_LEAST = {**CopySettings.AT_LEAST, "subtree_substitution": 0}
    METRICS = {"f1": "valid_evalb_f1"}


def as_pairs(trees: list[str], leaves: str, linearization: str = "top-down"):
    """(words, linearized tree) pairs in the `translation` schema, with each gold tree: a `datasets.Dataset`."""
    from datasets import Dataset

    from hf_vanilla.parsing import linearize_leaves, tree_words

    pairs = [{"words": " ".join(tree_words(t)), "tree": linearize_leaves(t, leaves, linearization)} for t in trees]
    return Dataset.from_dict({"translation": pairs, "gold": trees})


def with_substituted_trees(train, per_tree: float, seed: int, leaves: str, linearization: str = "top-down"):
    """`train` and, after it, round(per_tree * len(train)) new pairs made from its gold trees by subtree
    substitution (`substituted_trees`, seeded by the run's seed)."""
    import logging

    from datasets import concatenate_datasets

    from hf_vanilla.parsing.augmentation import substituted_trees

    new = substituted_trees(train["gold"], round(per_tree * len(train)), seed)
    logging.getLogger(__name__).info(f"--subtree-substitution {per_tree}: {len(new):,} new training trees")
    return concatenate_datasets([train, as_pairs(new, leaves, linearization)])


def main(args: Arguments) -> dict:
    from datasets import DatasetDict

    from hf_vanilla.data.treebank import treebank_path, treebank_splits
    from hf_vanilla.evaluation import Evaluation
    from hf_vanilla.evaluation.parsing import parse_and_score
    from hf_vanilla.parsing import TreebankError
    from hf_vanilla.publishing import finish
    from hf_vanilla.tokenization import BpeOptions
    from hf_vanilla.training.model_building import build_model
    from hf_vanilla.training.preflight import PreflightError
    from hf_vanilla.training.run import build_tokenizer, check_before_training, start, train_and_evaluate

    # Start: the settings (command line over preset), the model's configuration (its trees' leaves and order:
    # --init-from's model keeps its own) checked before any data is read, Accelerator (precision as launched), seed.
    run = start("ptb_parse", args, PARSING_PRESETS, task="parsing")
    settings, leaves, order = run.settings, run.config.tree_leaves, run.config.linearization

    # Data, and everything that can be checked before the first update.
    try:
        splits = treebank_splits(treebank_path(settings.treebank))
    except (FileNotFoundError, TreebankError) as error:
        raise PreflightError(str(error)) from error
    corpus = DatasetDict({split: as_pairs(trees, leaves, order) for split, trees in splits.items() if trees})
    check_before_training(run, corpus, settings.treebank, "--treebank")
    if settings.subtree_substitution and not settings.eval_only:
        per_tree, seed = settings.subtree_substitution, settings.seed
        corpus["train"] = with_substituted_trees(corpus["train"], per_tree, seed, leaves, order)

    # Tokenizer: treebank words are tokenized already; whole-piece BPE keeps every bracket symbol one token.
    tokenizer = build_tokenizer(run, corpus["train"], LANGUAGES, settings.treebank, BpeOptions(whitespace_only=True))
    build_model(run)

    # The metric: EVALB F1 of greedy parses in validation, of the paper's beam search at the end (predictions.mrg).
    def validation_f1(model, pairs) -> dict:
        words = [pair["words"] for pair in pairs["translation"]]
        scored = parse_and_score(
            model, tokenizer, words, pairs["gold"], settings.tree_grammar, progress=False, num_beams=1
        )
        return {"valid_evalb_f1": scored.figures["evalb_f1"]}

    def evaluate(model, pairs) -> Evaluation:
        words = [pair["words"] for pair in pairs["translation"]]
        evaluation = parse_and_score(model, tokenizer, words, pairs["gold"], settings.tree_grammar)
        (run.output_dir / "predictions.mrg").write_text("\n".join(evaluation.predictions) + "\n")
        return evaluation

    # Training, averaging, evaluation, results, card, upload.
    extra = {
        "task": "parsing",
        "treebank": settings.treebank,
        "tree_leaves": leaves,
        "linearization": order,
        "tree_grammar": settings.tree_grammar,
        "pointer_generator": run.model.config.pointer_generator,
        "subtree_substitution": settings.subtree_substitution or 0,
    }
    return train_and_evaluate(run, corpus, LANGUAGES, validation_f1, evaluate, extra, finish)


if __name__ == "__main__":
    arguments = parse_settings(Arguments, description=__doc__.split("\n\n")[0], presets=PARSING_PRESETS)
    from hf_vanilla.training.run import run_recipe

    run_recipe(main, arguments, "ptb_parse")
