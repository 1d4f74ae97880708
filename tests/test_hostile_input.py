"""Hostile input never crashes: property-based tests (hypothesis) of the treebank reader, delinearize, EVALB, the
tokenizer's round trip and the command line's line handling, and the command line itself on a file of generated
hostile lines. Examples per property are set with `settings(max_examples=...)` beside each test."""

import codecs
import logging
import os
import random
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hf_vanilla.batch_decoding import one_line
from hf_vanilla.cli import split_lines
from hf_vanilla.evaluation.evalb import EVALB_DELETED_LABELS, EVALB_PUNCTUATION_TAGS, evalb
from hf_vanilla.parsing import (
    Tree,
    TreebankError,
    delinearize,
    linearize,
    parse_tree,
    preprocess,
    read_treebank,
    strip_label,
    tree_from_output,
    tree_tags,
    tree_words,
)
from hf_vanilla.tokenization import SPECIAL_TOKENS, load_tokenizer, train_shared_bpe

from runs import WMT_SAMPLE, require

# --- strategies ------------------------------------------------------------------------------------------------------

# A treebank word or label: any characters but whitespace and brackets (which the bracketed format cannot hold).
WORD_CHARACTERS = st.characters(exclude_categories=("Cs",)).filter(lambda c: not c.isspace() and c not in "()")
words = st.text(WORD_CHARACTERS, min_size=1, max_size=8)
sentences = st.lists(words, min_size=1, max_size=12)
EVALB_LABELS = ["S", "NP", "VP", "PP", "ADVP", "PRT", "NP-SBJ", "PP-LOC=2", "TOP", "-NONE-", ""]
EVALB_TAGS = ["NN", "DT", "VBD", "XX", ",", ".", ":", "``", "''", "-NONE-"]


def _tree(label: str, children: list) -> Tree:
    return Tree(label, children)


# Any well-formed tree: labels may be empty (as in PTB's outer bracket); tags may not (a bracket's first token).
trees = st.recursive(
    st.builds(lambda tag, word: Tree(tag, [word]), words, words),
    lambda children: st.builds(_tree, st.just("") | words, st.lists(children, min_size=1, max_size=4)),
    max_leaves=25,
)


@st.composite
def bracketing(draw, leaves: list[Tree]) -> Tree:
    """A random tree over exactly `leaves` (preterminals), in order: constituents over contiguous runs, unary chains
    included, labels from EVALB_LABELS."""

    def build(items: list[Tree], depth: int) -> Tree:
        if len(items) == 1 and (depth >= 4 or draw(st.booleans())):
            return Tree(items[0].label, list(items[0].children))
        cuts = sorted(draw(st.sets(st.integers(1, len(items) - 1), max_size=3))) if len(items) > 1 else []
        bounds = [0, *cuts, len(items)]
        children = [build(items[start:end], depth + 1) for start, end in zip(bounds, bounds[1:])]
        return Tree(draw(st.sampled_from(EVALB_LABELS)), children)

    return build(leaves, 0)


@st.composite
def tree_pairs(draw) -> tuple[Tree, Tree]:
    """Two trees over the same preterminals (words and tags), bracketed independently."""
    leaves = [
        Tree(tag, [word])
        for word, tag in draw(st.lists(st.tuples(words, st.sampled_from(EVALB_TAGS)), min_size=1, max_size=10))
    ]
    return draw(bracketing(leaves)), draw(bracketing(leaves))


# Model outputs: brackets, labels, placeholders, tags, words and garbage, including symbols with brackets inside.
output_tokens = st.one_of(
    st.sampled_from(["(S", ")S", "(NP", ")NP", "(VP", ")VP", "(", ")", "()", "((NP", "NN)", ")(", "(X(", "XX", "NN"]),
    st.text(st.characters(exclude_categories=("Cs",)).filter(lambda c: not c.isspace()), min_size=1, max_size=6),
)


# --- the treebank reader ---------------------------------------------------------------------------------------------

