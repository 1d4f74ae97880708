"""Model cards (`hf_vanilla.cards`): a summarizer's card carries its corpus' licence and says why."""

import pytest

from hf_vanilla.cards import summarization_corpus


@pytest.mark.parametrize(
    "dataset, licence, stated",
    [
        ("aeslc", "cc-by-nc-sa-4.0", "CC BY-NC-SA 4.0"),
        ("Yale-LILY/aeslc", "cc-by-nc-sa-4.0", "CC BY-NC-SA 4.0"),
        ("cnn_dailymail", "apache-2.0", "Apache-2.0"),
        ("EdinburghNLP/xsum", "cc-by-sa-4.0", "CC BY-SA 4.0"),
        ("samsum", "cc-by-nc-nd-4.0", "CC BY-NC-ND 4.0"),
        ("emails.jsonl", "apache-2.0", "`emails.jsonl`) come under their own terms"),
    ],
)
def test_a_summarizers_licence_is_its_corpus_and_the_card_says_so(dataset, licence, stated):
    corpus = summarization_corpus(dataset)
    assert corpus["licence"] == licence
    assert stated in corpus["rights"]
