"""Batched generation over many sentences, ordered by length, with a progress bar."""

from collections.abc import Callable

import torch
from tqdm.auto import tqdm
from transformers import LogitsProcessorList


def generate_texts(
    model,
    tokenizer,
    sentences: list[str],
    max_tokens: int = 4000,
    progress: bool = True,
    processors_for_batch: Callable[[list[str]], LogitsProcessorList] | None = None,
    **generate_kwargs,
) -> list[str]:
    """Decodes `sentences` with `model.generate` (the model's generation config, overridden by `generate_kwargs`),
    in batches of at most `max_tokens` source tokens, sorted by length to keep padding small; returns the outputs
    in input order. An empty sentence gives an empty output. `processors_for_batch`, given the sentences of a batch,
    returns logits processors for it (e.g. `hf_vanilla.parsing.grammar.tree_grammar_for`), run after any passed as
    `logits_processor`."""
    fixed_processors = list(generate_kwargs.pop("logits_processor", None) or [])
    encoded = [tokenizer(s)["input_ids"] if s.strip() else None for s in sentences]
    order = sorted((i for i, e in enumerate(encoded) if e is not None), key=lambda i: len(encoded[i]))
    outputs = [""] * len(sentences)
    device = next(model.parameters()).device
    batches, current = [], []
    for index in order:
        if current and len(encoded[index]) * (len(current) + 1) > max_tokens:
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    model.eval()
    with tqdm(total=len(order), disable=not progress, desc="decoding", unit="sent") as bar:
        for batch in batches:
            padded = tokenizer.pad({"input_ids": [encoded[i] for i in batch]}, return_tensors="pt")
            processors = LogitsProcessorList(fixed_processors)
            if processors_for_batch is not None:
                processors.extend(processors_for_batch([sentences[i] for i in batch]))
            with torch.no_grad():
                generated = model.generate(
                    input_ids=padded["input_ids"].to(device),
                    attention_mask=padded["attention_mask"].to(device),
                    logits_processor=processors,
                    **generate_kwargs,
                )
            for index, text in zip(batch, tokenizer.batch_decode(generated, skip_special_tokens=True)):
                outputs[index] = text.strip()
            bar.update(len(batch))
    return outputs
