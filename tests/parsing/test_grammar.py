"""Decoding under the tree grammar: whatever the scores, only well-formed trees over the input words come out."""

import pytest
import torch

import hf_vanilla
from hf_vanilla.batch_decoding import generate_texts, parse_texts
from hf_vanilla.beam_search_vanilla import sentence_rows
from hf_vanilla.parsing import PLACEHOLDER, linearize_leaves, needed_repair, parse_tree, tree_from_output, tree_words
from hf_vanilla.parsing.grammar import MAX_OPENED_IN_A_ROW, TreeGrammarLogitsProcessor, tree_grammar_for
from hf_vanilla.tokenization import train_shared_bpe

from reference_grammar import allowed_tokens, allowed_tokens_in_order, grammar_state, grammar_state_in_order
from runs import tiny_model
from tolerances import assert_close_up_to_rounding

TREES = [
    "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))",
    "(S (NP (NNS Stocks)) (VP (VBD fell) (ADVP (RB sharply))) (. .))",
    "(S (NP (NP (DT The) (NN price)) (PP (IN of) (NP (NN gold)))) (VP (VBD rose)) (. .))",
    "(FRAG (NP (DT A) (JJ quiet) (NN day)) (. .))",
]
SENTENCES = ["The cat sat on the mat .", "Interleukin-3 prices fell .", "Gold"]  # unseen words become several pieces


@pytest.fixture(scope="module")
def tokenizer():
    texts = [
        text
        for tree in TREES
        for leaves in ("words", "placeholder", "pos")
        for order in ("top-down", "in-order")
        for text in (" ".join(tree_words(tree)), linearize_leaves(tree, leaves, order))
    ]
    return train_shared_bpe(texts * 3, vocab_size=400, show_progress=False, whitespace_only=True)


