"""The WSJ treebank as training, development and test trees: LDC's layout or NLTK's sample."""

from pathlib import Path

from ..parsing.cleanup import preprocess
from ..parsing.trees import read_treebank

# Standard splits. LDC: WSJ sections 02-21 train, 22 development, 23 test. NLTK's 199-file sample: files 0001-0159
# train, 0160-0179 development, 0180-0199 test.
LDC_SPLITS = {"train": range(2, 22), "validation": range(22, 23), "test": range(23, 24)}
NLTK_SPLITS = {"train": range(1, 160), "validation": range(160, 180), "test": range(180, 200)}


def treebank_splits(path: str | Path) -> dict[str, list[str]]:
    """Preprocessed trees of each split of a WSJ treebank: LDC's layout (a folder with section folders 00-24) or
    NLTK's sample (`combined/wsj_0001.mrg` ..), split as `LDC_SPLITS` / `NLTK_SPLITS`."""
    path = Path(path)
    files = sorted(path.rglob("wsj_*.mrg"))
    if not files:
        raise FileNotFoundError(f"No wsj_*.mrg files under {path}")
    numbers = {file: int(file.stem.split("_")[1]) for file in files}
    sectioned = any(file.parent.name.isdigit() for file in files)
    splits = LDC_SPLITS if sectioned else NLTK_SPLITS
    key = (lambda number: number // 100) if sectioned else (lambda number: number)
    return {
        split: [preprocess(tree) for file in files if key(numbers[file]) in chosen for tree in read_treebank(file)]
        for split, chosen in splits.items()
    }


def treebank_path(name: str) -> Path:
    """`nltk` resolves through NLTK's data path (NLTK_DATA) to its WSJ sample, as `nltk.corpus.treebank` does; any
    other name is a folder of `.mrg` files."""
    if name != "nltk":
        return Path(name)
    import nltk

    try:
        return Path(nltk.data.find("corpora/treebank/combined"))
    except LookupError as error:
        raise FileNotFoundError(
            "NLTK's treebank sample is not installed: python -m nltk.downloader treebank, or set NLTK_DATA"
        ) from error
