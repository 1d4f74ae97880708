"""Parsing a held-out set with the model's decoding (under the tree grammar or freely), repairing what comes out into
trees over the input words, and scoring them with EVALB."""

from ..batch_decoding import generate_texts
from ..parsing.grammar import tree_grammar_for
from ..parsing.linearization import needed_repair, tree_from_output
from .evalb import evalb
from .result import Evaluation


def parse_and_score(
    model,
    tokenizer,
    sentences: list[str],
    gold: list[str],
    tree_grammar: bool = True,
    progress: bool = True,
    **generate_kwargs,
) -> Evaluation:
    """Parses `sentences` (space-separated words) and scores the trees against `gold` (the predictions: repaired
    trees); figures hold `evalb_f1`, `evalb_precision`, `evalb_recall`, `evalb_exact_match`, `evalb_sentences` and
    `repaired_share`, the share of raw outputs that `delinearize` had to change."""
    leaves, order = model.config.tree_leaves, model.config.linearization
    if tree_grammar:
        generate_kwargs["processors_for_batch"] = tree_grammar_for(tokenizer, leaves, order)
    outputs = generate_texts(model, tokenizer, sentences, progress=progress, **generate_kwargs)
    return score_parses(outputs, sentences, gold, leaves, order)


def score_parses(
    outputs: list[str],
    sentences: list[str],
    gold: list[str],
    leaves: str = "placeholder",
    linearization: str = "top-down",
) -> Evaluation:
    """Any parser's raw `outputs` (linearized trees with `leaves` in `linearization`, as `config.tree_leaves` and
    `config.linearization`) for `sentences`, each repaired by `delinearize` into a tree over its words
    (`tree_from_output`) and scored against `gold` by EVALB: `parse_and_score`'s figures and predictions."""
    if not len(outputs) == len(sentences) == len(gold):
        raise ValueError(f"{len(outputs)} outputs for {len(sentences)} sentences and {len(gold)} gold trees")
    predictions, repaired = [], 0
    for sentence, output in zip(sentences, outputs):
        words = sentence.split()
        repaired += needed_repair(output, words, leaves, linearization)
        predictions.append(tree_from_output(output, words, leaves, linearization))
    figures = {f"evalb_{key}": value for key, value in evalb(gold, predictions).items()}
    figures["repaired_share"] = round(repaired / len(sentences), 4)
    return Evaluation.of(figures, sentences, gold, predictions)
