"""Decoding under the grammar of linearized trees: a parser may only write well-formed trees over its input words.

The paper decodes parsers freely and the recipe repairs what comes out (`delinearize`). Under this grammar every
hypothesis of the beam is a tree prefix instead: brackets are balanced, closing brackets carry the label of the
bracket they close, every constituent holds a word, and the leaves are the input words in order (copied words, XX
placeholders, or any one whole token for POS tags, as the model's `config.tree_leaves`). At the position of a new
leaf, the probability the model gives to all non-bracket tokens together goes to the right leaf: the model decides
whether a word comes next, the grammar which one.
"""

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import torch
from transformers import LogitsProcessor, LogitsProcessorList

from ..configuration_vanilla import TREE_LEAVES
from .linearization import PLACEHOLDER

# Most brackets opened in a row before a word comes: 6 in the training files of NLTK's WSJ sample; the cap only stops
# a runaway hypothesis.
MAX_OPENED_IN_A_ROW = 10

_OPENING = re.compile(r"\(([^\s()]+)")
_CLOSING = re.compile(r"\)([^\s()]+)")
_WHOLE_PIECE = re.compile(r" [^\s()]+")


def _check_leaves(leaves: str) -> None:
    if leaves not in TREE_LEAVES:
        raise ValueError(f"leaves must be one of {TREE_LEAVES}, got {leaves!r}")


@dataclass(frozen=True)
class TreeVocabulary:
    """The tokens a parser's tokenizer writes trees with, read once from its vocabulary: opening brackets (those that
    start an output, without a space, and the later ones), each label's closing bracket, the leaf tokens (all but
    brackets and special tokens) and, among them, the whole pieces that can stand for a POS tag."""

    opening_first: list[int]
    opening: list[int]
    label: dict[int, str]  # opening bracket -> its label
    closing: dict[str, int]  # label -> its closing bracket
    leaf_tokens: torch.Tensor  # bool mask over the vocabulary
    tag_tokens: list[int]
    tag_ids: frozenset[int]  # tag_tokens, for membership tests at every step
    eos_token_id: int

    @classmethod
    def of(cls, tokenizer) -> "TreeVocabulary":
        """A ValueError for a tokenizer that does not keep bracket symbols one token (`train_shared_bpe(...,
        whitespace_only=True)`, as the parsing recipe trains it, does): a label whose closing bracket is not one token
        can never be opened."""
        texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
        closing = {
            m.group(1): i for i, t in enumerate(texts) if t.startswith(" ") and (m := _CLOSING.fullmatch(t[1:]))
        }
        opening_first, opening, label = [], [], {}
        for i, text in enumerate(texts):
            match = _OPENING.fullmatch(text.removeprefix(" "))
            if match and match.group(1) in closing:
                (opening if text.startswith(" ") else opening_first).append(i)
                label[i] = match.group(1)
        if not opening_first:
            raise ValueError("the tokenizer has no one-token opening brackets such as `(S`: not a parser's tokenizer.")
        leaf_tokens = torch.ones(len(tokenizer), dtype=torch.bool)
        leaf_tokens[opening_first + opening + list(closing.values()) + tokenizer.all_special_ids] = False
        # A POS leaf is one whole piece (a space, then no bracket), so that the output stays one symbol per leaf.
        tag_tokens = [i for i, text in enumerate(texts) if leaf_tokens[i] and _WHOLE_PIECE.fullmatch(text)]
        return cls(
            opening_first,
            opening,
            label,
            closing,
            leaf_tokens,
            tag_tokens,
            frozenset(tag_tokens),
            tokenizer.eos_token_id,
        )


