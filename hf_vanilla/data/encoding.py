"""Source/target text pairs to token ids, held as flat arrays, and padded batches of them."""

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch
from datasets import Dataset

from ..tokenization import truncate_ids  # one rule for a long input, in training and decoding


class EncodedPairs:
    """The token ids of sentence pairs: each side one flat int32 array plus row offsets (4 bytes a token, as fairseq's
    indexed datasets), so that a padded batch is a few array operations instead of a Python loop over its rows."""

    def __init__(
        self, source_ids: np.ndarray, source_offsets: np.ndarray, target_ids: np.ndarray, target_offsets: np.ndarray
    ):
        if len(source_offsets) != len(target_offsets):
            raise ValueError(f"{len(source_offsets) - 1} sources but {len(target_offsets) - 1} targets.")
        self.source_ids, self.source_offsets = source_ids, source_offsets
        self.target_ids, self.target_offsets = target_ids, target_offsets
        self.source_lengths = np.diff(source_offsets)
        self.target_lengths = np.diff(target_offsets)
        if len(self) and (self.source_lengths.min() == 0 or self.target_lengths.min() == 0):
            raise ValueError("Every source and target needs at least one token (its </s>).")

    @classmethod
    def from_lists(cls, sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]]) -> "EncodedPairs":
        return cls(*_flat(pa.array(sources, pa.list_(pa.int32()))), *_flat(pa.array(targets, pa.list_(pa.int32()))))

    def __len__(self) -> int:
        return len(self.source_lengths)

    def select(self, indices: Sequence[int] | np.ndarray) -> "EncodedPairs":
        """The pairs `indices`, in that order, as new flat arrays."""
        indices = np.asarray(indices, dtype=np.int64)
        return EncodedPairs(
            *_gather(self.source_ids, self.source_offsets, indices),
            *_gather(self.target_ids, self.target_offsets, indices),
        )

    def length_filter(
        self, max_length: int | tuple[int | None, int | None] | None, max_ratio: float | None
    ) -> tuple["EncodedPairs", dict]:
        """The pairs whose sides have at most `max_length` tokens each (</s> not counted; or (source, target) limits,
        None for none) and whose longer side has at most `max_ratio` times the tokens of the shorter (Moses'
        clean-corpus-n.perl, as fairseq's WMT recipes use it), and how many were dropped for each reason."""
        source, target = self.source_lengths - 1, self.target_lengths - 1
        source_limit, target_limit = max_length if isinstance(max_length, tuple) else (max_length, max_length)
        too_long = np.zeros(len(self), dtype=bool)
        for lengths, limit in ((source, source_limit), (target, target_limit)):
            if limit:
                too_long |= lengths > limit
        longer, shorter = np.maximum(source, target), np.maximum(np.minimum(source, target), 1)
        unbalanced = (longer > max_ratio * shorter) if max_ratio else np.zeros(len(self), dtype=bool)
        keep = ~(too_long | unbalanced)
        dropped = {
            "too_long": int(too_long.sum()),
            "length_ratio": int((unbalanced & ~too_long).sum()),
            "kept": int(keep.sum()),
            "total": len(self),
        }
        if not keep.any():
            raise ValueError(
                f"the length filter (at most {length_limits_text(source_limit, target_limit)}, ratio {max_ratio}) "
                f"drops all {len(self)} pairs"
            )
        return (self if keep.all() else self.select(np.flatnonzero(keep))), dropped

    def collate(
        self, indices: Sequence[int], pad_token_id: int, pad_to_multiple_of: int = 1
    ) -> dict[str, torch.Tensor]:
        """Pairs `indices` as a right-padded batch: `input_ids` (pad_token_id on padding), `attention_mask` (0 there)
        and `labels` (-100 there), each side as long as its longest row rounded up to `pad_to_multiple_of` (aligned
        shapes for a compiled model). The model builds the decoder inputs itself by shifting the labels right."""
        indices = np.asarray(indices, dtype=np.int64)
        input_ids, attention_mask = _padded(
            self.source_ids, self.source_offsets, indices, pad_token_id, pad_to_multiple_of
        )
        labels, _ = _padded(self.target_ids, self.target_offsets, indices, -100, pad_to_multiple_of)
        return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


def length_limits_text(source_limit: int | None, target_limit: int | None) -> str:
    """The token limits of a pair's sides in words: "250 tokens" (both), "100 source and 250 target tokens"."""
    if source_limit == target_limit:
        return f"{source_limit} tokens"
    return f"{source_limit or 'any'} source and {target_limit or 'any'} target tokens"


