"""Loading a model for decoding, and batched generation over many sentences (translations, summaries, or trees over
the input words), ordered by length, with a progress bar."""

from collections.abc import Callable
from pathlib import Path

import torch
from tqdm.auto import tqdm
from transformers import LogitsProcessorList
from transformers.tokenization_utils_base import VERY_LARGE_INTEGER

from .beam_search_vanilla import rows_a_source
from .errors import error_line
from .model_paths import model_path_problem
from .tokenization import truncate_ids  # one rule for a long input, in training and decoding


class ModelLoadError(RuntimeError):
    """A model or its tokenizer could not be loaded (no such folder or Hub id, missing or broken files)."""


def check_model_path(model_name: str) -> None:
    """Refuses, in the user's words (`ModelLoadError`), a model that is not there before anything is loaded
    (`model_paths.model_path_problem`: a local path that does not exist, a run folder given for its model, a folder
    without a model's config.json); a name that may be a Hub id is left to the Hub."""
    problem = model_path_problem(model_name)
    if problem:
        raise ModelLoadError(problem)


def load_for_decoding(model_name: str):
    """(model, tokenizer) from a folder or a Hub id, in eval mode, on the GPU when there is one. Raises
    `ModelLoadError` with a one-line message naming the model (`check_model_path` first)."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
    from transformers.utils import logging

    logging.disable_progress_bar()  # stderr stays for errors; a progress bar is shown only for decoding a file
    check_model_path(model_name)
    try:
        model = AutoModelForSeq2SeqLM.from_pretrained(model_name)
        tokenizer = AutoTokenizer.from_pretrained(model_name)
    except (OSError, ValueError) as error:
        where = "" if Path(model_name).is_dir() else " (no such folder; as a Hub id)"
        raise ModelLoadError(f"cannot load model {model_name!r}{where}: {error_line(error)}") from None
    device = "cuda" if torch.cuda.is_available() else "cpu"
    return model.to(device).eval(), tokenizer


# What each task's model is called, and the subcommand that runs it.
TASK_COMMANDS = {
    "translation": ("translation", "translate"),
    "parsing": ("parser", "parse"),
    "summarization": ("summarizer", "summarize"),
}


def model_task(config) -> str:
    """What a model was trained for: its `config.task` (`VanillaTransformerConfig` derives it from the decoding row of
    a config saved without one); a model of another kind (a MarianMTModel) translates."""
    return getattr(config, "task", "translation")


def check_task(model, model_name: str, task: str) -> None:
    """Refuses (`ModelLoadError`, one line) a model trained for another task than `task` (`model_task`), naming the
    subcommand that runs it."""
    trained = model_task(model.config)
    if trained != task:
        raise ModelLoadError(
            f"{model_name} is a {trained} model, not a {TASK_COMMANDS[task][0]}; use `hf-vanilla "
            f"{TASK_COMMANDS[trained][1]}`"
        )


def recorded_input_limit(tokenizer) -> int | None:
    """The longest input, in tokens, recorded with a model: its tokenizer's `model_max_length` (tokenizer_config.json;
    the summarization recipe writes its source-length limit there), None where it is transformers' "no limit"."""
    limit = getattr(tokenizer, "model_max_length", None)
    return int(limit) if limit is not None and 0 < limit < VERY_LARGE_INTEGER else None


def input_limit(
    tokenizer, given: int | None = None, flag: str = "", fallback: int | None = None
) -> tuple[int | None, str]:
    """How many tokens of each document a saved summarizer reads, and where that limit comes from, for every exit
    that decodes one (`hf-vanilla summarize`, the app, `recipes/tune_summary_decoding.py`): `given` (the value of
    the caller's `flag`), else the limit recorded with the model (`recorded_input_limit`: the source limit it was
    trained with), else `fallback` (None: the whole document)."""
    if given is not None:
        return given, flag
    if recorded_input_limit(tokenizer) is not None:
        return recorded_input_limit(tokenizer), "the model's model_max_length"
    return fallback, "the default limit"


def check_length_bounds(model, min_new_tokens: int | None = None, max_new_tokens: int | None = None) -> None:
    """Refuses an empty range of summary lengths, the bounds not given being the model's own (its generation
    config): ValueError "summaries of at least M and at most N tokens", for the caller to word in its own flags."""
    shortest = model.generation_config.min_new_tokens if min_new_tokens is None else min_new_tokens
    longest = model.generation_config.max_new_tokens if max_new_tokens is None else max_new_tokens
    if longest is not None and (shortest or 0) > longest:
        raise ValueError(f"summaries of at least {shortest} and at most {longest} tokens")


