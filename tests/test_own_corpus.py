"""A corpus of one's own, as a new user brings it (issue 67): files a user wrote, with the mistakes people make, run
through the real recipe process. Nothing is dropped without a word: each filter says, split by split, what it kept
and dropped and why, in the log and in results.json, and the held-out splits of such a corpus are scored whole unless
the user asks; lines are split as `wc -l` counts them; a bad byte, a missing file, a check run's decoding and the
run folder of each preset are each said, or bounded, at once."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hf_vanilla.data.corpora import load_translation_corpus
from hf_vanilla.training.arguments import CHECK_RUN_ITEMS, resolve
from hf_vanilla.training.flags import parse_settings
from hf_vanilla.training.presets import SUMMARIZATION_PRESETS, WMT_PRESETS
from hf_vanilla.training.run import default_output_dir

from runs import RECIPES, recipe

ANIMALS = ["cat", "dog", "horse", "bird", "fish", "mouse", "goat", "sheep"]
TIERE = ["Katze", "Hund", "Pferd", "Vogel", "Fisch", "Maus", "Ziege", "Schaf"]


def pair(i: int, long: bool) -> tuple[str, str]:
    """An English-German pair: 6 source words, or 21 (over the tiny preset's 16)."""
    en = f"the {ANIMALS[i % 8]} number {i} walks home"
    de = f"die {TIERE[i % 8]} Nummer {i} geht heim"
    if long:
        en += " and then it sleeps for a long time under the old tree near the river"
        de += " und dann schläft sie lange unter dem alten Baum am Fluss"
    return en, de


def write_split(folder: Path, stem: str, pairs: list[tuple[str, str]], newline: str = "\n") -> None:
    for side, lang in enumerate(("en", "de")):
        (folder / f"{stem}.{lang}").write_bytes("".join(p[side] + newline for p in pairs).encode())


def own_corpus(folder: Path) -> Path:
    """train: 60 pairs (15 over 16 source words, row 7 without its German side, row 3 holding U+2028 and a form
    feed, Windows line ends in train.de); valid: 12 (4 long); test: 10 (3 long, row 2 without its English side)."""
    folder.mkdir()
    train = [pair(i, long=i % 4 == 1) for i in range(60)]
    train[6] = (train[6][0], "")
    train[2] = ("the cat\u2028number 2\fwalks home", "die Katze\u2028Nummer 2\fgeht heim")
    write_split(folder, "train", train)
    (folder / "train.de").write_bytes((folder / "train.de").read_bytes().replace(b"\n", b"\r\n"))
    write_split(folder, "valid", [pair(100 + i, long=i % 3 == 0) for i in range(12)])
    test = [pair(200 + i, long=i in (3, 5, 8)) for i in range(10)]
    test[1] = ("", test[1][1])
    write_split(folder, "test", test)
    return folder


def run_recipe(*flags: str, timeout: float = 600) -> subprocess.CompletedProcess:
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, str(RECIPES / "wmt_ende.py"), *flags]
    return subprocess.run(command, capture_output=True, text=True, env=environment, timeout=timeout)


def test_lines_are_split_at_newline_only_as_wc_counts_them(tmp_path):
    corpus = load_translation_corpus(str(own_corpus(tmp_path / "corpus")))
    assert len(corpus["train"]) == (tmp_path / "corpus" / "train.en").read_bytes().count(b"\n") == 60
    assert corpus["train"][2]["translation"] == {
        "en": "the cat\u2028number 2\fwalks home",
        "de": "die Katze\u2028Nummer 2\fgeht heim",  # its own U+2028 and form feed, no "\r" of the line end
    }
    assert corpus["train"][5]["translation"] == dict(zip(("en", "de"), pair(5, long=True)))


