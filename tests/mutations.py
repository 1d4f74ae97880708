"""Bugs injected into the model by patching its objects (never its source text), for `tests/test_mutations.py`
and `tests/rounding_margins.py`: each breaks `modeling_vanilla` the way a real bug would.

`MUTATIONS[name] = (mutate, files)`: `mutate(module)` patches a loaded `modeling_vanilla` module (the package's or a
Hub remote-code copy of it), and `files` are the test files whose default tests must then fail. A process runs under
a mutation when `HF_VANILLA_MUTATION` names it and `mutation_site/` (its `sitecustomize`) is on its PYTHONPATH."""

import functools
import os
from pathlib import Path
from types import ModuleType

SITE = Path(__file__).resolve().parent / "mutation_site"
VARIABLE = "HF_VANILLA_MUTATION"


class _ForgetfulCache:
    """A self-attention cache that stores the new keys and values but hands back only them, as if it had no past."""

    def __init__(self, cache, encoder_decoder_cache: type):
        self.cache = cache.self_attention_cache if isinstance(cache, encoder_decoder_cache) else cache

    def update(self, key_states, value_states, layer_idx, *args, **kwargs):
        self.cache.update(key_states, value_states, layer_idx, *args, **kwargs)
        return key_states, value_states


def _self_attention_cache_ignores_its_past(m: ModuleType) -> None:
    forward = m.VanillaAttention.forward

    @functools.wraps(forward)
    def mutated(self, hidden_states, attention_mask=None, key_value_states=None, past_key_values=None, **kwargs):
        if not self.is_cross_attention and past_key_values is not None:
            past_key_values = _ForgetfulCache(past_key_values, m.EncoderDecoderCache)
        return forward(self, hidden_states, attention_mask, key_value_states, past_key_values, **kwargs)

    m.VanillaAttention.forward = mutated


def _causal_mask_lets_the_future_in(m: ModuleType) -> None:
    m.create_causal_mask = lambda **kwargs: None  # the decoder's global: no mask
    init = m.VanillaAttention.__init__

    @functools.wraps(init)
    def mutated(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.is_causal = False  # nor SDPA's own causal masking

    m.VanillaAttention.__init__ = mutated


def _beam_search_reorders_no_cache(m: ModuleType) -> None:
    """The beam search (the module beside `modeling_vanilla`, the package's or a remote-code copy) leaves every row's
    cache where it was after a beam reorder."""
    import sys

    sys.modules[m.__name__.rpartition(".")[0] + ".beam_search_vanilla"].reorder_cache = lambda cache, beam_idx: None


def _decoder_layer_mask(m: ModuleType, last_layer_only: bool) -> None:
    """The decoder layers (or the copying last layer alone) read the source with no padding mask."""
    forward = m.VanillaDecoderLayer.forward

    @functools.wraps(forward)
    def mutated(self, *args, **kwargs):
        if self.returns_copy_attention or not last_layer_only:
            kwargs["encoder_attention_mask"] = None
        return forward(self, *args, **kwargs)

    m.VanillaDecoderLayer.forward = mutated


# Every test file that compares decodings: hf_vanilla's own, against MarianMTModel and CTranslate2, as remote code.
ALL_DECODING_FILES = [
    "test_modeling.py",
    "test_marian_equivalence.py",
    "test_remote_code.py",
    "test_convert.py",
    "test_ct2.py",
]
MUTATIONS = {
    "the self-attention cache ignores its past": (_self_attention_cache_ignores_its_past, ALL_DECODING_FILES),
    "the causal mask lets the future in": (_causal_mask_lets_the_future_in, ALL_DECODING_FILES),
    # The CTranslate2 tests' beam searches do not show this one and the converter's show it in one test only
    # (docs/experiments.md), so the beam tests of these two files are the ones required.
    "beam search reorders no cache": (
        _beam_search_reorders_no_cache,
        ["test_modeling.py", "test_marian_equivalence.py"],
    ),
    "cross-attention ignores the source padding": (
        functools.partial(_decoder_layer_mask, last_layer_only=False),
        ALL_DECODING_FILES,
    ),
    # test_modeling.py's decoding tests run on the pointer-generator too.
    "the pointer-generator copies from source padding": (
        functools.partial(_decoder_layer_mask, last_layer_only=True),
        ["test_modeling.py", "test_pointer_generator.py"],
    ),
}


def mutate(module: ModuleType, name: str) -> None:
    """Applies mutation `name` to a `modeling_vanilla` module, once (marked by `module.__mutation__`)."""
    if getattr(module, "__mutation__", None) == name:
        return
    MUTATIONS[name][0](module)
    module.__mutation__ = name


def carrying(env: dict[str, str], name: str) -> dict[str, str]:
    """`env` for a process under mutation `name`: the variable set and `mutation_site/` first on its PYTHONPATH."""
    paths = [str(SITE), *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(SITE))]
    return {**env, VARIABLE: name, "PYTHONPATH": os.pathsep.join(paths)}


def environment(name: str | None) -> dict[str, str]:
    """os.environ for a process under mutation `name` (None: the control, no mutation)."""
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    return env if name is None else carrying(env, name)
