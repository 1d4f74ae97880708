"""The summarization recipe end to end on a small JSONL corpus built here (and on the shared AESLC folder): its
results, predictions, card and truncation counts checked against independent computations, the copy mechanism's flag
both ways, warm starts that would change it refused, bad input stopped before the first update in one line, and a
2-process launch."""

import json
import logging
import os
import platform
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from datasets import Dataset, DatasetDict
from huggingface_hub import ModelCard
from safetensors.torch import load_file
from transformers import AutoTokenizer

from hf_vanilla import VanillaTransformerConfig, VanillaTransformerForConditionalGeneration
from hf_vanilla.batch_decoding import generate_texts, recorded_input_limit
from hf_vanilla.cards import check_card, expected_metrics
from hf_vanilla.data.encoding import encode_truncated_pairs
from hf_vanilla.data.summaries import as_pairs
from hf_vanilla.evaluation import summarization
from hf_vanilla.evaluation.rouge import compute_rouge
from hf_vanilla.hub import build_hub_folder
from hf_vanilla.tokenization import truncate_ids, word_continuation_ids
from hf_vanilla.training.arguments import resolve
from hf_vanilla.training.flags import parse_settings
from hf_vanilla.training.host_memory import allocator_chosen_by_user
from hf_vanilla.training.preflight import PreflightError
from hf_vanilla.training.presets import SUMMARIZATION_PRESETS
from hf_vanilla.training.run import start

from runs import RECIPES, SHARED_DATA, recipe, require

AESLC = SHARED_DATA / "aeslc" / "enron_subject_line"
WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa".split()
ROUGE = ("rouge1", "rouge2", "rougeL", "rougeLsum")


def write_corpus(folder: Path) -> dict[str, Path]:
    """train/dev/test JSONL files of made-up documents (5-30 words) whose summaries are their first 2-9 words, with an
    `id` column first (which a guess of the columns by position would take for the text)."""
    rng = random.Random(0)
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for split, count in (("train", 120), ("dev", 12), ("test", 10)):
        rows = []
        for i in range(count):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 30))) + f" number {i}."
            rows.append({"id": i, "document": text, "abstract": " ".join(text.split()[: rng.randint(2, 9)])})
        files[split] = folder / f"{split}.jsonl"
        files[split].write_text("".join(json.dumps(row) + "\n" for row in rows))
    return files


def corpus_flags(files: dict[str, Path]) -> dict:
    return dict(
        dataset=str(files["train"]),
        validation_file=str(files["dev"]),
        test_file=str(files["test"]),
        text_column="document",
        summary_column="abstract",
    )


def summarize_args(output_dir: Path, files: dict[str, Path], **overrides):
    """The recipe's arguments for the tiny preset on the corpus `files`."""
    defaults = dict(preset="tiny", output_dir=str(output_dir), eval_metric_sentences=4, **corpus_flags(files))
    return recipe("summarize").Arguments(**{**defaults, **overrides})


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Path]:
    return write_corpus(tmp_path_factory.mktemp("summaries"))


@pytest.fixture(scope="module")
def summary_run(corpus, tmp_path_factory) -> tuple[Path, dict]:
    """A 4-update run of the tiny preset with the copy mechanism, validated every 2 updates."""
    output_dir = tmp_path_factory.mktemp("summary_run")
    return output_dir, recipe("summarize").main(summarize_args(output_dir, corpus))


def test_a_run_records_rouge_as_recomputed_from_its_predictions_in_the_test_files_order(summary_run, corpus):
    folder, results = summary_run
    test = read_jsonl(corpus["test"])
    predictions = read_jsonl(folder / "predictions.jsonl")
    assert [p["source"] for p in predictions] == [row["document"] for row in test]
    assert [p["reference"] for p in predictions] == [row["abstract"] for row in test]
    assert all(set(p) == {"source", "reference", "prediction"} for p in predictions)  # one reference: no list
    assert any(p["prediction"] for p in predictions)  # DECODING["summarization"]: at least one new token
    scores = compute_rouge([p["prediction"] for p in predictions], [p["reference"] for p in predictions])
    assert {name: results[name] for name in ROUGE} == {name: round(scores[name], 2) for name in ROUGE}
    assert 0 <= results["rouge1"] <= 100 and "rouge1_multi_reference" not in results
    assert results["steps"] == 4 and results["eval_items"] == len(test) and results["pointer_generator"] is True
    assert results["cpu_threads"] == torch.get_num_threads()  # a CPU run's figures depend on it (docs/corpora.md)
    reusable = platform.libc_ver()[0] == "glibc" and allocator_chosen_by_user() is None
    assert results["host_malloc"] == ("reuse" if reusable else "system")
    assert (results["max_source_tokens"], results["max_target_tokens"]) == (24, 8)
    # The model decodes as a summarizer (its DECODING row, the tiny preset's max_new_tokens) and records the source
    # limit it was trained with, where `hf-vanilla summarize` and the app read it.
    generation = json.loads((folder / "final" / "generation_config.json").read_text())
    assert (generation["num_beams"], generation["no_repeat_ngram_size"], generation["max_new_tokens"]) == (4, 3, 8)
    assert generation.get("max_length_offset") is None
    assert recorded_input_limit(AutoTokenizer.from_pretrained(folder / "final")) == 24
    log = read_jsonl(folder / "train_log.jsonl")
    assert [e["step"] for e in log if "valid_rouge1" in e] == [2, 4]
    assert all(0 <= e["valid_rouge1"] <= 100 for e in log if "valid_rouge1" in e)