def test_a_corpus_of_ones_own_is_filtered_in_training_only_and_every_pair_dropped_is_said(tmp_path):
    """The tiny preset's word limit (16 source words) drops long training pairs, and says so with the flag that
    lifts it; the test split, its long pairs and its empty line included, is decoded and scored whole."""
    corpus, output = own_corpus(tmp_path / "corpus"), tmp_path / "run"
    flags = ("--preset", "tiny", "--dataset", str(corpus), "--max-steps", "2", "--num-beams", "1")
    done = run_recipe(*flags, "--output-dir", str(output))
    assert done.returncode == 0, done.stderr[-3000:]
    assert (
        "Selection: kept 44 of 60 train pairs; dropped 1 with an empty side, 15 with more than 16 source words "
        "(--max-train-source-words) (empty: rows 7)"
    ) in done.stderr
    assert (
        "Selection: kept all 10 test pairs; 1 with an empty side (rows 2) kept: the held-out splits of a corpus of "
        "one's own are decoded and scored whole (--skip-invalid-size-inputs-valid-test filters them)"
    ) in done.stderr
    assert "Selection: kept all 12 validation pairs" in done.stderr
    assert "Evaluation at the end: all 10 test items" in done.stderr
    results = json.loads((output / "results.json").read_text())
    filters = results["filters"]
    assert filters["test"] == {"pairs": 10, "kept": 10, "dropped": {}}
    assert filters["evaluation"] == {"split": "test", "pairs": 10, "kept": 10, "dropped": {}}
    assert filters["train"]["pairs"] == 60 and results["eval_sentences"] == 10
    dropped = filters["train"]["dropped"]
    assert dropped["with an empty side"] == 1 and dropped["with more than 16 source words (--max-train-source-words)"]
    assert filters["train"]["kept"] == 44 - sum(count for reason, count in dropped.items() if "token" in reason)
    card = (output / "README.md").read_text()
    assert "- Pairs kept: train: " in card and "test: all 10" in card and "held-out pairs of at most" not in card


def test_asked_the_held_out_splits_are_filtered_and_the_word_limits_lifted(tmp_path):
    """fairseq's --skip-invalid-size-inputs-valid-test filters the held-out splits (the empty line and the pairs
    over --max-source-words), --max-train-source-words 0 lifts the training limit: each drop counted."""
    corpus = own_corpus(tmp_path / "corpus")
    args = recipe("wmt_ende").Arguments(
        preset="tiny",
        dataset=str(corpus),
        output_dir=str(tmp_path / "run"),
        max_steps=1,
        num_beams=1,
        eval_every=0,
        skip_invalid_size_inputs_valid_test=True,
        max_train_source_words=0,
        max_source_words=20,
    )
    filters = recipe("wmt_ende").main(args)["filters"]
    assert filters["test"] == {
        "pairs": 10,
        "kept": 6,
        "dropped": {"with an empty side": 1, "with more than 20 source words (--max-source-words)": 3},
    }
    assert filters["validation"]["kept"] == 8 and filters["evaluation"]["kept"] == 6
    assert filters["train"]["dropped"]["with an empty side"] == 1
    assert not [reason for reason in filters["train"]["dropped"] if "words" in reason]  # no word limit in training


def test_the_limits_are_flags_in_transformers_and_fairseqs_spellings():
    arguments = recipe("wmt_ende").Arguments
    settings = parse_settings(arguments, ["--max-source-positions", "100", "--max-target-length", "120"])
    assert (settings.max_source_length, settings.max_target_length) == (100, 120)
    assert resolve(settings, WMT_PRESETS).pair_token_limits == (100, 120)
    # --max-length, the paper's clean-corpus limit of 250 tokens, bounds both sides
    assert resolve(arguments(), WMT_PRESETS).pair_token_limits == (250, 250)
    assert resolve(arguments(max_source_length=300), WMT_PRESETS).pair_token_limits == (250, 250)
    demo = resolve(arguments(preset="demo"), WMT_PRESETS)
    assert (demo.word_limit("train"), demo.word_limit("test"), demo.filters_held_out(False)) == (32, 16, False)
    lifted = resolve(arguments(preset="demo", max_train_source_words=0, max_source_words=0), WMT_PRESETS)
    assert lifted.word_limit("train") is None and lifted.word_limit("test") is None and demo.filters_held_out(True)


