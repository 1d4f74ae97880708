"""A task's splits written as a peer reads them: one item a line, in the demo's own shared BPE pieces
(space-separated, without the </s> every peer adds itself), fairseq's `dict.txt` of those pieces, and the way back
from a peer's output line to text. Each task's module (`translation`, `summarization`, `parsing`) writes its own
splits with these."""

from dataclasses import dataclass, field
from pathlib import Path

from hf_vanilla.data.encoding import EncodedPairs
from hf_vanilla.tokenization import (
    SPECIAL_TOKENS,
    BpeOptions,
    check_provenance,
    ensure_shared_tokenizer,
    load_tokenizer,
    text_fingerprint,
)

SPLITS = {"train": "train", "validation": "valid", "test": "test"}  # the corpus' split -> the peers' file stem


def shared_tokenizer(
    folder: Path,
    train_split,
    vocab_size: int,
    dataset: str,
    source: Path | None,
    sides: tuple[str, str],
    options: BpeOptions | None = None,
):
    """A demo's shared BPE of `vocab_size` pieces over the `sides` of `train_split`: trained into `folder` by the
    function the recipe trains it with (`ensure_shared_tokenizer`, with the recipe's `options`; reused when `folder`
    holds it already), or, with `source` (a finished demo run's `tokenizer` folder), read from there once its record
    says it was trained on the same text and size (and `options`, where given)."""
    if source is not None:
        expected = {"vocab_size": vocab_size, "text_sha256": text_fingerprint(train_split, sides)}
        check_provenance(source, {**expected, **(options.record() if options else {})})
        return load_tokenizer(source)
    ensure_shared_tokenizer(folder, train_split, sides, vocab_size, dataset, options)
    return load_tokenizer(folder)


def piece_line(ids, tokenizer) -> str:
    """One sentence's ids as the line a peer reads: its pieces separated by spaces, the final </s> left out."""
    ids = [int(i) for i in ids]
    if ids and ids[-1] == tokenizer.eos_token_id:
        ids = ids[:-1]
    return " ".join(tokenizer.convert_ids_to_tokens(ids))


def text_from_pieces(line: str, tokenizer) -> str:
    """A peer's output line of pieces back to text, as hf_vanilla decodes its own ids (special tokens dropped)."""
    ids = tokenizer.convert_tokens_to_ids(line.split())
    return tokenizer.decode(ids, skip_special_tokens=True)


@dataclass
class Exported:
    """Where the splits went and how many pairs each holds (the training split after the length filter), and any other
    figure of the export a task records (`details`: a summarization export's truncation counts)."""

    folder: Path
    counts: dict[str, int]
    dropped: dict[str, int]
    tokens: dict[str, dict[str, int]]  # split -> {"source": ..., "target": ...}, </s> counted
    details: dict = field(default_factory=dict)


def write_sides(examples: EncodedPairs, tokenizer, stem: Path, sides: tuple[str, str]) -> int:
    """Writes `stem.<source side>` and `stem.<target side>`: each pair's ids as a line of pieces (`piece_line`).
    Returns how many of the ids are the tokenizer's unknown token."""
    unknown = 0
    for side, ids, offsets in (
        (sides[0], examples.source_ids, examples.source_offsets),
        (sides[1], examples.target_ids, examples.target_offsets),
    ):
        lines = [piece_line(ids[offsets[i] : offsets[i + 1]], tokenizer) for i in range(len(examples))]
        write_lines(stem.with_name(f"{stem.name}.{side}"), lines)
        unknown += int((ids == tokenizer.unk_token_id).sum())
    return unknown


def read_dictionary(path: Path) -> list[str]:
    """The pieces of a `dict.txt` (`write_dictionary`'s `piece count` lines), in its order, one a line."""
    return [line.rsplit(" ", 1)[0] for line in path.read_text(encoding="utf-8").splitlines()]


def longest_source(path: Path) -> int:
    """The most tokens of a line of the piece file `path`, its </s> counted as hf_vanilla counts it (at least 1)."""
    return max((len(line.split()) + 1 for line in path.read_text(encoding="utf-8").splitlines()), default=1)


def write_lines(path: Path, lines: list[str]) -> None:
    """Writes `lines` to `path`, each ended by a newline (UTF-8)."""
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def write_dictionary(tokenizer, path: Path) -> list[str]:
    """fairseq's `dict.txt` (`piece count` lines) of every piece of the vocabulary but the four special tokens, in id
    order: with fairseq's own four specials in front, the dictionary has the tokenizer's size, so that both models
    have the same vocabulary. Returns the pieces written."""
    special = set(SPECIAL_TOKENS)
    pieces = [piece for piece in tokenizer.convert_ids_to_tokens(list(range(len(tokenizer)))) if piece not in special]
    if any(not piece or any(c.isspace() for c in piece) for piece in pieces):
        raise ValueError("a vocabulary piece is empty or holds white space: it cannot be a line's token")
    path.write_text("".join(f"{piece} 1\n" for piece in pieces), encoding="utf-8")
    return pieces
