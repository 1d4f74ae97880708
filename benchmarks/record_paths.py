"""A record's file name that no earlier record holds: a record is never rewritten by a later run."""

from pathlib import Path


def unused_stem(folder: Path, stem: str, suffixes: tuple[str, ...] = (".json",)) -> str:
    """`stem`, else `stem-2`, `stem-3`, ...: the first of which no file FOLDER/STEM+SUFFIX exists."""
    candidate, taken = stem, 1
    while any((folder / f"{candidate}{suffix}").exists() for suffix in suffixes):
        taken += 1
        candidate = f"{stem}-{taken}"
    return candidate
