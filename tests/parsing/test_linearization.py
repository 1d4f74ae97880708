"""Linearized trees (`hf_vanilla.parsing.linearization`): Vinyals et al.'s format, copied words, a decoder's output
read back into a tree over exactly the input's words, and the repairs it needed."""

import pytest

from hf_vanilla.parsing import (
    delinearize,
    linearize,
    needed_repair,
    parse_tree,
    preprocess,
    read_treebank,
    tree_from_output,
    tree_tags,
    tree_words,
)

RAW = (
    "( (S (NP-SBJ-1 (DT The) (NN cat)) (VP (VBD sat) (NP (-NONE- *-1)) "
    "(PP-LOC (IN on) (NP (DT the) (NN mat)))) (. .)) )"
)


def test_linearize_matches_vinyals_format_with_optional_pos_or_words():
    tree = preprocess(RAW)
    assert linearize(tree) == "(S (NP XX XX )NP (VP XX (PP XX (NP XX XX )NP )PP )VP XX )S"
    assert linearize(tree, with_pos=True) == "(S (NP DT NN )NP (VP VBD (PP IN (NP DT NN )NP )PP )VP . )S"
    assert linearize(tree, with_words=True) == "(S (NP The cat )NP (VP sat (PP on (NP the mat )NP )PP )VP . )S"
    with pytest.raises(ValueError, match="exclude each other"):
        linearize(tree, with_pos=True, with_words=True)


def test_in_order_writes_each_label_after_its_first_child():
    tree = preprocess(RAW)  # (S (NP The cat) (VP sat (PP on (NP the mat))) .), Liu & Zhang (2017)'s order
    assert linearize(tree, with_words=True, linearization="in-order") == (
        "The (NP cat )NP (S sat (VP on (PP the (NP mat )NP )PP )VP . )S"
    )
    assert linearize(tree, with_pos=True, linearization="in-order") == (
        "DT (NP NN )NP (S VBD (VP IN (PP DT (NP NN )NP )PP )VP . )S"
    )
    unary = "(S (NP (NNP Gold)) (VP (VBD rose)))"
    assert linearize(unary, linearization="in-order") == "XX (NP )NP (S XX (VP )VP )S"
    words = ["The", "cat", "sat", "on", "the", "mat", "."]
    output = "The (NP cat )NP (S sat (VP on (PP the (NP mat )NP )PP )VP . )S"
    assert tree_from_output(output, words, "words", "in-order") == (
        "(S (NP (XX The) (XX cat)) (VP (XX sat) (PP (XX on) (NP (XX the) (XX mat)))) (XX .))"
    )
    with pytest.raises(ValueError, match=r"linearization must be one of \['top-down', 'in-order'\]"):
        linearize(tree, linearization="bottom-up")
    with pytest.raises(ValueError, match="linearization must be one of"):
        delinearize("XX", ["a"], linearization="inorder")


def test_copied_words_are_leaves_not_tags_and_a_miscopied_word_is_a_repair():
    words = ["The", "cat", "sat", "."]
    output = "(S (NP The kat )NP (VP sat )VP . )S"  # "cat" miscopied: the input's word is kept
    assert tree_from_output(output, words, "words") == "(S (NP (XX The) (XX cat)) (VP (XX sat)) (XX .))"
    assert needed_repair(output, words, "words")
    assert not needed_repair(output.replace("kat", "cat"), words, "words")
    assert tree_from_output("(S (NP DT NN )NP (VP VBD )VP . )S", words, "pos") == (
        "(S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .))"
    )


def test_round_trip_on_every_tree_of_the_shared_treebank(treebank_dir):
    trees = read_treebank(treebank_dir)
    assert len(trees) == 3914
    for tree in trees:
        clean = preprocess(tree)
        words, tags = tree_words(clean), tree_tags(clean)
        assert delinearize(linearize(clean), words, tags) == clean
        assert delinearize(linearize(clean, with_pos=True), words) == clean
        assert not needed_repair(linearize(clean), words)
        copied = linearize(clean, with_words=True)
        assert tree_from_output(copied, words, "words") == delinearize(linearize(clean), words)
        assert not needed_repair(copied, words, "words")
        in_order = linearize(clean, linearization="in-order")
        assert delinearize(in_order, words, tags, "in-order") == clean
        assert not needed_repair(in_order, words, linearization="in-order")
        assert needed_repair(linearize(clean), words, linearization="in-order")  # top-down read in order
        copied = linearize(clean, with_words=True, linearization="in-order")
        assert tree_from_output(copied, words, "words", "in-order") == delinearize(linearize(clean), words)


@pytest.mark.parametrize(
    "output",
    [
        "(S (NP XX XX )NP (VP XX XX XX XX XX XX XX XX )VP )S )S )NP",  # too many placeholders and closings
        "(S (NP XX )VP XX",  # mislabelled and unclosed
        "",  # nothing at all
        ")S )S XX (",  # garbage
        "(S (NP )NP (VP )VP )S (X XX XX XX XX XX XX XX )X",  # empty constituents, two top-level pieces
    ],
)
@pytest.mark.parametrize("order", ["top-down", "in-order"])
def test_delinearize_always_returns_a_tree_over_exactly_the_words(output, order):
    words = ["The", "cat", "sat", "on", "the", "mat", "."]
    tree = delinearize(output, words, linearization=order)
    assert tree_words(tree) == words
    parse_tree(tree)  # well formed
    assert needed_repair(output, words, linearization=order)
