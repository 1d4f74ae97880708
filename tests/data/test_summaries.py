"""Summarization corpora: AESLC's published folder on the shared data, JSONL / CSV / parquet round trips with any
column names, the Hub names' repositories, configurations, columns and splits (with `datasets.load_dataset`
replaced by local data of the real shape), every bad-input error, and the truncating encoding."""

import json

import pandas as pd
import pytest
from datasets import Dataset, DatasetDict

from hf_vanilla.data import corpora
from hf_vanilla.data.encoding import encode_truncated_pairs
from hf_vanilla.data.summaries import (
    HUB_SUMMARIES,
    SIDES,
    SummaryDataError,
    as_pairs,
    load_summarization_corpus,
)
from hf_vanilla.tokenization import train_shared_bpe

from runs import SHARED_DATA, require

AESLC = SHARED_DATA / "aeslc" / "enron_subject_line"
COLUMNS = ["text", "summary", "references"]


# --- AESLC's folder --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def aeslc():
    return load_summarization_corpus(str(require(AESLC)))


def test_aeslc_folder_has_the_published_splits_and_counts(aeslc):
    assert {split: len(data) for split, data in aeslc.items()} == {"train": 14436, "validation": 1960, "test": 1906}
    assert all(data.column_names == COLUMNS for data in aeslc.values())


def test_aeslc_reads_a_known_e_mail_with_its_annotators_subjects(aeslc):
    # dev/allen-p_inbox_29.subject, the first dev file by name.
    first = aeslc["validation"][0]
    assert first["text"].startswith("Hi Phillip,  This message is to confirm our meeting with you on, Tuesday")
    assert first["text"].endswith("I can be reached at 713-345-6687.\nThanks,")
    assert first["summary"] == "Confirmation: Risk Management Simulation Meeting 10/30/01"
    assert first["references"] == [
        "Confirmation: Risk Management Simulation Meeting 10/30/01",
        "meeting confimation - tues, 8/10",
        "meeting confirmation",
        "meeting confirmed",
    ]
    # train/allen-p_inbox_20.subject, the first training file: its subject alone.
    train = aeslc["train"][0]
    assert train["summary"] == "Service Agreement" and train["references"] == ["Service Agreement"]
    assert train["text"].endswith("<<Bishopscontract.doc>>")
    assert all(len(refs) == 4 for refs in aeslc["test"]["references"])


def test_aeslc_parent_folder_is_accepted_too():
    corpus = load_summarization_corpus(str(require(AESLC).parent))
    assert len(corpus["test"]) == 1906


def write_aeslc(root, files: dict[str, bytes | str]) -> None:
    for split in ("train", "dev", "test"):
        (root / split).mkdir(parents=True, exist_ok=True)
    default = "Body line one.\nBody line two.\n\n@subject\nA subject"
    for split in ("train", "dev", "test"):
        (root / split / "a.subject").write_text(default)
    for name, content in files.items():
        path = root / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"dev/b.subject": "A body with no subject line"}, r"dev/b\.subject: no @subject line$"),
        ({"test/b.subject": "\n\n@subject\nSubject"}, r"test/b\.subject: empty text \(the e-mail body"),
        ({"train/b.subject": "Body\n\n@subject\n  \n"}, r"train/b\.subject: empty summary"),
        ({"train/b.subject": b"Caf\xe9 body\n\n@subject\nS"}, r"train/b\.subject: not UTF-8"),
    ],
)
def test_aeslc_bad_files_stop_with_one_line_naming_the_file(tmp_path, files, message):
    write_aeslc(tmp_path, files)
    with pytest.raises(SummaryDataError, match=message) as error:
        load_summarization_corpus(str(tmp_path))
    assert "\n" not in str(error.value)


def test_aeslc_empty_split_and_wrong_layout_are_refused(tmp_path):
    write_aeslc(tmp_path, {})
    (tmp_path / "test" / "a.subject").unlink()
    with pytest.raises(SummaryDataError, match=r"test: the test split is empty"):
        load_summarization_corpus(str(tmp_path))
    with pytest.raises(SummaryDataError, match="not a folder in AESLC's layout"):
        load_summarization_corpus(str(tmp_path / "train"))


# --- files -----------------------------------------------------------------------------------------------------------