def test_truncation_counts_match_an_independent_count_with_the_runs_tokenizer(summary_run, corpus):
    folder, results = summary_run
    tokenizer = AutoTokenizer.from_pretrained(folder / "tokenizer")

    def over(texts: list[str], limit: int) -> int:
        return sum(len(tokenizer(text)["input_ids"]) > limit for text in texts)

    for split, file in (("train", "train"), ("validation", "dev"), ("evaluation", "test")):
        rows = read_jsonl(corpus[file])
        expected = {
            "sources_truncated": over([r["document"] for r in rows], 24),
            "targets_truncated": over([r["abstract"] for r in rows], 8),
            "total": len(rows),
        }
        assert results["truncated"][split] == expected, split
    assert 0 < results["truncated"]["train"]["sources_truncated"] < len(read_jsonl(corpus["train"]))
    assert results["truncated"]["train"]["targets_truncated"] > 0


def test_the_copyable_share_of_each_split_is_recounted_with_the_runs_tokenizer(summary_run, corpus):
    """results.json's `copyable`: per split, the share of summary tokens (cut to 8, </s> not counted) that occur in
    their document as the model reads it (cut to 24), special tokens never counted; recounted here by hand. The
    summaries are their documents' first words, so with the tokenizer's prefix space every first token is found."""
    folder, results = summary_run
    tokenizer = AutoTokenizer.from_pretrained(folder / "tokenizer")
    special = set(tokenizer.all_special_ids)
    for split, file in (("train", "train"), ("validation", "dev"), ("evaluation", "test")):
        found = total = first = 0
        rows = read_jsonl(corpus[file])
        for row in rows:
            source = set(tokenizer(row["document"])["input_ids"][:23]) - special
            summary = [t for t in tokenizer(row["abstract"])["input_ids"][:7] if t not in special]
            found, total = found + sum(t in source for t in summary), total + len(summary)
            first += summary[0] in source
        assert results["copyable"][split] == {
            "summary_tokens_in_source": round(100 * found / total, 2),
            "first_token_in_source": round(100 * first / len(rows), 2),
            "tokens_per_summary": round(total / len(rows), 2),
            "pairs": len(rows),
        }, split
    assert results["copyable"]["train"]["first_token_in_source"] == 100.0
    assert results["lowercase"] is True


def test_the_lead_baseline_is_chosen_on_validation_and_scored_as_the_model_is(summary_run, corpus):
    """results.json's `lead_baseline`: k the best of 1-30 words by ROUGE-1 on the dev file (the smallest on a tie),
    then the test file's first k words scored as the model's summaries are; recomputed here with `compute_rouge`.
    The summaries are their documents' first 2-9 words, so neither the shortest nor the longest lead wins."""
    folder, results = summary_run
    dev, test = read_jsonl(corpus["dev"]), read_jsonl(corpus["test"])

    def lead_scores(rows: list[dict], k: int) -> dict:
        firsts = [" ".join(row["document"].split()[:k]) for row in rows]
        return compute_rouge(firsts, [row["abstract"] for row in rows])

    on_dev = {k: lead_scores(dev, k)["rouge1"] for k in range(1, 31)}
    k = min(k for k, score in on_dev.items() if score == max(on_dev.values()))
    expected = {name: round(value, 2) for name, value in lead_scores(test, k).items()}
    lead = results["lead_baseline"]
    assert (lead["k"], lead["ks"], lead["eval_items"]) == (k, [1, 30], len(test)) and 1 < k < 30
    assert lead["validation_rouge1"] == round(on_dev[k], 2)
    assert {name: lead[name] for name in ROUGE} == expected
    card = ModelCard.load(folder / "README.md").text
    assert f"| lead baseline: the first {k} words | " in card and f"| {lead['rouge1']} | {lead['rouge2']} |" in card


def test_one_file_alone_runs_with_its_own_held_out_rows_recorded(corpus, tmp_path):
    """--dataset FILE with no --validation-file or --test-file: validation and test rows are held out of it (seeded,
    5% each), recorded in results.json, and none of them is trained on."""
    results = recipe("summarize").main(
        summarize_args(tmp_path / "one", corpus, validation_file=None, test_file=None, max_steps=2, eval_every=2)
    )
    assert results["held_out"] == {"validation": 6, "test": 6, "train": 108, "seed": 0}
    assert results["eval_items"] == 6 and results["steps"] == 2
    tested = {row["source"] for row in read_jsonl(tmp_path / "one" / "predictions.jsonl")}
    assert tested <= {row["document"] for row in read_jsonl(corpus["train"])}


