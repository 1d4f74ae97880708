"""Reading treebanks (`hf_vanilla.parsing.trees`): the LDC layout, several trees a file, malformed files named by file
and line."""

import pytest

from hf_vanilla.parsing import TreebankError, read_treebank, tree_words

RAW = (
    "( (S (NP-SBJ-1 (DT The) (NN cat)) (VP (VBD sat) (NP (-NONE- *-1)) "
    "(PP-LOC (IN on) (NP (DT the) (NN mat)))) (. .)) )"
)


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
