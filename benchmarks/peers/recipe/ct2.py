"""hf_vanilla's CTranslate2 export in its own row: a finished recipe run's final model exported (`export_ct2`) and
decoded on the test split at the demo's beam with what CTranslate2 can express (the GNMT penalty and the per-source
length limit cannot be: `translate_options` refuses them), timed and scored like every other system."""

import tempfile
import time
from pathlib import Path

# The decoding CTranslate2 is given in place of the recipe's: its rows of the settings table.
CT2_DIFFERENCES = (
    ("length penalty", "GNMT: log P / ((5 + len(Y)) / 6)^alpha", "length_penalty alpha: log P / len(Y)^alpha"),
    (
        "maximum output",
        "source tokens (with </s>) + max_length_offset, per sentence",
        "max_decoding_length: the longest test source (with </s>) + max_length_offset, one for all",
    ),
)


def ct2_settings(longest_source: int, offset: int) -> dict:
    """`translate_options` overrides for the recipe's model: length normalization instead of GNMT's penalty, and
    one length limit (`max_new_tokens`, </s> included) for the whole split in place of the per-source offset."""
    return {"length_penalty_style": "power", "max_new_tokens": longest_source + offset}


def decode_with_ct2(model_folder: Path, sources: list[str], threads: int | None, max_tokens: int = 4000) -> dict:
    """Exports `model_folder` to CTranslate2 (float32), decodes `sources` in batches of at most `max_tokens` source
    tokens on `threads` CPU threads (None: 2 or the cores there are) and returns the outputs in order, the decoding
    seconds (export and loading left out) and the options used."""
    import ctranslate2
    import torch

    from hf_vanilla import VanillaTransformerForConditionalGeneration
    from hf_vanilla.ct2 import export_ct2, translate_options, vocabulary
    from hf_vanilla.tokenization import load_tokenizer

    model = VanillaTransformerForConditionalGeneration.from_pretrained(model_folder)
    tokenizer = load_tokenizer(model_folder)
    tokens = vocabulary(tokenizer, model.config.vocab_size)
    source_ids = tokenizer(sources, verbose=False)["input_ids"]
    offset = model.generation_config.max_length_offset
    options = translate_options(model.generation_config, tokens, **ct2_settings(max(map(len, source_ids)), offset))
    with tempfile.TemporaryDirectory() as folder:
        export_ct2(model, Path(folder) / "ct2", tokenizer=tokenizer, force=True)
        threads = threads or torch.get_num_threads()
        translator = ctranslate2.Translator(
            str(Path(folder) / "ct2"), device="cpu", compute_type="float32", intra_threads=threads, inter_threads=1
        )
        batch = [[tokens[i] for i in ids] for ids in source_ids]
        start = time.perf_counter()
        results = translator.translate_batch(batch, max_batch_size=max_tokens, batch_type="tokens", **options)
        seconds = time.perf_counter() - start
    ids = {token: i for i, token in enumerate(tokens)}
    outputs = [tokenizer.decode([ids[t] for t in r.hypotheses[0]], skip_special_tokens=True) for r in results]
    return {"outputs": outputs, "seconds": seconds, "options": options}
