"""EVALB F1 (`hf_vanilla.evaluation.evalb`), as COLLINS.prm scores, and its `evaluate` metric."""

import pytest

from hf_vanilla.evaluation.evalb import evalb
from hf_vanilla.parsing import delinearize, linearize, preprocess, read_treebank, tree_words

RAW = (
    "( (S (NP-SBJ-1 (DT The) (NN cat)) (VP (VBD sat) (NP (-NONE- *-1)) "
    "(PP-LOC (IN on) (NP (DT the) (NN mat)))) (. .)) )"
)


GOLD = "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))"


def test_evalb_identical_trees_score_100():
    tree = preprocess(RAW)
    assert evalb([tree, tree], [tree, tree]) == dict(
        precision=100.0, recall=100.0, f1=100.0, exact_match=100.0, sentences=2
    )


def test_evalb_moved_bracket():
    # Gold brackets: S(0,6) NP(0,2) VP(2,6) PP(3,6) NP(4,6). The prediction moves the PP into an NP over "sat on".
    pred = "(S (NP (DT The) (NN cat)) (VP (NP (VBD sat) (IN on)) (NP (DT the) (NN mat))) (. .))"
    # Predicted: S(0,6) NP(0,2) VP(2,6) NP(2,4) NP(4,6): 4 of 5 match on both sides.
    assert evalb([GOLD], [pred]) == dict(precision=80.0, recall=80.0, f1=80.0, exact_match=0.0, sentences=1)


def test_evalb_relabelled_bracket():
    pred = GOLD.replace("(PP (IN on)", "(ADVP (IN on)")
    assert evalb([GOLD], [pred])["f1"] == 80.0


def test_evalb_ignores_punctuation_and_pos_tags():
    # Attaching the final period inside the VP changes no counted span once punctuation is removed; POS tags differ.
    pred = "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NNS mat))) (. .)))"
    assert evalb([GOLD], [pred])["f1"] == 100.0


def test_evalb_removes_the_words_gold_tags_as_punctuation_whatever_the_prediction_tags():
    # As EVALB does: the gold tree decides which words are punctuation. A parser's placeholder tags (XX) or wrong
    # tags must neither keep the final "." in its spans nor remove a word.
    placeholders = delinearize(linearize(GOLD), tree_words(GOLD))
    assert "(XX .)" in placeholders and evalb([GOLD], [placeholders])["f1"] == 100.0
    mistagged = GOLD.replace("(NN cat)", "(. cat)")
    assert evalb([GOLD], [mistagged])["f1"] == 100.0
    wrong = "(S (NP (XX The) (XX cat) (XX sat)) (VP (XX on) (NP (XX the) (XX mat))) (XX .))"
    # Predicted: S(0,6) NP(0,3) VP(3,6) NP(4,6); gold: S(0,6) NP(0,2) VP(2,6) PP(3,6) NP(4,6).
    assert evalb([GOLD], [wrong]) == dict(precision=50.0, recall=40.0, f1=44.44, exact_match=0.0, sentences=1)


def test_evalb_counts_advp_and_prt_as_equal_and_strips_function_tags():
    gold = "(S (NP (PRP He)) (VP (VBD gave) (PRT (RP up))))"
    pred = "(S (NP-SBJ (PRP He)) (VP (VBD gave) (ADVP (RB up))))"
    assert evalb([gold], [pred])["f1"] == 100.0


def test_evalb_unary_chains_and_duplicate_brackets_are_a_multiset():
    gold = "(S (NP (NP (NN dogs))) (VP (VBP bark)))"  # NP(0,1) twice
    once = "(S (NP (NN dogs)) (VP (VBP bark)))"  # NP(0,1) once
    result = evalb([gold], [once])
    assert (result["precision"], result["recall"]) == (100.0, 75.0)
    assert evalb([once], [gold])["precision"] == 75.0


def test_evalb_reports_a_sentence_whose_words_differ():
    with pytest.raises(ValueError, match="sentence 1"):
        evalb([GOLD, GOLD], [GOLD, GOLD.replace("cat", "dog")])


def test_evalb_loads_as_an_evaluate_metric_from_the_package(treebank_dir):
    from hf_vanilla.evaluation.evalb import load_evalb_metric

    gold = [preprocess(t) for t in read_treebank(treebank_dir / "wsj_0001.mrg")]
    other_words = "(S (NP (NNP Pierre) (NNP Vinken)) (VP (VBZ is) (NP (NN chairman))) (. .))"
    metric = load_evalb_metric()
    predicted = gold[:1] + [preprocess(gold[1]).replace("(NP ", "(VP ", 1)]
    scores = metric.compute(predictions=predicted, references=gold)
    assert scores == evalb(gold, predicted) and scores["sentences"] == 2 and 50 < scores["f1"] < 100
    assert metric.compute(predictions=gold, references=gold)["f1"] == 100.0
    with pytest.raises(ValueError, match="sentence 0"):
        metric.compute(predictions=[other_words], references=gold[:1])
