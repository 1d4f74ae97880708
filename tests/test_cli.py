"""The `hf-vanilla` console script."""

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from hf_vanilla_cli import main

from runs import recipe, tiny_model


def hf_vanilla(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hf_vanilla_cli", *args], capture_output=True, text=True, timeout=300)


def test_average_checkpoints_command_on_known_values(tmp_path):
    for step, value in ((1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0)):
        model = tiny_model()
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.fill_(value)
        folder = tmp_path / f"checkpoint-{step:08d}"
        model.save_pretrained(folder / "model")
        (folder / "trainer_state.json").write_text(json.dumps({"step": step}))
    (tmp_path / ".tmp-checkpoint-00000005").mkdir()  # an unfinished save is ignored
    result = hf_vanilla("average-checkpoints", str(tmp_path), "--last", "3", "--output", str(tmp_path / "avg"))
    assert result.returncode == 0, result.stderr
    weights = load_file(str(tmp_path / "avg" / "model.safetensors"))
    assert all(torch.all(t == 14.0 / 3).item() for t in weights.values())
    # A run folder that records its run (run.json): only that run's checkpoints (their manifests name it) are taken.
    from hf_vanilla.training.checkpoints import _write_manifest

    (tmp_path / "run.json").write_text(json.dumps({"run_id": "this-run"}))
    for step in (1, 2, 3, 4):
        _write_manifest(tmp_path / f"checkpoint-{step:08d}", "another-run" if step == 4 else "this-run")
    result = hf_vanilla("average-checkpoints", str(tmp_path), "--last", "3", "--output", str(tmp_path / "own"))
    assert result.returncode == 0 and "checkpoint-00000004" not in result.stdout, result.stderr
    weights = load_file(str(tmp_path / "own" / "model.safetensors"))
    assert all(torch.all(t == 7.0 / 3).item() for t in weights.values())


def test_scoring_commands_and_clear_errors(tmp_path):
    (tmp_path / "ref.txt").write_text("Die Katze sitzt auf der Matte.\n")
    (tmp_path / "tree.txt").write_text("(S (NP (NN cats)) (VP (VBP sleep)))\n")
    bleu = hf_vanilla("score-bleu", str(tmp_path / "ref.txt"), str(tmp_path / "ref.txt"))
    assert json.loads(bleu.stdout)["sacrebleu"] == 100.0
    evalb = hf_vanilla("score-evalb", str(tmp_path / "tree.txt"), str(tmp_path / "tree.txt"))
    assert json.loads(evalb.stdout)["f1"] == 100.0
    missing = hf_vanilla("score-bleu", str(tmp_path / "nope.txt"), str(tmp_path / "ref.txt"))
    assert missing.returncode != 0 and missing.stderr.strip().startswith("hf-vanilla: cannot read")
    assert "Traceback" not in missing.stderr


def test_translate_matches_generate_keeps_line_count_and_reads_files(wmt_run, tmp_path):
    from transformers import AutoTokenizer

    from hf_vanilla import VanillaTransformerForConditionalGeneration

    final = wmt_run[0] / "final"
    sentences = ["The house is small.", "", "I saw the man with the telescope yesterday."]
    result = subprocess.run(
        [sys.executable, "-m", "hf_vanilla_cli", "translate", str(final)],
        input="\n".join(sentences) + "\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")[:-1]
    assert len(lines) == 3 and lines[1] == ""
    model = VanillaTransformerForConditionalGeneration.from_pretrained(final).eval()
    tokenizer = AutoTokenizer.from_pretrained(final)
    for sentence, line in zip(sentences, lines):
        if sentence:
            output = model.generate(**tokenizer([sentence], return_tensors="pt"))
            assert line == tokenizer.decode(output[0], skip_special_tokens=True).strip()

    (tmp_path / "in.txt").write_text("\n".join(sentences) + "\n")
    greedy = hf_vanilla("translate", str(final), "--input", str(tmp_path / "in.txt"), "--num-beams", "1")
    assert greedy.returncode == 0 and len(greedy.stdout.split("\n")[:-1]) == 3


def test_translate_errors_are_one_line(wmt_run, tmp_path):
    final = str(wmt_run[0] / "final")
    (tmp_path / "in.txt").write_text("Pierre Vinken will join the board .\n")
    for args, expected in (
        (("translate", str(tmp_path / "no-model")), f"no model at {tmp_path / 'no-model'} (no such folder)"),
        (("translate", str(wmt_run[0])), f"{wmt_run[0]} is a run folder; its model is {wmt_run[0] / 'final'}"),
        (("translate", final, "--input", str(tmp_path / "missing.txt")), "cannot read"),
        (("parse", final, "--input", str(tmp_path / "in.txt")), "not a parser"),
    ):
        result = hf_vanilla(*args)
        assert result.returncode != 0 and "Traceback" not in result.stderr
        assert result.stderr.strip().splitlines() == [result.stderr.strip()]
        assert result.stderr.startswith("hf-vanilla: ")
        assert expected in result.stderr, result.stderr


def test_an_over_long_line_is_skipped_with_a_warning_naming_it(wmt_run, tmp_path):
    (tmp_path / "long.txt").write_text("short\n" + "word " * 50 + "\nshort too\n")
    result = hf_vanilla(
        "translate", str(wmt_run[0] / "final"), "--input", str(tmp_path / "long.txt"), "--max-input-tokens", "20"
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[3] == ""  # three lines, each ended by "\n"
    warnings = [line for line in result.stderr.splitlines() if line.startswith("hf-vanilla: warning:")]
    assert warnings == [
        f"hf-vanilla: warning: {tmp_path / 'long.txt'} line 2: over --max-input-tokens 20 tokens; skipped (empty "
        "output line)"
    ]


def test_parse_always_gives_well_formed_trees_over_the_input_words(parse_run):
    from hf_vanilla.parsing import parse_tree

    sentences = ["The cat sat on the mat .", "", "Stocks fell sharply in heavy trading ."]
    for grammar in ([], ["--no-tree-grammar"]):  # under the tree grammar, and freely then repaired
        command = [sys.executable, "-m", "hf_vanilla_cli", "parse", str(parse_run[0] / "final"), "--num-beams", "2"]
        result = subprocess.run(
            command + grammar, input="\n".join(sentences) + "\n", capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stderr
        trees = result.stdout.split("\n")[:-1]
        assert len(trees) == 3 and trees[1] == ""
        for sentence, tree in zip(sentences, trees):
            if sentence:
                assert parse_tree(tree).words() == sentence.split() and set(parse_tree(tree).tags()) == {"XX"}


def test_parse_with_a_tokenizer_that_cannot_write_brackets_says_how_to_decode(tmp_path):
    from hf_vanilla.tokenization import train_shared_bpe

    tokenizer = train_shared_bpe(["(S (NP the cat )NP )S the cat"] * 3, vocab_size=300, show_progress=False)
    model = tiny_model(vocab_size=len(tokenizer), task="parsing", tree_leaves="words")
    model.save_pretrained(tmp_path / "parser")
    tokenizer.save_pretrained(tmp_path / "parser")
    result = subprocess.run(
        [sys.executable, "-m", "hf_vanilla_cli", "parse", str(tmp_path / "parser")],
        input="the cat\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode != 0 and "not a parser's tokenizer" in result.stderr
    assert "--no-tree-grammar" in result.stderr and "Traceback" not in result.stderr


# --- summarize, on the tiny pointer-generator trained to copy (reverse) its input -----------------------------------


def summarize(folder, *flags: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hf_vanilla_cli", "summarize", str(folder), *flags],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )


def warnings(result: subprocess.CompletedProcess) -> list[str]:
    """The command's warnings (stderr also shows a progress bar when it reads --input)."""
    return [line for line in result.stderr.splitlines() if line.startswith("hf-vanilla: warning:")]


def test_summarize_decodes_as_generate_does_with_the_models_decoding(summarization_folder, summarization_model):
    """Each line's summary is `generate()` under the model's generation config (the summarization row: the repeated
    trigram that the model writes with the row's rules off, "c b a" twice in "d c b a c b a", is not written; a
    source it reverses under the row is reversed); empty and blank lines give empty lines; CRLF ends are dropped.
    The two sources are ones the model is checked to decode so (`reversed_text`): a model trained to 95% gets some
    inputs wrong, and which ones depends on the machine's rounding."""
    from reversal import LONG, REPEATING, reversal_tokenizer, reversed_text

    repeating = reversed_text(summarization_model, REPEATING, dict(no_repeat_ngram_size=0, no_stutter_span_size=0))
    plain = reversed_text(summarization_model, LONG, {})
    documents = [repeating, "", plain, "   ", "e f g h"]
    result = summarize(summarization_folder, stdin="\r\n".join(documents) + "\r\n")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")[:-1]
    assert len(lines) == 5 and lines[1] == lines[3] == ""
    tokenizer = reversal_tokenizer()
    for document, line in zip(documents, lines):
        if document.strip():
            output = summarization_model.generate(**tokenizer([document], return_tensors="pt"))
            assert line == tokenizer.decode(output[0], skip_special_tokens=True)
    assert lines[2].split() == plain.split()[::-1] and lines[0].split() != repeating.split()[::-1]


def test_summarize_flags_override_the_models_decoding(summarization_folder, summarization_model, tmp_path):
    """The flags replace the model's summarization row: with both rules off, greedy, the repeated trigram of the
    reversal is written; the reversal of 3 symbols is grown to at least 6 tokens, that of 10 cut to 8. Every output
    is compared with the model's own greedy decoding with no rule (`reversal.RULE_FREE`), which is checked to be the
    reversal for these sources (`reversed_text`), not with a perfect model's."""
    from reversal import LONG, REPEATING, SHORT, reversed_text

    repeating, short, long = (reversed_text(summarization_model, texts) for texts in (REPEATING, SHORT, LONG))
    (tmp_path / "in.txt").write_text(f"{repeating}\n{short}\n{long}\n")
    result = summarize(
        summarization_folder,
        "--input",
        str(tmp_path / "in.txt"),
        "--no-repeat-ngram-size",
        "0",
        "--no-stutter-span-size",
        "0",
        "--min-new-tokens",
        "6",
        "--max-new-tokens",
        "8",
        "--num-beams",
        "1",
        "--length-penalty",
        "0.6",
    )
    assert result.returncode == 0, result.stderr
    repeated, grown, cut = (line.split() for line in result.stdout.splitlines())
    assert repeated == repeating.split()[::-1]  # the copy, its trigram twice in a row: both rules are off
    assert 6 <= len(grown) <= 8 and grown[:3] == short.split()[::-1]  # at least 6 tokens where the copy has 3
    assert cut == long.split()[::-1][:8]  # at most 8


def test_summarize_spells_the_length_flags_as_the_recipe_does(capsys):
    """`--min-new-tokens`/`--max-new-tokens` in `hf-vanilla summarize`, recipes/summarize.py and
    tune_summary_decoding.py alike, each parser read; no other spelling (`--min-length`) in any of them."""
    from hf_vanilla.training.flags import parse_settings
    from hf_vanilla_cli import build_parser

    lengths = ["--min-new-tokens", "3", "--max-new-tokens", "9"]
    readers = {
        "hf-vanilla summarize": lambda argv: build_parser().parse_args(["summarize", "model", *argv]),
        "recipes/summarize.py": lambda argv: parse_settings(recipe("summarize").Arguments, argv),
        "tune_summary_decoding.py": lambda argv: recipe("tune_summary_decoding").parse_args(["--model", "m", *argv]),
    }
    for name, read in readers.items():
        args = read(lengths)
        assert (args.min_new_tokens, args.max_new_tokens) in ((3, 9), ([3], [9])), name  # tuning: lists of values
        with pytest.raises(SystemExit):
            read(["--min-length", "3"])
        assert "--min-length" in capsys.readouterr().err, name


def test_summarize_reads_a_long_document_up_to_the_limit_with_a_warning(
    summarization_folder, summarization_model, tmp_path
):
    """An over-long document is summarized from its first N tokens (the last of them </s>), not skipped: N is
    --max-input-tokens, else the model's model_max_length, else SUMMARY_INPUT_TOKENS. The summaries are compared with
    the model's own (`generate()` under its row), not with a perfect model's reversals."""
    from transformers import AutoTokenizer

    from hf_vanilla.decoding_settings import SUMMARY_INPUT_TOKENS

    from reversal import reversal_tokenizer

    long, cut = "a b c d e f g h", "a b c d"  # 8 words + </s> = 9 tokens; 5 tokens: the first 4 words + </s>
    (tmp_path / "in.txt").write_text(f"e f\n{long}\n")
    flagged = summarize(summarization_folder, "--input", str(tmp_path / "in.txt"), "--max-input-tokens", "5")
    assert flagged.returncode == 0, flagged.stderr
    tokenizer = reversal_tokenizer()
    own = [
        tokenizer.decode(
            summarization_model.generate(**tokenizer([text], return_tensors="pt"))[0], skip_special_tokens=True
        )
        for text in ("e f", cut, long)
    ]
    assert own[1] != own[2]  # the model summarizes the cut document otherwise than the whole one
    assert (
        flagged.stdout.splitlines() == own[:2] == [own[0], summarize(summarization_folder, stdin=cut).stdout.strip()]
    )
    assert warnings(flagged) == [
        f"hf-vanilla: warning: {tmp_path / 'in.txt'} line 2: over 5 tokens (--max-input-tokens); only the first 5 "
        "were read"
    ]

    recorded = tmp_path / "recorded"
    shutil.copytree(summarization_folder, recorded)
    tokenizer = AutoTokenizer.from_pretrained(recorded)
    tokenizer.model_max_length = 5  # what the model was trained on, as the summarization recipe records it
    tokenizer.save_pretrained(recorded)
    by_model = summarize(recorded, stdin=f"e f\n{long}\n")
    assert by_model.stdout == flagged.stdout
    assert warnings(by_model) == [
        "hf-vanilla: warning: stdin line 2: over 5 tokens (the model's model_max_length); only the first 5 were read"
    ]

    huge = " ".join(["a"] * SUMMARY_INPUT_TOKENS)  # with </s>, one token over the default limit
    by_default = summarize(summarization_folder, "--max-new-tokens", "2", stdin=f"{huge}\n")
    assert by_default.returncode == 0 and len(by_default.stdout.split()) == 2
    assert warnings(by_default) == [
        f"hf-vanilla: warning: stdin line 1: over {SUMMARY_INPUT_TOKENS} tokens (the default limit); only the first "
        f"{SUMMARY_INPUT_TOKENS} were read"
    ]


def test_summarize_errors_are_one_line(summarization_folder, reversal_folder, tmp_path, monkeypatch):
    for args, expected in (
        ((str(tmp_path / "no-model"),), "no model at"),
        ((str(reversal_folder),), "is a translation model, not a summarizer; use `hf-vanilla translate`"),
        ((str(summarization_folder), "--min-new-tokens", "65"), "at least 65 and at most 64 tokens"),
    ):
        result = summarize(*args, stdin="a b c\n")
        assert result.returncode != 0 and "Traceback" not in result.stderr
        assert result.stderr.strip().splitlines() == [result.stderr.strip()]
        assert result.stderr.startswith("hf-vanilla: ") and expected in result.stderr, result.stderr
    # Refused before anything is read or loaded (in this process: `main` raises the SystemExit the script exits with).
    monkeypatch.setattr("hf_vanilla.cli._load", lambda name: pytest.fail("loaded a model for a bad flag"))
    for args, expected in (
        (("--input", str(tmp_path / "missing.txt")), "hf-vanilla: cannot read"),
        (("--num-beams", "0"), "hf-vanilla: --num-beams must be at least 1, got 0"),
        (("--max-new-tokens", "0"), "hf-vanilla: --max-new-tokens must be at least 1, got 0"),
        (("--min-new-tokens", "-1"), "hf-vanilla: --min-new-tokens must not be negative, got -1"),
        (("--max-input-tokens", "1"), "hf-vanilla: --max-input-tokens must be at least 2, got 1"),
        (("--no-repeat-ngram-size", "-1"), "hf-vanilla: --no-repeat-ngram-size must not be negative, got -1"),
        (("--no-stutter-span-size", "-1"), "hf-vanilla: --no-stutter-span-size must not be negative, got -1"),
    ):
        with pytest.raises(SystemExit) as exit:
            main(["summarize", str(summarization_folder), *args])
        assert str(exit.value.code).startswith(expected) and "\n" not in str(exit.value.code)


def test_each_subcommand_refuses_a_model_of_another_task_in_one_line(reversal_folder, summarization_folder):
    """translate, parse and summarize each run only their own task's models (a MarianMTModel translates), and name
    the subcommand that runs the model given; before any input line is decoded."""
    cases = [
        ("translate", summarization_folder, "is a summarization model, not a translation; use `hf-vanilla summarize`"),
        ("parse", summarization_folder, "is a summarization model, not a parser; use `hf-vanilla summarize`"),
        ("summarize", reversal_folder, "is a translation model, not a summarizer; use `hf-vanilla translate`"),
        ("parse", reversal_folder, "is a translation model, not a parser; use `hf-vanilla translate`"),
    ]
    for command, folder, expected in cases:
        with pytest.raises(SystemExit) as exit_:
            main([command, str(folder), "--input", str(Path(__file__))])
        assert str(exit_.value.code) == f"hf-vanilla: {folder} {expected}"


def test_a_models_task_is_its_config_task_whatever_row_it_decodes_with():
    """`check_task` goes by `config.task` (`batch_decoding.model_task`), not by the decoding row; a MarianMTModel,
    whose config has no task, translates."""
    from transformers import MarianConfig

    from hf_vanilla.batch_decoding import ModelLoadError, check_task, model_task

    summarizer = tiny_model(task="summarization", decoding="translation")
    assert model_task(summarizer.config) == "summarization" and model_task(MarianConfig()) == "translation"
    check_task(summarizer, "M", "summarization")
    with pytest.raises(ModelLoadError, match="^M is a summarization model, not a translation; use `hf-vanilla summa"):
        check_task(summarizer, "M", "translation")


def test_numeric_flags_of_every_subcommand_are_checked_by_one_rule_before_anything_is_read(tmp_path):
    """The CLI's one table of smallest values (hf_vanilla_cli.AT_LEAST), worded as the recipes' (flag_bounds): a
    ZeroDivision or a negative tensor size was what --num-beams 0 / -3 gave translate before."""
    missing = str(tmp_path / "missing")
    for argv, expected in (
        (["translate", missing, "--num-beams", "0"], "--num-beams must be at least 1, got 0"),
        (["translate", missing, "--num-beams", "-3"], "--num-beams must be at least 1, got -3"),
        (["translate", missing, "--max-input-tokens", "0"], "--max-input-tokens must be at least 2, got 0"),
        (["parse", missing, "--batch-tokens", "0"], "--batch-tokens must be at least 1, got 0"),
        (["average-checkpoints", missing, "--last", "0", "--output", missing], "--last must be at least 1, got 0"),
        (["app", missing, "--port", "0"], "--port must be at least 1, got 0"),
    ):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert str(exit_.value.code) == f"hf-vanilla: {expected}", argv


def test_a_model_path_that_is_not_there_is_refused_at_once_in_one_line(tmp_path):
    """Every subcommand that takes a model (or push's folder) refuses a local path that does not exist before the
    package is imported and without asking the Hub: `runs/does_not_exist` beside a `runs/` folder, `./x`, `/x`, `~/x`
    (it was taken for the Hub id "runs/does_not_exist": 28 s and 11 lines of retries offline)."""
    (tmp_path / "runs").mkdir()
    out = str(tmp_path / "out")
    cases = [
        (["translate", "runs/does_not_exist"], "runs/does_not_exist"),
        (["parse", "./nope"], "./nope"),
        (["summarize", str(tmp_path / "nope")], str(tmp_path / "nope")),
        (["attention", "runs/a", "--source", "a b", "--output", out], "runs/a"),
        (["app", str(tmp_path), "runs/a"], str(tmp_path)),  # the first model that is not one: a folder, no config
        (["import-marian", "runs/opus", out], "runs/opus"),
        (["export-marian", "~/hf-vanilla-no-such-model", out], "~/hf-vanilla-no-such-model"),
        (["export-ct2", "runs/a", out], "runs/a"),
        (["push", "runs/a", "user/model", "--dry-run"], "runs/a"),
    ]
    for argv, named in cases:
        started = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-m", "hf_vanilla_cli", *argv], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        elapsed = time.monotonic() - started
        assert result.returncode == 1 and result.stdout == "", argv
        assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("hf-vanilla: no "), result.stderr
        assert named in result.stderr and elapsed < 3, (argv, elapsed, result.stderr)
    # A name that may be a Hub id (no folder "owner" here) is still left to the Hub.
    from hf_vanilla.model_paths import is_local_path, model_path_problem

    assert not is_local_path("owner/name") and model_path_problem("Helsinki-NLP/opus-mt-en-de") is None


# --- --input FILE.jsonl / FILE.csv --text-column NAME ----------------------------------------------------------------


def test_a_jsonl_or_csv_input_is_read_by_its_text_column_one_output_a_row(reversal_model, reversal_folder, tmp_path):
    """The column's texts are decoded as the same texts a line each (the reversal model: "a b c" -> "c b a"); a JSON
    null or an empty CSV cell is an empty output line, as an empty line is; a quoted CSV cell may hold commas and a
    newline; over-long texts are warned about by row. The texts of 3, 4 and 2 words are ones the model is checked to
    reverse under its saved decoding (`reversed_text`): which of its 5% it gets wrong depends on the machine."""
    from reversal import SHORT, reversed_text

    four = ["q r s t", "e f g h", "i j k l", "m n o p", "u v w x", "a c e g"]
    two = ["d e", "f g", "h i", "j k", "l m", "n o"]
    texts = [reversed_text(reversal_model, SHORT, {}), reversed_text(reversal_model, four, {}), ""]
    texts.append(reversed_text(reversal_model, two, {}))
    (tmp_path / "plain.txt").write_text("\n".join(texts) + "\n")
    rows = [{"id": n, "text": text or None, "summary": "x"} for n, text in enumerate(texts)]
    (tmp_path / "news.jsonl").write_text(
        "\n".join(json.dumps(row) for row in rows[:2]) + "\n\n" + "\n".join(json.dumps(row) for row in rows[2:]) + "\n"
    )  # a blank line between rows is no row
    (tmp_path / "news.csv").write_text(f'id,text\n0,{texts[0]}\n1,"{texts[1]}"\n2,\n3,{texts[3]}\n')
    reversals = [" ".join(text.split()[::-1]) for text in texts]
    plain = hf_vanilla("translate", str(reversal_folder), "--input", str(tmp_path / "plain.txt"))
    assert plain.returncode == 0 and plain.stdout == "\n".join(reversals) + "\n", plain.stderr
    for name in ("news.jsonl", "news.csv"):
        result = hf_vanilla(
            "translate", str(reversal_folder), "--input", str(tmp_path / name), "--text-column", "text"
        )
        assert result.returncode == 0 and result.stdout == plain.stdout, (name, result.stderr)
    long = hf_vanilla(
        "translate",
        str(reversal_folder),
        "--input",
        str(tmp_path / "news.jsonl"),
        "--text-column",
        "text",
        "--max-input-tokens",
        "4",
    )
    assert long.stdout == f"{reversals[0]}\n\n\n{reversals[3]}\n"
    assert f"hf-vanilla: warning: {tmp_path / 'news.jsonl'} row 2: over --max-input-tokens 4" in long.stderr


def test_a_table_input_without_its_column_or_with_a_bad_row_is_refused_in_one_line(tmp_path, monkeypatch):
    """Refused before any model is loaded, for translate, parse and summarize alike: a JSONL or CSV file without
    --text-column (naming the columns), a column that a row lacks (naming that row's columns), a line that is not
    JSON (naming it), a number where text should be, --text-column on a file read a line at a time."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")  # passes the path check; never loaded
    monkeypatch.setattr("hf_vanilla.cli._load", lambda *a: pytest.fail("loaded a model for a bad input"))
    (tmp_path / "news.jsonl").write_text('{"id": 1, "article": "a b"}\n{"id": 2, "article": "c d", "text": "e"}\n')
    (tmp_path / "broken.jsonl").write_text('{"text": "a b"}\n\n{"text": "c d"\n')
    (tmp_path / "numbers.jsonl").write_text('{"text": "a b"}\n{"text": 7}\n')
    (tmp_path / "list.jsonl").write_text('["a b"]\n')
    (tmp_path / "news.csv").write_text("id,article\n1,a b\n")
    (tmp_path / "plain.txt").write_text("a b\n")
    path = str(tmp_path)
    for input_, column, expected in (
        (
            "news.jsonl",
            None,
            f"{path}/news.jsonl is a table: choose the column to read with --text-column (its "
            "columns: 'id', 'article')",
        ),
        (
            "news.csv",
            None,
            f"{path}/news.csv is a table: choose the column to read with --text-column (its columns: 'id', 'article')",
        ),
        ("news.jsonl", "text", f"{path}/news.jsonl line 1 has no column 'text' (its columns: 'id', 'article')"),
        ("news.csv", "text", f"{path}/news.csv line 2 has no column 'text' (its columns: 'id', 'article')"),
        ("broken.jsonl", "text", f"{path}/broken.jsonl line 3: not JSON (Expecting ',' delimiter, column 15)"),
        ("numbers.jsonl", "text", f"{path}/numbers.jsonl line 2: column 'text' holds a number, not text"),
        ("list.jsonl", "text", f"{path}/list.jsonl line 1: a JSON list, not an object of columns"),
        ("plain.txt", "text", f"--text-column reads a .jsonl or .csv --input; {path}/plain.txt is read a text a line"),
    ):
        for command in ("translate", "parse", "summarize"):
            flags = ["--input", f"{path}/{input_}"] + (["--text-column", column] if column else [])
            with pytest.raises(SystemExit) as exit_:
                main([command, str(model), *flags])
            assert str(exit_.value.code) == f"hf-vanilla: {expected}", (command, input_)
