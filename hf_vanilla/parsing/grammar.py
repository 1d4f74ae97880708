"""Decoding under the grammar of linearized trees: a parser may only write well-formed trees over its input words.

The paper decodes parsers freely and the recipe repairs what comes out (`delinearize`). Under this grammar every
hypothesis of the beam is a tree prefix instead: brackets are balanced, closing brackets carry the label of the
bracket they close, every constituent holds a word, and the leaves are the input words in order (copied words, XX
placeholders, or any one whole token for POS tags, as the model's `config.tree_leaves`). At the position of a new
leaf, the probability the model gives to all non-bracket tokens together goes to the right leaf, and the leaf's later
pieces have probability 1: the model decides whether a word comes next, the grammar which one. Trees written in order
(`config.linearization`, Liu & Zhang, 2017) start with their first word, and a bracket opens only right after a
finished leaf or constituent, which becomes its first child.
"""

import copy
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import torch
from transformers import LogitsProcessor, LogitsProcessorList

from ..configuration_vanilla import TREE_LEAVES
from .linearization import PLACEHOLDER, check_linearization

# Most brackets opened in a row before a word comes: 6 in the training files of NLTK's WSJ sample (in order, the
# brackets opened between two words); the cap only stops a runaway hypothesis.
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
    brackets and special tokens) and, among them, the whole pieces that can stand for a POS tag (with a space, and
    without one at the start of an output). Labels are numbered; the tables are indexed by token id."""

    opening_first: torch.Tensor  # token ids
    opening: torch.Tensor  # token ids
    opening_label: torch.Tensor  # token id -> its label's number, -1 for all but opening brackets
    closing_label: torch.Tensor  # token id -> its label's number, -1 for all but closing brackets
    closing: torch.Tensor  # label number -> its closing bracket
    leaf_tokens: torch.Tensor  # bool mask over the vocabulary
    tag_tokens: torch.Tensor  # bool mask over the vocabulary
    first_tag_tokens: torch.Tensor  # bool mask: tag tokens that start an output (no space), for trees in order
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
        number = {label: n for n, label in enumerate(closing)}
        opening_first, opening = [], []
        opening_label = torch.full((len(tokenizer),), -1)
        for i, text in enumerate(texts):
            match = _OPENING.fullmatch(text.removeprefix(" "))
            if match and match.group(1) in closing:
                (opening if text.startswith(" ") else opening_first).append(i)
                opening_label[i] = number[match.group(1)]
        if not opening_first and not opening:
            raise ValueError("the tokenizer has no one-token opening brackets such as `(S`: not a parser's tokenizer.")
        closing_label = torch.full((len(tokenizer),), -1)
        closing_label[list(closing.values())] = torch.arange(len(closing))
        leaf_tokens = torch.ones(len(tokenizer), dtype=torch.bool)
        leaf_tokens[opening_first + opening + list(closing.values()) + tokenizer.all_special_ids] = False
        # A POS leaf is one whole piece (a space, then no bracket), so that the output stays one symbol per leaf.
        tag_tokens = torch.tensor(
            [bool(leaf_tokens[i]) and bool(_WHOLE_PIECE.fullmatch(t)) for i, t in enumerate(texts)]
        )
        first_tag_tokens = torch.tensor(
            [bool(leaf_tokens[i]) and bool(_WHOLE_PIECE.fullmatch(" " + t)) for i, t in enumerate(texts)]
        )
        return cls(
            torch.tensor(opening_first),
            torch.tensor(opening),
            opening_label,
            closing_label,
            torch.tensor(list(closing.values())),
            leaf_tokens,
            tag_tokens,
            first_tag_tokens,
            tokenizer.eos_token_id,
        )


@dataclass(frozen=True)
class _Prefixes:
    """Where each row of a decoding step stands in the grammar, read from its tokens at once (one tensor a field,
    one entry a row): the leaves written, the open brackets and the innermost one's label and whether it holds a
    word, and the brackets opened since the last leaf."""

    leaves: torch.Tensor
    depth: torch.Tensor
    label: torch.Tensor  # -1 where no bracket is open
    holds_word: torch.Tensor
    opened: torch.Tensor

    @classmethod
    def of(cls, tokens: torch.Tensor, vocabulary: TreeVocabulary, is_leaf: torch.Tensor) -> "_Prefixes":
        """`tokens`: the rows' outputs so far, start token left out. A well-formed prefix (what the grammar lets
        through) opens a bracket, closes the innermost one or writes the next leaf at every position."""
        opens, leaf_at = vocabulary.opening_label[tokens] >= 0, is_leaf[tokens]
        leaves, opened_so_far = leaf_at.long().cumsum(-1), opens.long().cumsum(-1)
        depth_after = opened_so_far - (vocabulary.closing_label[tokens] >= 0).long().cumsum(-1)
        depth = depth_after[:, -1].clamp(min=0)
        # The innermost open bracket is the last one opened to the depth the row is at now.
        positions = torch.arange(1, tokens.shape[1] + 1)
        innermost = (opens & (depth_after == depth[:, None])).mul(positions).amax(-1) - 1
        at = innermost.clamp(min=0)[:, None]
        found = (innermost >= 0) & (depth > 0)
        label = torch.where(found, vocabulary.opening_label[tokens.gather(1, at)[:, 0]], -1)
        holds_word = found & (leaves[:, -1] > leaves.gather(1, at)[:, 0])
        last_leaf = leaf_at.mul(positions).amax(-1)  # 1-based; 0: no leaf yet
        opened_before = torch.where(
            last_leaf > 0, opened_so_far.gather(1, (last_leaf - 1).clamp(min=0)[:, None])[:, 0], 0
        )
        opened = opened_so_far[:, -1] - opened_before
        return cls(leaves[:, -1], depth, label, holds_word, opened)


class TreeGrammarLogitsProcessor(LogitsProcessor):
    """Masks every token that would break the tree grammar for `sentences` (one per input row, or per `num_beams`
    consecutive rows under beam search), gives a new leaf's first token the log-sum of all leaf tokens' scores and its
    later pieces 0 (the scores are log-probabilities, as beam search hands them over). `linearization` is the trees'
    order (`config.linearization`): `top-down` or `in-order`.
    `vocabulary` is `TreeVocabulary.of(tokenizer)`, read here when not given. Each step reads the rows' prefixes with
    tensor operations over the whole batch (`_Prefixes`): a beam of 21 has thousands of rows."""

    def __init__(
        self,
        tokenizer,
        sentences: list[str],
        leaves: str,
        vocabulary: TreeVocabulary | None = None,
        linearization: str = "top-down",
    ):
        _check_leaves(leaves)
        check_linearization(linearization)
        words = [sentence.split() for sentence in sentences]
        if not all(words):
            raise ValueError("every sentence needs at least one word.")
        self.vocabulary = vocabulary if vocabulary is not None else TreeVocabulary.of(tokenizer)
        self.in_order = linearization == "in-order"
        if not self.in_order and not len(self.vocabulary.opening_first):
            raise ValueError(
                "the tokenizer has no one-token bracket that starts an output, such as `(S`: it was not trained on "
                "top-down trees (a model of in-order trees decodes with linearization='in-order')."
            )
        self.sentences = len(words)
        self.words = torch.tensor([len(w) for w in words])
        if leaves == "pos":  # any one tag token stands for the tag of the next word: a leaf is one token
            self.pieces = None
            self.is_leaf = self.vocabulary.tag_tokens | self.vocabulary.first_tag_tokens
            return
        self.is_leaf = self.vocabulary.leaf_tokens

        def ids(text: str, first: bool) -> list[int]:  # in order, the first word starts the output: no space
            return tokenizer(text if first and self.in_order else " " + text, add_special_tokens=False)["input_ids"]

        pieces = [
            [ids(word if leaves == "words" else PLACEHOLDER, first=w == 0) for w, word in enumerate(sentence)]
            for sentence in words
        ]
        # Each sentence's leaf pieces in a row (one more entry, the end, past the last), the word each piece belongs
        # to and its place in that word.
        longest = max(sum(len(p) for p in sentence) for sentence in pieces) + 1
        self.pieces = torch.full((len(words), longest), self.vocabulary.eos_token_id)
        self.word_of_piece = torch.zeros((len(words), longest), dtype=torch.long)
        self.place_in_word = torch.zeros((len(words), longest), dtype=torch.long)
        for s, sentence in enumerate(pieces):
            flat = [(token, w, k) for w, word in enumerate(sentence) for k, token in enumerate(word)]
            flat.append((self.vocabulary.eos_token_id, len(sentence), 0))
            for column, (token, w, k) in enumerate(flat):
                self.pieces[s, column], self.word_of_piece[s, column], self.place_in_word[s, column] = token, w, k
            self.word_of_piece[s, len(flat) :] = len(sentence)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if input_ids.shape[0] % self.sentences:
            raise ValueError(f"{input_ids.shape[0]} rows for {self.sentences} sentences.")
        vocabulary, device = self.vocabulary, scores.device
        # Every token starts masked and the allowed ones (a few dozen a row) get their scores back: no mask the size
        # of the scores is built or read.
        processed = torch.full_like(scores, -math.inf)

        def allow(rows: torch.Tensor, tokens: torch.Tensor) -> None:
            rows, tokens = rows.to(device), tokens.to(device)
            processed[rows, tokens] = scores[rows, tokens]

        rows = torch.arange(input_ids.shape[0])
        sentence = rows // (input_ids.shape[0] // self.sentences)
        def give_leaf_mass(leaf_rows: torch.Tensor, pieces: torch.Tensor) -> None:
            leaf_rows, leaf_tokens = leaf_rows.to(device), vocabulary.leaf_tokens.nonzero()[:, 0].to(device)
            sums = torch.logsumexp(scores.index_select(0, leaf_rows).index_select(1, leaf_tokens), dim=-1)
            processed[leaf_rows, pieces.to(device)] = sums

        if input_ids.shape[1] == 1:  # the first token: an output opens with a bracket, or in order its first word
            if not self.in_order:
                allow(rows[:, None], vocabulary.opening_first[None, :])
            elif self.pieces is None:
                allow(rows[:, None], vocabulary.first_tag_tokens.nonzero()[:, 0][None, :])
            else:
                give_leaf_mass(rows, self.pieces[sentence, 0])
            return processed
        at = _Prefixes.of(input_ids[:, 1:].cpu(), vocabulary, self.is_leaf)
        if self.pieces is None:
            word, place, next_piece = at.leaves, torch.zeros_like(at.leaves), None
        else:
            column = at.leaves.clamp(max=self.pieces.shape[1] - 1)
            word, place = self.word_of_piece[sentence, column], self.place_in_word[sentence, column]
            next_piece = self.pieces[sentence, column]
        words = self.words[sentence]
        open_ = at.depth > 0
        mid_word = (place > 0) & (open_ | self.in_order)  # only the word's next piece (in order, the first word too)
        free = ~mid_word
        leaf = free & open_ & (word < words)
        if self.in_order:
            # A bracket opens after a finished leaf or constituent (its first child); the root closes early only
            # where another bracket may still open above it; the output ends after a closing bracket (and stays so).
            last = input_ids[:, -1].cpu()
            finished = self.is_leaf[last] | (vocabulary.closing_label[last] >= 0)
            opens = free & finished & (at.opened < MAX_OPENED_IN_A_ROW)
            closes = free & open_ & ((at.depth > 1) | (word == words) | (at.opened < MAX_OPENED_IN_A_ROW))
            ended = (vocabulary.closing_label[last] >= 0) | (last == vocabulary.eos_token_id)
            ends = free & ~open_ & (word == words) & ended
        else:
            opens = leaf & (at.opened < MAX_OPENED_IN_A_ROW)
            closes = free & open_ & at.holds_word & ((at.depth > 1) | (word == words))
            ends = ~open_
        allow(rows[ends], torch.tensor(vocabulary.eos_token_id))
        if next_piece is not None:
            allow(rows[leaf], next_piece[leaf])
            # A word's later pieces are the grammar's choice, not the model's: log-probability 0, so that a miscopied
            # piece does not weigh on the brackets around it.
            processed[rows[mid_word].to(device), next_piece[mid_word].to(device)] = 0.0
        elif leaf.any():  # any tag token
            leaf_rows = rows[leaf].to(device)
            tags = vocabulary.tag_tokens.to(device)
            processed[leaf_rows] = torch.where(tags, scores[leaf_rows], processed[leaf_rows])
        allow(rows[opens][:, None], vocabulary.opening[None, :])
        allow(rows[closes], vocabulary.closing[at.label[closes]])
        if next_piece is not None and leaf.any():
            give_leaf_mass(rows[leaf], next_piece[leaf])
        return processed

    def for_sentences(self, kept: torch.LongTensor) -> "TreeGrammarLogitsProcessor":
        """The same grammar for the `kept` sentences only (indices into those it was made for), for a beam search
        that drops settled sentences from the batch."""
        kept = kept.cpu()
        narrowed = copy.copy(self)
        narrowed.sentences, narrowed.words = len(kept), self.words[kept]
        if self.pieces is not None:
            narrowed.pieces, narrowed.word_of_piece = self.pieces[kept], self.word_of_piece[kept]
            narrowed.place_in_word = self.place_in_word[kept]
        return narrowed


def tree_grammar_for(
    tokenizer, leaves: str, linearization: str = "top-down"
) -> Callable[[list[str]], LogitsProcessorList]:
    """For `generate_texts(..., processors_for_batch=...)`: the grammar of each decoding batch's sentences, over a
    vocabulary read once, for trees with `leaves` in `linearization` (the model's `config.tree_leaves` and
    `config.linearization`). A tokenizer without one-token brackets is a ValueError here, before any decoding."""
    _check_leaves(leaves)
    vocabulary = TreeVocabulary.of(tokenizer)
    TreeGrammarLogitsProcessor(tokenizer, ["."], leaves, vocabulary, linearization)  # its errors, at once
    return lambda sentences: LogitsProcessorList(
        [TreeGrammarLogitsProcessor(tokenizer, sentences, leaves, vocabulary, linearization)]
    )
