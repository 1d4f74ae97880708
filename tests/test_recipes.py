"""Both recipes end to end on real data, a few steps each; the 2-process launch behind the slow marker."""

import json
from pathlib import Path

import pytest

from hf_vanilla import VanillaTransformerForConditionalGeneration
from hf_vanilla.parsing import parse_tree

from helpers import RECIPES

RESULT_KEYS = {"sacrebleu", "sacrebleu_signature", "tokenized_bleu", "steps", "train_tokens_per_second"}


def test_wmt_recipe_runs_on_the_shared_sample_and_writes_results(wmt_run):
    output_dir, results = wmt_run
    assert RESULT_KEYS <= set(results) and results["steps"] == 4
    stored = json.loads((output_dir / "results.json").read_text())
    assert stored["sacrebleu"] == results["sacrebleu"] and stored["averaged_checkpoints"] == ["checkpoint-00000002", "checkpoint-00000004"]
    samples = [json.loads(line) for line in (output_dir / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 4 and set(samples[0]) == {"source", "reference", "hypothesis"}
    model = VanillaTransformerForConditionalGeneration.from_pretrained(output_dir / "final")
    assert model.generation_config.num_beams == 4 and (output_dir / "final" / "tokenizer.json").exists()


def test_parsing_recipe_runs_on_the_nltk_sample_and_writes_valid_trees(parse_run):
    output_dir, results = parse_run
    assert {"evalb_f1", "evalb_precision", "evalb_recall", "evalb_exact_match", "repaired_share"} <= set(results)
    predictions = (output_dir / "predictions.mrg").read_text().splitlines()
    assert len(predictions) == 3
    for line in predictions:
        assert set(parse_tree(line).tags()) == {"XX"}  # the demo copies words; copies are never taken for tags
    model = VanillaTransformerForConditionalGeneration.from_pretrained(output_dir / "final")
    assert (model.generation_config.num_beams, model.generation_config.max_length_offset) == (21, 300)
    assert model.config.tree_leaves == results["tree_leaves"] == "words"
    assert results["tree_grammar"] is True

def _launch(tmp_path: Path, name: str, launcher: list[str], wmt_sample: Path) -> tuple[dict, str]:
    import os
    import subprocess

    output_dir = tmp_path / name
    command = ["accelerate", "launch", *launcher, str(RECIPES / "wmt_ende.py"), "--preset", "demo",
               "--dataset", str(wmt_sample), "--moses-detokenize", "--max-steps", "20", "--max-tokens", "1000",
               "--eval-split", "validation", "--eval-sentences", "4", "--save-every", "10", "--log-every", "5",
               "--output-dir", str(output_dir)]
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "ACCELERATE_LOG_LEVEL": "info"}
    done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((output_dir / "results.json").read_text()), done.stdout + done.stderr


@pytest.mark.slow
def test_two_gloo_processes_train_like_one(wmt_sample, tmp_path):
    """`accelerate launch --multi_gpu --num_processes 2` on a CPU-only machine: two gloo processes, each its own
    shard of batches, results of the same shape as a 1-process run."""
    two, _ = _launch(tmp_path, "two", ["--multi_gpu", "--num_processes", "2"], wmt_sample)
    one, _ = _launch(tmp_path, "one", ["--cpu", "--num_processes", "1"], wmt_sample)
    assert two["num_processes"] == 2 and one["num_processes"] == 1
    assert set(two) == set(one) and two["steps"] == one["steps"] == 20
    # Each update of the 2-process run consumed batches on both processes: about twice the tokens of one process.
    assert 1.5 * one["train_tokens"] < two["train_tokens"] < 2.5 * one["train_tokens"]


@pytest.mark.slow
def test_cpu_launcher_that_starts_one_process_says_so(wmt_sample, tmp_path):
    results, output = _launch(tmp_path, "cpu", ["--cpu", "--num_processes", "2"], wmt_sample)
    assert results["num_processes"] == 1
    assert "Running ONE process" in output and "--multi_gpu --num_processes N" in output
