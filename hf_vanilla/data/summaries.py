"""Summarization corpora as `datasets.DatasetDict`s: splits `train` / `validation` / `test` (those present), each with
the columns `text` (the document), `summary` (its reference summary) and `references` (every reference for that item,
the summary first), from Hub names, a folder in AESLC's published layout, or JSONL / CSV / parquet files; and paired
(`as_pairs`) for the training steps, which encode and truncate them (`hf_vanilla.data.encoding`)."""

import logging
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from datasets import Dataset, DatasetDict, load_dataset
from tqdm.auto import tqdm

from ..hub_reach import SUMMARIES_OFFLINE
from .corpora import SPLIT_NAMES, load_hub_dataset

logger = logging.getLogger(__name__)

COLUMNS = ["text", "summary", "references"]
SIDES = ("text", "summary")  # the source and target of each pair
# The column names of user files when none are given: those of the JSON lines example in the README of transformers'
# run_summarization (whose own defaults, None, fall back to a file's first two columns, which guesses wrong on a file
# that starts with an id).
DEFAULT_TEXT_COLUMN, DEFAULT_SUMMARY_COLUMN = "text", "summary"


class SummaryDataError(ValueError):
    """A summarization corpus that would fail or mislead training; the one-line message names the file and row."""


@dataclass(frozen=True)
class HubSummaries:
    """Where a summarization corpus lives on the Hub and what its columns are called."""

    repo: str
    config: str | None
    text: str
    summary: str
    revision: str | None = None


# The Hub repositories today. The old canonical names moved under their authors' organizations; `Samsung/samsum` is
# gone from the Hub (huggingface/datasets#7573), and knkarthick/samsum holds the same SAMSum splits and columns.
# `EdinburghNLP/xsum` is a loading script, which datasets >= 4 no longer runs: its parquet export branch is read.
HUB_SUMMARIES = {
    "aeslc": HubSummaries("Yale-LILY/aeslc", None, "email_body", "subject_line"),
    "cnn_dailymail": HubSummaries("abisee/cnn_dailymail", "3.0.0", "article", "highlights"),
    "xsum": HubSummaries("EdinburghNLP/xsum", None, "document", "summary", revision="refs/convert/parquet"),
    "samsum": HubSummaries("knkarthick/samsum", None, "dialogue", "summary"),
}
FILE_FORMATS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}
AESLC_SPLITS = {"train": "train", "dev": "validation", "test": "test"}
AESLC_SUFFIX = ".subject"
# A field marker of an AESLC file on a line of its own: the sender's subject, then the annotators' (dev and test).
_AESLC_MARKER = re.compile(r"^@(subject|ann\d+)[ \t]*$", re.MULTILINE)


def load_summarization_corpus(
    dataset: str,
    text_column: str | None = None,
    summary_column: str | None = None,
    validation_file: str | None = None,
    test_file: str | None = None,
) -> DatasetDict:
    """Loads `dataset`: a Hub name of `HUB_SUMMARIES` (`aeslc`, `cnn_dailymail` 3.0.0, `xsum`, `samsum`) or its
    repository id; a folder in AESLC's published layout (`train`/`dev`/`test` folders of `*.subject` files, or the
    folder holding `enron_subject_line`); or a JSONL / CSV / parquet training file, with `validation_file` and
    `test_file` beside it. `text_column` and `summary_column` name the columns of files (default `text`, `summary`)
    or override a Hub corpus' own. Returns splits `train` / `validation` / `test` with columns `text`, `summary` and
    `references` (list of strings, the summary first; AESLC's dev and test add their three annotators' subjects).

    Raises `SummaryDataError` (one line, naming the file and the 1-based row) for an empty text or summary, a missing
    column, a file that is not UTF-8 or not readable in its format, or an empty split. Rows of a Hub corpus with an
    empty side, which a user cannot fix, are dropped instead, and their number logged."""
    hub = HUB_SUMMARIES.get(dataset) or next((h for h in HUB_SUMMARIES.values() if h.repo == dataset), None)
    path = Path(dataset)
    if (validation_file or test_file) and (hub or path.is_dir()):
        raise SummaryDataError(
            f"--validation-file and --test-file go with a training file; {dataset} has its own splits"
        )
    if hub:
        return _load_hub(dataset, hub, text_column, summary_column)
    if path.is_dir():
        return _load_aeslc_folder(path)
    if path.is_file():
        files = {"train": path, "validation": validation_file, "test": test_file}
        return _load_files(
            {split: Path(file) for split, file in files.items() if file},
            text_column or DEFAULT_TEXT_COLUMN,
            summary_column or DEFAULT_SUMMARY_COLUMN,
        )
    names = ", ".join(HUB_SUMMARIES)
    raise SummaryDataError(
        f"no summarization corpus {dataset!r}: give a Hub name ({names}), an AESLC folder or a .jsonl, .csv or "
        ".parquet file"
    )


# --- the Hub -------------------------------------------------------------------------------------------------------


