"""Model cards rendered from real runs' results, the exact Hub folder checked offline, and clear publishing errors."""

import json
import re
import subprocess
import sys

import pytest
from huggingface_hub import ModelCard
from transformers import AutoTokenizer

from hf_vanilla import VanillaTransformerForConditionalGeneration, cards
from hf_vanilla.cards import CardError, check_card, render_model_card
from hf_vanilla.hub import REMOTE_CODE_FILES, PublishError, build_hub_folder, push_model_folder
from hf_vanilla.parsing import parse_tree

from remote_loader import run_loader


def test_translation_folder_loads_without_the_package_and_translates_identically(wmt_run, tmp_path):
    run_dir, results = wmt_run
    folder = build_hub_folder(run_dir, tmp_path / "hub", "someone/vanilla-demo")
    names = {p.name for p in folder.iterdir()}
    assert {
        "model.safetensors",
        "config.json",
        *REMOTE_CODE_FILES,
        "tokenizer.json",
        "generation_config.json",
        "README.md",
        "results.json",
    } <= names
    assert json.loads((folder / "config.json").read_text())["auto_map"]["AutoModelForSeq2SeqLM"].startswith(
        "modeling_vanilla."
    )
    generation = json.loads((folder / "generation_config.json").read_text())
    assert (generation["num_beams"], generation["length_penalty"], generation["max_length_offset"]) == (4, 0.6, 50)

    card = ModelCard.load(folder / "README.md")
    assert card.data.model_name == "vanilla-demo" and card.data.license == "apache-2.0"
    by_metric = {r.metric_type: r.metric_value for r in card.data.eval_results}
    assert by_metric == {"sacrebleu": results["sacrebleu"], "bleu": results["tokenized_bleu"]}
    assert results["sacrebleu_signature"] in card.text and "27.3" in card.text  # the paper's base figure beside ours
    assert f"{results['steps']} updates" in card.text and "not comparable" in card.text  # not trained on WMT14
    assert cards.REPRODUCIBILITY in card.text  # how far the figures hold: same machine, not across machines
    assert "- Initialisation: as fairseq's `transformer`" in card.text  # the translation presets' start
    assert "the decoder starts from `</s>`." in card.text

    tokenizer = AutoTokenizer.from_pretrained(folder)
    ids = tokenizer(["The house is small.", "Resumption of the session"], return_tensors="pt", padding=True)[
        "input_ids"
    ]
    model = VanillaTransformerForConditionalGeneration.from_pretrained(run_dir / "final").eval()
    expected = model.generate(ids, attention_mask=(ids != tokenizer.pad_token_id).long()).tolist()
    assert run_loader(folder, True, ids)["beam"] == expected


def test_an_english_french_card_shows_the_papers_english_french_figure(wmt_run):
    run_dir, results = wmt_run
    model = VanillaTransformerForConditionalGeneration.from_pretrained(run_dir / "final")
    english_german = render_model_card(results, model.config, model.generation_config, "someone/ende").text
    english_french = render_model_card(
        {**results, "target_lang": "fr"}, model.config, model.generation_config, "someone/enfr"
    ).text
    assert "| 27.3 |" in english_german and "41.8" not in english_german
    assert "| 41.8 |" in english_french and "Transformer big, English-French" in english_french