def test_the_best_checkpoint_by_rouge_is_the_final_model_and_patience_stops_training(corpus, tmp_path):
    """--best-checkpoint-metric rouge1 --final-model best --patience 1: best/ holds the update with the highest
    validation ROUGE-1 (the first of equals), final/ is that model, and training stops at the first validation that
    does not improve on it; each recomputed from the run's own log."""
    folder = tmp_path / "best"
    flags = dict(
        max_steps=12, best_checkpoint_metric="rouge1", final_model="best", patience=1, eval_metric_sentences=6
    )
    results = recipe("summarize").main(summarize_args(folder, corpus, **flags))
    scores = [(e["step"], e["valid_rouge1"]) for e in read_jsonl(folder / "train_log.jsonl") if "valid_rouge1" in e]
    best_step, best, stop = None, None, None
    for step, score in scores:
        if best is None or score > best:
            best_step, best = step, score
        elif stop is None:
            stop = step
    assert (results["best_step"], results["best_value"], results["steps"]) == (best_step, best, stop or 12)
    assert results["stopped_early"] is (stop is not None) and results["best_checkpoint_metric"] == "rouge1"
    assert results["final_model"] == "best" and results["averaged_checkpoints"] == []
    final, kept = (load_file(folder / name / "model.safetensors") for name in ("final", "best"))
    assert final.keys() == kept.keys() and all(torch.equal(final[k], kept[k]) for k in final)
    assert "the checkpoint of update" in (folder / "README.md").read_text()


@pytest.mark.parametrize(
    "flags, message",
    [
        (
            dict(best_checkpoint_metric="bleu"),
            "--best-checkpoint-metric must be one of loss, rouge1, rouge2, rougeL, rougeLsum, got 'bleu'",
        ),
        (
            dict(best_checkpoint_metric="rouge1", eval_metric_sentences=0),
            "--best-checkpoint-metric rouge1 decodes validation items: give --eval-metric-sentences N",
        ),
        (dict(final_model="best", eval_every=0), "--final-model best needs validation: give --eval-every N"),
        (dict(final_model="last"), "--final-model must be one of average, best, got 'last'"),
        (dict(patience=-1), "--patience must not be negative, got -1"),
        (dict(host_malloc="jemalloc"), "--host-malloc must be one of reuse, system, got 'jemalloc'"),
        (dict(decoder_start="pad"), "--decoder-start must be one of bos, eos, got 'pad'"),
    ],
)
def test_best_checkpoint_settings_that_cannot_work_are_refused_in_one_line(flags, message):
    with pytest.raises(PreflightError) as error:
        resolve(recipe("summarize").Arguments(preset="tiny", **flags), SUMMARIZATION_PRESETS)
    assert str(error.value) == message


def test_truncation_keeps_the_first_tokens_and_the_end_of_sequence_in_training_and_decoding(summary_run, corpus):
    folder, _ = summary_run
    tokenizer = AutoTokenizer.from_pretrained(folder / "tokenizer")
    rows = read_jsonl(corpus["train"])
    split = Dataset.from_dict({"text": [r["document"] for r in rows], "summary": [r["abstract"] for r in rows]})
    pairs = as_pairs(DatasetDict({"train": split}))["train"]  # the pairs the recipe trains on
    encoded, counts = encode_truncated_pairs(pairs, tokenizer, "text", "summary", None, 24, 8)
    for index, row in enumerate(rows):
        full = tokenizer(row["document"])["input_ids"]
        source = encoded.source_ids[encoded.source_offsets[index] : encoded.source_offsets[index + 1]].tolist()
        assert source == (full if len(full) <= 24 else full[:23] + [tokenizer.eos_token_id])
    assert counts["sources_truncated"] == sum(len(tokenizer(r["document"])["input_ids"]) > 24 for r in rows)
    assert truncate_ids([5, 6, 7, 2], 3) == [5, 6, 2] and truncate_ids([5, 2], 2) == [5, 2]
    with pytest.raises(ValueError, match="max_source_tokens must be at least 2"):
        encode_truncated_pairs(pairs, tokenizer, "text", "summary", None, 1, 8)
    # Decoding reads a long document as training did: its first 23 tokens and </s> (the ids `generate` receives).
    model = VanillaTransformerForConditionalGeneration.from_pretrained(folder / "final").eval()
    long = max((r["document"] for r in rows), key=len)
    seen = []
    generate = model.generate
    model.generate = lambda input_ids, **kwargs: seen.append(input_ids.tolist()) or generate(input_ids, **kwargs)
    (output,) = generate_texts(model, tokenizer, [long], progress=False, max_source_tokens=24, num_beams=2)
    full = tokenizer(long)["input_ids"]
    assert len(full) > 24 and seen == [[full[:23] + [tokenizer.eos_token_id]]]
    generate_texts(model, tokenizer, [long], progress=False, num_beams=2)  # no limit: the whole document
    assert seen[1] == [full]