ROWS = {
    "train": [("First document text.", "First summary"), ("Ünïcode document, two\nlines.", 'Second, "quoted"')],
    "validation": [("Validation document.", "Validation summary")],
    "test": [("Test document.", "Test summary")],
}


def write_table(path, rows, text="document", summary="abstract"):
    frame = pd.DataFrame(
        {"id": range(len(rows)), text: [r[0] for r in rows], summary: [r[1] for r in rows]},
        columns=["id", text, summary],
    )
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in frame.to_dict("records")))
    elif path.suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path)
    return path


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_files_round_trip_with_custom_column_names(tmp_path, suffix):
    files = {split: write_table(tmp_path / f"{split}{suffix}", rows) for split, rows in ROWS.items()}
    corpus = load_summarization_corpus(
        str(files["train"]),
        text_column="document",
        summary_column="abstract",
        validation_file=str(files["validation"]),
        test_file=str(files["test"]),
    )
    for split, rows in ROWS.items():
        assert corpus[split].column_names == COLUMNS
        assert corpus[split]["text"] == [r[0] for r in rows]
        assert corpus[split]["summary"] == [r[1] for r in rows]
        assert corpus[split]["references"] == [[r[1]] for r in rows]


def test_files_default_to_text_and_summary_columns(tmp_path):
    train = write_table(tmp_path / "train.jsonl", ROWS["train"], text="text", summary="summary")
    corpus = load_summarization_corpus(str(train))
    assert list(corpus) == ["train"] and corpus["train"]["summary"] == [r[1] for r in ROWS["train"]]


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
@pytest.mark.parametrize(("row", "side"), [(("", "A summary"), "text"), (("A text", "   "), "summary")])
def test_an_empty_side_names_the_file_and_row(tmp_path, suffix, row, side):
    rows = [("Good text.", "Good summary"), ("Good text two.", "Good summary two"), row]
    train = write_table(tmp_path / f"train{suffix}", rows)
    with pytest.raises(SummaryDataError) as error:
        load_summarization_corpus(str(train), text_column="document", summary_column="abstract")
    column = "document" if side == "text" else "abstract"
    assert str(error.value) == f"{train} row 3: empty {side} (column {column!r})"


def test_a_null_summary_in_jsonl_is_an_empty_summary(tmp_path):
    train = tmp_path / "train.jsonl"
    train.write_text('{"text": "a", "summary": "b"}\n{"text": "c", "summary": null}\n')
    with pytest.raises(SummaryDataError, match=r"train\.jsonl row 2: empty summary"):
        load_summarization_corpus(str(train))


def test_a_missing_column_names_the_columns_there_are(tmp_path):
    train = write_table(tmp_path / "train.csv", ROWS["train"])
    with pytest.raises(SummaryDataError) as error:
        load_summarization_corpus(str(train), text_column="document")
    assert str(error.value) == (
        f"{train}: no column 'summary' (its columns: id, document, abstract); choose --summary-column"
    )
    with pytest.raises(SummaryDataError, match="column 'id' holds int64, not text; choose --text-column"):
        load_summarization_corpus(str(train), text_column="id", summary_column="abstract")


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_a_file_that_is_not_utf8_names_the_line(tmp_path, suffix):
    validation = write_table(tmp_path / f"validation{suffix}", ROWS["validation"])
    train = tmp_path / f"train{suffix}"
    write_table(train, ROWS["train"])
    lines = train.read_bytes().splitlines(keepends=True)
    lines.insert(2, b'{"document": "caf\xe9", "abstract": "x"}\n' if suffix == ".jsonl" else b"9,caf\xe9,x\n")
    train.write_bytes(b"".join(lines))
    with pytest.raises(SummaryDataError) as error:
        load_summarization_corpus(str(train), "document", "abstract", validation_file=str(validation))
    assert str(error.value).startswith(f"{train} line 3: not UTF-8 (byte ")


