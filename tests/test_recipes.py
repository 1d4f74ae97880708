"""Both recipes end to end on real data, a few updates each, and what a run at real scale needs: the launcher's
precision, checks before the first update, the tokenizer's provenance, length filtering, validation, warm start and
evaluation only, checkpoints holding the weights once. The 2-process launches are behind the slow marker."""

import json
import math
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoTokenizer

from hf_vanilla import VanillaTransformerForConditionalGeneration
from hf_vanilla.data.corpora import load_translation_corpus
from hf_vanilla.parsing import parse_tree
from hf_vanilla.tokenization import TokenizerMismatch
from hf_vanilla.training.arguments import RunSettings, resolve
from hf_vanilla.training.flags import parse_settings
from hf_vanilla.training.model_building import run_config
from hf_vanilla.training.preflight import PreflightError
from hf_vanilla.training.presets import PARSING_PRESETS

from runs import RECIPES, WMT_SAMPLE, recipe, require, wmt_args
from tolerances import rounding_tolerance, transformer_sums

RESULT_KEYS = {
    "sacrebleu",
    "sacrebleu_signature",
    "tokenized_bleu",
    "steps",
    "train_tokens_per_second",
    "mixed_precision",
    "best_step",
    "best_valid_loss",
}


def test_wmt_recipe_runs_on_the_shared_sample_and_writes_results(wmt_run):
    output_dir, results = wmt_run
    assert RESULT_KEYS <= set(results) and results["steps"] == 4
    assert results["mixed_precision"] == "no" and results["num_processes"] == 1
    stored = json.loads((output_dir / "results.json").read_text())
    assert stored["sacrebleu"] == results["sacrebleu"]
    assert stored["averaged_checkpoints"] == ["checkpoint-00000002", "checkpoint-00000004"]
    samples = [json.loads(line) for line in (output_dir / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 4 and set(samples[0]) == {"source", "reference", "hypothesis"}
    model = VanillaTransformerForConditionalGeneration.from_pretrained(output_dir / "final")
    assert model.generation_config.num_beams == 4 and (output_dir / "final" / "tokenizer.json").exists()
    assert f"sacreBLEU signature: `{results['sacrebleu_signature']}`" in (output_dir / "README.md").read_text()


def test_validation_every_n_updates_is_logged_and_the_best_model_kept(wmt_run):
    output_dir, results = wmt_run
    log = [json.loads(line) for line in (output_dir / "train_log.jsonl").read_text().splitlines()]
    validations = [entry for entry in log if "valid_loss" in entry]
    assert [entry["step"] for entry in validations] == [2, 4]
    for entry in validations:
        # Logged rounded: the loss to 4 decimals (5e-5, relative in the perplexity), the perplexity to 2 (0.005).
        assert entry["valid_ppl"] == pytest.approx(math.exp(entry["valid_nll_loss"]), rel=1e-4, abs=0.01)
        assert 0 <= entry["valid_sacrebleu"] <= 100
    # Recomputed independently: the update-4 weights on every validation pair (the shared sample is a corpus of one's
    # own: its held-out splits are used whole), one sentence at a time.
    model = VanillaTransformerForConditionalGeneration.from_pretrained(output_dir / "checkpoint-00000004" / "model")
    tokenizer = AutoTokenizer.from_pretrained(output_dir / "tokenizer")
    corpus = load_translation_corpus(str(require(WMT_SAMPLE)), moses_detokenize=True)
    smoothed = nll = tokens = scale = 0.0
    for pair in corpus["validation"]["translation"]:
        source = torch.tensor([tokenizer(pair["en"])["input_ids"]])
        labels = torch.tensor([tokenizer(pair["de"])["input_ids"]])
        with torch.no_grad():
            logits = model(input_ids=source, labels=labels).logits[0].double()
        scale = max(scale, float(logits.log_softmax(-1).abs().max()))
        smoothed += float(torch.nn.functional.cross_entropy(logits, labels[0], label_smoothing=0.1, reduction="sum"))
        nll += float(torch.nn.functional.cross_entropy(logits, labels[0], reduction="sum"))
        tokens += labels.shape[1]
    # Batched there, one sentence at a time here: rounding of the model's sums, plus the log's rounding to 4 decimals.
    tolerance = rounding_tolerance(scale, **transformer_sums(model.config)) + 5e-5
    assert validations[-1]["valid_loss"] == pytest.approx(smoothed / tokens, abs=tolerance)
    assert validations[-1]["valid_nll_loss"] == pytest.approx(nll / tokens, abs=tolerance)
    best = min(validations, key=lambda entry: entry["valid_loss"])
    assert (results["best_step"], results["best_valid_loss"]) == (best["step"], best["valid_loss"])
    assert (output_dir / "best" / "model.safetensors").is_file()


def test_a_checkpoint_holds_the_weights_once(wmt_run):
    checkpoint = wmt_run[0] / "checkpoint-00000004"
    weights = (checkpoint / "model" / "model.safetensors").stat().st_size
    total = sum(path.stat().st_size for path in checkpoint.rglob("*") if path.is_file())
    # The weights, then Adam's two moments of the same size; the rest is configuration, tokenizer and state.
    assert 3 * weights < total < 3 * weights + 2_000_000, (weights, total)
    assert sorted(path.name for path in checkpoint.glob("*.safetensors")) == [
        "optimizer.safetensors",
        "rng-0.safetensors",
    ]


def test_a_parser_warm_start_writes_trees_with_its_models_own_leaves(parse_run):
    ptb_parse, final = recipe("ptb_parse"), str(parse_run[0] / "final")  # a model with "words" leaves

    def leaves(**flags) -> str:
        return run_config(resolve(ptb_parse.Arguments(**flags), PARSING_PRESETS), "parsing").tree_leaves

    assert leaves(preset="parsing") == "placeholder" and leaves(preset="parsing", tree_leaves="pos") == "pos"
    assert leaves(preset="parsing", init_from=final) == "words"
    refused = ptb_parse.Arguments(
        preset="smoke", init_from=final, tree_leaves="placeholder", output_dir=str(parse_run[0].parent / "refused")
    )
    with pytest.raises(PreflightError, match="^--tree-leaves placeholder: --init-from's model has tree_leaves="):
        ptb_parse.main(refused)


def test_the_parsers_copy_and_substitution_flags_reach_its_model_and_its_training_pairs():
    from hf_vanilla.parsing import linearize_leaves, tree_words

    ptb_parse = recipe("ptb_parse")

    def config(**flags):
        return run_config(resolve(ptb_parse.Arguments(preset="demo", **flags), PARSING_PRESETS), "parsing")

    assert not config().pointer_generator
    # Under the grammar the demo's beam keeps brackets with alpha 3.0; decoding freely is the paper's decoding whole.
    assert resolve(ptb_parse.Arguments(preset="demo"), PARSING_PRESETS).decoding == {"length_penalty": 3.0}
    assert resolve(ptb_parse.Arguments(preset="demo", tree_grammar=False), PARSING_PRESETS).decoding == {}
    free = resolve(ptb_parse.Arguments(preset="demo", tree_grammar=False, length_penalty=1.0), PARSING_PRESETS)
    assert free.decoding == {"length_penalty": 1.0}
    copying = config(pointer_generator=True, force_copy=True)
    assert copying.pointer_generator and copying.force_copy and copying.tree_leaves == "words"
    with pytest.raises(PreflightError, match="--subtree-substitution must not be negative, got -0.5"):
        resolve(ptb_parse.Arguments(preset="demo", subtree_substitution=-0.5), PARSING_PRESETS)
    trees = [
        "(S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .))",
        "(S (NP (PRP She)) (VP (VBD saw) (NP (DT a) (NN dog))) (. .))",
        "(S (NP (NNS Prices)) (VP (VBD fell)) (. .))",
    ]
    train = ptb_parse.as_pairs(trees, "words")
    more = ptb_parse.with_substituted_trees(train, 1.0, seed=1, leaves="words")
    assert len(more) == 6 and more[:3] == train[:]
    for pair, gold in zip(more["translation"][3:], more["gold"][3:]):
        assert gold not in trees
        assert pair == {"words": " ".join(tree_words(gold)), "tree": linearize_leaves(gold, "words")}
    # The trees' order: the demo's in-order, the paper's top-down a flag away, in the model and in the training pairs.
    assert config().linearization == "in-order" and config(linearization="top-down").linearization == "top-down"
    with pytest.raises(PreflightError, match="linearization must be one of"):
        config(linearization="bottom-up")
    pairs = ptb_parse.as_pairs(trees, "words", "in-order")
    in_order = ptb_parse.with_substituted_trees(pairs, 1.0, 1, "words", "in-order")
    assert in_order["translation"][0]["tree"] == "The (NP cat )NP (S sat (VP )VP . )S"
    for pair, gold in zip(in_order["translation"], in_order["gold"]):
        assert pair["tree"] == linearize_leaves(gold, "words", "in-order")


def test_parsing_recipe_runs_on_the_nltk_sample_and_writes_valid_trees(parse_run):
    output_dir, results = parse_run
    assert {"evalb_f1", "evalb_precision", "evalb_recall", "evalb_exact_match", "repaired_share"} <= set(results)
    predictions = (output_dir / "predictions.mrg").read_text().splitlines()
    assert len(predictions) == 3
    for line in predictions:
        assert set(parse_tree(line).tags()) == {"XX"}  # the demo copies words; copies are never taken for tags
    model = VanillaTransformerForConditionalGeneration.from_pretrained(output_dir / "final")
    # --num-beams 1 was given: the model's decoding is the run's, the rest the paper's.
    assert (model.generation_config.num_beams, model.generation_config.max_length_offset) == (1, 300)
    assert model.config.tree_leaves == results["tree_leaves"] == "words"
    assert results["tree_grammar"] is True
    assert "Greedy decoding" in (output_dir / "README.md").read_text()


def test_every_hyper_parameter_of_the_paper_is_a_flag_resolved_against_the_preset():
    from hf_vanilla.training.arguments import resolve
    from hf_vanilla.training.presets import WMT_PRESETS

    for name in ("wmt_ende", "ptb_parse"):
        args = parse_settings(
            recipe(name).Arguments,
            [
                "--preset",
                "demo",
                "--vocab-size",
                "500",
                "--lr-scale",
                "2",
                "--warmup-steps",
                "10",
                "--dropout",
                "0.2",
                "--attention-dropout",
                "0.1",
                "--label-smoothing",
                "0.2",
                "--loss-chunk-tokens",
                "512",
                "--num-beams",
                "2",
                "--length-penalty",
                "1.0",
                "--max-length-offset",
                "7",
                "--update-freq",
                "2",
                "--save-every",
                "3",
                "--average-last",
                "2",
                "--eval-every",
                "5",
                "--max-length",
                "100",
                "--max-length-ratio",
                "2",
                *("--d-model", "96", "--encoder-layers", "3", "--decoder-layers", "1"),
                *("--num-attention-heads", "8", "--d-ff", "200", "--adam-betas", "(0.9, 0.997)", "--adam-eps", "1e-8"),
            ],
        )
        settings = resolve(args, WMT_PRESETS)
        assert (settings.vocab_size, settings.lr_scale, settings.warmup_steps, settings.update_freq) == (500, 2, 10, 2)
        assert settings.model_overrides == {
            **dict(d_model=96, encoder_layers=3, decoder_layers=1, num_attention_heads=8, d_ff=200),
            "dropout": 0.2,
            "attention_dropout": 0.1,
            "label_smoothing": 0.2,
            "loss_chunk_tokens": 512,
            "init_scheme": "fairseq",  # the translation presets'
        }
        assert settings.decoding == {"num_beams": 2, "length_penalty": 1.0, "max_length_offset": 7}
        assert (settings.save_every, settings.average_last, settings.keep_last, settings.eval_every) == (3, 2, 2, 5)
        assert (settings.max_length, settings.max_length_ratio) == (100, 2)
        assert (settings.betas, settings.adam_eps) == ((0.9, 0.997), 1e-8)
    defaults = resolve(recipe("wmt_ende").Arguments(preset="base"), WMT_PRESETS)
    assert (defaults.vocab_size, defaults.warmup_steps, defaults.lr_scale, defaults.average_last) == (
        37000,
        4000,
        1,
        5,
    )
    assert (defaults.max_length, defaults.max_length_ratio, defaults.eval_every) == (250, 1.5, 1000)
    assert (defaults.betas, defaults.adam_eps) == ((0.9, 0.98), 1e-9)  # section 5.3
    with pytest.raises(ValueError, match="--lr-scale or --learning-rate"):
        resolve(recipe("wmt_ende").Arguments(preset="base", lr_scale=1, learning_rate=1e-3), WMT_PRESETS)
    with pytest.raises(ValueError, match="--keep-last 3 keeps fewer checkpoints than --average-last 5"):
        resolve(recipe("wmt_ende").Arguments(preset="base", keep_last=3), WMT_PRESETS)


@dataclass
class ThirdRecipeArguments(RunSettings):
    """A recipe's own settings, as a third recipe declares them: a model option and a decoding flag."""

    pointer_generator: bool | None = field(default=None, metadata={"help": "Copy from the source."})
    min_length: int | None = field(default=None, metadata={"help": "Shortest output."})
    MODEL_CONFIG = (*RunSettings.MODEL_CONFIG, "pointer_generator")
    GENERATION_CONFIG = (*RunSettings.GENERATION_CONFIG, "min_length")


def test_a_recipes_own_settings_come_from_its_flags_or_its_presets_and_reach_the_model():
    from hf_vanilla.training.arguments import resolve
    from hf_vanilla.training.presets import PAPER

    presets = {
        "demo": dict(PAPER, model_size="tiny", vocab_size=500, tokens_per_step=800, warmup_steps=10, max_steps=4),
        "short": dict(PAPER, model_size="tiny", vocab_size=500, tokens_per_step=800, warmup_steps=10, max_steps=4),
    }
    for preset in presets.values():
        preset.update(average_last=2, save_every=2, eval_every=0)
    presets["demo"].update(pointer_generator=True, min_length=3)
    settings = resolve(ThirdRecipeArguments(dropout=0.0), presets)
    assert settings.model_overrides == {"dropout": 0.0, "pointer_generator": True}
    assert settings.decoding == {"min_length": 3}
    given = resolve(ThirdRecipeArguments(pointer_generator=False, min_length=5, num_beams=2), presets)
    assert given.model_overrides == {"pointer_generator": False}
    assert given.decoding == {"min_length": 5, "num_beams": 2}
    assert resolve(ThirdRecipeArguments(preset="short"), presets).decoding == {}
    incomplete = {"short": {k: v for k, v in presets["short"].items() if k != "average_last"}}
    with pytest.raises(PreflightError, match="preset 'short' gives no average_last"):
        resolve(ThirdRecipeArguments(preset="short"), incomplete)
    presets["short"]["summary_words"] = 60  # a preset value that no flag declares is a mistake in the preset
    with pytest.raises(ValueError, match="preset 'short' sets summary_words, which are no settings of"):
        resolve(ThirdRecipeArguments(preset="short"), presets)
    with pytest.raises(PreflightError, match="--preset must be one of demo, short, got 'big'"):
        resolve(ThirdRecipeArguments(preset="big"), presets)


def test_a_recipe_preset_written_with_the_former_model_preset_key_names_its_size():
    """A third recipe's preset written before `model_preset` became `model_size` resolves to the same size."""
    from hf_vanilla.training.presets import PAPER

    preset = dict(PAPER, vocab_size=500, tokens_per_step=800, warmup_steps=10, max_steps=4, average_last=2)
    preset.update(save_every=2, eval_every=0)
    old, new = ({"demo": dict(preset, **{key: "tiny"})} for key in ("model_preset", "model_size"))
    assert resolve(ThirdRecipeArguments(), old).model_size == "tiny"
    assert vars(resolve(ThirdRecipeArguments(), old)) == vars(resolve(ThirdRecipeArguments(), new))


def test_a_length_filter_that_leaves_nothing_stops_before_training(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for split in ("train", "valid"):  # every pair at least 8 words a side
        (corpus / f"{split}.en").write_text("".join(f"this is sentence number {i} of the corpus\n" for i in range(40)))
        (corpus / f"{split}.de").write_text("".join(f"das ist Satz Nummer {i} des Korpus hier\n" for i in range(40)))
    with pytest.raises(PreflightError, match="drops all 40 pairs: raise --max-length or --max-length-ratio"):
        recipe("wmt_ende").main(wmt_args(tmp_path / "run", dataset=str(corpus), moses_detokenize=False, max_length=3))
    assert not list((tmp_path / "run").glob("checkpoint-*"))


def test_demo_presets_are_bounded_by_updates_not_by_time():
    from hf_vanilla.training.arguments import resolve
    from hf_vanilla.training.presets import WMT_PRESETS

    for presets, name in ((WMT_PRESETS, "wmt_ende"), (PARSING_PRESETS, "ptb_parse")):
        settings = resolve(recipe(name).Arguments(preset="demo"), presets)
        assert settings.max_train_minutes is None and settings.max_steps == presets["demo"]["max_steps"]
        timed = resolve(recipe(name).Arguments(preset="demo", max_train_minutes=3), presets)
        assert timed.max_train_minutes == 3 and timed.max_steps is None  # the time budget alone ends the run


def test_the_english_french_preset_is_the_papers_big_model_with_dropout_0_1():
    from hf_vanilla import VanillaTransformerConfig
    from hf_vanilla.training.presets import WMT_PRESETS

    preset = WMT_PRESETS["big_enfr"]
    config = VanillaTransformerConfig.from_size(preset["model_size"])
    assert (config.d_model, config.num_attention_heads, config.dropout, preset["vocab_size"]) == (1024, 16, 0.1, 32000)


def test_a_dataset_without_the_evaluated_split_stops_before_training(tmp_path):
    with pytest.raises(PreflightError, match="has no 'nonesuch' split .*choose another --eval-split"):
        recipe("wmt_ende").main(wmt_args(tmp_path / "run", eval_split="nonesuch"))
    assert not (tmp_path / "run" / "train_log.jsonl").exists()


def test_under_accelerate_launch_a_missing_split_is_one_line_without_traceback(tmp_path):
    done = subprocess.run(
        [
            "accelerate",
            "launch",
            "--quiet",
            "--cpu",
            "--num_processes",
            "1",
            str(RECIPES / "wmt_ende.py"),
            "--dataset",
            str(require(WMT_SAMPLE)),
            "--eval-split",
            "test",
            "--output-dir",
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("wmt_ende: ") and "no 'test' split" in last and "--eval-split" in last


def test_the_hub_out_of_reach_is_one_line_naming_the_offline_corpora(tmp_path):
    """`--preset base` reads the Hub's wmt14; with the Hub out of reach (HF_HUB_OFFLINE, nothing cached) the real
    recipe process stops in one line, exit 1, naming the dataset and the offline alternatives."""
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, str(RECIPES / "wmt_ende.py"), "--preset", "base", "--output-dir", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.stderr.strip().splitlines()[-1] == (
        "wmt_ende: --dataset wmt14: the Hugging Face Hub could not be reached and no copy of it is cached; offline, "
        "give --dataset bible (the offline demo corpus), a folder of train/valid/test.{en,de} files or a JSONL file"
    )


def test_push_to_hub_without_a_token_or_network_stops_before_training(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_TOKEN", "")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    with pytest.raises(PreflightError, match="--push-to-hub needs a Hugging Face token"):
        recipe("wmt_ende").main(wmt_args(tmp_path / "run", push_to_hub="someone/model"))
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")
    with pytest.raises(PreflightError, match="cannot be reached or refuses the token"):
        recipe("wmt_ende").main(wmt_args(tmp_path / "run", push_to_hub="someone/model"))
    with pytest.raises(PreflightError, match="not a valid repo id"):
        recipe("wmt_ende").main(wmt_args(tmp_path / "run", push_to_hub="no spaces/allowed here"))
    assert not (tmp_path / "run" / "train_log.jsonl").exists()


def test_an_output_folder_that_cannot_be_written_stops_before_training(tmp_path):
    (tmp_path / "a_file").write_text("")
    with pytest.raises(PreflightError, match="cannot write to the output folder"):
        recipe("wmt_ende").main(wmt_args(tmp_path / "a_file" / "run"))


def test_deepspeed_is_refused_at_start_up(tmp_path, monkeypatch):
    monkeypatch.setenv("ACCELERATE_USE_DEEPSPEED", "true")
    with pytest.raises(PreflightError, match="do not run under DeepSpeed"):
        recipe("wmt_ende").main(wmt_args(tmp_path / "run"))


def test_validation_decoding_under_fsdp_is_refused_at_start_up(tmp_path, monkeypatch):
    monkeypatch.setenv("ACCELERATE_USE_FSDP", "true")
    with pytest.raises(PreflightError, match="--eval-metric-sentences decodes on the main process alone"):
        recipe("wmt_ende").main(wmt_args(tmp_path / "run", eval_metric_sentences=2))
    assert not (tmp_path / "run").exists()


def test_a_tokenizer_trained_for_another_run_is_refused(wmt_run, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    shutil.copytree(wmt_run[0] / "tokenizer", run / "tokenizer")
    with pytest.raises(TokenizerMismatch, match=r"vocab_size 4000 \(this run: 500\)"):
        recipe("wmt_ende").main(wmt_args(run, vocab_size=500))
    with pytest.raises(TokenizerMismatch, match=r"languages \['en', 'de'\] \(this run: \['de', 'en'\]\)"):
        recipe("wmt_ende").main(wmt_args(run, source_lang="de", target_lang="en"))
    assert not (run / "train_log.jsonl").exists()
    done = subprocess.run(
        [sys.executable, str(RECIPES / "wmt_ende.py"), *cli(wmt_args(run, vocab_size=500))],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(f"wmt_ende: {run / 'tokenizer'} holds a tokenizer trained")


def cli(args) -> list[str]:
    """`args` as command-line flags."""
    flags = []
    for name, value in vars(args).items():
        if value is None or value is False:
            continue
        flags += [f"--{name}"] if value is True else [f"--{name}", str(value)]
    return flags


def test_warm_start_continues_from_the_given_weights_and_tokenizer(wmt_run, tmp_path):
    initial = wmt_run[0] / "final"
    results = recipe("wmt_ende").main(wmt_args(tmp_path / "run", init_from=str(initial), learning_rate=1e-12))
    assert results["init_from"] == str(initial) and results["steps"] == 2
    assert (tmp_path / "run" / "tokenizer" / "tokenizer.json").read_text() == (initial / "tokenizer.json").read_text()
    before, after = (
        load_file(str(initial / "model.safetensors")),
        load_file(str(tmp_path / "run" / "final" / "model.safetensors")),
    )
    assert set(before) == set(after)
    # A learning rate of 1e-12 leaves the weights where they started (Adam moves each by about lr an update at most).
    for name, tensor in before.items():
        assert (tensor - after[name]).abs().max() < 1e-6, name


def test_eval_only_scores_a_model_without_training(wmt_run, tmp_path):
    initial = wmt_run[0] / "final"
    results = recipe("wmt_ende").main(
        wmt_args(tmp_path / "run", init_from=str(initial), eval_only=True, num_beams=4, eval_sentences=4)
    )
    assert results["steps"] == 0 and results["eval_only"] is True and results["averaged_checkpoints"] == []
    # The same model, the same sentences and decoding as the training run's own evaluation.
    assert results["sacrebleu"] == wmt_run[1]["sacrebleu"]
    assert json.loads((tmp_path / "run" / "results.json").read_text())["sacrebleu"] == results["sacrebleu"]
    assert "evaluated as they are" in (tmp_path / "run" / "README.md").read_text()
    assert not list((tmp_path / "run").glob("checkpoint-*"))


def test_eval_only_without_a_model_to_score_is_refused_before_anything_is_written(wmt_run):
    output_dir, trained = wmt_run
    before = (output_dir / "results.json").read_text()
    with pytest.raises(PreflightError, match="--eval-only scores --init-from MODEL"):
        recipe("wmt_ende").main(wmt_args(output_dir, eval_only=True))
    assert (output_dir / "results.json").read_text() == before  # a random model's score never replaces the run's


def test_launcher_precision_is_used_and_recorded(tmp_path):
    """`accelerate launch --mixed_precision bf16` without the recipe's own flag: the run is bf16 and says so."""
    done = subprocess.run(
        [
            "accelerate",
            "launch",
            "--cpu",
            "--num_processes",
            "1",
            "--mixed_precision",
            "bf16",
            str(RECIPES / "wmt_ende.py"),
            *cli(wmt_args(tmp_path / "run", max_steps=1, save_every=1)),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "ACCELERATE_LOG_LEVEL": "info"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["mixed_precision"] == "bf16"
    assert "Length filter (at most 250 tokens a side, ratio 1.5): kept" in done.stderr


def _launch(tmp_path: Path, name: str, launcher: list[str], wmt_sample: Path, *extra: str) -> tuple[dict, str]:
    output_dir = tmp_path / name
    command = [
        "accelerate",
        "launch",
        *launcher,
        str(RECIPES / "wmt_ende.py"),
        "--preset",
        "demo",
        "--dataset",
        str(wmt_sample),
        "--moses-detokenize",
        "--max-steps",
        "20",
        "--max-tokens",
        "1000",
        "--eval-split",
        "validation",
        "--eval-sentences",
        "4",
        "--save-every",
        "10",
        "--log-every",
        "5",
        "--output-dir",
        str(output_dir),
        *extra,
    ]
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "ACCELERATE_LOG_LEVEL": "info"}
    done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((output_dir / "results.json").read_text()), done.stdout + done.stderr


@pytest.mark.slow
def test_two_gloo_processes_train_validate_warm_start_and_evaluate(wmt_sample, tmp_path):
    """`accelerate launch --multi_gpu --num_processes 2` on a CPU-only machine: two gloo processes, each its own
    shard of batches and of the validation set; then a warm start from that run and an evaluation-only run, also on
    two processes."""
    two, output = _launch(tmp_path, "two", ["--multi_gpu", "--num_processes", "2"], wmt_sample, "--eval-every", "10")
    one, _ = _launch(tmp_path, "one", ["--cpu", "--num_processes", "1"], wmt_sample, "--eval-every", "10")
    assert two["num_processes"] == 2 and one["num_processes"] == 1
    assert set(two) == set(one) and two["steps"] == one["steps"] == 20
    # Each update of the 2-process run consumed batches on both processes: about twice the tokens of one process.
    assert 1.5 * one["train_tokens"] < two["train_tokens"] < 2.5 * one["train_tokens"]
    # Validation every 10 updates in both runs (its split sharded across the two processes, the loss reduced).
    for name in ("one", "two"):
        log = [json.loads(line) for line in (tmp_path / name / "train_log.jsonl").read_text().splitlines()]
        assert [e["step"] for e in log if "valid_loss" in e] == [10, 20], name
    # The training and validation splits encoded once, by the main process (a bar each), the other reading the cache.
    assert output.count("encoding:   0%") == 2
    cached = sorted(p.name.split("-")[0] for p in (tmp_path / "two" / "cache").glob("*.arrow"))
    assert cached == ["train", "validation"]
    warm, _ = _launch(
        tmp_path,
        "warm",
        ["--multi_gpu", "--num_processes", "2"],
        wmt_sample,
        "--init-from",
        str(tmp_path / "two" / "final"),
        "--max-steps",
        "4",
    )
    assert warm["steps"] == 4 and warm["init_from"] == str(tmp_path / "two" / "final")
    scored, _ = _launch(
        tmp_path,
        "scored",
        ["--multi_gpu", "--num_processes", "2"],
        wmt_sample,
        "--init-from",
        str(tmp_path / "two" / "final"),
        "--eval-only",
    )
    assert scored["steps"] == 0 and scored["sacrebleu"] == two["sacrebleu"]


@pytest.mark.slow
def test_cpu_launcher_that_starts_one_process_says_so(wmt_sample, tmp_path):
    results, output = _launch(tmp_path, "cpu", ["--cpu", "--num_processes", "2"], wmt_sample)
    assert results["num_processes"] == 1
    assert "Running ONE process" in output and "--multi_gpu --num_processes N" in output


def test_architecture_and_sample_flags_shape_the_new_model_and_the_learning_rate_follows_the_real_width(
    tmp_path, caplog
):
    """fairseq's size flags (--encoder-layers, --d-model, ...), --init-scheme and --decoder-start build the run's
    model, --max-train-samples keeps the first N training pairs, --adam-betas / --adam-eps reach Adam; under
    --init-from those flags are refused and --learning-rate is converted with the loaded model's d_model (32), not
    the preset's (128)."""
    from hf_vanilla.training.preflight import PreflightError
    from hf_vanilla.training.schedule import peak_learning_rate

    size = dict(d_model=32, encoder_layers=1, decoder_layers=3, num_attention_heads=2, d_ff=48, init_scheme="fairseq")
    flags = dict(preset="tiny", max_steps=2, max_train_samples=50, adam_betas="0.8,0.9", adam_eps=1e-6)
    with caplog.at_level("INFO"):
        results = recipe("wmt_ende").main(wmt_args(tmp_path / "sized", **size, **flags, decoder_start="eos"))
    saved = VanillaTransformerForConditionalGeneration.from_pretrained(tmp_path / "sized" / "final")
    config = saved.config
    assert {name: getattr(config, name) for name in size} == size
    assert config.decoder_start_token_id == saved.generation_config.decoder_start_token_id == config.eos_token_id
    assert "--max-train-samples 50: kept 50 of" in caplog.text
    optimizer = json.loads((tmp_path / "sized" / "checkpoint-00000002" / "optimizer.json").read_text())
    assert optimizer["param_groups"][0]["betas"] == [0.8, 0.9] and optimizer["param_groups"][0]["eps"] == 1e-6
    assert results["training_preset"]["max_train_samples"] == 50

    initial = str(tmp_path / "sized" / "final")
    refused = "--d-model, --d-ff, --init-scheme, --decoder-start shape a new model: --init-from's model keeps its own"
    with pytest.raises(PreflightError, match=refused):
        recipe("wmt_ende").main(
            wmt_args(
                tmp_path / "refused", init_from=initial, d_model=64, d_ff=64, init_scheme="normal", decoder_start="bos"
            )
        )
    warm = recipe("wmt_ende").main(wmt_args(tmp_path / "warm", init_from=initial, learning_rate=1e-3))
    scale = warm["training_preset"]["lr_scale"]  # the demo preset (d_model 128) over a model of width 32
    assert peak_learning_rate(32, warm["training_preset"]["warmup_steps"], scale) == pytest.approx(1e-3)
    assert peak_learning_rate(128, warm["training_preset"]["warmup_steps"], scale) != pytest.approx(1e-3)