def test_the_card_carries_the_rouge_of_results_and_the_corpus_terms(summary_run, tmp_path):
    folder, results = summary_run
    card = ModelCard.load(folder / "README.md")
    check_card(card, results)
    found = {r.metric_type: r.metric_value for r in card.data.eval_results}
    assert found == {name: results[name] for name in ROUGE} == expected_metrics(results)
    assert card.data.license == "apache-2.0" and "summarization" in card.data.tags
    assert "pointer-generator" in card.data.tags and "copy mechanism of pointer-generator networks" in card.text
    assert "the training data (`train.jsonl`) come under their own terms" in card.text
    published = build_hub_folder(folder, tmp_path / "hub", "someone/summarizer")
    assert ModelCard.load(published / "README.md").data.eval_results[0].metric_value == results["rouge1"]
    assert json.loads((published / "config.json").read_text())["pointer_generator"] is True


def test_without_the_copy_mechanism_the_flag_reaches_the_saved_model_and_its_card(corpus, summary_run, tmp_path):
    arguments = parse_settings(
        recipe("summarize").Arguments, ["--no-pointer-generator", "--max-steps", "2", "--eval-every", "0"]
    )
    assert arguments.pointer_generator is False
    args = summarize_args(tmp_path / "plain", corpus, pointer_generator=False, max_steps=2, eval_every=0)
    results = recipe("summarize").main(args)
    assert results["pointer_generator"] is False and results["steps"] == 2
    assert json.loads((tmp_path / "plain" / "final" / "config.json").read_text())["pointer_generator"] is False
    card = ModelCard.load(tmp_path / "plain" / "README.md")
    assert "pointer-generator" not in card.data.tags and "It has no copy mechanism" in card.text
    assert json.loads((summary_run[0] / "final" / "config.json").read_text())["pointer_generator"] is True


def test_a_warm_start_keeps_its_models_copy_mechanism_and_scores_as_its_run_did(
    corpus, summary_run, tmp_path, monkeypatch
):
    final = str(summary_run[0] / "final")
    summarize = recipe("summarize")
    limits = []  # the documents' limit each decoding is given: the truncation of training

    def recorded(*args, **kwargs):
        limits.append(kwargs.get("max_source_tokens"))
        return generate_texts(*args, **kwargs)

    monkeypatch.setattr(summarization, "generate_texts", recorded)
    refusal = "^--no-pointer-generator: --init-from's model has pointer_generator=True"
    with pytest.raises(PreflightError, match=refusal):
        summarize.main(summarize_args(tmp_path / "refused", corpus, init_from=final, pointer_generator=False))
    assert not (tmp_path / "refused" / "tokenizer").exists()  # refused before any data or tokenizer
    scored = summarize.main(summarize_args(tmp_path / "scored", corpus, init_from=final, eval_only=True))
    assert scored["steps"] == 0 and {k: scored[k] for k in ROUGE} == {k: summary_run[1][k] for k in ROUGE}
    assert read_jsonl(tmp_path / "scored" / "predictions.jsonl") == read_jsonl(summary_run[0] / "predictions.jsonl")
    assert limits == [24]


def test_a_model_saved_before_the_stutter_rule_decodes_without_it_unless_the_flag_asks(corpus, summary_run, tmp_path):
    """A generation config without `no_stutter_span_size` (saved before it existed) loads with the rule off: the
    model decodes as before, and --no-stutter-span-size sets the rule for the run and its card."""
    old = tmp_path / "old"
    shutil.copytree(summary_run[0] / "final", old)
    generation = json.loads((old / "generation_config.json").read_text())
    assert generation.pop("no_stutter_span_size") == 4  # the summarization row's
    (old / "generation_config.json").write_text(json.dumps(generation))
    summarize = recipe("summarize")
    summarize.main(summarize_args(tmp_path / "as_saved", corpus, init_from=str(old), eval_only=True))
    assert "twice in a row" not in (tmp_path / "as_saved" / "README.md").read_text()
    summarize.main(
        summarize_args(tmp_path / "asked", corpus, init_from=str(old), eval_only=True, no_stutter_span_size=2)
    )
    assert "no span of up to 2 tokens twice in a row" in (tmp_path / "asked" / "README.md").read_text()
    assert "no span of up to 4 tokens twice in a row" in (summary_run[0] / "README.md").read_text()


