"""The former name of `hf_vanilla.batch_decoding` (a model loaded and its inputs decoded in batches, for the command
line and the app), kept for code written against it, such as a published model card's snippet: each name is
`batch_decoding`'s, with a FutureWarning. Nothing in this repository imports it (`tests/test_layering.py`)."""

import warnings

from . import batch_decoding


def __getattr__(name: str) -> object:
    value = getattr(batch_decoding, name)  # a name batch_decoding lacks: its AttributeError
    warnings.warn(
        f"hf_vanilla.decoding is deprecated and will be removed: import {name} from hf_vanilla.batch_decoding.",
        FutureWarning,
        stacklevel=2,
    )
    return value