def test_parser_card_reports_evalb_from_results_and_its_snippet_parses(parse_run, tmp_path, capsys):
    run_dir, results = parse_run
    folder = build_hub_folder(run_dir, tmp_path / "hub", "someone/parser")
    card = ModelCard.load(folder / "README.md")
    by_metric = {r.metric_type: r.metric_value for r in card.data.eval_results}
    assert by_metric["f1"] == results["evalb_f1"] and by_metric["exact_match"] == results["evalb_exact_match"]
    assert "91.3" in card.text and "beam 21" in card.text.lower().replace("beam search with beam", "beam")
    assert results["tree_grammar"] and "Decoded under the tree" in card.text
    assert cards.REPRODUCIBILITY in card.text
    free = render_model_card({**results, "tree_grammar": False}, *_model_parts(run_dir), "someone/parser")
    assert "Decoded freely, as in the paper" in free.text and "Decoded under" not in free.text
    differs = card.text.split("## What differs from the paper")[1].split("## Training")[0]
    changes = ("3 + 3 layers of width 128", "each word copied", "0.25 times", "beam 1 instead of 21", "grammar")
    for change in (*changes, "- trees written in-order (Liu & Zhang, 2017) instead of top-down (`--linearization`)"):
        assert change in differs
    config, generation = _model_parts(run_dir)  # the paper's parser, decoded as the paper did
    config.encoder_layers = config.decoder_layers = 4
    config.d_model, config.tree_leaves, generation.num_beams, generation.length_penalty = 1024, "placeholder", 21, 0.3
    config.linearization = "top-down"
    paper_training = {**results["training_preset"], "lr_scale": 1.0, "cooldown_steps": 0}
    as_paper = {**results, "tree_grammar": False, "training_preset": paper_training}
    paper = render_model_card(as_paper, config, generation, "someone/parser").text
    assert "Nothing: the paper's WSJ-only parser and its decoding." in paper
    # Each card writes its example tree as its model writes trees: the demo in order with copied words, the paper's XX.
    assert "each word copied in place, e.g. `John (NP )NP (S runs (VP )VP )S`" in card.text
    assert "each word replaced by a placeholder, e.g. `(S (NP XX )NP (VP XX )VP )S`" in paper

    (snippet,) = re.findall(r"```python\n(.*?)```", card.text, flags=re.DOTALL)
    exec(compile(snippet.replace("someone/parser", str(folder)), "card", "exec"), {"__name__": "card"})
    tree = parse_tree(capsys.readouterr().out.strip())
    assert tree.words() == "The cat sat on the mat .".split() and set(tree.tags()) == {"XX"}


def test_a_card_says_how_a_new_model_was_drawn_and_where_its_decoder_starts(wmt_run):
    run_dir, results = wmt_run
    config, generation = _model_parts(run_dir)
    config.init_scheme, config.decoder_start_token_id, config.init_std = "normal", config.bos_token_id, 0.03
    card = render_model_card(results, config, generation, "a/b").text
    assert '- Initialisation: projections N(0, 0.03), biases zero (`init_scheme="normal"`); embeddings N(0, ' in card
    assert "the decoder starts from `<s>`." in card
    config.decoder_start_token_id = config.pad_token_id  # Marian's start
    assert "the decoder starts from `<pad>`." in render_model_card(results, config, generation, "a/b").text
    fine_tuned = render_model_card({**results, "init_from": "someone/base"}, config, generation, "a/b").text
    assert "- Fine-tuned from `someone/base`." in fine_tuned and "- Initialisation:" not in fine_tuned


def _model_parts(run_dir):
    model = VanillaTransformerForConditionalGeneration.from_pretrained(run_dir / "final")
    return model.config, model.generation_config


def test_missing_or_mismatched_results_and_unfilled_fields_are_errors(wmt_run, tmp_path, monkeypatch):
    run_dir, results = wmt_run
    config, generation = _model_parts(run_dir)
    incomplete = {k: v for k, v in results.items() if k != "tokenized_bleu"}
    with pytest.raises(CardError, match="lacks tokenized_bleu"):
        render_model_card(incomplete, config, generation, "a/b")
    card = render_model_card(results, config, generation, "a/b")
    with pytest.raises(CardError, match="do not match"):
        check_card(card, {**results, "sacrebleu": results["sacrebleu"] + 1.0})

    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "translation.md.j2").write_text("---\n{{ card_data }}\n---\n{{ training_data_hours }}\n")
    monkeypatch.setattr(cards, "TEMPLATES", templates)
    with pytest.raises(CardError, match="unfilled field.*training_data_hours"):
        render_model_card(results, config, generation, "a/b")


def test_a_folder_whose_card_was_edited_by_hand_is_not_pushed(wmt_run, tmp_path):
    folder = build_hub_folder(wmt_run[0], tmp_path / "hub", "a/b")
    stored = json.loads((folder / "results.json").read_text())
    (folder / "results.json").write_text(json.dumps({**stored, "tokenized_bleu": 99.9}))
    with pytest.raises(CardError, match="do not match"):
        push_model_folder(folder, "a/b")


def test_push_without_token_or_network_is_one_clear_line(wmt_run, tmp_path):
    env = {"HF_HOME": str(tmp_path / "hf_home"), "HF_TOKEN": "", "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "hf_vanilla_cli",
            "push",
            str(wmt_run[0]),
            "someone/model",
            "--build-dir",
            str(tmp_path / "hub"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode != 0 and "Traceback" not in result.stderr
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("hf-vanilla: ") and ("token" in message or "Hub" in message)
    assert (tmp_path / "hub" / "README.md").exists()  # the folder was built before the upload was refused

    with pytest.raises(PublishError, match="not a complete Hub folder"):
        push_model_folder(tmp_path, "someone/model")