def _decode_greedily(processor: TreeGrammarLogitsProcessor, tokenizer, rows: int, seed: int) -> list[str]:
    """Greedy decoding from random scores: what any model, trained or not, could ask for."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.full((rows, 1), tokenizer.bos_token_id)
    for _ in range(400):
        scores = processor(ids, torch.randn(rows, len(tokenizer), generator=generator))
        ids = torch.cat([ids, scores.argmax(-1, keepdim=True)], dim=1)
        if (ids == tokenizer.eos_token_id).any(-1).all():
            break
    return [text.strip() for text in tokenizer.batch_decode(ids, skip_special_tokens=True)]


@pytest.mark.parametrize("order", ["top-down", "in-order"])
@pytest.mark.parametrize("leaves", ["words", "placeholder", "pos"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_scores_still_give_well_formed_trees_over_the_input_words(tokenizer, leaves, seed, order):
    processor = TreeGrammarLogitsProcessor(tokenizer, SENTENCES, leaves, linearization=order)
    for sentence, output in zip(SENTENCES, _decode_greedily(processor, tokenizer, len(SENTENCES), seed)):
        words = sentence.split()
        assert not needed_repair(output, words, leaves, order), output
        tree = parse_tree(tree_from_output(output, words, leaves, order))
        assert tree.words() == words
        if leaves == "pos":
            assert len(output.split()) == len(words) + 2 * len(list(_brackets(output)))


def _brackets(output: str):
    return (token for token in output.split() if token.startswith("("))


def test_a_new_leaf_gets_the_mass_of_every_leaf_token_and_brackets_keep_theirs(tokenizer):
    processor = TreeGrammarLogitsProcessor(tokenizer, ["The cat"], "words")
    start = tokenizer("(S", add_special_tokens=False)["input_ids"]
    ids = torch.tensor([[tokenizer.bos_token_id, *start]])
    scores = torch.randn(1, len(tokenizer))
    wrong_word = tokenizer(" mat", add_special_tokens=False)["input_ids"][0]
    scores[0, wrong_word] = 10.0  # the model would miscopy: its mass goes to the right word
    processed = processor(ids, scores.clone())[0]
    the = tokenizer(" The", add_special_tokens=False)["input_ids"][0]
    leaf_tokens = processor.vocabulary.leaf_tokens
    expected = torch.logsumexp(scores[0, leaf_tokens], dim=0)  # one sum over the leaf tokens, then its log
    assert_close_up_to_rounding(processed[the], expected, depth=2, width=len(leaf_tokens))
    opening_np = tokenizer(" (NP", add_special_tokens=False)["input_ids"][0]
    assert processed[opening_np] == scores[0, opening_np]  # passed through untouched: bit for bit
    closing_s = tokenizer(" )S", add_special_tokens=False)["input_ids"][0]
    allowed = set(torch.isfinite(processed).nonzero().flatten().tolist())
    assert wrong_word not in allowed and closing_s not in allowed  # (S holds no word yet
    assert allowed == {the, *processor.vocabulary.opening.tolist()}


def test_after_the_last_word_only_closing_brackets_then_the_end(tokenizer):
    processor = TreeGrammarLogitsProcessor(tokenizer, ["The cat"], "words")
    prefix = tokenizer("(S (NP The cat", add_special_tokens=False)["input_ids"]
    closing = [tokenizer(f" ){label}", add_special_tokens=False)["input_ids"][0] for label in ("NP", "S")]
    for step, expected in enumerate([closing[0], closing[1], tokenizer.eos_token_id]):
        ids = torch.tensor([[tokenizer.bos_token_id, *prefix, *closing[:step]]])
        processed = processor(ids, torch.zeros(1, len(tokenizer)))[0]
        assert torch.isfinite(processed).nonzero().flatten().tolist() == [expected]


def test_the_root_stays_open_until_every_word_is_in_and_runs_of_brackets_are_capped(tokenizer):
    processor = TreeGrammarLogitsProcessor(tokenizer, ["The cat"], "words")
    closing_s = tokenizer(" )S", add_special_tokens=False)["input_ids"][0]
    after_first_word = tokenizer("(S The", add_special_tokens=False)["input_ids"]
    processed = processor(torch.tensor([[tokenizer.bos_token_id, *after_first_word]]), torch.zeros(1, len(tokenizer)))
    assert processed[0, closing_s] == -torch.inf
    opening_np = tokenizer(" (NP", add_special_tokens=False)["input_ids"][0]
    many = tokenizer("(S", add_special_tokens=False)["input_ids"] + [opening_np] * (MAX_OPENED_IN_A_ROW - 1)
    processed = processor(torch.tensor([[tokenizer.bos_token_id, *many]]), torch.zeros(1, len(tokenizer)))[0]
    the = tokenizer(" The", add_special_tokens=False)["input_ids"][0]
    assert torch.isfinite(processed).nonzero().flatten().tolist() == [the]


def test_rows_of_a_beam_follow_their_own_sentence(tokenizer):
    processor = TreeGrammarLogitsProcessor(tokenizer, ["The cat", "Stocks fell"], "words")
    start = tokenizer("(S", add_special_tokens=False)["input_ids"]
    ids = torch.tensor([[tokenizer.bos_token_id, *start]] * 6)  # 2 sentences x 3 beams
    processed = processor(ids, torch.zeros(6, len(tokenizer)))
    the = tokenizer(" The", add_special_tokens=False)["input_ids"][0]
    stocks = tokenizer(" Stocks", add_special_tokens=False)["input_ids"][0]
    assert torch.isfinite(processed[:3, the]).all() and (processed[:3, stocks] == -torch.inf).all()
    assert torch.isfinite(processed[3:, stocks]).all() and (processed[3:, the] == -torch.inf).all()
    with pytest.raises(ValueError, match="5 rows for 2 sentences"):
        processor(ids[:5], torch.zeros(5, len(tokenizer)))


def test_bad_arguments_are_errors(tokenizer):
    with pytest.raises(ValueError, match="leaves must be one of"):
        TreeGrammarLogitsProcessor(tokenizer, ["The cat"], "tags")
    with pytest.raises(ValueError, match="leaves must be one of"):
        tree_grammar_for(tokenizer, "tags")
    with pytest.raises(ValueError, match="at least one word"):
        TreeGrammarLogitsProcessor(tokenizer, ["The cat", " "], "words")
    no_brackets = train_shared_bpe(["the cat sat on the mat"] * 3, vocab_size=300, show_progress=False)
    with pytest.raises(ValueError, match="not a parser's tokenizer"):
        TreeGrammarLogitsProcessor(no_brackets, ["the cat"], "words")
    with pytest.raises(ValueError, match="not a parser's tokenizer"):
        tree_grammar_for(no_brackets, "words")  # at once, not at the first decoding batch


@pytest.mark.parametrize("num_beams", [1, 3])
def test_an_untrained_model_parses_every_sentence_of_a_sorted_batch(tokenizer, num_beams):
    model = tiny_model(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
        decoder_start_token_id=tokenizer.bos_token_id,
    )
    sentences = SENTENCES + ["Stocks fell sharply ."]
    free = generate_texts(
        model, tokenizer, sentences, max_tokens=30, progress=False, num_beams=num_beams, max_new_tokens=60
    )
    assert any(needed_repair(output, s.split(), "words") for s, output in zip(sentences, free))
    calls = []

    def also_passed(input_ids, scores):  # a caller's own processor still runs beside the grammar
        calls.append(input_ids.shape[0])
        return scores

    outputs = generate_texts(
        model,
        tokenizer,
        sentences,
        max_tokens=30,
        progress=False,
        num_beams=num_beams,
        max_new_tokens=400,
        processors_for_batch=tree_grammar_for(tokenizer, "words"),
        logits_processor=[also_passed],
    )
    for sentence, output in zip(sentences, outputs):
        assert not needed_repair(output, sentence.split(), "words"), output
    assert calls and calls[0] % num_beams == 0


@pytest.mark.parametrize("order", ["top-down", "in-order"])
@pytest.mark.parametrize("leaves", ["words", "placeholder", "pos"])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_batched_grammar_allows_what_a_one_token_at_a_time_state_machine_allows(tokenizer, leaves, seed, order):
    """Beams as beam search leaves them (rows of a sentence reordered, each step's token drawn from what the grammar
    allows), checked at every step against `reference_grammar`, which reads each row from its first token; and the
    grammar for some of the sentences (`for_sentences`) allows their rows what the whole batch's allows them."""
    num_beams, generator = 3, torch.Generator().manual_seed(seed)
    processor = TreeGrammarLogitsProcessor(tokenizer, SENTENCES, leaves, linearization=order)
    vocabulary = processor.vocabulary
    reference, state = (
        (allowed_tokens, grammar_state) if order == "top-down" else (allowed_tokens_in_order, grammar_state_in_order)
    )

    def leaf(word: str, first: bool) -> list[int]:  # in order, the output starts with its first word: no space
        text = word if leaves == "words" else PLACEHOLDER
        return tokenizer(text if first and order == "in-order" else " " + text, add_special_tokens=False)["input_ids"]

    pieces = [[leaf(w, i == 0) for i, w in enumerate(s.split())] if leaves != "pos" else None for s in SENTENCES]
    ids = torch.full((len(SENTENCES) * num_beams, 1), tokenizer.bos_token_id)
    for _ in range(400):
        scores = torch.randn(ids.shape[0], len(tokenizer), generator=generator)
        processed = processor(ids, scores.clone())
        for kept in (torch.tensor([0, 2]), torch.tensor([1])):  # beam search dropping settled sentences
            rows = sentence_rows(kept, num_beams)
            assert torch.equal(processor.for_sentences(kept)(ids[rows], scores[rows].clone()), processed[rows])
        for row, row_ids in enumerate(ids.tolist()):
            s = row // num_beams
            allowed, new_leaf = reference(row_ids[1:], vocabulary, pieces[s], len(SENTENCES[s].split()))
            assert set(torch.isfinite(processed[row]).nonzero().flatten().tolist()) == allowed, row_ids
            if new_leaf is not None:
                expected = torch.logsumexp(scores[row, vocabulary.leaf_tokens], dim=0)
                assert_close_up_to_rounding(processed[row, new_leaf], expected, depth=2, width=len(tokenizer))
            if pieces[s] is not None:
                _, word, piece, *_ = state(row_ids[1:], vocabulary, pieces[s], len(pieces[s]))
                if piece:  # a word's later piece: the grammar's, probability 1
                    assert processed[row, pieces[s][word][piece]] == 0.0, row_ids
        # A sentence's beams swap places, as beam search reorders them, then each takes a token it is allowed.
        order = torch.cat(
            [s * num_beams + torch.randperm(num_beams, generator=generator) for s in range(len(SENTENCES))]
        )
        # Any allowed token alike, so that brackets nest deep and run up to the cap: the model's scores would make
        # nearly every step a leaf.
        chosen = torch.multinomial(torch.isfinite(processed).float(), 1, generator=generator)
        ids = torch.cat([ids, chosen], dim=1)[order]
        if (ids == tokenizer.eos_token_id).any(-1).all():
            break
    assert (ids == tokenizer.eos_token_id).any(-1).all()


