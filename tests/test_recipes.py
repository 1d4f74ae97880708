"""Both recipes end to end on real data, a few steps each; the 2-process launch behind the slow marker."""

import json
import sys
from pathlib import Path

from hf_vanilla import VanillaTransformerForConditionalGeneration

from conftest import NLTK_DATA, require

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "recipes"))

import ptb_parse  # noqa: E402
import wmt_ende  # noqa: E402

RESULT_KEYS = {"sacrebleu", "sacrebleu_signature", "tokenized_bleu", "steps", "train_tokens_per_second"}


def test_wmt_recipe_runs_on_the_shared_sample_and_writes_results(wmt_sample, tmp_path):
    args = wmt_ende.Arguments(
        preset="demo", dataset=str(wmt_sample), moses_detokenize=True, output_dir=str(tmp_path), max_steps=4,
        max_tokens=1500, eval_split="validation", eval_sentences=4, save_every=2, log_every=1,
    )
    results = wmt_ende.main(args)
    assert RESULT_KEYS <= set(results) and results["steps"] == 4
    stored = json.loads((tmp_path / "results.json").read_text())
    assert stored["sacrebleu"] == results["sacrebleu"] and stored["averaged_checkpoints"] == ["checkpoint-00000002", "checkpoint-00000004"]
    samples = [json.loads(line) for line in (tmp_path / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 4 and set(samples[0]) == {"source", "reference", "hypothesis"}
    model = VanillaTransformerForConditionalGeneration.from_pretrained(tmp_path / "final")
    assert model.generation_config.num_beams == 4 and (tmp_path / "final" / "tokenizer.json").exists()


def test_parsing_recipe_runs_on_the_nltk_sample_and_writes_valid_trees(tmp_path, monkeypatch):
    require(NLTK_DATA)
    monkeypatch.setenv("NLTK_DATA", str(NLTK_DATA))
    import nltk

    monkeypatch.setattr(nltk.data, "path", [str(NLTK_DATA)] + nltk.data.path)
    args = ptb_parse.Arguments(
        preset="demo", treebank="nltk", output_dir=str(tmp_path), max_steps=3, max_tokens=3000, num_beams=1,
        eval_sentences=3, save_every=3, log_every=1,
    )
    results = ptb_parse.main(args)
    assert {"evalb_f1", "evalb_precision", "evalb_recall", "evalb_exact_match", "repaired_share"} <= set(results)
    predictions = (tmp_path / "predictions.mrg").read_text().splitlines()
    assert len(predictions) == 3
    from hf_vanilla.parsing import parse_tree

    for line in predictions:
        parse_tree(line)
    model = VanillaTransformerForConditionalGeneration.from_pretrained(tmp_path / "final")
    assert (model.generation_config.num_beams, model.generation_config.max_length_offset) == (21, 300)
