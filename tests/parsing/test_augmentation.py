"""Subtree substitution (`hf_vanilla.parsing.augmentation`): each new tree checked against every substitution
enumerated independently, by string replacement on the bracketed trees."""

import re

import pytest

from hf_vanilla.parsing import parse_tree, tree_words
from hf_vanilla.parsing.augmentation import substituted_trees

TREES = [
    "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))",
    "(S (NP (PRP She)) (VP (VBD saw) (NP (DT a) (NN dog))) (. .))",
    "(S (NP (NNS Prices)) (VP (VBD fell)) (. .))",
    "(FRAG (ADJP (JJ Good)) (. !))",
]


def constituents(tree: str) -> list[tuple[int, int, str]]:
    """(start, end, label) of every bracketed constituent of `tree` that is neither the root nor a preterminal, found
    by matching brackets in the string."""
    spans, stack = [], []
    for match in re.finditer(r"\(([^\s()]+)|\)", tree):
        if match.group(1):
            stack.append((match.start(), match.group(1)))
        else:
            start, label = stack.pop()
            text = tree[start : match.end()]
            if stack and text.count("(") > 1:
                spans.append((start, match.end(), label))
    return spans


def every_substitution(trees: list[str]) -> set[str]:
    """Each tree with one of its constituents replaced by a same-label constituent of another tree."""
    found = set()
    for number, tree in enumerate(trees):
        for start, end, label in constituents(tree):
            for other_number, other in enumerate(trees):
                if other_number == number:
                    continue
                for other_start, other_end, other_label in constituents(other):
                    if other_label == label:
                        found.add(tree[:start] + other[other_start:other_end] + tree[end:])
    return found - set(trees)


def test_every_new_tree_is_one_constituent_swapped_for_another_of_its_label():
    possible = every_substitution(TREES)
    new = substituted_trees(TREES, len(possible), seed=0, max_words=100)
    assert len(new) == len(set(new)) == len(possible)  # all of them, none twice, none an original
    assert set(new) == possible
    for tree in new:
        assert str(parse_tree(tree)) == tree


def test_the_draws_follow_the_seed_and_respect_the_word_limit():
    first = substituted_trees(TREES, 5, seed=3)
    assert first == substituted_trees(TREES, 5, seed=3)
    assert first != substituted_trees(TREES, 5, seed=4)
    longest = max(len(tree_words(tree)) for tree in TREES)
    assert all(len(tree_words(tree)) <= longest for tree in substituted_trees(TREES, 20, seed=0))
    assert all(len(tree_words(tree)) <= 4 for tree in substituted_trees(TREES, 20, seed=0, max_words=4))


def test_a_set_that_shares_no_label_is_an_error_and_zero_trees_is_none():
    with pytest.raises(ValueError, match="no constituent label is shared"):
        substituted_trees(["(S (NP (NN a)))", "(FRAG (ADJP (JJ b)))"], 1, seed=0)
    with pytest.raises(ValueError, match="no constituent label is shared"):  # two NPs, but of one tree
        substituted_trees(["(S (NP (NN a)) (VP (VB b) (NP (NN c))))", "(FRAG (ADJP (JJ d)))"], 1, seed=0)
    assert substituted_trees(TREES, 0, seed=0) == []
    with pytest.raises(ValueError, match="at least 0"):
        substituted_trees(TREES, -1, seed=0)