def test_whole_word_copying_is_in_the_saved_decoding_its_results_and_card_and_can_be_turned_off(
    corpus, summary_run, tmp_path
):
    """The recipe gives a pointer-generator its tokenizer's word continuations (`word_continuation_ids`) in the saved
    generation config, which a load reads back, and says so in results.json and the card; --no-whole-word-copy
    takes the rule off a loaded model for its run."""
    folder, results = summary_run
    saved = json.loads((folder / "final" / "generation_config.json").read_text())["word_continuation_ids"]
    assert saved == word_continuation_ids(AutoTokenizer.from_pretrained(folder / "final")) and len(saved) > 50
    loaded = VanillaTransformerForConditionalGeneration.from_pretrained(folder / "final")
    assert loaded.generation_config.word_continuation_ids == saved
    assert results["whole_word_copy"] is True and "whole-word copying" in (folder / "README.md").read_text()
    assert parse_settings(recipe("summarize").Arguments, ["--no-whole-word-copy"]).whole_word_copy is False
    args = summarize_args(tmp_path / "off", corpus, init_from=str(folder / "final"), eval_only=True)
    args.whole_word_copy = False
    off = recipe("summarize").main(args)
    assert off["whole_word_copy"] is False and "whole-word copying" not in (tmp_path / "off" / "README.md").read_text()


def test_a_tokenizer_that_marks_no_word_start_decodes_without_whole_word_copying_unless_asked(
    corpus, summary_run, tmp_path, monkeypatch
):
    summarize = recipe("summarize")
    monkeypatch.setattr("hf_vanilla.tokenization.word_continuation_ids", lambda tokenizer: None)
    final = str(summary_run[0] / "final")
    plain = summarize.main(summarize_args(tmp_path / "default", corpus, init_from=final, eval_only=True))
    assert plain["whole_word_copy"] is False
    args = summarize_args(tmp_path / "asked", corpus, init_from=final, eval_only=True)
    args.whole_word_copy = True
    with pytest.raises(PreflightError, match="^--whole-word-copy: the tokenizer marks no word start"):
        summarize.main(args)


def bad_corpora(folder: Path, files: dict[str, Path]) -> dict[str, tuple[dict, str]]:
    """Each kind of bad input: the recipe's arguments and the start of the one line it must stop with."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = read_jsonl(files["train"])
    empty_text = folder / "empty_text.jsonl"
    empty_text.write_text(
        "".join(json.dumps({**r, "document": " " if i == 6 else r["document"]}) + "\n" for i, r in enumerate(rows))
    )
    latin1 = folder / "latin1.jsonl"
    latin1.write_bytes(files["train"].read_bytes() + '{"document": "caf\u00e9", "abstract": "x"}\n'.encode("latin-1"))
    empty_test = folder / "empty_test.jsonl"
    empty_test.write_text("\n")
    return {
        "empty text": (dict(dataset=str(empty_text)), f"{empty_text} row 7: empty text (column 'document')"),
        "missing column": (dict(summary_column="summary"), f"{files['train']}: no column 'summary'"),
        "not UTF-8": (dict(dataset=str(latin1)), f"{latin1} line {len(rows) + 1}: not UTF-8"),
        "empty split": (dict(test_file=str(empty_test)), f"{empty_test}: the test split is empty"),
    }


@pytest.mark.parametrize("kind", ["empty text", "missing column", "not UTF-8", "empty split"])
def test_bad_input_stops_before_the_first_update_with_one_line(kind, corpus, tmp_path):
    overrides, message = bad_corpora(tmp_path / "bad", corpus)[kind]
    with pytest.raises(PreflightError) as raised:
        recipe("summarize").main(summarize_args(tmp_path / "run", corpus, **overrides))
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)
    assert not (tmp_path / "run" / "tokenizer").exists() and not (tmp_path / "run" / "train_log.jsonl").exists()


def test_from_the_command_line_bad_input_is_one_line_and_exit_status_1(corpus, tmp_path):
    overrides, message = bad_corpora(tmp_path / "bad", corpus)["not UTF-8"]
    flags = {**corpus_flags(corpus), **overrides}
    command = [sys.executable, str(RECIPES / "summarize.py"), "--preset", "tiny", "--output-dir", str(tmp_path / "r")]
    command += [part for name, value in flags.items() for part in (f"--{name.replace('_', '-')}", value)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1].startswith(f"summarize: {message}")


def test_a_hub_corpus_name_is_read_with_its_real_columns_and_cited_in_the_card(corpus, tmp_path, monkeypatch):
    """`--dataset xsum` with the Hub replaced by the local corpus under XSum's real columns and split names."""
    from hf_vanilla.data import corpora

    calls = []

    def fake_load_dataset(path, name=None, **kwargs):
        calls.append(path)
        splits = {"train": "train", "validation": "dev", "test": "test"}
        rows = {split: read_jsonl(corpus[file]) for split, file in splits.items()}
        return DatasetDict(
            {
                split: Dataset.from_dict(
                    {"id": [str(r["id"]) for r in items], "document": [r["document"] for r in items]}
                    | {"summary": [r["abstract"] for r in items]}
                )
                for split, items in rows.items()
            }
        )

    monkeypatch.setattr(corpora, "load_dataset", fake_load_dataset)
    args = recipe("summarize").Arguments(preset="tiny", dataset="xsum", output_dir=str(tmp_path / "run"), max_steps=2)
    results = recipe("summarize").main(args)
    assert calls == ["EdinburghNLP/xsum"] and results["dataset"] == "xsum"
    assert results["truncated"]["evaluation"]["total"] == len(read_jsonl(corpus["test"]))
    card = ModelCard.load(tmp_path / "run" / "README.md")
    assert card.data.eval_results[0].dataset_name == "xsum" and "Narayan, Cohen and Lapata" in card.text


