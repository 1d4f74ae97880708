"""Treebank reading, preprocessing, linearization, repair and EVALB scoring."""

from collections import Counter

import pytest

from hf_vanilla.evaluation.evalb import evalb
from hf_vanilla.parsing import (
    TreebankError,
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
from hf_vanilla.tokenization import train_shared_bpe

RAW = (
    "( (S (NP-SBJ-1 (DT The) (NN cat)) (VP (VBD sat) (NP (-NONE- *-1)) "
    "(PP-LOC (IN on) (NP (DT the) (NN mat)))) (. .)) )"
)


def test_preprocess_strips_function_tags_empty_elements_and_root():
    assert preprocess(RAW) == "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))"
    assert preprocess("(TOP (S (NP (-LRB- -LRB-) (NN x) (-RRB- -RRB-)) (VP (VB go))))") == (
        "(S (NP (-LRB- -LRB-) (NN x) (-RRB- -RRB-)) (VP (VB go)))"
    )


def test_linearize_matches_vinyals_format_with_optional_pos_or_words():
    tree = preprocess(RAW)
    assert linearize(tree) == "(S (NP XX XX )NP (VP XX (PP XX (NP XX XX )NP )PP )VP XX )S"
    assert linearize(tree, with_pos=True) == "(S (NP DT NN )NP (VP VBD (PP IN (NP DT NN )NP )PP )VP . )S"
    assert linearize(tree, with_words=True) == "(S (NP The cat )NP (VP sat (PP on (NP the mat )NP )PP )VP . )S"
    with pytest.raises(ValueError, match="exclude each other"):
        linearize(tree, with_pos=True, with_words=True)


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


def test_whole_piece_bpe_keeps_every_bracket_symbol_one_token_and_round_trips(treebank_dir):
    trees = [preprocess(t) for t in read_treebank(treebank_dir)]
    train, held_out = trees[:3000], trees[3000:]
    texts = [text for t in train for text in (" ".join(tree_words(t)), linearize(t))]
    tokenizer = train_shared_bpe(texts, vocab_size=4000, show_progress=False, whitespace_only=True)
    gpt2_style = train_shared_bpe(texts, vocab_size=4000, show_progress=False)
    symbols = Counter(symbol for t in train for symbol in linearize(t).split())
    for symbol, count in symbols.items():
        if count >= 20:  # every bracket symbol (and XX) seen 20 times is one token, at the demo's 4k vocabulary
            assert len(tokenizer.tokenize(" " + symbol)) == 1, symbol
    whole, split = 0, 0
    for tree in held_out[:200]:
        linearized, words = linearize(tree), " ".join(tree_words(tree))
        whole += len(tokenizer(linearized)["input_ids"])
        split += len(gpt2_style(linearized)["input_ids"])
        for text in (linearized, words):
            assert tokenizer.decode(tokenizer(text)["input_ids"], skip_special_tokens=True) == text
    assert split > 1.5 * whole  # GPT-2's pre-tokenizer cuts "(NP" into "(" + "NP": 1.6 times the tokens


def test_reader_handles_ldc_layout_and_several_trees_per_file(tmp_path):
    section = tmp_path / "parsed" / "mrg" / "wsj" / "02"
    section.mkdir(parents=True)
    (section / "wsj_0201.mrg").write_text(RAW + "\n" + "( (NP (NN dog)) )\n")
    (section / "wsj_0200.mrg").write_text("((FRAG (NN first)))\n")
    trees = read_treebank(tmp_path)
    assert [tree_words(t) for t in trees] == [
        ["first"],
        ["The", "cat", "sat", "*-1", "on", "the", "mat", "."],
        ["dog"],
    ]


@pytest.mark.parametrize(
    "content, message",
    [
        ("( (S (NP (NN a)) )\n(VP (VB b)))\n)", "line 3: unbalanced ')'"),
        ("( (S (NP (NN a))\n (VP (VB b))\n", "line 1: unbalanced '('"),
        ("( (S (NP word (NN a)) ) )", "leaf 'word' outside a preterminal"),
        ("stray ( (S (NN a)) )", "leaf 'stray' outside any bracket"),
    ],
)
def test_malformed_files_name_the_file_and_line(tmp_path, content, message):
    file = tmp_path / "bad.mrg"
    file.write_text(content)
    with pytest.raises(TreebankError) as error:
        read_treebank(file)
    assert "bad.mrg" in str(error.value) and message in str(error.value)


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
def test_delinearize_always_returns_a_tree_over_exactly_the_words(output):
    words = ["The", "cat", "sat", "on", "the", "mat", "."]
    tree = delinearize(output, words)
    assert tree_words(tree) == words
    parse_tree(tree)  # well formed
    assert needed_repair(output, words)


def test_evalb_identical_trees_score_100():
    tree = preprocess(RAW)
    assert evalb([tree, tree], [tree, tree]) == dict(
        precision=100.0, recall=100.0, f1=100.0, exact_match=100.0, sentences=2
    )


GOLD = "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))"


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
