"""Treebank preprocessing (`hf_vanilla.parsing.cleanup`): function tags, empty elements and the root go."""

from hf_vanilla.parsing import preprocess

RAW = (
    "( (S (NP-SBJ-1 (DT The) (NN cat)) (VP (VBD sat) (NP (-NONE- *-1)) "
    "(PP-LOC (IN on) (NP (DT the) (NN mat)))) (. .)) )"
)


def test_preprocess_strips_function_tags_empty_elements_and_root():
    assert preprocess(RAW) == "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))"
    assert preprocess("(TOP (S (NP (-LRB- -LRB-) (NN x) (-RRB- -RRB-)) (VP (VB go))))") == (
        "(S (NP (-LRB- -LRB-) (NN x) (-RRB- -RRB-)) (VP (VB go)))"
    )
