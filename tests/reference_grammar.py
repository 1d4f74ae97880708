"""The tree grammar as a plain state machine, one row and one token at a time: the independent computation that the
batched `TreeGrammarLogitsProcessor` is checked against (its reading of a prefix and its mask)."""

from hf_vanilla.parsing.grammar import MAX_OPENED_IN_A_ROW, TreeVocabulary


def grammar_state(tokens: list[int], vocabulary: TreeVocabulary, pieces: list[list[int]] | None, words: int):
    """(open brackets as [label, holds a word], next word, next piece of that word, brackets opened since the last
    leaf) after `tokens` (the output so far, start token left out); `pieces`: each word's tokens, None for POS."""
    stack, word, piece, opened = [], 0, 0, 0
    for token in tokens:
        if stack and word < words:
            is_leaf = token == pieces[word][piece] if pieces is not None else bool(vocabulary.tag_tokens[token])
            if is_leaf:
                stack = [[label, True] for label, _ in stack]
                opened, piece = 0, piece + 1
                if pieces is None or piece == len(pieces[word]):
                    word, piece = word + 1, 0
                continue
        if vocabulary.opening_label[token] >= 0:
            stack, opened = stack + [[int(vocabulary.opening_label[token]), False]], opened + 1
        elif stack and vocabulary.closing_label[token] == stack[-1][0]:
            stack = stack[:-1]
    return stack, word, piece, opened


def allowed_tokens(tokens: list[int], vocabulary: TreeVocabulary, pieces: list[list[int]] | None, words: int):
    """The set of tokens the grammar allows after `tokens`, and the next leaf's first token where one is allowed
    (None for POS leaves, where any tag token is one)."""
    if not tokens:
        return set(vocabulary.opening_first.tolist()), None
    stack, word, piece, opened = grammar_state(tokens, vocabulary, pieces, words)
    if piece:
        return {pieces[word][piece]}, None
    if not stack:
        return {vocabulary.eos_token_id}, None
    allowed, leaf = set(), None
    if word < words:
        if pieces is None:
            allowed |= set(vocabulary.tag_tokens.nonzero().flatten().tolist())
        else:
            leaf = pieces[word][0]
            allowed.add(leaf)
        if opened < MAX_OPENED_IN_A_ROW:
            allowed |= set(vocabulary.opening.tolist())
    label, holds_word = stack[-1]
    if holds_word and (len(stack) > 1 or word == words):
        allowed.add(int(vocabulary.closing[label]))
    return allowed, leaf


def grammar_state_in_order(tokens: list[int], vocabulary: TreeVocabulary, pieces: list[list[int]] | None, words: int):
    """For trees written in order: (open brackets' labels, next word, next piece of that word, brackets opened since
    the last leaf, what the last token was: None, "leaf", "open", "close" or "end") after `tokens`."""
    stack, word, piece, opened, last = [], 0, 0, 0, None
    tags = vocabulary.tag_tokens | vocabulary.first_tag_tokens
    for position, token in enumerate(tokens):
        may_be_leaf = word < words and (piece > 0 or bool(stack) or position == 0)
        if may_be_leaf and (token == pieces[word][piece] if pieces is not None else bool(tags[token])):
            opened, piece, last = 0, piece + 1, "leaf"
            if pieces is None or piece == len(pieces[word]):
                word, piece = word + 1, 0
        elif vocabulary.opening_label[token] >= 0:
            stack, opened, last = stack + [int(vocabulary.opening_label[token])], opened + 1, "open"
        elif stack and vocabulary.closing_label[token] == stack[-1]:
            stack, last = stack[:-1], "close"
        elif token == vocabulary.eos_token_id:
            last = "end"
    return stack, word, piece, opened, last


def allowed_tokens_in_order(tokens: list[int], vocabulary: TreeVocabulary, pieces: list[list[int]] | None, words: int):
    """`allowed_tokens` for trees written in order (Liu & Zhang, 2017): the first word first; a bracket opens right
    after a finished leaf or constituent; a bracket closes any time, the root early only while another may open above
    it; the end comes after the root's closing bracket once every word is in."""
    if not tokens:
        if pieces is None:
            return set(vocabulary.first_tag_tokens.nonzero().flatten().tolist()), None
        return {pieces[0][0]}, pieces[0][0]
    stack, word, piece, opened, last = grammar_state_in_order(tokens, vocabulary, pieces, words)
    if last == "end":
        return {vocabulary.eos_token_id}, None
    if piece:
        return {pieces[word][piece]}, None
    allowed, leaf = set(), None
    if stack and word < words:
        if pieces is None:
            allowed |= set(vocabulary.tag_tokens.nonzero().flatten().tolist())
        else:
            leaf = pieces[word][0]
            allowed.add(leaf)
    if last in ("leaf", "close") and opened < MAX_OPENED_IN_A_ROW:
        allowed |= set(vocabulary.opening.tolist())
    if stack and (len(stack) > 1 or word == words or opened < MAX_OPENED_IN_A_ROW):
        allowed.add(int(vocabulary.closing[stack[-1]]))
    if not stack and word == words and last == "close":
        allowed.add(vocabulary.eos_token_id)
    return allowed, leaf
