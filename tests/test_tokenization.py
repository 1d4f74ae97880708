"""The shared BPE (`hf_vanilla.tokenization`): whole-piece tokens for the parser's bracket symbols; the summarization
tokenizers' prefix space and lower case, which make a summary's words copyable; the copyable share of a corpus."""

from collections import Counter

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from hf_vanilla.data.copyable import copyable_tokens
from hf_vanilla.data.encoding import EncodedPairs
from hf_vanilla.parsing import linearize, preprocess, read_treebank, tree_words
from hf_vanilla.tokenization import reads_lowercase, train_shared_bpe, whole_word_copy_ids, word_continuation_ids


def test_whole_piece_bpe_keeps_every_bracket_symbol_one_token_and_round_trips(treebank_dir):
    trees = [preprocess(t) for t in read_treebank(treebank_dir)]
    train, held_out = trees[:3000], trees[3000:]
    texts = [text for t in train for text in (" ".join(tree_words(t)), linearize(t))]
    tokenizer = train_shared_bpe(texts, vocab_size=4000, show_progress=False, whitespace_only=True)
    gpt2_style = train_shared_bpe(texts, vocab_size=4000, show_progress=False)
    symbols = Counter(symbol for t in train for symbol in linearize(t).split())
    for symbol, count in symbols.items():
        if count >= 20:  # every bracket symbol (and XX) seen 20 times is one token, at the demo's 4k vocabulary
            assert len(tokenizer.tokenize(" " + symbol)) == 1, symbol
    whole, split = 0, 0
    for tree in held_out[:200]:
        linearized, words = linearize(tree), " ".join(tree_words(tree))
        whole += len(tokenizer(linearized)["input_ids"])
        split += len(gpt2_style(linearized)["input_ids"])
        for text in (linearized, words):
            assert tokenizer.decode(tokenizer(text)["input_ids"], skip_special_tokens=True) == text
    assert split > 1.5 * whole  # GPT-2's pre-tokenizer cuts "(NP" into "(" + "NP": 1.6 times the tokens


SUBJECTS = ["Agreement attached", "Meeting moved to Friday", "Re: the agreement"]
BODIES = ["Please see the\nagreement attached.", "The meeting  is moved to Friday,\r\nsee you", "Agreement: fine"]


def summarization_tokenizer(**options):
    return train_shared_bpe((SUBJECTS + BODIES) * 20, vocab_size=300, show_progress=False, **options)


def test_prefix_space_and_lowercase_give_a_word_the_same_tokens_at_the_start_of_a_text_as_inside_it(tmp_path):
    """With `prefix_space` and `lowercase` (the summarization presets'), "Agreement" opening a subject and "agreement"
    inside a body are one token sequence, and so are "Friday," and "Friday"; without them they are not (what made a
    subject's first word uncopyable). Decoding gives the text lower-cased, white space as one space, after a space."""
    copyable = summarization_tokenizer(prefix_space=True, lowercase=True)
    plain = summarization_tokenizer()
    for subject, body in ((SUBJECTS[0], BODIES[0]), (SUBJECTS[1], BODIES[1])):  # "Agreement", "Meeting"
        assert copyable(subject)["input_ids"][0] in copyable(body)["input_ids"]
        assert plain(subject)["input_ids"][0] not in plain(body)["input_ids"]
    assert copyable("Friday,")["input_ids"][0] == copyable("friday")["input_ids"][0]
    text = " Agreement\n\nATTACHED,\tsee  you "
    assert copyable.decode(copyable(text)["input_ids"], skip_special_tokens=True) == " agreement attached, see you"
    assert plain.decode(plain(text)["input_ids"], skip_special_tokens=True) == text
    assert reads_lowercase(copyable) and not reads_lowercase(plain)
    assert not reads_lowercase(summarization_tokenizer(prefix_space=True))
    # Saved in the tokenizer's files: AutoTokenizer (and so the CLI, the app, a Hub load) applies it unasked.
    copyable.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert (
        loaded(text)["input_ids"]
        == copyable(text)["input_ids"]
        == copyable(" agreement attached, see you")["input_ids"]
    )
    assert reads_lowercase(loaded)