def test_an_empty_split_and_unreadable_files_are_refused(tmp_path):
    train = write_table(tmp_path / "train.jsonl", ROWS["train"])
    empty = write_table(tmp_path / "validation.parquet", [])
    with pytest.raises(SummaryDataError) as error:
        load_summarization_corpus(str(train), "document", "abstract", validation_file=str(empty))
    assert str(error.value) == f"{empty}: the validation split is empty (no rows)"
    for content, suffix in (("", ".jsonl"), ("\n \n", ".jsonl"), ("document,abstract\n", ".csv")):
        (tmp_path / f"test{suffix}").write_text(content)
        with pytest.raises(SummaryDataError, match=r"test\.(jsonl|csv): the test split is empty \(no rows\)$"):
            load_summarization_corpus(str(train), "document", "abstract", test_file=str(tmp_path / f"test{suffix}"))
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"document": "a", "abstract": "b"}\n{"document": \n')
    with pytest.raises(SummaryDataError, match=r"broken\.jsonl: not readable as json \(") as error:
        load_summarization_corpus(str(broken), "document", "abstract")
    assert "\n" not in str(error.value)
    with pytest.raises(SummaryDataError, match=r"notes\.txt: not a \.jsonl, \.json, \.csv or \.parquet file"):
        (tmp_path / "notes.txt").write_text("x")
        load_summarization_corpus(str(tmp_path / "notes.txt"))
    with pytest.raises(SummaryDataError, match="no summarization corpus 'nowhere.jsonl'"):
        load_summarization_corpus("nowhere.jsonl")
    with pytest.raises(SummaryDataError, match=r"missing\.csv: no such file \(the test split\)"):
        load_summarization_corpus(str(train), "document", "abstract", test_file=str(tmp_path / "missing.csv"))


# --- Hub names -------------------------------------------------------------------------------------------------------

# What each Hub name loads: repository, configuration, revision, document and summary columns and the split names.
HUB = {
    "aeslc": ("Yale-LILY/aeslc", None, None, "email_body", "subject_line", ["train", "validation", "test"]),
    "cnn_dailymail": ("abisee/cnn_dailymail", "3.0.0", None, "article", "highlights", ["train", "validation", "test"]),
    "xsum": (
        "EdinburghNLP/xsum",
        None,
        "refs/convert/parquet",
        "document",
        "summary",
        ["train", "validation", "test"],
    ),
    "samsum": ("knkarthick/samsum", None, None, "dialogue", "summary", ["train", "validation", "test"]),
}


@pytest.mark.parametrize("name", sorted(HUB))
def test_hub_names_load_their_repository_columns_and_splits(monkeypatch, name):
    repo, config, revision, text, summary, splits = HUB[name]
    calls = []

    def fake_load_dataset(path, name=None, **kwargs):
        calls.append((path, name, kwargs.get("revision")))
        return DatasetDict(
            {
                split: Dataset.from_dict(
                    {
                        "id": ["1", "2", "3"],
                        text: [f"{split} doc {i}" for i in range(2)] + ["  "],
                        summary: [f"{split} sum {i}" for i in range(3)],
                    }
                )
                for split in splits
            }
        )

    monkeypatch.setattr(corpora, "load_dataset", fake_load_dataset)
    for given in (name, repo):
        corpus = load_summarization_corpus(given)
        assert calls.pop() == (repo, config, revision)
        assert list(corpus) == ["train", "validation", "test"]
        # The third row's document is blank: a Hub corpus' empty rows are dropped (a user cannot fix them).
        assert corpus["validation"].to_dict() == {
            "text": ["validation doc 0", "validation doc 1"],
            "summary": ["validation sum 0", "validation sum 1"],
            "references": [["validation sum 0"], ["validation sum 1"]],
        }
    assert set(HUB_SUMMARIES) == set(HUB)


def test_hub_split_names_are_mapped_and_a_missing_column_is_named(monkeypatch):
    def fake_load_dataset(path, name=None, **kwargs):
        row = {"email_body": ["b"], "subject_line": ["s"]}
        return DatasetDict({"train": Dataset.from_dict(row), "dev": Dataset.from_dict(row)})

    monkeypatch.setattr(corpora, "load_dataset", fake_load_dataset)
    assert list(load_summarization_corpus("aeslc")) == ["train", "validation"]
    with pytest.raises(SummaryDataError, match=r"^xsum \(train\): no column 'document' \(its columns: email_body"):
        load_summarization_corpus("xsum")
    with pytest.raises(SummaryDataError, match="go with a training file"):
        load_summarization_corpus("aeslc", validation_file="dev.jsonl")


# --- encoding --------------------------------------------------------------------------------------------------------


def encode_summaries(split, tokenizer, max_source_tokens, max_target_tokens, cache_file=None):
    """The summaries' token ids as the training steps encode them: paired (`as_pairs`), then truncated."""
    return encode_truncated_pairs(as_pairs(split), tokenizer, *SIDES, cache_file, max_source_tokens, max_target_tokens)


@pytest.fixture(scope="module")
def tokenizer(aeslc):
    sample = aeslc["train"].select(range(300))
    return train_shared_bpe(list(sample["text"]) + list(sample["summary"]), vocab_size=400, show_progress=False)


def test_encoding_truncates_keeping_the_end_of_sentence_and_counts(aeslc, tokenizer, tmp_path):
    split = aeslc["validation"].select(range(200))
    full_sources = tokenizer(list(split["text"]))["input_ids"]
    full_targets = tokenizer(list(split["summary"]))["input_ids"]
    # Limits at the median lengths, so that some items are cut and some are not.
    source_limit, target_limit = (sorted(map(len, ids))[100] for ids in (full_sources, full_targets))
    cache = tmp_path / "cache" / "dev.arrow"
    pairs, counts = encode_summaries(split, tokenizer, source_limit, target_limit, cache_file=cache)
    assert counts == {
        "sources_truncated": sum(len(ids) > source_limit for ids in full_sources),
        "targets_truncated": sum(len(ids) > target_limit for ids in full_targets),
        "total": 200,
    }
    assert 0 < counts["sources_truncated"] < 200 and 0 < counts["targets_truncated"] < 200
    eos = tokenizer.eos_token_id
    for i, (source, target) in enumerate(zip(full_sources, full_targets)):
        for full, limit, ids, offsets in (
            (source, source_limit, pairs.source_ids, pairs.source_offsets),
            (target, target_limit, pairs.target_ids, pairs.target_offsets),
        ):
            row = ids[offsets[i] : offsets[i + 1]].tolist()
            expected = full if len(full) <= limit else full[: limit - 1] + [eos]
            assert row == expected and row[-1] == eos
    again, counts_again = encode_summaries(split, tokenizer, source_limit, target_limit, cache_file=cache)
    assert counts_again == counts and (again.source_ids == pairs.source_ids).all() and cache.exists()
    untruncated, none_cut = encode_summaries(split, tokenizer, None, None)
    assert none_cut["sources_truncated"] == 0 and len(untruncated.source_ids) == sum(map(len, full_sources))
    with pytest.raises(ValueError, match="max_target_tokens must be at least 2"):
        encode_summaries(split, tokenizer, 64, 1)


def test_a_single_file_gives_its_own_validation_and_test_rows_seeded_and_disjoint():
    """`hold_out`: 5% of the rows each (at least 1), the same rows every time, none in two splits, none lost; a
    split the corpus has is kept as it is; a file too small to give them is one line naming the flags."""
    from datasets import Dataset, DatasetDict

    from hf_vanilla.data.summaries import SummaryDataError, hold_out

    train = Dataset.from_dict({"text": [f"document {i}" for i in range(100)], "summary": [str(i) for i in range(100)]})
    corpus, record = hold_out(DatasetDict({"train": train}))
    assert record == {"validation": 5, "test": 5, "train": 90, "seed": 0}
    rows = {split: set(corpus[split]["summary"]) for split in ("train", "validation", "test")}
    assert sum(map(len, rows.values())) == 100 and set.union(*rows.values()) == set(train["summary"])
    assert hold_out(DatasetDict({"train": train}))[0]["test"]["summary"] == corpus["test"]["summary"]
    given = DatasetDict({"train": train, "test": train.select(range(3))})
    kept, record = hold_out(given)
    assert kept["test"]["summary"] == ["0", "1", "2"] and record == {"validation": 5, "train": 95, "seed": 0}
    with pytest.raises(SummaryDataError) as error:
        hold_out(DatasetDict({"train": train.select(range(3))}))
    assert str(error.value) == (
        "the training file has 3 rows, too few to hold out validation, test rows from: give --validation-file and "
        "--test-file"
    )
