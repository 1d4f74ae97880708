"""The checks a user runs first answer in about a second, before torch, transformers and datasets load (issue 67): a
recipe's --help and its flag mistakes, a Hub corpus or model while the Hub is out of reach (one line, no retries:
a real connection refused, as on a machine without network), and `average-checkpoints` on a folder without
checkpoints. Each is a real process, whose imports Python itself reports (`-X importtime`)."""

import os
import socket
import subprocess
import sys
import time

import pytest

from runs import RECIPES, recipe

# The libraries that take seconds to import (tens of seconds on a busy machine).
HEAVY = {"torch", "transformers", "datasets", "accelerate", "huggingface_hub"}
# A generous bound for a busy test machine: the same answers take about 0.3 s on an idle one.
SECONDS = 10


def answered(command: list[str], environment: dict | None = None, stdin: str = "") -> tuple[int, list[str], set]:
    """Runs `command` (a Python program's arguments) under `-X importtime`: its exit status, its stderr lines other
    than the import report, and the heavy libraries it imported; fails if it took more than SECONDS."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *command],
        input=stdin,
        capture_output=True,
        text=True,
        env=environment or os.environ,
        timeout=120,
    )
    elapsed = time.monotonic() - started
    report = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in report}
    assert elapsed < SECONDS, f"{command} took {elapsed:.1f} s"
    return done.returncode, [line for line in done.stderr.splitlines() if line not in report], imported & HEAVY


@pytest.mark.parametrize("name", ["wmt_ende", "ptb_parse", "summarize"])
@pytest.mark.parametrize(
    "flags, status, answer",
    [
        (["--help"], 0, None),
        (["--max-stesp", "3"], 2, "error: unrecognized arguments: --max-stesp 3 (did you mean --max-steps?)"),
        (["--preset", "smok"], 1, ": --preset must be one of "),
        (["--num-beams", "0", "--max-source-words", "-1"], 1, ": --num-beams must be at least 1, got 0; "),
    ],
    ids=["help", "misspelt flag", "unknown preset", "out of bounds"],
)
def test_a_recipes_help_and_flag_mistakes_answer_before_torch_loads(name, flags, status, answer):
    code, lines, heavy = answered([str(RECIPES / f"{name}.py"), *flags])
    assert code == status and not heavy, (code, heavy, lines[-3:])
    if answer is not None:
        assert answer in lines[-1] and len([line for line in lines if name in line]) <= 2, lines


@pytest.fixture
def offline(tmp_path) -> dict:
    """An environment whose Hub refuses every connection (HF_ENDPOINT at a closed local port, as a machine without
    network), with empty caches, and no offline setting of the user's."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    unset = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_CACHE", "HF_DATASETS_CACHE", "HUGGINGFACE_HUB_CACHE")
    environment = {k: v for k, v in os.environ.items() if k not in unset and not k.lower().endswith("_proxy")}
    return {**environment, "HF_ENDPOINT": f"http://127.0.0.1:{port}", "HF_HOME": str(tmp_path / "hf")}


def test_a_hub_corpus_out_of_reach_is_one_line_at_once(offline, tmp_path):
    """`--preset base` reads the Hub's wmt14: offline, one line naming the offline corpora, no retries."""
    code, lines, heavy = answered(
        [str(RECIPES / "wmt_ende.py"), "--preset", "base", "--output-dir", str(tmp_path / "run")], offline
    )
    assert (code, heavy) == (1, set())
    assert lines == [
        "wmt_ende: --dataset wmt14: the Hugging Face Hub could not be reached and no copy of it is cached; offline, "
        "give --dataset bible (the offline demo corpus), a folder of train/valid/test.{en,de} files or a JSONL file"
    ]
    code, lines, heavy = answered([str(RECIPES / "summarize.py"), "--dataset", "xsum"], offline)
    assert code == 1 and not heavy and len(lines) == 1 and lines[0].startswith("summarize: --dataset xsum: the Hug")


def test_a_hub_model_out_of_reach_is_one_line_at_once(offline):
    command = ["-c", "import hf_vanilla_cli; hf_vanilla_cli.main()", "translate", "Helsinki-NLP/opus-mt-en-de"]
    code, lines, heavy = answered(command, offline, stdin="Hello.\n")
    assert (code, heavy) == (1, set())
    assert lines == [
        "hf-vanilla: no model at Helsinki-NLP/opus-mt-en-de: the Hugging Face Hub is out of reach (offline) and no "
        "copy of it is cached"
    ]
    code, lines, heavy = answered([str(RECIPES / "ptb_parse.py"), "--init-from", "someone/parser"], offline)
    assert (code, heavy) == (1, set())
    assert lines == [
        "ptb_parse: --init-from someone/parser: the Hugging Face Hub is out of reach (offline) and no copy of it is "
        "cached"
    ]


def test_averaging_a_folder_without_checkpoints_is_one_line_at_once(tmp_path):
    (tmp_path / "empty").mkdir()
    command = ["-c", "import hf_vanilla_cli; hf_vanilla_cli.main()", "average-checkpoints"]
    for folder, line in ((tmp_path / "nothing", "no folder {}"), (tmp_path / "empty", "no checkpoint in {} (no ")):
        code, lines, heavy = answered([*command, str(folder), "--output", str(tmp_path / "out")])
        assert code == 1 and not heavy and len(lines) == 1, lines
        assert lines[0].startswith("hf-vanilla: " + line.format(folder))
    assert not (tmp_path / "out").exists()


def test_the_rouge_figures_a_summarizer_reads_its_flags_with_are_the_librarys():
    """recipes/summarize.py names its validation figures itself, to read its flags before nltk loads: the same."""
    from hf_vanilla.evaluation.rouge import ROUGE_TYPES

    assert recipe("summarize").ROUGE_FIGURES == ROUGE_TYPES
