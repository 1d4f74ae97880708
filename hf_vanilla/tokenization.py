"""The shared source/target BPE vocabulary (section 5.1 of the paper), trained with `tokenizers`."""

import hashlib
import json
import os
import shutil
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
# Ids 0-3, in the order the model's config expects (pad 0, decoder start 1, end of sentence 2).
SPECIAL_TOKENS = [PAD, BOS, EOS, UNK]


@dataclass(frozen=True)
class BpeOptions:
    """How text is cut before BPE merges, saved in the tokenizer's files (tokenizer.json) so that every loader of the
    model (`AutoTokenizer`, the CLI, the app, a Hub remote-code load) applies it with no step of its own.

    - `whitespace_only`: merges stay inside whitespace-separated pieces (text tokenized already: treebank words and
      linearized trees, whose `(NP` stays one token); otherwise GPT-2's pieces (letters, digits, punctuation apart).
    - `prefix_space`: every run of white space (newlines included) is one space, the text's ends stripped, and a
      space put before the first word, so that a word has the same tokens at the start of a text as inside it.
    - `lowercase`: the text is lower-cased (Unicode) before anything else, as See et al.'s and OpenNMT-py's
      summarizers read it; the model then reads and writes lower-case text.

    The last two make the words a summary shares with its document the same tokens on both sides, which a copy
    mechanism needs (the share of summary tokens found in the source: `hf_vanilla.data.copyable`)."""

    whitespace_only: bool = False
    prefix_space: bool = False
    lowercase: bool = False

    def record(self) -> dict:
        """The options for a tokenizer's record (`PROVENANCE_FILE`): `whitespace_only` always, the others when set
        (the records of tokenizers made before they existed stay valid)."""
        return {name: value for name, value in asdict(self).items() if value or name == "whitespace_only"}


def train_shared_bpe(
    texts: Iterable[str],
    vocab_size: int,
    min_frequency: int = 2,
    show_progress: bool = True,
    whitespace_only: bool = False,
    prefix_space: bool = False,
    lowercase: bool = False,
) -> PreTrainedTokenizerFast:
    """Learns one byte-level BPE vocabulary from source and target text together (`BpeOptions` describes the three
    switches). Byte-level pieces cover every string, so `decode(encode(x), skip_special_tokens=True) == x` for any
    text, the special tokens' own spellings (`</s>`, ...) included; with `prefix_space`, the decoding is
    `" " + " ".join(x.split())` (lower-cased with `lowercase`). Every encoded sequence ends with `</s>`. The one
    exception is a Python string that is not Unicode text: a lone surrogate (e.g. "\ud800", which no UTF-8 file can
    hold) is a TypeError from `tokenizers`.

    Merges never cross a pre-token boundary: by default GPT-2's (letters, digits and punctuation apart); with
    `whitespace_only`, the whitespace-separated pieces, for text that is tokenized already, such as treebank words
    and linearized trees, whose symbols like `(NP` and `)NP` then become single tokens rather than `(` + `NP`."""
    if vocab_size <= len(SPECIAL_TOKENS) + 256:
        raise ValueError(f"vocab_size must exceed {len(SPECIAL_TOKENS) + 256} (special tokens + 256 bytes).")
    tokenizer = Tokenizer(models.BPE(unk_token=UNK))
    steps = [normalizers.Lowercase()] if lowercase else []
    if prefix_space:
        steps += [normalizers.Replace(Regex(r"\s+"), " "), normalizers.Strip()]
    if steps:
        tokenizer.normalizer = normalizers.Sequence(steps)
    if whitespace_only:
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(" ", behavior="merged_with_next"),
                pre_tokenizers.ByteLevel(add_prefix_space=prefix_space, use_regex=False),
            ]
        )
    else:
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=prefix_space)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=show_progress,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    eos_id = tokenizer.token_to_id(EOS)
    tokenizer.post_processor = processors.Sequence(
        [
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(
                single=f"$A {EOS}", pair=f"$A {EOS} $B {EOS}", special_tokens=[(EOS, eos_id)]
            ),
        ]
    )
    # split_special_tokens: "</s>" in a text is those five characters, never the special token (which
    # skip_special_tokens would then drop from the decoding).
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token=PAD,
        bos_token=BOS,
        eos_token=EOS,
        unk_token=UNK,
        clean_up_tokenization_spaces=False,
        split_special_tokens=True,
    )


def reads_lowercase(tokenizer: PreTrainedTokenizerFast) -> bool:
    """Whether `tokenizer` lower-cases its input (`BpeOptions.lowercase`), so that its model reads and writes
    lower-case text."""
    normalizer = json.loads(tokenizer.backend_tokenizer.to_str()).get("normalizer") or {}
    steps = normalizer.get("normalizers", [normalizer])
    return any(step.get("type") == "Lowercase" for step in steps)


def load_tokenizer(path: str | Path) -> PreTrainedTokenizerFast:
    """Loads a tokenizer saved beside a checkpoint (a folder or a Hub id)."""
    return AutoTokenizer.from_pretrained(str(path))


def word_continuation_ids(tokenizer: PreTrainedTokenizerFast) -> list[int] | None:
    """The ids of the vocabulary's pieces that continue what precedes them (no word-start marker: "ments" of
    " easements", "," of "phillip,"), for a pointer-generator's whole-word copying
    (`VanillaGenerationConfig.word_continuation_ids`). The marker is what the tokenizer puts before every word, found
    by pre-tokenizing a word alone and after another: byte-level BPE with a prefix space (the recipes' summarizers:
    "Ġ"), SentencePiece's "▁". None for a tokenizer that marks no word start (its first word would look like a
    continuation); special tokens are never in the list."""
    pre_tokenizer = getattr(tokenizer, "backend_tokenizer", None) and tokenizer.backend_tokenizer.pre_tokenizer
    if pre_tokenizer is None:
        return None
    alone, after = (pre_tokenizer.pre_tokenize_str(text)[-1][0] for text in ("a", "b a"))
    if alone != after or not alone.endswith("a") or alone == "a":
        return None
    marker, special = alone[:-1], set(tokenizer.all_special_ids)
    vocabulary = tokenizer.get_vocab()
    return sorted(i for piece, i in vocabulary.items() if not piece.startswith(marker) and i not in special)