@pytest.mark.parametrize(
    "mistake, line",
    [
        ("bad byte", "{corpus}/valid.de line 7: not UTF-8 (byte 6 of the line, 0xfc: invalid start byte); convert the "
         "file, e.g. with iconv -f latin1 -t utf-8"),
        ("missing file", "{corpus}/valid.de is missing: {corpus}/valid.en needs it beside it (a split is a pair of "
         "files)"),
    ],
    ids=["bad byte", "missing file"],
)  # fmt: skip
def test_a_bad_byte_and_a_missing_file_are_each_named_in_one_line(mistake, line, tmp_path):
    corpus = own_corpus(tmp_path / "corpus")
    if mistake == "bad byte":  # a Latin-1 "ü" in one of six files
        lines = (corpus / "valid.de").read_bytes().split(b"\n")
        lines[6] = b"die M\xfcller Nummer 6"
        (corpus / "valid.de").write_bytes(b"\n".join(lines))
    else:
        (corpus / "valid.de").unlink()
    done = run_recipe("--preset", "tiny", "--dataset", str(corpus), "--output-dir", str(tmp_path / "run"))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.stderr.strip().splitlines()[-1] == "wmt_ende: " + line.format(corpus=corpus)


def test_a_missing_split_names_the_files_that_give_it(tmp_path):
    corpus = own_corpus(tmp_path / "corpus")
    for lang in ("en", "de"):
        (corpus / f"valid.{lang}").unlink()
    args = recipe("wmt_ende").Arguments(preset="tiny", dataset=str(corpus), output_dir=str(tmp_path / "run"))
    with pytest.raises(ValueError) as refused:
        recipe("wmt_ende").main(args)
    assert str(refused.value) == (
        f"{corpus} has no 'validation' split (it has test, train): give {corpus}/valid.en and .de or validate "
        "nothing with --eval-every 0"
    )


def test_a_check_run_decodes_a_bounded_part_of_the_test_split_unless_asked():
    """A run of fewer updates than its preset (a set-up checked) decodes at most CHECK_RUN_ITEMS test items at the
    end, and as many validation items, unless --eval-sentences (0: all) or --eval-metric-sentences say."""
    arguments = recipe("wmt_ende").Arguments
    check = resolve(arguments(preset="demo", max_steps=5), WMT_PRESETS)
    assert check.check_run and check.eval_sentences == CHECK_RUN_ITEMS
    assert resolve(arguments(preset="demo", max_steps=5, eval_sentences=0), WMT_PRESETS).eval_sentences is None
    assert resolve(arguments(preset="demo", max_steps=5, eval_sentences=7), WMT_PRESETS).eval_sentences == 7
    full = resolve(arguments(preset="demo"), WMT_PRESETS)
    assert not full.check_run and full.eval_sentences is None  # the demo's own run: all 318 test verses
    summarize = recipe("summarize").Arguments
    bounded = resolve(summarize(preset="demo", max_steps=5), SUMMARIZATION_PRESETS)
    assert bounded.eval_metric_sentences == CHECK_RUN_ITEMS
    assert resolve(summarize(preset="demo"), SUMMARIZATION_PRESETS).eval_metric_sentences == 300


def test_each_preset_has_its_own_default_run_folder(tmp_path, monkeypatch):
    """The demo keeps runs/wmt_ende (the README's); a smoke try right after it writes runs/wmt_ende-smoke, never
    refused for the demo's run. A real tiny run without --output-dir beside a finished demo run."""
    arguments = recipe("wmt_ende").Arguments
    assert default_output_dir("wmt_ende", arguments(preset="demo")) == "runs/wmt_ende"
    assert default_output_dir("wmt_ende", arguments(preset="smoke")) == "runs/wmt_ende-smoke"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "wmt_ende").mkdir(parents=True)
    (tmp_path / "runs" / "wmt_ende" / "results.json").write_text("{}")  # the demo's finished run
    corpus = own_corpus(tmp_path / "corpus")
    args = arguments(preset="tiny", dataset=str(corpus), max_steps=1, num_beams=1, eval_every=0, eval_sentences=2)
    recipe("wmt_ende").main(args)
    assert (tmp_path / "runs" / "wmt_ende-tiny" / "results.json").is_file()
    assert (tmp_path / "runs" / "wmt_ende" / "results.json").read_text() == "{}"