def test_the_demo_without_its_corpus_says_where_it_looked(monkeypatch, tmp_path):
    summarize = recipe("summarize")
    monkeypatch.setattr(summarize, "DEMO_CORPUS", tmp_path / "nowhere")
    with pytest.raises(PreflightError, match=f"the demo corpus is not at {tmp_path / 'nowhere'}: set HF_VANILLA"):
        summarize.main(summarize.Arguments(preset="demo", output_dir=str(tmp_path / "run")))


def test_presets_and_flags_resolve_to_the_settings_of_the_issue(tmp_path):
    summarize = recipe("summarize")
    demo = resolve(summarize.Arguments(preset="demo"), SUMMARIZATION_PRESETS)
    assert (demo.max_source_tokens, demo.max_target_tokens, demo.max_length, demo.max_length_ratio) == (
        96,
        32,
        None,
        None,
    )
    assert demo.max_steps == 3000 and demo.max_train_minutes is None and demo.token_limits == (96, 32)
    assert demo.lr_scale == 1.0  # the copy model's best on dev
    # Without the copy mechanism, a quarter of it (the model collapses to one subject at the paper's); a learning rate
    # given on the command line still wins.
    assert resolve(summarize.Arguments(preset="demo", pointer_generator=False), SUMMARIZATION_PRESETS).lr_scale == 0.25
    assert resolve(summarize.Arguments(preset="demo", pointer_generator=True), SUMMARIZATION_PRESETS).lr_scale == 1.0
    plain = summarize.Arguments(preset="demo", pointer_generator=False, lr_scale=0.5)
    assert resolve(plain, SUMMARIZATION_PRESETS).lr_scale == 0.5
    plain = summarize.Arguments(
        preset="demo", pointer_generator=False, learning_rate=1e-3, output_dir=str(tmp_path / "run")
    )
    run = start("summarize", plain, SUMMARIZATION_PRESETS, task="summarization")  # converted with the model's width
    assert run.settings.lr_scale == pytest.approx(1e-3 / (128**-0.5 * 400**-0.5))
    # The model's DECODING row decodes, with the length penalty chosen on AESLC's dev.
    assert demo.decoding == {"length_penalty": 3.0} and demo.model_size == "demo_summarization"
    # The copy mechanism is the model size's alone (no flag default restates it); the demo keeps its best checkpoint
    # by greedy validation ROUGE-1 in best/, tests the average of the last three (better on dev), lower-cases its
    # text, and learns copyable targets by copying (force_copy, smoothing over the vocabulary: better on dev).
    assert demo.model_overrides == {"pointer_smoothing": "vocabulary", "force_copy": True}
    assert demo.pointer_generator is None
    assert VanillaTransformerConfig.from_size(demo.model_size).pointer_generator is True
    assert (demo.best_checkpoint_metric, demo.final_model, demo.lowercase) == ("rouge1", "average", True)
    # The preset for small corpora on a GPU: base's width, 4 + 4 layers, dropout 0.3, 512-token sources, early stop.
    small = resolve(summarize.Arguments(preset="small"), SUMMARIZATION_PRESETS)
    config = VanillaTransformerConfig.from_size(small.model_size)
    assert (config.d_model, config.encoder_layers, config.dropout, config.pointer_generator) == (512, 4, 0.3, True)
    assert (small.max_source_tokens, small.patience, small.best_checkpoint_metric) == (512, 10, "rouge1")
    full = resolve(summarize.Arguments(preset="summarization"), SUMMARIZATION_PRESETS)
    assert full.model_size == "summarization" and full.decoding == {}
    assert (full.tokens_per_step, full.max_source_tokens, full.max_target_tokens, full.max_length) == (
        25000,
        512,
        128,
        None,
    )
    given = parse_settings(
        summarize.Arguments,
        ["--num-beams", "2", "--no-repeat-ngram-size", "0", "--min-new-tokens", "3", "--max-source-tokens", "64"],
    )
    flagged = resolve(given, SUMMARIZATION_PRESETS)
    assert flagged.decoding["num_beams"] == 2 and flagged.decoding["no_repeat_ngram_size"] == 0
    assert flagged.decoding["min_new_tokens"] == 3 and flagged.token_limits == (64, 32)
    with pytest.raises(PreflightError, match="--max-source-tokens must be at least 2, got 1"):
        resolve(summarize.Arguments(max_source_tokens=1), SUMMARIZATION_PRESETS)
    with pytest.raises(PreflightError, match="pointer_generator needs attention_dropout=0"):
        summarize.main(summarize.Arguments(preset="tiny", attention_dropout=0.1, output_dir=str(tmp_path / "run")))