def whole_word_copy_ids(tokenizer, copies: bool, wanted: bool | None, flag: str) -> list[int] | None:
    """The generation config's `word_continuation_ids` for a model that `copies` (a pointer-generator) or not: with
    `wanted` None (not asked), whole-word copying where the model copies and `tokenizer` marks word starts; False,
    none; True, the pieces that continue a word (`word_continuation_ids`), or a ValueError starting with the caller's
    `flag` where the model cannot copy or the tokenizer marks no word start."""
    if wanted is False or (wanted is None and not copies):
        return None
    if not copies:
        raise ValueError(f"{flag}: the model has no copy mechanism")
    ids = word_continuation_ids(tokenizer)
    if wanted and ids is None:
        raise ValueError(
            f"{flag}: the tokenizer marks no word start (byte-level BPE with a prefix space or SentencePiece's), so "
            "the pieces that continue a word are unknown"
        )
    return ids


def truncate_ids(ids: list[int], limit: int | None) -> list[int]:
    """`ids` cut to `limit` tokens keeping the final </s> (its last id), as every split of a truncating recipe is cut
    (`encode_truncated_pairs`) and as decoding reads long input (`batch_decoding.generate_texts`); unchanged when they
    fit or `limit` is None."""
    return ids if limit is None or len(ids) <= limit else ids[: limit - 1] + ids[-1:]


PROVENANCE_FILE = "training_data.json"


class TokenizerMismatch(ValueError):
    """A run's tokenizer folder holds a tokenizer trained on other data or for another vocabulary size, or files that
    are no tokenizer."""


def text_fingerprint(pairs, languages: tuple[str, str]) -> str:
    """SHA-256 of the training text a shared tokenizer learns from: each pair's sides in `languages` order."""
    digest = hashlib.sha256()
    for batch in pairs.iter(batch_size=10_000):
        for pair in batch["translation"]:
            for lang in languages:
                digest.update(pair[lang].encode("utf-8"))
                digest.update(b"\0")
    return digest.hexdigest()


def check_provenance(folder: Path, expected: dict) -> None:
    """Raises `TokenizerMismatch` unless `folder`'s recorded training data is `expected`."""
    record_file = Path(folder) / PROVENANCE_FILE
    if not record_file.is_file():
        raise TokenizerMismatch(
            f"{folder} holds a tokenizer without a record of what it was trained on ({PROVENANCE_FILE}); "
            "use a new --output-dir, or delete that folder to train a new tokenizer"
        )
    recorded = json.loads(record_file.read_text())
    differences = [
        f"{key} {recorded.get(key)!r} (this run: {value!r})"
        for key, value in expected.items()
        if recorded.get(key) != value
    ]
    if differences:
        raise TokenizerMismatch(
            f"{folder} holds a tokenizer trained for other data: {'; '.join(differences)}. Use a new --output-dir, "
            "or delete that folder to train a new tokenizer"
        )


def _refuse_other_files(folder: Path) -> None:
    """`TokenizerMismatch` when `folder` holds files but no tokenizer: a new tokenizer folder cannot replace it."""
    if not (folder / "tokenizer.json").exists() and folder.is_dir() and any(folder.iterdir()):
        raise TokenizerMismatch(
            f"{folder} holds files but no tokenizer: use a new --output-dir, or delete that folder to train a new "
            "tokenizer"
        )


def write_tokenizer_folder(folder: Path, tokenizer, record: dict) -> None:
    """`tokenizer` saved in `folder` with `record` (what it was made from) beside it, written whole or not at all: a
    run killed while writing leaves no folder, and the next one writes it again. A `folder` that holds other files is
    a `TokenizerMismatch`."""
    _refuse_other_files(folder)
    temporary = folder.with_name(f".tmp-{folder.name}")
    shutil.rmtree(temporary, ignore_errors=True)
    tokenizer.save_pretrained(temporary)
    (temporary / PROVENANCE_FILE).write_text(json.dumps(record, indent=2))
    os.replace(temporary, folder)


def ensure_shared_tokenizer(
    folder: Path,
    train_split,
    languages: tuple[str, str],
    vocab_size: int,
    dataset: str,
    options: BpeOptions | None = None,
) -> None:
    """A run's tokenizer in `folder`: trained on the training split's source and target text and written with a
    record of what it was trained on (`dataset`, `languages`, `vocab_size`, the `options`, a fingerprint of the
    text), or, when
    `folder` holds one already, reused only if that record matches (`TokenizerMismatch` otherwise). The work of one
    process: `hf_vanilla.training.run.prepare_shared_tokenizer` runs it on the main process for all of them."""
    folder, options = Path(folder), options or BpeOptions()
    expected = {
        "dataset": dataset,
        "languages": list(languages),
        "vocab_size": vocab_size,
        **options.record(),
        "text_sha256": text_fingerprint(train_split, languages),
    }
    if (folder / "tokenizer.json").exists():
        check_provenance(folder, expected)
        return
    _refuse_other_files(folder)  # before training
    texts = (pair[lang] for pair in train_split["translation"] for lang in languages)
    write_tokenizer_folder(folder, train_shared_bpe(texts, vocab_size, **asdict(options)), expected)
