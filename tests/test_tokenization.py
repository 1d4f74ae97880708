"""The shared BPE (`hf_vanilla.tokenization`): whole-piece tokens for the parser's bracket symbols."""

from collections import Counter

from hf_vanilla.parsing import linearize, preprocess, read_treebank, tree_words
from hf_vanilla.tokenization import train_shared_bpe


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