def _load_hub(name: str, hub: HubSummaries, text_column: str | None, summary_column: str | None) -> DatasetDict:
    revision = {"revision": hub.revision} if hub.revision else {}
    raw = load_hub_dataset(hub.repo, hub.config, SUMMARIES_OFFLINE, **revision)
    text_column, summary_column = text_column or hub.text, summary_column or hub.summary
    splits = {}
    for split, data in raw.items():
        if split not in SPLIT_NAMES:
            continue
        where = f"{name} ({split})"
        _check_columns(data, where, text_column, summary_column)
        table = data.select_columns([text_column, summary_column]).with_format("arrow")[:]
        keep = pc.invert(pc.or_(_empty(table.column(text_column)), _empty(table.column(summary_column))))
        dropped = len(table) - pc.sum(keep).as_py() if len(table) else 0
        if dropped:
            logger.warning("%s: dropped %d of %d rows with an empty text or summary", where, dropped, len(table))
        table = table.filter(keep)
        splits[SPLIT_NAMES[split]] = _standard(table.column(text_column), table.column(summary_column))
    return _checked(splits, name)


# --- AESLC's published folder ----------------------------------------------------------------------------------------


def _aeslc_root(path: Path) -> Path:
    for root in (path, path / "enron_subject_line"):
        if all((root / split).is_dir() for split in AESLC_SPLITS):
            return root
    raise SummaryDataError(
        f"{path} is not a folder in AESLC's layout (train/, dev/, test/ folders of *{AESLC_SUFFIX} files) "
        "nor a Hub name"
    )


def read_aeslc_file(file: Path) -> dict:
    """One AESLC e-mail: the body (up to the blank line before `@subject`) as `text`, the sender's subject as
    `summary`, and `references` = [subject, ann0, ann1, ...] (dev and test files add annotators' subjects)."""
    try:
        content = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise SummaryDataError(f"{file}: not UTF-8 (byte {error.start}: {error.reason})") from error
    parts = _AESLC_MARKER.split(content)
    fields = dict(zip(parts[1::2], (value.strip() for value in parts[2::2])))
    if "subject" not in fields:
        raise SummaryDataError(f"{file}: no @subject line")
    body = parts[0].strip()
    if not body:
        raise SummaryDataError(f"{file}: empty text (the e-mail body before @subject)")
    if not fields["subject"]:
        raise SummaryDataError(f"{file}: empty summary (nothing after @subject)")
    annotations = sorted((k for k in fields if k.startswith("ann")), key=lambda k: int(k[3:]))
    return {
        "text": body,
        "summary": fields["subject"],
        "references": [fields["subject"], *map(fields.get, annotations)],
    }


def _load_aeslc_folder(path: Path) -> DatasetDict:
    root = _aeslc_root(path)
    splits = {}
    for folder, split in AESLC_SPLITS.items():
        files = sorted((root / folder).glob(f"*{AESLC_SUFFIX}"))  # sorted names: the same order on every machine
        rows = [read_aeslc_file(file) for file in tqdm(files, desc=f"reading AESLC {folder}", unit=" e-mails")]
        if not rows:
            raise SummaryDataError(f"{root / folder}: the {split} split is empty (no *{AESLC_SUFFIX} files)")
        splits[split] = Dataset.from_dict({column: [row[column] for row in rows] for column in COLUMNS})
    return _checked(splits, str(path))


# --- JSONL / CSV / parquet files -------------------------------------------------------------------------------------


def _load_files(files: dict[str, Path], text_column: str, summary_column: str) -> DatasetDict:
    splits = {}
    for split, file in files.items():
        kind = FILE_FORMATS.get(file.suffix.lower())
        if kind is None:
            raise SummaryDataError(f"{file}: not a .jsonl, .json, .csv or .parquet file")
        if not file.is_file():
            raise SummaryDataError(f"{file}: no such file (the {split} split)")
        if not _has_rows(file, kind):
            raise SummaryDataError(f"{file}: the {split} split is empty (no rows)")
        try:
            data = load_dataset(kind, data_files=str(file), split="train")
        except Exception as error:  # pyarrow's and datasets' parse errors, whatever their class
            reason = str(error.__cause__ or error).strip().splitlines()
            raise SummaryDataError(
                f"{file}: not readable as {kind} ({reason[0] if reason else type(error).__name__})"
            ) from error
        _check_columns(data, str(file), text_column, summary_column)
        table = data.select_columns([text_column, summary_column]).with_format("arrow")[:]
        for column, role in ((text_column, "text"), (summary_column, "summary")):
            empty = _empty(table.column(column))
            if len(table) and pc.any(empty).as_py():
                row = pc.index(empty, True).as_py() + 1
                raise SummaryDataError(f"{file} row {row}: empty {role} (column {column!r})")
        splits[split] = _standard(table.column(text_column), table.column(summary_column))
    return _checked(splits, str(files["train"]))