def test_push_to_hub_without_a_token_stops_before_training(corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_TOKEN", "")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    with pytest.raises(PreflightError, match="--push-to-hub needs a Hugging Face token"):
        recipe("summarize").main(summarize_args(tmp_path / "run", corpus, push_to_hub="someone/summarizer"))
    assert not (tmp_path / "run" / "train_log.jsonl").exists()


def test_on_the_aeslc_folder_every_reference_is_scored_and_the_card_carries_its_licence(tmp_path, caplog):
    require(AESLC)
    args = recipe("summarize").Arguments(
        preset="tiny", output_dir=str(tmp_path / "run"), max_steps=2, eval_every=0, eval_sentences=12
    )
    with caplog.at_level(logging.INFO):
        results = recipe("summarize").main(args)
    assert results["dataset"] == str(AESLC)  # the demo corpus is the tiny preset's default
    predictions = read_jsonl(tmp_path / "run" / "predictions.jsonl")
    test_files = sorted((AESLC / "test").glob("*.subject"))[:12]
    assert [p["references"][0] for p in predictions] == [p["reference"] for p in predictions]
    assert all(len(p["references"]) == 4 for p in predictions)
    assert predictions[0]["source"].split()[:3] == test_files[0].read_text().split()[:3]
    outputs, references = [p["prediction"] for p in predictions], [p["references"] for p in predictions]
    multi = compute_rouge(outputs, references)
    single = compute_rouge(outputs, [r[0] for r in references])
    for name in ROUGE:
        assert results[f"{name}_multi_reference"] == round(multi[name], 2)
        assert results[name] == round(single[name], 2) <= results[f"{name}_multi_reference"]
    # The lead baseline of the same 12 e-mails, k chosen on the whole dev split (14 words), against each reference.
    lead = results["lead_baseline"]
    firsts = [" ".join(p["source"].split()[: lead["k"]]) for p in predictions]
    assert lead["k"] == 14 and lead["validation_rouge1"] == 15.9 and lead["eval_items"] == 12
    for name, value in compute_rouge(firsts, references).items():
        assert lead[f"{name}_multi_reference"] == round(value, 2), name
    messages = [record.getMessage() for record in caplog.records]
    announced = next(i for i, m in enumerate(messages) if "Lead baseline (test): the first 14 words" in m)
    assert announced < next(i for i, m in enumerate(messages) if "Length filter" in m)  # before training
    assert f"against the lead baseline's {lead['rouge1']} / {lead['rouge2']}" in messages[-1]
    card = ModelCard.load(tmp_path / "run" / "README.md")
    assert "| lead baseline, every reference | aeslc (test) | 12 |" in card.text
    assert card.data.license == "cc-by-nc-sa-4.0" and "rouge1_multi_reference" in expected_metrics(results)
    assert "Zhang & Tetreault, ACL 2019, *This Email Could Save Your Life" in card.text
    assert "inherits those terms" in card.text and "non-commercial and share-alike" in card.text


def test_two_gloo_processes_train_and_evaluate_as_one_does(corpus, tmp_path):
    """`accelerate launch --multi_gpu --num_processes 2` on a CPU-only machine against `--cpu --num_processes 1`:
    the same corpus, truncation counts and predictions file, twice the processes."""
    results = {}
    for name, launcher in (
        ("two", ["--multi_gpu", "--num_processes", "2"]),
        ("one", ["--cpu", "--num_processes", "1"]),
    ):
        flags = {**corpus_flags(corpus), "output_dir": str(tmp_path / name)}
        command = ["accelerate", "launch", *launcher, str(RECIPES / "summarize.py"), "--preset", "tiny"]
        command += [part for key, value in flags.items() for part in (f"--{key.replace('_', '-')}", value)]
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"}
        )
        assert done.returncode == 0, done.stderr[-3000:]
        results[name] = json.loads((tmp_path / name / "results.json").read_text())
    assert results["two"]["num_processes"] == 2 and results["one"]["num_processes"] == 1
    assert results["two"]["truncated"] == results["one"]["truncated"]
    assert set(results["two"]) == set(results["one"]) and results["two"]["steps"] == 4
    test = read_jsonl(corpus["test"])
    assert [p["source"] for p in read_jsonl(tmp_path / "two" / "predictions.jsonl")] == [r["document"] for r in test]


def tuning_flags(folder: Path, files: dict[str, Path]) -> list[str]:
    """recipes/tune_summary_decoding.py's flags for the run in `folder` on the corpus `files`."""
    data = ["--dataset", str(files["train"]), "--validation-file", str(files["dev"])]
    return ["--model", str(folder / "final"), *data, "--text-column", "document", "--summary-column", "abstract"]