def test_word_continuation_ids_are_every_piece_but_the_first_of_a_word():
    """Whole-word copying's list for the summarizers' tokenizer: the pieces of a word after its first, and
    punctuation glued to a word, are continuations; a word's first piece and the special tokens are not; the list is
    every piece without the word-start marker. SentencePiece's marker is read too; a tokenizer that marks no word
    start (no prefix space: its first word looks like a continuation) gets None."""
    tokenizer = summarization_tokenizer(prefix_space=True, lowercase=True)
    continuing = set(word_continuation_ids(tokenizer))
    split = 0
    for word in ("easements", "confidentiality", "agreement", "attached,", "meeting"):
        ids = tokenizer(word, add_special_tokens=False)["input_ids"]
        assert ids[0] not in continuing and set(ids[1:]) <= continuing, tokenizer.convert_ids_to_tokens(ids)
        split += len(ids) > 1
    assert split >= 3
    pieces = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    special = set(tokenizer.all_special_ids)
    assert continuing == {i for i, p in enumerate(pieces) if not p.startswith("\u0120") and i not in special}
    assert word_continuation_ids(summarization_tokenizer()) is None
    sentencepiece = Tokenizer(models.BPE(unk_token="<unk>"))
    sentencepiece.pre_tokenizer = pre_tokenizers.Metaspace()
    sentencepiece.train_from_iterator(
        (SUBJECTS + BODIES) * 20, trainers.BpeTrainer(vocab_size=200, special_tokens=["<pad>", "<unk>"])
    )
    sentencepiece = PreTrainedTokenizerFast(tokenizer_object=sentencepiece, pad_token="<pad>", unk_token="<unk>")
    continuing = set(word_continuation_ids(sentencepiece))
    ids = sentencepiece("the confidentiality agreement", add_special_tokens=False)["input_ids"]
    assert [i in continuing for i in ids] == [
        not p.startswith("\u2581") for p in sentencepiece.convert_ids_to_tokens(ids)
    ]
    assert any(i in continuing for i in ids) and not {0, 1} & continuing


def test_whole_word_copying_is_decided_once_for_the_recipe_and_the_tuning_script():
    """Not asked: on for a copying model whose tokenizer marks word starts, off otherwise; off when turned off; asked
    for where it cannot apply: one ValueError starting with the caller's flag."""
    marked, unmarked = summarization_tokenizer(prefix_space=True, lowercase=True), summarization_tokenizer()
    pieces = word_continuation_ids(marked)
    assert whole_word_copy_ids(marked, True, None, "--f") == whole_word_copy_ids(marked, True, True, "--f") == pieces
    assert pieces and whole_word_copy_ids(marked, True, False, "--f") is None
    assert (
        whole_word_copy_ids(marked, False, None, "--f") is None
        and whole_word_copy_ids(unmarked, True, None, "--f") is None
    )
    with pytest.raises(ValueError, match="^--whole-word-copy on: the model has no copy mechanism$"):
        whole_word_copy_ids(marked, False, True, "--whole-word-copy on")
    with pytest.raises(ValueError, match="^--whole-word-copy: the tokenizer marks no word start"):
        whole_word_copy_ids(unmarked, True, True, "--whole-word-copy")


def test_the_copyable_share_counts_summary_tokens_found_in_their_source_without_special_tokens():
    """`copyable_tokens` against a count by hand: </s> (2) ends every side and is never counted, nor found; an
    empty summary (only </s>) is left out."""
    pairs = EncodedPairs.from_lists(
        [[5, 6, 7, 2], [8, 9, 2], [5, 2]],
        [[6, 10, 2], [11, 8, 8, 2], [2]],
    )
    assert copyable_tokens(pairs, [0, 1, 2, 3]) == {
        "summary_tokens_in_source": round(100 * 3 / 5, 2),  # 6; 8 and 8 (11 and 10 are not there)
        "first_token_in_source": 50.0,  # 6 yes, 11 no
        "tokens_per_summary": 2.5,
        "pairs": 2,
    }