# A parser of trees written in order (`config.linearization="in-order"`), trained for seconds until it knows its
# training trees: parsing their sentences must give those trees back, through the same public path as any parser.
TRAINING_TREES = [
    "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))",
    "(S (NP (NNS Stocks)) (VP (VBD fell) (ADVP (RB sharply))) (. .))",
    "(S (NP (NP (DT The) (NN price)) (PP (IN of) (NP (NN gold)))) (VP (VBD rose)) (. .))",
    "(FRAG (NP (DT A) (JJ quiet) (NN day)) (. .))",
    "(SINV (VP (VBD Said)) (NP (PRP he)) (. .))",
    "(S (NP (PRP She)) (VP (VBD saw) (NP (DT a) (NN dog))) (. .))",
]


@pytest.fixture(scope="module")
def in_order_parser():
    sentences = [" ".join(tree_words(tree)) for tree in TRAINING_TREES]
    targets = [linearize_leaves(tree, "words", "in-order") for tree in TRAINING_TREES]
    tokenizer = train_shared_bpe((sentences + targets) * 3, vocab_size=600, show_progress=False, whitespace_only=True)
    brackets = {symbol for target in targets for symbol in target.split() if symbol[0] in "()"}
    assert all(len(tokenizer(" " + b, add_special_tokens=False)["input_ids"]) == 1 for b in brackets)
    torch.manual_seed(0)
    config = hf_vanilla.VanillaTransformerConfig.from_size(
        "tiny",
        task="parsing",
        tree_leaves="words",
        linearization="in-order",
        vocab_size=len(tokenizer),
        dropout=0.0,
        label_smoothing=0.0,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
        decoder_start_token_id=tokenizer.bos_token_id,
    )
    model = hf_vanilla.VanillaTransformerForConditionalGeneration(config).train()
    batch = tokenizer(sentences, text_target=targets, padding=True, return_tensors="pt")
    batch["labels"][batch["labels"] == tokenizer.pad_token_id] = -100
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    labelled = batch["labels"] != -100
    for _ in range(1000):  # until greedy decoding writes every training tree back: seconds
        output = model(**batch)
        # Every next token the most likely given the right prefix, by a margin far above float32 rounding (the cache
        # and the kernels move scores by about 1e-6): greedy decoding writes each target whole.
        best, runner_up = output.logits.topk(2, dim=-1).values.unbind(-1)
        if ((output.logits.argmax(-1) == batch["labels"]) & (best - runner_up > 0.01))[labelled].all():
            break
        output.loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    else:
        pytest.fail("a tiny parser did not learn its 6 in-order trees in 1,000 updates")
    return model.eval(), tokenizer, sentences


@pytest.mark.parametrize("tree_grammar", [True, False])
def test_a_parser_trained_in_order_parses_its_training_sentences_into_their_trees(in_order_parser, tree_grammar):
    model, tokenizer, sentences = in_order_parser
    parses = parse_texts(model, tokenizer, sentences, tree_grammar=tree_grammar, progress=False, num_beams=1)
    # The gold trees as a parser that copies words writes them: XX tags, which EVALB ignores.
    expected = [tree_from_output(linearize_leaves(t, "words"), tree_words(t), "words") for t in TRAINING_TREES]
    assert parses == expected
    outputs = [linearize_leaves(t, "words", "in-order") for t in TRAINING_TREES]
    assert [tree_from_output(o, s.split(), "words") for o, s in zip(outputs, sentences)] != expected  # order matters
