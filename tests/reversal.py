"""A tiny model trained for a few seconds to reverse its input, whose decodings depend on the source token by token.

An untrained model writes one token at every step of every beam, so a test comparing two of its decodings passes
whatever the cache, the masks or the beam reordering do. Decoding tests compare decodings of `reversal_model()`
instead, and check that they are the task's answers (`reversal_batch`), which no broken cache or mask gives.

The model is trained to 95%, not 100%, and which sequences it gets wrong depends on the rounding of the machine's
kernels. So a test asserts the answers only of inputs the model is checked to decode right at its start, without the
cache (`reversal_rows`, `reversed_text`), and a test of a decoding rule compares the model's decoding with and without
the rule: never a string that only a perfect model writes."""

import time

import pytest
import torch

import hf_vanilla

from tolerances import assert_close_up_to_rounding

REVERSAL_SYMBOLS = range(4, 28)  # ids 0-3 are <pad>, <s>, </s>, <unk>
REVERSAL_VOCAB = 32


def reversal_batch(
    seed: int, rows: int, lengths: tuple[int, int] = (3, 10)
) -> tuple[torch.Tensor, torch.Tensor, list]:
    """`rows` random sequences of REVERSAL_SYMBOLS (lengths drawn from `lengths`, inclusive) + </s>, right-padded:
    (input_ids, attention_mask, answers), each answer the reversed sequence followed by </s>."""
    generator = torch.Generator().manual_seed(seed)
    sizes = torch.randint(lengths[0], lengths[1] + 1, (rows,), generator=generator).tolist()
    ids = torch.zeros(rows, max(sizes) + 1, dtype=torch.long)
    answers = []
    for row, size in enumerate(sizes):
        symbols = torch.randint(REVERSAL_SYMBOLS.start, REVERSAL_SYMBOLS.stop, (size,), generator=generator)
        ids[row, :size], ids[row, size] = symbols, 2
        answers.append(symbols.flip(0).tolist() + [2])
    return ids, (ids != 0).long(), answers


def reversal_accuracy(model, ids: torch.Tensor, mask: torch.Tensor, answers: list, **generate_kwargs) -> float:
    """Share of rows whose decoding (after the start token, up to </s>) is exactly the answer."""
    out = model.generate(ids, attention_mask=mask, max_new_tokens=ids.shape[1] + 2, **generate_kwargs)
    return sum(decoded(row) == answer for row, answer in zip(out.tolist(), answers)) / len(answers)


def decoded(row: list[int]) -> list[int]:
    """A generated row's tokens after the start token, up to and including the first </s>."""
    tokens = row[1:]
    return tokens[: tokens.index(2) + 1] if 2 in tokens else tokens


def train_reversal_model(
    max_steps: int = 1500, target: float = 0.95, seed: int = 0, **config_overrides
) -> hf_vanilla.VanillaTransformerForConditionalGeneration:
    """The tiny size (32-token vocabulary, no dropout, no smoothing, any other `config_overrides`) trained to
    reverse sequences of 3-10 symbols until greedy decoding gets `target` of 200 held-out sequences exactly right
    (about 15 s on 2 CPU cores). Fails the calling test if it does not get there: a model that cannot learn a reversal
    is itself a defect."""
    torch.manual_seed(seed)
    config = hf_vanilla.VanillaTransformerConfig.from_size(
        "tiny", vocab_size=REVERSAL_VOCAB, dropout=0.0, label_smoothing=0.0, **config_overrides
    )
    model = hf_vanilla.VanillaTransformerForConditionalGeneration(config).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3, betas=(0.9, 0.98))
    warmup = 100
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min((s + 1) / warmup, (warmup / (s + 1)) ** 0.5))
    held_out = reversal_batch(seed=10_000, rows=200)
    started, accuracy = time.perf_counter(), 0.0
    for step in range(1, max_steps + 1):
        ids, mask, answers = reversal_batch(seed=seed * 100_000 + step, rows=64)
        labels = torch.full_like(ids, -100)
        for row, answer in enumerate(answers):
            labels[row, : len(answer)] = torch.tensor(answer)
        model(input_ids=ids, attention_mask=mask, labels=labels).loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        if step >= 300 and step % 100 == 0:
            with torch.no_grad():
                # Without the cache, so that a broken cache fails the tests that check it rather than this fixture.
                accuracy = reversal_accuracy(model.eval(), *held_out, num_beams=1, use_cache=False)
            model.train()
            if accuracy >= target:
                break
    if accuracy < target:
        pytest.fail(
            f"the reversal model reached {accuracy:.2f} after {step} updates ({time.perf_counter() - started:.0f} s), "
            f"not {target}: training or greedy decoding is broken"
        )
    return model.eval()


