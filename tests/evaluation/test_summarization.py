"""`evaluation.summarization`'s lead baseline of a summarization corpus (`lead_baseline`): k chosen on validation
only, among lengths that reach past long summaries, and the evaluation split scored as a model's summaries are."""

import random

from hf_vanilla.evaluation.rouge import compute_rouge, lead
from hf_vanilla.evaluation.summarization import LEAD_TIMES_SUMMARY, LEAD_WORDS, lead_baseline

WORDS = [f"w{i}" for i in range(300)]


def split(count: int, summary_words: int, seed: int, references: int = 1) -> dict[str, list]:
    """Documents of 120 random words whose first reference is their first `summary_words` words, and whose other
    references (if any) are random words."""
    rng = random.Random(seed)
    texts = [" ".join(rng.choice(WORDS) for _ in range(120)) for _ in range(count)]
    return {
        "text": texts,
        "references": [
            [lead(text, summary_words)] + [" ".join(rng.sample(WORDS, 5)) for _ in range(references - 1)]
            for text in texts
        ],
    }


def test_long_summaries_widen_the_lengths_tried_and_k_is_chosen_on_validation_alone():
    validation, evaluation = split(20, 40, seed=0), split(15, 10, seed=1, references=3)
    lead_figures = lead_baseline(validation, evaluation)
    # Summaries of 40 words: lengths up to 4 x 40 are tried, and the best is 40, past the 30 of short summaries.
    assert lead_figures["ks"] == [1, LEAD_TIMES_SUMMARY * 40] and lead_figures["k"] == 40
    assert lead_figures["validation_rouge1"] == 100.0
    # The evaluation split (summaries of 10 words) is scored at validation's k, as a model's summaries are.
    firsts = [lead(text, 40) for text in evaluation["text"]]
    single = compute_rouge(firsts, [r[0] for r in evaluation["references"]])
    several = compute_rouge(firsts, evaluation["references"])
    assert lead_figures["rouge1"] == round(single["rouge1"], 2) == round(100 * 2 * 10 / 50, 2)
    assert lead_figures["rouge2_multi_reference"] == round(several["rouge2"], 2)
    assert lead_figures["eval_items"] == 15


def test_short_summaries_keep_the_lengths_of_30_words():
    lead_figures = lead_baseline(split(10, 3, seed=2), split(5, 3, seed=3))
    assert (lead_figures["ks"], lead_figures["k"]) == ([1, LEAD_WORDS], 3)
    figures = {"rouge1", "rouge2", "rougeL", "rougeLsum", "eval_items"}  # one reference: no best-of figures
    assert set(lead_figures) == {"k", "ks", "validation_rouge1", *figures}