def _flat(column: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """A list-of-integers Arrow column as (flat int32 values, int64 row offsets from 0), one chunk at a time so that
    a large corpus is never held as int64 in full."""
    values, offsets, total = [np.zeros(0, np.int32)], [np.zeros(1, np.int64)], 0
    for chunk in column.chunks if isinstance(column, pa.ChunkedArray) else [column]:
        chunk_offsets = chunk.offsets.to_numpy().astype(np.int64)
        values.append(chunk.flatten().to_numpy(zero_copy_only=False).astype(np.int32))
        offsets.append(chunk_offsets[1:] - chunk_offsets[0] + total)
        total += int(chunk_offsets[-1] - chunk_offsets[0])
    return np.concatenate(values), np.concatenate(offsets)


def _gather(ids: np.ndarray, offsets: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows `indices` of a flat (ids, offsets) column as a new flat column."""
    starts, lengths = offsets[indices], offsets[indices + 1] - offsets[indices]
    new_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    positions = np.repeat(starts - new_offsets[:-1], lengths) + np.arange(int(new_offsets[-1]))
    return ids[positions], new_offsets


def _padded(
    ids: np.ndarray, offsets: np.ndarray, indices: np.ndarray, fill: int, multiple: int = 1
) -> tuple[torch.Tensor, torch.Tensor]:
    starts = offsets[indices]
    lengths = offsets[indices + 1] - starts
    positions = np.arange(-(-int(lengths.max()) // multiple) * multiple)
    inside = positions[None, :] < lengths[:, None]
    gathered = ids[np.where(inside, starts[:, None] + positions[None, :], 0)]
    return torch.from_numpy(np.where(inside, gathered, fill).astype(np.int64)), torch.from_numpy(
        inside.astype(np.int64)
    )


def encode_truncated_pairs(
    pairs: Dataset,
    tokenizer,
    source_lang: str,
    target_lang: str,
    cache_file: str | Path | None = None,
    max_source_tokens: int | None = None,
    max_target_tokens: int | None = None,
) -> tuple[EncodedPairs, dict]:
    """Token ids of every pair of a `translation` dataset, each side ending with </s>: the source as `input_ids`, the
    target as `labels`, by a batched `datasets.map`; a source longer than `max_source_tokens` tokens (</s> counted;
    None: no limit) keeps its first `max_source_tokens - 1` tokens and its </s>, likewise a target. Returns the pairs
    and the counts `{"sources_truncated", "targets_truncated", "total"}`. With `cache_file`, the map's result is
    written there once and read back by any later call with the same file (other processes of the run, a resumed
    run): run it on the main process first (`accelerator.main_process_first()`)."""
    for name, limit in (("max_source_tokens", max_source_tokens), ("max_target_tokens", max_target_tokens)):
        if limit is not None and limit < 2:
            raise ValueError(f"{name} must be at least 2 (one token and </s>), not {limit}")
    options = {"cache_file_name": str(cache_file), "load_from_cache_file": True} if cache_file else {}
    if cache_file:
        Path(cache_file).parent.mkdir(parents=True, exist_ok=True)

    def encode(batch: dict) -> dict:
        sides = [p[source_lang] for p in batch["translation"]], [p[target_lang] for p in batch["translation"]]
        # verbose=False: a text over the tokenizer's model_max_length (the limit a truncating run records) is cut here
        sources, targets = (tokenizer(side, verbose=False)["input_ids"] for side in sides)
        return {
            "input_ids": [truncate_ids(ids, max_source_tokens) for ids in sources],
            "labels": [truncate_ids(ids, max_target_tokens) for ids in targets],
            "source_truncated": [max_source_tokens is not None and len(ids) > max_source_tokens for ids in sources],
            "target_truncated": [max_target_tokens is not None and len(ids) > max_target_tokens for ids in targets],
        }

    encoded = pairs.map(encode, batched=True, remove_columns=pairs.column_names, desc="encoding", **options)
    table = encoded.with_format("arrow")[:]
    counts = {
        "sources_truncated": int(pc.sum(table.column("source_truncated")).as_py() or 0),
        "targets_truncated": int(pc.sum(table.column("target_truncated")).as_py() or 0),
        "total": len(table),
    }
    return EncodedPairs(*_flat(table.column("input_ids")), *_flat(table.column("labels"))), counts


def encode_pairs(
    pairs: Dataset, tokenizer, source_lang: str, target_lang: str, cache_file: str | Path | None = None
) -> EncodedPairs:
    """Token ids of every pair of a `translation` dataset, each side ending with </s> and never truncated (see
    `encode_truncated_pairs`)."""
    return encode_truncated_pairs(pairs, tokenizer, source_lang, target_lang, cache_file)[0]
