"""ROUGE through the package's `evaluate` metric: against an independent computation of n-gram overlap and longest
common subsequences, against `rouge_score` called directly, the stemming, the multi-reference rule and ROUGE-Lsum's
sentences; and the lead baseline."""

import re
from collections import Counter

import pytest
import torch
from nltk.stem.porter import PorterStemmer
from rouge_score import rouge_scorer

from hf_vanilla.data.summaries import load_summarization_corpus
from hf_vanilla.evaluation.rouge import (
    ROUGE_TYPES,
    choose_lead_k,
    compute_rouge,
    lead,
    load_rouge_metric,
    rouge_scores,
    sentence_lines,
)

from runs import SHARED_DATA, require
from tolerances import rounding_tolerance

AESLC = SHARED_DATA / "aeslc" / "enron_subject_line"
STEMMER = PorterStemmer("ORIGINAL_ALGORITHM")


def tolerance(items: int) -> float:
    """Rounding of a float64 mean of `items` F1 values on 0-100: precision, recall, F1, the sum and the scaling."""
    return rounding_tolerance(100.0, depth=5, width=max(items, 1), dtype=torch.float64)


# --- an independent ROUGE: lower case, ASCII letters and digits, Porter stems of words over 3 letters ----------------


def words(text: str) -> list[str]:
    return [STEMMER.stem(w) if len(w) > 3 else w for w in re.findall(r"[a-z0-9]+", text.lower())]


def f1(overlap: int, predicted: int, reference: int) -> float:
    precision, recall = overlap / predicted if predicted else 0.0, overlap / reference if reference else 0.0
    return 100 * 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def ngram_f1(prediction: str, reference: str, n: int) -> float:
    def grams(text):
        w = words(text)
        return Counter(tuple(w[i : i + n]) for i in range(len(w) - n + 1))

    p, r = grams(prediction), grams(reference)
    return f1(sum((p & r).values()), sum(p.values()), sum(r.values()))


def lcs_table(a: list[str], b: list[str]) -> list[list[int]]:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
    return table


def lcs_f1(prediction: str, reference: str) -> float:
    p, r = words(prediction), words(reference)
    return f1(lcs_table(p, r)[-1][-1], len(p), len(r))


def hand_rouge(prediction: str, reference: str) -> dict[str, float]:
    return {
        "rouge1": ngram_f1(prediction, reference, 1),
        "rouge2": ngram_f1(prediction, reference, 2),
        "rougeL": lcs_f1(prediction, reference),
    }


EXAMPLES = [
    ("the cat sat on the mat", "the cat lay on the red mat"),
    ("Police arrested two men on Friday.", "Two men were arrested by police on Friday night"),
    ("Meeting moved to 3 pm", "meeting moved: 3pm, room EB 3267"),
    ("nothing in common", "entirely different words here"),
]


def test_rouge_equals_the_hand_computed_fractions():
    # the cat sat on the mat / the cat lay on the red mat: 5 shared words of 6 and 7; 2 shared bigrams of 5 and 6;
    # the longest common subsequence "the cat on the mat" has 5 words. F1 = 2 * overlap / (predicted + reference).
    scores = rouge_scores([EXAMPLES[0][0]], [EXAMPLES[0][1]])
    expected = {"rouge1": 1000 / 13, "rouge2": 400 / 11, "rougeL": 1000 / 13, "rougeLsum": 1000 / 13}
    for rouge_type, value in expected.items():
        assert abs(scores[rouge_type] - value) <= tolerance(1), rouge_type


def test_rouge_equals_an_independent_computation_averaged_over_items():
    predictions, references = zip(*EXAMPLES)
    scores = rouge_scores(list(predictions), list(references))
    for rouge_type in ("rouge1", "rouge2", "rougeL"):
        expected = sum(hand_rouge(p, r)[rouge_type] for p, r in EXAMPLES) / len(EXAMPLES)
        assert abs(scores[rouge_type] - expected) <= tolerance(len(EXAMPLES)), rouge_type
    assert 0 < scores["rouge2"] < scores["rouge1"] < 100


def test_rouge_lsum_takes_the_union_of_each_reference_sentence_s_common_subsequences():
    # Lin (2004), section 3.2, with the prediction's sentences swapped: the reference "w1 w2 w3 w4 w5" shares
    # w1 w3 w5 with the first predicted sentence and w1 w2 with the second; their union has 4 words, so recall 4/5,
    # precision 4/10 and F1 8/15. Read as one sentence, the longest common subsequence has only 3 words.
    prediction = "Alpha charlie hotel india echo. Alpha bravo foxtrot golf hotel."
    reference = "Alpha bravo charlie delta echo."
    scores = rouge_scores([prediction], [reference])
    assert abs(scores["rougeLsum"] - 800 / 15) <= tolerance(1)
    assert abs(scores["rougeL"] - f1(3, 10, 5)) <= tolerance(1)


def test_sentence_lines_keeps_line_breaks_and_splits_after_end_punctuation():
    assert sentence_lines("First one. Second one?\nThird line without a stop") == (
        "First one.\nSecond one?\nThird line without a stop"
    )
    assert sentence_lines("  \n\nOnly one!\n") == "Only one!"


def test_stemming_counts_inflected_forms_as_the_same_word():
    scores = rouge_scores(["cats running quickly"], ["cat runs quickly"])
    assert scores["rouge1"] == 100.0 and scores["rouge2"] == 100.0
    unstemmed = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=False).score(
        "cat runs quickly", "cats running quickly"
    )
    assert unstemmed["rouge1"].fmeasure < 0.5