# Decoding with no rule: greedy, no n-gram or stutter rule, no word-continuation rule, no least length.
RULE_FREE = dict(
    num_beams=1, no_repeat_ngram_size=0, no_stutter_span_size=0, word_continuation_ids=None, min_new_tokens=0
)
LETTERS = "abcdefghijklmnopqrstuvwxyzAB"  # reversal_tokenizer's word for each id from 4 on
# Candidate inputs for `reversed_text`, as reversal_tokenizer's words: sources whose reversal repeats a trigram
# ("c b a" twice), sources of 3 symbols and sources of 10 different symbols.
REPEATING = ["a b c a b c d", "e f g e f g h", "i j k i j k l", "m n o m n o p", "q r s q r s t", "u v w u v w x"]
SHORT = ["a b c", "d e f", "g h i", "j k l", "m n o", "p q r", "s t u", "v w x"]
LONG = [
    "x w v u t s r q p o",
    "a b c d e f g h i j",
    "k l m n o p q r s t",
    "n o p q r s t u v w",
    "b d f h j l n p r t",
    "w u s q o m k i g e",
]


def reversal_inputs(sequences: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor, list]:
    """(input_ids, attention_mask, answers) of sequences of REVERSAL_SYMBOLS, each + </s>, right-padded in a batch."""
    ids = torch.zeros(len(sequences), max(map(len, sequences)) + 1, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        ids[row, : len(sequence) + 1] = torch.tensor([*sequence, 2])
    return ids, (ids != 0).long(), [[*sequence[::-1], 2] for sequence in sequences]


def decoded_without_cache(model, sequences: list[list[int]], decoding: dict | None = None) -> list[list[int]]:
    """`model`'s decoding (`decoded`, </s> included) of each sequence of REVERSAL_SYMBOLS (</s> appended, padded in
    one batch) under its generation config updated by `decoding` (None: `RULE_FREE`, at most the longest answer's
    length + 2 tokens); always without the cache, so that a broken cache fails the tests that check it rather than
    the choice of their inputs."""
    ids, mask, _ = reversal_inputs(sequences)
    if decoding is None:
        decoding = {**RULE_FREE, "max_new_tokens": ids.shape[1] + 2}
    with torch.no_grad():
        out = model.generate(ids, attention_mask=mask, use_cache=False, **decoding)
    return [decoded(row) for row in out.tolist()]


def _right(model, sequences: list[list[int]], decodings: tuple[dict, ...], what: str) -> list[list[int]]:
    """Those of `sequences` that `model` decodes as their reversal under every one of `decodings` (none given:
    `RULE_FREE`); fails the calling test, naming each sequence and what the model wrote, when there is none."""
    right, wrote = list(sequences), {}
    for decoding in decodings or (None,):
        outputs = decoded_without_cache(model, sequences, decoding)
        wrong = [s for s, o in zip(sequences, outputs) if o != [*s[::-1], 2]]
        wrote.update({tuple(s): o for s, o in zip(sequences, outputs) if s in wrong and tuple(s) not in wrote})
        right = [s for s in right if s not in wrong]
    if not right:
        written = "; ".join(f"{_words(s)!r} -> {_words(wrote[tuple(s)])!r}" for s in sequences)
        broken = "trained to get 95% right, it gets none: training or decoding is broken"
        pytest.fail(f"the model reverses none of {what} ({broken}): {written}")
    return right


def _words(ids: list[int]) -> str:
    return " ".join(LETTERS[i - 4] if i > 3 else ("</s>" if i == 2 else f"<{i}>") for i in ids)


def reversed_text(model, candidates: list[str], *decodings: dict) -> str:
    """The first of `candidates` (sentences of `reversal_tokenizer`'s words) that `model` decodes as its reversal
    under each of `decodings` (generate() arguments over the model's generation config, `{}` for that config alone;
    none given: `RULE_FREE`), without the cache. Tests of a decoding rule or of what a command writes take their
    inputs from here: a model trained to 95% gets some inputs wrong, and which ones depends on the machine's
    rounding. Fails the calling test, naming every candidate and what the model wrote, when it reverses none."""
    sequences = [[LETTERS.index(word) + 4 for word in text.split()] for text in candidates]
    first = _right(model, sequences, decodings, f"its {len(candidates)} candidate inputs")[0]
    return candidates[sequences.index(first)]


def reversal_rows(
    model, seed: int, lengths: list[int], *decodings: dict, candidates: int = 16
) -> tuple[torch.Tensor, torch.Tensor, list]:
    """(input_ids, attention_mask, answers) as `reversal_batch` gives them, with one sequence of each of `lengths`
    (padded alike on every machine): the first of `candidates` random sequences of that length (seeded by `seed`)
    that `model` decodes as its reversal under each of `decodings` (as in `reversed_text`), without the cache. So
    the answers a test asserts are those of inputs the model is checked to get right at the start of the test, not
    a perfect model's. Fails the calling test, naming the candidates and what the model wrote, when none is right."""
    chosen = []
    for index, length in enumerate(lengths):
        drawn, _, _ = reversal_batch(seed * 1000 + index, candidates, (length, length))
        chosen.append(_right(model, drawn[:, :length].tolist(), decodings, f"{candidates} sequences of {length}")[0])
    return reversal_inputs(chosen)


def varied(row: list[int]) -> bool:
    """A decoding worth comparing (`assert_varied`'s row test): at least 3 distinct tokens."""
    return len(set(row)) >= 3


def chosen_rows(
    model, seed: int, rows: int, decoding: dict, wanted=None, candidates: int = 48
) -> tuple[torch.Tensor, torch.Tensor, list]:
    """(input_ids, attention_mask, answers) of `rows` of `reversal_batch(seed, candidates)`'s sequences whose
    decodings under `decoding` (generate() arguments over `RULE_FREE`, without the cache) are `varied` and differ
    from one another: so a test that compares decodings compares ones worth comparing on every machine, not what
    this machine's fixture happens to write for a fixed batch. `wanted(sequence, decoding)`, if given, must hold for
    at least one chosen row (the first such candidate is taken first). Fails the calling test, naming what the
    model wrote, when there are not enough."""
    drawn, _, _ = reversal_batch(seed, candidates)
    sequences = [[token for token in row if token > 3] for row in drawn.tolist()]
    limit = {"max_new_tokens": max(map(len, sequences)) + 3}
    outputs = decoded_without_cache(model, sequences, {**RULE_FREE, **limit, **decoding})
    good = [i for i, out in enumerate(outputs) if varied(out) and outputs.index(out) == i]
    first = [i for i in good if wanted is None or wanted(sequences[i], outputs[i])][:1]
    picked = first + [i for i in good if i not in first][: rows - len(first)]
    if len(picked) < rows or (wanted is not None and not first):
        written = "; ".join(f"{_words(s)!r} -> {_words(o)!r}" for s, o in zip(sequences, outputs))
        pytest.fail(f"of {candidates} candidates, {len(good)} decode varied, {len(first)} as wanted: {written}")
    return reversal_inputs([sequences[i] for i in sorted(picked)])


def reversal_tokenizer():
    """A word-level tokenizer for the reversal model's 32 ids: <pad> <s> </s> <unk>, then one letter per symbol
    (a-x for REVERSAL_SYMBOLS, y z A B for the unused ids); it appends </s> as hf_vanilla's tokenizers do."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    letters = "abcdefghijklmnopqrstuvwxyzAB"
    vocab = {token: index for index, token in enumerate(["<pad>", "<s>", "</s>", "<unk>", *letters])}
    assert len(vocab) == REVERSAL_VOCAB
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 2)])
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )


def reversal_text(ids: torch.Tensor) -> list[str]:
    """The source sentences of a `reversal_batch` as text for `reversal_tokenizer` (</s> and padding left out)."""
    letters = "abcdefghijklmnopqrstuvwxyzAB"
    return [" ".join(letters[i - 4] for i in row if i > 3) for row in ids.tolist()]


def assert_cache_changes_nothing(model, num_beams: int, sums: dict[str, int]) -> None:
    """Decoding the reversal batch with the key/value cache (one new position a step, reordered with the beams) gives
    the tokens of recomputing the whole prefix at each step, and every step's scores within `rounding_tolerance` of
    `sums` (the model's depth and width)."""
    ids, mask, _ = reversal_batch(seed=3, rows=6)
    kwargs = dict(
        attention_mask=mask,
        num_beams=num_beams,
        num_return_sequences=num_beams,
        max_new_tokens=12,
        output_scores=True,
        return_dict_in_generate=True,
    )
    with_cache = model.generate(ids, use_cache=True, **kwargs)
    without = model.generate(ids, use_cache=False, **kwargs)
    assert_varied(with_cache.sequences[::num_beams])
    assert torch.equal(with_cache.sequences, without.sequences)
    for cached, recomputed in zip(with_cache.scores, without.scores, strict=True):
        assert_close_up_to_rounding(cached, recomputed, **sums)
    if num_beams > 1:
        assert (with_cache.beam_indices[:, 1:] != with_cache.beam_indices[:, :1]).any()  # beams were reordered


def assert_varied(sequences: torch.Tensor) -> None:
    """Decodings worth comparing: every row writes at least 3 distinct tokens, and no two rows are the same."""
    rows = [tuple(decoded(row)) for row in sequences.tolist()]
    assert all(varied(row) for row in rows), rows
    assert len(set(rows)) == len(rows), rows