class TreeGrammarLogitsProcessor(LogitsProcessor):
    """Masks every token that would break the tree grammar for `sentences` (one per input row, or per `num_beams`
    consecutive rows under beam search), and gives a new leaf's first token the log-sum of all leaf tokens' scores.
    `vocabulary` is `TreeVocabulary.of(tokenizer)`, read here when not given."""

    def __init__(self, tokenizer, sentences: list[str], leaves: str, vocabulary: TreeVocabulary | None = None):
        _check_leaves(leaves)
        self.sentences = [sentence.split() for sentence in sentences]
        if not all(self.sentences):
            raise ValueError("every sentence needs at least one word.")
        self.vocabulary = vocabulary if vocabulary is not None else TreeVocabulary.of(tokenizer)
        if leaves == "pos":
            self.pieces = None  # any one tag token stands for the tag of the next word
        else:

            def ids(text: str) -> list[int]:
                return tokenizer(" " + text, add_special_tokens=False)["input_ids"]

            placeholder = ids(PLACEHOLDER)
            self.pieces = [
                [ids(word) if leaves == "words" else placeholder for word in words] for words in self.sentences
            ]
        self._states: dict = {}
        self._previous: dict = {}

    def _step(self, state: tuple, token: int, sentence: int) -> tuple:
        """The grammar state after `token`: (open brackets as (label, holds a word), next word, next piece of that
        word, brackets opened since the last word). Tokens outside the grammar (padding after </s>) change nothing."""
        stack, word, piece, opened = state
        if stack and word < len(self.sentences[sentence]):
            pieces = self.pieces[sentence][word] if self.pieces is not None else None
            is_leaf = token == pieces[piece] if pieces is not None else token in self.vocabulary.tag_ids
            if is_leaf:
                stack = tuple((label, True) for label, _ in stack)
                if pieces is not None and piece + 1 < len(pieces):
                    return stack, word, piece + 1, 0
                return stack, word + 1, 0, 0
        vocabulary = self.vocabulary
        if token in vocabulary.label:
            return stack + ((vocabulary.label[token], False),), word, 0, opened + 1
        if stack and token == vocabulary.closing[stack[-1][0]]:
            return stack[:-1], word, 0, opened
        return state

    def _state(self, sentence: int, ids: tuple) -> tuple:
        key = (sentence, ids)
        if key not in self._states:
            previous = self._previous.get((sentence, ids[:-1])) if len(ids) > 1 else None
            if previous is None:  # the first step, or a prefix not seen at the last step: fold from the start
                previous = ((), 0, 0, 0)
                for token in ids[1:-1]:
                    previous = self._step(previous, token, sentence)
            self._states[key] = previous if len(ids) == 1 else self._step(previous, ids[-1], sentence)
        return self._states[key]

    def _allowed(self, sentence: int, ids: tuple) -> tuple[list[int], int | None]:
        """The tokens the grammar allows next, and the first token of the next leaf when a leaf is one of them."""
        stack, word, piece, opened = self._state(sentence, ids)
        words, vocabulary = self.sentences[sentence], self.vocabulary
        if piece:
            return [self.pieces[sentence][word][piece]], None
        if len(ids) == 1:
            return vocabulary.opening_first, None
        if not stack:
            return [vocabulary.eos_token_id], None
        allowed, leaf = [], None
        if word < len(words):
            if self.pieces is None:
                allowed = list(vocabulary.tag_tokens)
            else:
                leaf = self.pieces[sentence][word][0]
                allowed.append(leaf)
            if opened < MAX_OPENED_IN_A_ROW:
                allowed += vocabulary.opening
        label, holds_word = stack[-1]
        if holds_word and (len(stack) > 1 or word == len(words)):
            allowed.append(vocabulary.closing[label])
        return allowed, leaf

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if input_ids.shape[0] % len(self.sentences):
            raise ValueError(f"{input_ids.shape[0]} rows for {len(self.sentences)} sentences.")
        num_beams = input_ids.shape[0] // len(self.sentences)
        self._previous, self._states = self._states, {}
        leaf_scores = torch.logsumexp(scores[:, self.vocabulary.leaf_tokens.to(scores.device)], dim=-1)
        allowed_rows, allowed_tokens, leaf_rows, leaf_tokens = [], [], [], []
        for row, ids in enumerate(input_ids.tolist()):
            allowed, leaf = self._allowed(row // num_beams, tuple(ids))
            allowed_rows += [row] * len(allowed)
            allowed_tokens += allowed
            if leaf is not None:
                leaf_rows.append(row)
                leaf_tokens.append(leaf)
        # One indexing operation for the whole batch, not one per row: decoding's beam of 21 has hundreds of rows.
        blocked = torch.ones_like(scores, dtype=torch.bool)
        blocked[allowed_rows, allowed_tokens] = False
        scores = scores.clone()
        scores[leaf_rows, leaf_tokens] = leaf_scores[leaf_rows]
        return scores.masked_fill(blocked, -math.inf)


def tree_grammar_for(tokenizer, leaves: str) -> Callable[[list[str]], LogitsProcessorList]:
    """For `generate_texts(..., processors_for_batch=...)`: the grammar of each decoding batch's sentences, over a
    vocabulary read once. A tokenizer without one-token brackets is a ValueError here, before any decoding."""
    _check_leaves(leaves)
    vocabulary = TreeVocabulary.of(tokenizer)
    return lambda sentences: LogitsProcessorList(
        [TreeGrammarLogitsProcessor(tokenizer, sentences, leaves, vocabulary)]
    )