BRACKET_TEXT_PIECES = ["(", ")", " ", "\n", "\r\n", "\t", "NP", "NN", "a", "#", "% x", "-NONE-", "\x85", "é", "\x00"]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A file the property tests overwrite for every example (hypothesis reuses one fixture for all examples)."""
    return tmp_path_factory.mktemp("hostile") / "input.mrg"


def _read_or_treebank_error(file, data: bytes) -> list[str]:
    """read_treebank on `data`: its trees, each well formed and printed canonically, or [] after a TreebankError
    that names the file and a line of it. Any other exception fails the calling test."""
    file.write_bytes(data)
    try:
        found = read_treebank(file)
    except TreebankError as error:
        match = re.match(rf"{re.escape(str(file))}, line (\d+): ", str(error))
        assert match, str(error)
        assert 1 <= int(match.group(1)) <= data.count(b"\n") + 1
        return []
    for tree in found:
        assert str(parse_tree(tree)) == tree
        try:
            preprocess(tree)
        except TreebankError as error:
            assert "no words once empty elements are removed" in str(error)
    return found


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(BRACKET_TEXT_PIECES), max_size=60).map("".join))
def test_random_bracket_strings_give_trees_or_an_error_naming_file_and_line(scratch, text):
    _read_or_treebank_error(scratch, text.encode("utf-8"))


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=200) | st.text(max_size=80).map(str.encode))
def test_random_bytes_give_trees_or_an_error_naming_file_and_line(scratch, data):
    _read_or_treebank_error(scratch, data)


# An annotator's comment: a line starting with # or %, then anything.
comment_lines = st.builds(
    str.__add__, st.sampled_from("#%"), st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\n"))
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(trees, st.lists(comment_lines, max_size=2)), min_size=1, max_size=5))
def test_written_trees_read_back_exactly_with_comment_lines_skipped(scratch, caplog, trees_and_comments):
    lines = [line for tree, comments in trees_and_comments for line in (*comments, str(tree))]
    scratch.write_text("\n".join(lines) + "\n", encoding="utf-8")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="hf_vanilla.parsing.trees"):
        assert read_treebank(scratch) == [str(tree) for tree, _ in trees_and_comments]
    comments = sum(len(c) for _, c in trees_and_comments)
    logged = [r.getMessage() for r in caplog.records if "comment line" in r.getMessage()]
    assert logged == (
        [f"{scratch}: skipped {comments} comment line{'s' * (comments > 1)} (# or % outside any tree)"]
        if comments
        else []
    )
    if comments:
        first = next(number for number, line in enumerate(lines, 1) if line[0] in "#%")
        with pytest.raises(TreebankError, match=rf"line {first}: leaf [\"'][#%]"):
            read_treebank(scratch, comments=False)


def test_comment_marks_inside_a_tree_or_after_one_on_its_line_are_not_comments(tmp_path):
    file = tmp_path / "marks.mrg"
    file.write_text("# a note (S\n( (NP ($ $) (CD 1) (#\n# ) (NN %) ) )\n% another\n")  # line 3 holds the pound sign
    assert read_treebank(file) == ["( (NP ($ $) (CD 1) (# #) (NN %)))"]
    file.write_text("( (NN a) ) # after a tree\n")
    with pytest.raises(TreebankError, match="line 1: leaf '#' outside any bracket"):
        read_treebank(file)


def test_ten_thousand_nested_brackets_are_a_tree_not_a_recursion_error(tmp_path):
    depth = 10_000
    file = tmp_path / "deep.mrg"
    file.write_text("(S " * depth + "(NN a) (NN b)" + ")" * depth + "\n")
    (tree,) = read_treebank(file)
    clean = preprocess(tree)
    assert tree_words(clean) == ["a", "b"] and clean.count("(S ") == depth
    linearized = linearize(clean)
    assert delinearize(linearized, ["a", "b"], tree_tags(clean)) == clean
    in_order = linearize(clean, linearization="in-order")  # written without recursion too
    assert in_order.startswith("XX (S XX )S (S )S")
    assert delinearize(in_order, ["a", "b"], tree_tags(clean), "in-order") == clean
    assert evalb([clean], [clean])["f1"] == 100.0
    unclosed = "(S " * depth + "XX"  # a model's runaway output
    assert tree_words(delinearize(unclosed, ["a", "b"])) == ["a", "b"]
    file.write_text("(" * depth)
    with pytest.raises(TreebankError, match="line 1: unbalanced '\\(' is never closed"):
        read_treebank(file)


def test_a_file_that_is_not_utf8_is_an_error_naming_its_line(tmp_path):
    file = tmp_path / "latin1.mrg"
    file.write_bytes("( (NP (NN a)) )\n( (NP (NN caf\u00e9)) )\n".encode("latin-1"))
    with pytest.raises(TreebankError, match=rf"{re.escape(str(file))}, line 2: not UTF-8 \(byte 0xe9\)"):
        read_treebank(file)
    file.write_bytes(codecs.BOM_UTF8 + b"( (NP (NN a)) )\n")  # a byte-order mark is not a word
    assert read_treebank(file) == ["( (NP (NN a)))"]


# --- delinearize -----------------------------------------------------------------------------------------------------


@settings(max_examples=400)
@given(st.lists(output_tokens, max_size=40), sentences, st.sampled_from(["placeholder", "pos", "words"]))
def test_any_output_gives_a_well_formed_tree_over_exactly_the_words(tokens, sentence, leaves):
    tree = tree_from_output(" ".join(tokens), sentence, leaves)
    parsed = parse_tree(tree)
    assert str(parsed) == tree and parsed.words() == sentence
    if leaves == "words":
        assert set(parsed.tags()) == {"XX"}
    tags = [f"T{i}" for i in range(len(sentence))]
    assert tree_tags(delinearize(" ".join(tokens), sentence, tags)) == tags


def test_delinearize_refuses_words_a_tree_cannot_hold():
    for word in ("f(x)", "a b", ""):
        with pytest.raises(ValueError, match="holds a bracket or whitespace"):
            delinearize("(S XX XX )S", ["ok", word])


# --- EVALB -----------------------------------------------------------------------------------------------------------


def counts_a_bracket(tree: Tree) -> bool:
    """Independently of `evalb`: whether a constituent with a scored label dominates a word not tagged as
    punctuation (or -NONE-), i.e. whether EVALB has any bracket to count."""

    def visit(node: Tree) -> tuple[bool, bool]:  # (dominates a counted word, holds a counted bracket)
        if node.is_preterminal:
            return node.label not in EVALB_PUNCTUATION_TAGS | {"-NONE-"}, False
        results = [visit(child) for child in node.children]
        dominates = any(d for d, _ in results)
        scored = strip_label(node.label) not in EVALB_DELETED_LABELS
        return dominates, any(held for _, held in results) or (dominates and scored)

    return visit(tree)[1]


@settings(max_examples=300)
@given(tree_pairs())
def test_evalb_scores_any_two_trees_over_the_same_words_between_0_and_100(pair):
    gold, pred = (str(tree) for tree in pair)
    scores = evalb([gold], [pred])
    assert all(0.0 <= scores[key] <= 100.0 for key in ("precision", "recall", "f1", "exact_match"))
    assert scores["precision"] == evalb([pred], [gold])["recall"]  # same tags: the same words are counted
    p, r = scores["precision"], scores["recall"]
    assert scores["f1"] == pytest.approx(2 * p * r / (p + r) if p + r else 0.0, abs=0.02)
    itself = evalb([gold], [gold])
    assert itself["exact_match"] == 100.0
    expected = 100.0 if counts_a_bracket(pair[0]) else 0.0  # no bracket at all: 0/0, which EVALB prints as 0
    assert (itself["precision"], itself["recall"], itself["f1"]) == (expected, expected, expected)


# --- the tokenizer ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=[False, True], ids=["gpt2-pieces", "whitespace-pieces"])
def saved_tokenizer(request, tmp_path_factory):
    """A small shared BPE (both pre-tokenizers) trained on real WMT text, saved and loaded back as users load it."""
    sample = require(WMT_SAMPLE)
    texts = [line for name in ("train.en", "train.de") for line in (sample / name).read_text().splitlines()[:1000]]
    folder = tmp_path_factory.mktemp("tokenizer")
    train_shared_bpe(texts, 600, show_progress=False, whitespace_only=request.param).save_pretrained(folder)
    return load_tokenizer(folder)


unicode_texts = st.lists(
    st.text() | st.sampled_from([*SPECIAL_TOKENS, " ", "  ", "\r", "\r\n", "\x00", "\u2028", "\ufeff", "\U0001f600"]),
    max_size=8,
).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(unicode_texts)
def test_any_unicode_text_round_trips_through_the_tokenizer(saved_tokenizer, text):
    ids = saved_tokenizer(text)["input_ids"]
    assert ids[-1] == saved_tokenizer.eos_token_id
    assert not set(ids[:-1]) & set(saved_tokenizer.all_special_ids)  # "</s>" in a text is text
    assert saved_tokenizer.decode(ids, skip_special_tokens=True) == text


def test_a_lone_surrogate_is_not_text_and_not_encodable(saved_tokenizer):
    with pytest.raises(TypeError):  # no UTF-8 file or stdin can produce one: the CLI decodes bytes with replacement
        saved_tokenizer("a\ud800b")


# --- command-line input ----------------------------------------------------------------------------------------------


@settings(max_examples=500)
@given(st.lists(st.binary(max_size=12) | st.text(max_size=12).map(str.encode), max_size=20).map(b"".join))
def test_input_lines_are_split_at_newline_only_and_bad_bytes_replaced(data):
    lines, undecodable = split_lines(data)
    pieces = data.removeprefix(codecs.BOM_UTF8).split(b"\n")
    expected = pieces[:-1] if pieces[-1] == b"" else pieces  # a final newline ends the last line
    assert len(lines) == len(expected) == data.count(b"\n") + (not data.endswith(b"\n") and data != b"")
    for number, (line, raw) in enumerate(zip(lines, expected), 1):
        raw = raw.removesuffix(b"\r")
        assert "\n" not in line
        try:
            assert line == raw.decode("utf-8") and number not in undecodable
        except UnicodeDecodeError:
            assert line == raw.decode("utf-8", "replace") and number in undecodable


@settings(max_examples=500)
@given(st.text())
def test_an_output_is_always_one_line(text):
    line = one_line(text)
    assert len(line.splitlines()) <= 1 and line.split() == text.split()  # line breaks are whitespace: words stay
    if text.splitlines() == [text]:
        assert line == text


# --- the command line on a file of hostile lines ---------------------------------------------------------------------

FIXED_LINES = [
    b"\xef\xbb\xbfa byte-order mark starts the file",
    b"",
    b"   \t  ",
    b"carriage\rreturn inside",
    b"windows line end\r",
    b"vertical\x0btab and form\x0cfeed",
    b"file\x1cgroup\x1drecord\x1eunit separators",
    "next\x85line and line\u2028separator and paragraph\u2029separator".encode(),
    b"NUL\x00byte",
    b"text holding </s> <s> <pad> <unk>",
    b"f(x) = (y) ( )",
    b"invalid \xff\xfe utf-8",
    b"truncated caf\xc3",
    b"encoded surrogate \xed\xa0\x80",
    "\u00e9 \u00fc \U0001f600 \u4e2d\u6587 \u05e9\u05dc\u05d5\u05dd".encode(),
]
LONG_LINE = b"word " * 400
MAX_INPUT_TOKENS = 120


def hostile_file(seed: int, count: int) -> list[bytes]:
    """FIXED_LINES, `count` random lines (any code point but surrogates, a quarter of them controls or line
    separators, or random bytes that are seldom UTF-8), and two over-long lines, one of them last."""
    rng = random.Random(seed)
    controls = [chr(c) for c in [*range(0, 10), *range(11, 32), *range(0x7F, 0xA0)]] + ["\u2028", "\u2029", "\ufeff"]

    def character() -> str:
        roll = rng.random()
        if roll < 0.5:
            return chr(rng.randrange(0x20, 0x7F))
        if roll < 0.75:
            return rng.choice(controls)
        code = rng.randrange(0x80, 0x110000)
        return chr(code) if not 0xD800 <= code < 0xE000 else "\ufffd"

    lines = list(FIXED_LINES)
    for _ in range(count):
        if rng.random() < 0.1:
            lines.append(bytes(rng.choice([b for b in range(256) if b != 0x0A]) for _ in range(rng.randint(1, 12))))
        else:
            lines.append("".join(character() for _ in range(rng.randint(0, 12))).encode())
    middle = len(lines) // 2
    return [*lines[:middle], LONG_LINE, *lines[middle:], LONG_LINE]


def _check_warnings(
    stderr: str,
    where: str,
    lines: list[bytes],
    long_problem: str = f"over --max-input-tokens {MAX_INPUT_TOKENS} tokens",
) -> None:
    """The warnings name exactly the lines with undecodable bytes and the over-long ones (`long_problem`)."""
    undecodable = []
    for number, raw in enumerate(lines, 1):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            undecodable.append(number)
    long = [number for number, raw in enumerate(lines, 1) if raw == LONG_LINE]
    named = {}
    for line in stderr.splitlines():
        match = re.match(rf"hf-vanilla: warning: {re.escape(where)} lines? ([\d, ]+?)(?: and (\d+) more)?: (.*)", line)
        if match:
            numbers = [int(n) for n in match.group(1).split(", ")]
            named[match.group(3).split(";")[0]] = (numbers, int(match.group(2) or 0))
    assert named["not UTF-8"] == (undecodable[:10], len(undecodable[10:]))
    assert named[long_problem] == (long, 0)


def _run(args: list[str], stdin: bytes | None = None) -> subprocess.CompletedProcess:
    # An ASCII locale: the output must be UTF-8 whatever the locale's encoding.
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    return subprocess.run(
        [sys.executable, "-m", "hf_vanilla_cli", *args], input=stdin, capture_output=True, timeout=600, env=env
    )


def test_translate_keeps_one_output_line_per_input_line_whatever_the_input(wmt_run):
    lines = hostile_file(seed=19, count=60)
    result = _run(
        ["translate", str(wmt_run[0] / "final"), "--num-beams", "1", "--max-input-tokens", str(MAX_INPUT_TOKENS)],
        stdin=b"\n".join(lines) + b"\n",
    )
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr
    output = result.stdout.decode("utf-8")
    assert output.endswith("\n") and len(output.split("\n")[:-1]) == len(output.splitlines()) == len(lines)
    _check_warnings(stderr, "stdin", lines)
    for raw, translated in zip(lines, output.splitlines()):
        if raw == LONG_LINE or not raw.decode("utf-8", "replace").strip():
            assert translated == ""


def test_parse_keeps_one_well_formed_tree_per_input_line_whatever_the_input(parse_run, tmp_path):
    lines = hostile_file(seed=20, count=40)
    (tmp_path / "hostile.txt").write_bytes(b"\n".join(lines))  # no newline after the last line
    result = _run(
        [
            "parse",
            str(parse_run[0] / "final"),
            "--num-beams",
            "1",
            "--input",
            str(tmp_path / "hostile.txt"),
            "--max-input-tokens",
            str(MAX_INPUT_TOKENS),
        ]
    )
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr
    output = result.stdout.decode("utf-8")
    assert output.endswith("\n") and len(output.split("\n")[:-1]) == len(output.splitlines()) == len(lines)
    _check_warnings(stderr, str(tmp_path / "hostile.txt"), lines)
    for number, (raw, tree) in enumerate(zip(lines, output.splitlines()), 1):
        text = raw.removeprefix(codecs.BOM_UTF8) if number == 1 else raw
        expected = [w.replace("(", "-LRB-").replace(")", "-RRB-") for w in text.decode("utf-8", "replace").split()]
        if raw == LONG_LINE or not expected:
            assert tree == ""
        else:
            assert str(parse_tree(tree)) == tree and tree_words(tree) == expected, (number, raw)


def test_summarize_keeps_one_output_line_per_input_line_whatever_the_input(summarization_folder):
    """Over-long documents are read up to the limit, not skipped: the warning says so; blank lines give empty lines."""
    lines = hostile_file(seed=21, count=60)
    result = _run(
        ["summarize", str(summarization_folder), "--max-input-tokens", str(MAX_INPUT_TOKENS)],
        stdin=b"\r\n".join(lines) + b"\r\n",
    )
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr
    output = result.stdout.decode("utf-8")
    assert output.endswith("\n") and len(output.split("\n")[:-1]) == len(output.splitlines()) == len(lines)
    long_problem = f"over {MAX_INPUT_TOKENS} tokens (--max-input-tokens)"
    _check_warnings(stderr, "stdin", lines, long_problem)
    assert f"{long_problem}; only the first {MAX_INPUT_TOKENS} were read" in stderr
    for raw, summary in zip(lines, output.splitlines()):
        if not raw.decode("utf-8", "replace").strip():
            assert summary == ""
