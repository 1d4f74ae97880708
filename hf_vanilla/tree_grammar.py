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

import torch
from transformers import LogitsProcessor, LogitsProcessorList

from .configuration_vanilla import TREE_LEAVES
from .parsing import PLACEHOLDER

# Most brackets opened in a row before a word comes: 6 in the training files of NLTK's WSJ sample; the cap only stops
# a runaway hypothesis.
MAX_OPENED_IN_A_ROW = 10

_OPENING = re.compile(r"\(([^\s()]+)")
_CLOSING = re.compile(r"\)([^\s()]+)")
_WHOLE_PIECE = re.compile(r" [^\s()]+")


class TreeGrammarLogitsProcessor(LogitsProcessor):
    """Masks every token that would break the tree grammar for `sentences` (one per input row, or per `num_beams`
    consecutive rows under beam search), and gives a new leaf's first token the log-sum of all leaf tokens' scores.

    The tokenizer must keep each bracket symbol one token (`train_shared_bpe(..., whitespace_only=True)`, as the
    parsing recipe trains it): a label whose closing bracket is not one token can never be opened."""

    def __init__(self, tokenizer, sentences: list[str], leaves: str):
        if leaves not in TREE_LEAVES:
            raise ValueError(f"leaves must be one of {TREE_LEAVES}, got {leaves!r}")
        self.sentences = [sentence.split() for sentence in sentences]
        if not all(self.sentences):
            raise ValueError("every sentence needs at least one word.")
        texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
        closing = {m.group(1): i for i, t in enumerate(texts) if t.startswith(" ") and (m := _CLOSING.fullmatch(t[1:]))}
        self.opening_first, self.opening, self.label = [], [], {}
        for i, text in enumerate(texts):
            match = _OPENING.fullmatch(text.removeprefix(" "))
            if match and match.group(1) in closing:
                (self.opening if text.startswith(" ") else self.opening_first).append(i)
                self.label[i] = match.group(1)
        if not self.opening_first:
            raise ValueError("the tokenizer has no one-token opening brackets such as `(S`: not a parser's tokenizer.")
        self.closing = closing
        self.eos_token_id = tokenizer.eos_token_id
        self.leaf_tokens = torch.ones(len(tokenizer), dtype=torch.bool)
        self.leaf_tokens[self.opening_first + self.opening + list(closing.values()) + tokenizer.all_special_ids] = False
        # A POS leaf is one whole piece (a space, then no bracket), so that the output stays one symbol per leaf.
        self._tag_tokens = [i for i, text in enumerate(texts) if self.leaf_tokens[i] and _WHOLE_PIECE.fullmatch(text)]
        self._tag_ids = set(self._tag_tokens)
        if leaves == "pos":
            self.pieces = None  # any one leaf token stands for the tag of the next word
        else:
            def ids(text: str) -> list[int]:
                return tokenizer(" " + text, add_special_tokens=False)["input_ids"]

            placeholder = ids(PLACEHOLDER)
            self.pieces = [[ids(word) if leaves == "words" else placeholder for word in words] for words in self.sentences]
        self._states: dict = {}
        self._previous: dict = {}

    def _step(self, state: tuple, token: int, sentence: int) -> tuple:
        """The grammar state after `token`: (open brackets as (label, holds a word), next word, next piece of that
        word, brackets opened since the last word). Tokens outside the grammar (padding after </s>) change nothing."""
        stack, word, piece, opened = state
        if stack and word < len(self.sentences[sentence]):
            pieces = self.pieces[sentence][word] if self.pieces is not None else None
            is_leaf = token == pieces[piece] if pieces is not None else token in self._tag_ids
            if is_leaf:
                stack = tuple((label, True) for label, _ in stack)
                if pieces is not None and piece + 1 < len(pieces):
                    return stack, word, piece + 1, 0
                return stack, word + 1, 0, 0
        if token in self.label:
            return stack + ((self.label[token], False),), word, 0, opened + 1
        if stack and token == self.closing[stack[-1][0]]:
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
        words = self.sentences[sentence]
        if piece:
            return [self.pieces[sentence][word][piece]], None
        if len(ids) == 1:
            return self.opening_first, None
        if not stack:
            return [self.eos_token_id], None
        allowed, leaf = [], None
        if word < len(words):
            if self.pieces is None:
                allowed = list(self._tag_tokens)
            else:
                leaf = self.pieces[sentence][word][0]
                allowed.append(leaf)
            if opened < MAX_OPENED_IN_A_ROW:
                allowed += self.opening
        label, holds_word = stack[-1]
        if holds_word and (len(stack) > 1 or word == len(words)):
            allowed.append(self.closing[label])
        return allowed, leaf

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if input_ids.shape[0] % len(self.sentences):
            raise ValueError(f"{input_ids.shape[0]} rows for {len(self.sentences)} sentences.")
        num_beams = input_ids.shape[0] // len(self.sentences)
        self._previous, self._states = self._states, {}
        leaf_scores = torch.logsumexp(scores[:, self.leaf_tokens.to(scores.device)], dim=-1)
        blocked = torch.ones_like(scores, dtype=torch.bool)
        scores = scores.clone()
        for row, ids in enumerate(input_ids.tolist()):
            allowed, leaf = self._allowed(row // num_beams, tuple(ids))
            blocked[row, allowed] = False
            if leaf is not None:
                scores[row, leaf] = leaf_scores[row]
        return scores.masked_fill(blocked, -math.inf)


def tree_grammar_for(tokenizer, leaves: str) -> Callable[[list[str]], LogitsProcessorList]:
    """For `generate_texts(..., processors_for_batch=...)`: the grammar of each decoding batch's sentences. A
    tokenizer without one-token brackets is a ValueError here, before any decoding."""
    TreeGrammarLogitsProcessor(tokenizer, ["."], leaves)
    return lambda sentences: LogitsProcessorList([TreeGrammarLogitsProcessor(tokenizer, sentences, leaves)])