def test_rouge_equals_rouge_score_called_directly_on_real_data():
    corpus = load_summarization_corpus(str(require(AESLC)))
    dev = corpus["validation"].select(range(60))
    predictions = [lead(text, 6) for text in dev["text"]]
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    for references in (dev["summary"], dev["references"]):
        scores = rouge_scores(predictions, references)
        multi = [[r] if isinstance(r, str) else r for r in references]
        direct = [
            scorer.score_multi([sentence_lines(r) for r in refs], sentence_lines(p))
            for p, refs in zip(predictions, multi)
        ]
        for rouge_type in ROUGE_TYPES:
            expected = 100 * sum(score[rouge_type].fmeasure for score in direct) / len(direct)
            assert abs(scores[rouge_type] - expected) <= tolerance(len(direct)), rouge_type
        assert scores["rouge1"] > 5  # the subject words are often in the body's first words


def test_several_references_score_the_best_one_for_each_type_separately():
    # The words of the second reference in reverse order: every word in common, no bigram. The first holds the
    # prediction's bigrams among many other words.
    prediction = "alpha bravo charlie delta"
    references = ["alpha bravo charlie delta echo foxtrot golf hotel india", "delta charlie bravo alpha", "lunch menu"]
    multi = rouge_scores([prediction], [references])
    singles = [rouge_scores([prediction], [reference]) for reference in references]
    for rouge_type in ROUGE_TYPES:
        assert multi[rouge_type] == max(single[rouge_type] for single in singles), rouge_type
    # Not the mean over the references, and not one reference for every type: here ROUGE-1 and ROUGE-2 are best
    # against different references.
    best = {t: max(range(3), key=lambda i: singles[i][t]) for t in ("rouge1", "rouge2")}
    assert multi["rouge1"] > sum(s["rouge1"] for s in singles) / 3
    assert best["rouge1"] != best["rouge2"]


def test_the_metric_loads_from_the_package_folder_and_refuses_mismatched_lengths():
    metric = load_rouge_metric()
    assert metric.compute(predictions=["a cat"], references=[["a cat"]]) == dict.fromkeys(ROUGE_TYPES, 100.0)
    with pytest.raises(ValueError):
        compute_rouge(["one", "two"], ["one"])
    with pytest.raises(ValueError, match="unknown ROUGE types"):
        compute_rouge(["one"], ["one"], rouge_types=["rouge3"])


def test_lead_takes_the_first_k_words():
    assert lead("Hi Phillip,  This message\nis to confirm", 4) == "Hi Phillip, This message"
    assert lead("short", 10) == "short"


def test_choose_lead_k_picks_the_k_with_the_best_rouge_1():
    texts = ["alpha bravo charlie delta echo foxtrot", "golf hotel india juliet kilo lima"]
    references = [["alpha bravo charlie"], ["golf hotel india", "something else"]]
    best, scores = choose_lead_k(texts, references, ks=[1, 2, 3, 4, 6])
    assert best == 3 and scores[3] == 100.0 and set(scores) == {1, 2, 3, 4, 6}
    assert scores[2] == pytest.approx(80.0) and scores[4] == pytest.approx(600 / 7)


# Documents whose words rouge_score's tokenizer splits further or drops (hyphens, punctuation alone, e-mail addresses,
# accents, numbers), one empty, one shorter than most k, one with a word twice: the lead-k scores must still be those
# of `rouge_scores` on `lead(text, k)`.
LEAD_TEXTS = [
    "Re: re-start of the CA-ISO meeting -- moved to 3pm (room EB-3267) ...",
    "",
    "short note",
    "Café déjà vu: the the cat sat, sat on the mat; mat mat!",
    "Please see john.doe@enron.com 's e-mail of 10/23/2001 about the 3,000 MW deal.",
]
LEAD_REFERENCES = [
    ["CA-ISO meeting moved", "restart meeting"],
    ["anything"],
    ["short"],
    ["the cat sat on the mat", "cafe"],
    ["3,000 MW deal e-mail", ""],
]


@pytest.mark.parametrize("several", [False, True])
def test_every_lead_k_scores_as_rouge_score_does_on_the_first_k_words(several):
    references = LEAD_REFERENCES if several else [r[0] for r in LEAD_REFERENCES]
    ks = [1, 2, 3, 5, 8, 13, 40]
    best, scores = choose_lead_k(LEAD_TEXTS, references, ks, progress=False)
    expected = {k: rouge_scores([lead(t, k) for t in LEAD_TEXTS], references, ["rouge1"])["rouge1"] for k in ks}
    assert set(scores) == set(ks)
    for k in ks:
        assert abs(scores[k] - expected[k]) <= tolerance(len(LEAD_TEXTS)), k
    assert best == min(k for k in ks if expected[k] == max(expected.values()))
    assert len(set(expected.values())) > 3  # the k's differ


def test_lead_k_on_real_e_mails_equals_rouge_score_for_every_k():
    dev = load_summarization_corpus(str(require(AESLC)))["validation"].select(range(200))
    for references in (dev["summary"], dev["references"]):
        best, scores = choose_lead_k(dev["text"], references, range(1, 31), progress=False)
        for k in (1, 2, 7, best, 30):
            slow = rouge_scores([lead(text, k) for text in dev["text"]], references, ["rouge1"])["rouge1"]
            assert abs(scores[k] - slow) <= tolerance(len(dev)), k
        assert 1 < best < 30


@pytest.mark.parametrize(
    "texts, references, ks, message",
    [
        (["a b"], [["a"]], [], "at least 1 word"),
        (["a b"], [["a"]], [0, 2], "at least 1 word"),
        (["a b", "c"], [["a"]], [1], "2 texts but 1 references"),
        (["a b"], [[]], [1], "an item has no reference"),
    ],
)
def test_choose_lead_k_refuses_what_it_cannot_score(texts, references, ks, message):
    with pytest.raises(ValueError, match=message):
        choose_lead_k(texts, references, ks, progress=False)
