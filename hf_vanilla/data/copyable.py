"""How much of each summary a copy mechanism could copy: the share of its tokens that its (truncated) source holds.
A pointer-generator can only copy a token the source has, so this is the ceiling of copying, and the first figure to
look at for a new corpus or tokenization (See et al.'s and AESLC's summaries reuse many of their document's words,
but a word is only copyable where it is the same token on both sides)."""

from collections.abc import Iterable

import numpy as np

from .encoding import EncodedPairs


def copyable_tokens(pairs: EncodedPairs, special_ids: Iterable[int]) -> dict:
    """Over the pairs (sources as the model reads them: truncated, </s> included), counting each summary's tokens
    without its </s> and never a special token (`special_ids`, which the copy mechanism does not copy):

    - `summary_tokens_in_source`: the share (0-100) of summary tokens that occur in their source;
    - `first_token_in_source`: the share (0-100) of summaries whose first token occurs in their source;
    - `tokens_per_summary`: the mean summary length in tokens (</s> not counted);
    - `pairs`: how many pairs were counted."""
    special = np.fromiter(special_ids, dtype=np.int64)
    found = total = first_found = summaries = 0
    for index in range(len(pairs)):
        source = pairs.source_ids[pairs.source_offsets[index] : pairs.source_offsets[index + 1]]
        summary = pairs.target_ids[pairs.target_offsets[index] : pairs.target_offsets[index + 1]]
        summary = summary[~np.isin(summary, special)]
        if not len(summary):
            continue
        present = np.isin(summary, source[~np.isin(source, special)])
        found, total = found + int(present.sum()), total + len(summary)
        first_found, summaries = first_found + bool(present[0]), summaries + 1
    return {
        "summary_tokens_in_source": round(100.0 * found / max(total, 1), 2),
        "first_token_in_source": round(100.0 * first_found / max(summaries, 1), 2),
        "tokens_per_summary": round(total / max(summaries, 1), 2),
        "pairs": summaries,
    }