def test_decoding_is_tuned_on_validation_alone_and_each_row_scores_as_its_own_decoding(summary_run, corpus, tmp_path):
    folder, _ = summary_run
    flags = tuning_flags(folder, corpus)
    grid = ["--length-penalty", "0.6", "2.0", "--min-new-tokens", "0", "6", "--num-beams", "2"]
    record = recipe("tune_summary_decoding").main([*flags, *grid, "--json", str(tmp_path / "tuning.json")])
    assert json.loads((tmp_path / "tuning.json").read_text()) == record
    rows = record["rows"]
    assert [(r["length_penalty"], r["min_new_tokens"]) for r in rows] == [(0.6, 0), (0.6, 6), (2.0, 0), (2.0, 6)]
    assert record["best"] == {k: v for k, v in max(rows, key=lambda r: r["rouge1"]).items() if k in record["best"]}
    assert record["max_source_tokens"] == 24 and record["validation_items"] == 12  # the run's limit; dev, not test
    # An independent decoding of one setting, scored apart: the row holds its figures.
    model = VanillaTransformerForConditionalGeneration.from_pretrained(folder / "final").eval()
    tokenizer = AutoTokenizer.from_pretrained(folder / "final")
    dev = read_jsonl(corpus["dev"])
    ids = [truncate_ids(tokenizer(row["document"])["input_ids"], 24) for row in dev]
    predictions = []
    for row_ids in ids:
        out = model.generate(
            input_ids=torch.tensor([row_ids]), num_beams=2, length_penalty=2.0, min_new_tokens=6, max_new_tokens=8
        )
        predictions.append(tokenizer.decode(out[0], skip_special_tokens=True))
    assert all(len(tokenizer(p, add_special_tokens=False)["input_ids"]) >= 5 for p in predictions)  # min 6, subwords
    scores = compute_rouge(predictions, [row["abstract"] for row in dev])
    assert {name: rows[3][name] for name in ROUGE} == {name: round(scores[name], 2) for name in ROUGE}
    # Beside the rows, the lead baseline of the same dev items, its k chosen there too.
    lead = record["lead_baseline"]
    firsts = [" ".join(row["document"].split()[: lead["k"]]) for row in dev]
    scores = compute_rouge(firsts, [row["abstract"] for row in dev])
    assert {name: lead[name] for name in ROUGE} == {name: round(scores[name], 2) for name in ROUGE}
    assert lead["validation_rouge1"] == lead["rouge1"] and lead["eval_items"] == 12


def test_tuning_scores_whole_word_copying_on_and_off_and_names_the_recipes_flag(summary_run, corpus, capsys):
    """--whole-word-copy off on: a row each, "on" scoring as the run's own decoding (which has the rule), and the
    best printed as the recipe's flag."""
    flags = [*tuning_flags(summary_run[0], corpus), "--length-penalty", "1.0"]
    tune = recipe("tune_summary_decoding")
    own = tune.main(flags)["rows"][0]
    capsys.readouterr()
    record = tune.main([*flags, "--whole-word-copy", "off", "on"])
    rows = record["rows"]
    assert [(r["whole_word_copy"], r["length_penalty"]) for r in rows] == [("off", 1.0), ("on", 1.0)]
    assert {k: rows[1][k] for k in ROUGE} == {k: own[k] for k in ROUGE}
    chosen = "--whole-word-copy" if record["best"]["whole_word_copy"] == "on" else "--no-whole-word-copy"
    out = capsys.readouterr().out
    assert f"({rows[0 if chosen.startswith('--no') else 1]['rouge1']}): {chosen} --length-penalty 1.0" in out
    lead = record["lead_baseline"]
    assert f"the lead baseline on them: the first {lead['k']} words, ROUGE-1 / 2 / L / Lsum {lead['rouge1']} / " in out


def test_tuning_on_aeslc_prints_the_lead_baseline_against_every_reference_too(summary_run, capsys):
    require(AESLC)
    items = ["--max-items", "6", "--length-penalty", "1.0"]
    record = recipe("tune_summary_decoding").main(["--model", str(summary_run[0] / "final"), *items])
    lead = record["lead_baseline"]
    assert record["dataset"] == str(AESLC) and lead["eval_items"] == 6
    first = " / ".join(str(lead[name]) for name in ROUGE)
    every = " / ".join(str(lead[f"{name}_multi_reference"]) for name in ROUGE)
    line = f"the lead baseline on them: the first {lead['k']} words, ROUGE-1 / 2 / L / Lsum {first}; every reference"
    assert f"{line} {every}\n" in capsys.readouterr().out
    assert lead["rouge1_multi_reference"] >= lead["rouge1"]


@pytest.mark.parametrize(
    "grid, message",
    [
        (["--min-new-tokens", "9", "--max-new-tokens", "4"], "summaries of at least 9 and at most 4 tokens"),
        (["--min-new-tokens", "9"], "summaries of at least 9 and at most 8 tokens"),  # the model's own max: 8
        (["--num-beams", "0"], "--num-beams values must be at least 1"),
        (["--choose-by", "bleu"], "no figure 'bleu' to choose by"),
    ],
)
def test_tuning_refuses_impossible_settings_in_one_line(summary_run, corpus, grid, message, capsys):
    flags = [*tuning_flags(summary_run[0], corpus), "--max-items", "2"]
    with pytest.raises(SystemExit) as stop:
        recipe("tune_summary_decoding").main([*flags, *grid])
    assert message in str(stop.value) + capsys.readouterr().err