def _nonblank_lines(file: Path) -> int:
    """The lines of `file` holding more than white space; `SummaryDataError` naming the first line that is not UTF-8
    (a newline byte never occurs inside a UTF-8 character, so the file can be checked a line at a time)."""
    count = 0
    with file.open("rb") as handle:
        for number, line in enumerate(handle, 1):
            try:
                count += bool(line.decode("utf-8").strip())
            except UnicodeDecodeError as error:
                raise SummaryDataError(
                    f"{file} line {number}: not UTF-8 (byte {error.start + 1} of the line: {error.reason})"
                ) from error
    return count


def _has_rows(file: Path, kind: str) -> bool:
    """Whether `file` holds at least one record (`datasets` fails on an empty file with no useful message)."""
    if kind == "parquet":
        try:
            return pq.read_metadata(file).num_rows > 0
        except (OSError, pa.ArrowException) as error:
            raise SummaryDataError(f"{file}: not readable as parquet ({error})") from error
    return _nonblank_lines(file) > (1 if kind == "csv" else 0)  # a CSV file's first line is its header


# --- shared checks ---------------------------------------------------------------------------------------------------


def _check_columns(data: Dataset, where: str, text_column: str, summary_column: str) -> None:
    for column, flag in ((text_column, "--text-column"), (summary_column, "--summary-column")):
        if column not in data.column_names:
            raise SummaryDataError(
                f"{where}: no column {column!r} (its columns: {', '.join(data.column_names)}); choose {flag}"
            )
        if data.features[column].dtype not in ("string", "large_string"):
            raise SummaryDataError(
                f"{where}: column {column!r} holds {data.features[column].dtype}, not text; choose {flag}"
            )


def _empty(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """True where `column` holds no text: null, or nothing but whitespace."""
    return pc.fill_null(pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(column)), 0), True)


def _standard(text: pa.ChunkedArray, summary: pa.ChunkedArray) -> Dataset:
    """The corpus' columns: `text`, `summary`, `references` = [summary]."""
    text, summary = text.cast(pa.string()).combine_chunks(), summary.cast(pa.string()).combine_chunks()
    references = pa.ListArray.from_arrays(pa.array(range(len(summary) + 1), pa.int32()), summary)
    return Dataset(pa.table({"text": text, "summary": summary, "references": references}))


def _checked(splits: dict[str, Dataset], name: str) -> DatasetDict:
    if "train" not in splits:
        raise SummaryDataError(f"{name} has no train split (it has {', '.join(splits) or 'none'})")
    for split, data in splits.items():
        if len(data) == 0:
            raise SummaryDataError(f"{name}: the {split} split is empty")
    return DatasetDict(splits)


# --- held-out splits of a single file --------------------------------------------------------------------------------

# A split held out of a training file (`hold_out`): this share of its rows, at least one and at most HOLD_OUT_MOST.
HOLD_OUT_SHARE, HOLD_OUT_MOST, HOLD_OUT_SEED = 0.05, 2000, 0


def hold_out(corpus: DatasetDict, splits: tuple[str, ...] = ("validation", "test"), seed: int = HOLD_OUT_SEED):
    """`corpus` with each of `splits` that it lacks held out of its train split, as transformers' run_summarization
    does with --validation_split_percentage: HOLD_OUT_SHARE of the rows each (at least 1, at most HOLD_OUT_MOST),
    chosen by a shuffle with `seed` (the same rows on every machine and run), the rest kept for training. Returns
    the corpus and a record for results.json, {split: rows, ..., "train": rows kept, "seed": seed} ({} when nothing
    was held out). `SummaryDataError` when the training split is too small to give them."""
    missing = [split for split in splits if split not in corpus]
    if not missing:
        return corpus, {}
    train = corpus["train"]
    size = max(1, min(HOLD_OUT_MOST, round(HOLD_OUT_SHARE * len(train))))
    if len(train) < size * len(missing) + 2:
        raise SummaryDataError(
            f"the training file has {len(train)} rows, too few to hold out {', '.join(missing)} rows from: give "
            + " and ".join(f"--{split}-file" for split in missing)
        )
    order = np.random.default_rng(seed).permutation(len(train))
    splits_out = dict(corpus)
    for index, split in enumerate(missing):
        splits_out[split] = train.select(sorted(order[index * size : (index + 1) * size]))
    splits_out["train"] = train.select(sorted(order[len(missing) * size :]))
    record = {split: size for split in missing} | {"train": len(splits_out["train"]), "seed": seed}
    logger.info(
        "Held out %s of the training file's %d rows (seed %d); %d rows left for training",
        ", ".join(f"{size} {split}" for split in missing),
        len(train),
        seed,
        record["train"],
    )
    return DatasetDict(splits_out), record


# --- token ids -------------------------------------------------------------------------------------------------------


def as_pairs(corpus: DatasetDict | Dataset) -> DatasetDict | Dataset:
    """The summaries with a `translation` column {text, summary} added, the schema the training steps and
    `hf_vanilla.data.encoding.encode_truncated_pairs` read (`SIDES` names the two sides)."""
    return corpus.map(
        lambda batch: {"translation": [dict(zip(SIDES, pair)) for pair in zip(batch["text"], batch["summary"])]},
        batched=True,
        desc="pairing",
    )