def generate_texts(
    model,
    tokenizer,
    sentences: list[str],
    max_tokens: int = 4000,
    progress: bool = True,
    processors_for_batch: Callable[[list[str]], LogitsProcessorList] | None = None,
    max_source_tokens: int | None = None,
    **generate_kwargs,
) -> list[str]:
    """Decodes `sentences` with `model.generate` (the model's generation config, overridden by `generate_kwargs`),
    in batches of at most `max_tokens` source tokens, sorted by length to keep padding small; returns the outputs
    in input order. An empty sentence gives an empty output. `processors_for_batch`, given the sentences of a batch,
    returns logits processors for it (e.g. `hf_vanilla.parsing.grammar.tree_grammar_for`), run after any passed as
    `logits_processor`. With `max_source_tokens`, a longer sentence is read cut to that many tokens
    (`truncate_ids`). The keyword `max_beam_rows` caps a batch's sentences times beams (`decoding_batches`; default
    `default_beam_rows`: `CPU_BEAM_ROWS` on a CPU, no cap elsewhere)."""
    fixed_processors = list(generate_kwargs.pop("logits_processor", None) or [])
    device = next(model.parameters()).device
    max_beam_rows = generate_kwargs.pop("max_beam_rows", default_beam_rows(device))
    # verbose=False: a document over the tokenizer's model_max_length is cut here, not worth transformers' warning.
    encoded = [
        truncate_ids(tokenizer(s, verbose=False)["input_ids"], max_source_tokens) if s.strip() else None
        for s in sentences
    ]
    order = sorted((i for i, e in enumerate(encoded) if e is not None), key=lambda i: len(encoded[i]))
    outputs = [""] * len(sentences)
    settings = {name: generate_kwargs.get(name, getattr(model.generation_config, name)) for name in ROW_SETTINGS}
    rows = rows_a_source(**settings)
    batches = decoding_batches([len(encoded[i]) for i in order], max_tokens, max_beam_rows, rows)
    batches = [[order[position] for position in batch] for batch in batches]
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


# Beam rows (sentences x beams) a decoding batch holds at most on a CPU, where beam 21's larger batches decode slower
# (their caches outgrow the CPU's; docs/experiments.md, 2026-11-28).
CPU_BEAM_ROWS = 768
# The generation settings that decide a sentence's rows (`rows_a_source`), as `generate_texts` passes them or the
# model's generation config has them.
ROW_SETTINGS = ("num_beams", "num_return_sequences")


def default_beam_rows(device: torch.device) -> int | None:
    """`generate_texts`' cap on a batch's beam rows: `CPU_BEAM_ROWS` on a CPU; none on an accelerator, where it was
    not measured."""
    return CPU_BEAM_ROWS if device.type == "cpu" else None


def decoding_batches(
    lengths: list[int], max_tokens: int, max_beam_rows: int | None = None, rows_a_sentence: int = 1
) -> list[list[int]]:
    """Consecutive positions of `lengths` (sources sorted by length) cut into batches: each at most `max_tokens` padded
    source tokens (its longest length times its sentences) and, given `max_beam_rows`, at most that many beam rows
    (`rows_a_sentence` a sentence); a sentence over either alone is a batch of its own."""
    if max_beam_rows is not None and max_beam_rows < 1:
        raise ValueError(f"max_beam_rows must be at least 1, got {max_beam_rows}")
    most_sentences = max(1, max_beam_rows // rows_a_sentence) if max_beam_rows else len(lengths) or 1
    batches, current = [], []
    for position, length in enumerate(lengths):
        if current and (length * (len(current) + 1) > max_tokens or len(current) == most_sentences):
            batches.append(current)
            current = []
        current.append(position)
    if current:
        batches.append(current)
    return batches


def ptb_words(text: str) -> str:
    """Whitespace-separated words as the Penn Treebank writes them, one space apart: brackets, which would break the
    output tree, as -LRB- and -RRB-."""
    return " ".join(word.replace("(", "-LRB-").replace(")", "-RRB-") for word in text.split())


def parse_texts(
    model,
    tokenizer,
    sentences: list[str],
    tree_grammar: bool = True,
    max_tokens: int = 4000,
    progress: bool = True,
    **generate_kwargs,
) -> list[str]:
    """One well-formed tree over the words of each of `sentences` (space-separated PTB words, see `ptb_words`); an
    empty sentence gives "". With `tree_grammar`, beams may only write trees over the input words
    (`hf_vanilla.parsing.grammar`; a tokenizer without one-token brackets is a ValueError before any decoding);
    without it, the model decodes freely, as the paper did, and the output is repaired (`tree_from_output`)."""
    from .parsing.grammar import tree_grammar_for
    from .parsing.linearization import tree_from_output

    leaves, order = model.config.tree_leaves, model.config.linearization
    grammar = tree_grammar_for(tokenizer, leaves, order) if tree_grammar else None
    outputs = generate_texts(
        model, tokenizer, sentences, max_tokens, progress=progress, processors_for_batch=grammar, **generate_kwargs
    )
    return [tree_from_output(out, s.split(), leaves, order) if s.strip() else "" for s, out in zip(sentences, outputs)]


def one_line(text: str) -> str:
    """`text` with every character that any reader takes for a line break (those of `str.splitlines`) made a space,
    so that an output is always exactly one line."""
    return " ".join(text.splitlines())
