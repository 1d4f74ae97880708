"""`benchmarks/studies/summary_words.py`: words of a summary that are neither in their document nor in the training
split."""

import json

from hf_vanilla.evaluation.rouge import compute_rouge

from runs import benchmark

ITEMS = [
    # "phillments" joins "phill" (of Phillip) and "ments" (of easements): in no document and no training text.
    {"source": "Phillip, please read the easements.", "prediction": "title phillments", "reference": "Title policy"},
    {"source": "The Q3 report is attached.", "prediction": "q3/report meeting", "reference": "Q3 report"},
    {"source": "Lunch on Friday?", "prediction": "lunch frizzday", "reference": "lunch zzyzx"},
]
LEXICON = {"title", "policy", "meeting", "report"}


def test_made_up_words_are_those_in_neither_the_document_nor_the_lexicon():
    counts = benchmark("studies.summary_words").made_up_words(ITEMS, LEXICON)
    # Predicted words: title phillments | q3 report meeting | lunch frizzday: 7, of which q3, report and lunch are
    # in their document, phillments and frizzday in neither it nor the lexicon.
    assert counts["summaries"] == 3 and counts["words_per_summary"] == 7 / 3
    assert counts["in_source"] == 100 * 3 / 7 and counts["made_up"] == 100 * 2 / 7
    assert counts["summaries_with_made_up"] == 2
    assert counts["cleaned"] == ["title", "q3/report meeting", "lunch"]
    # Reference words: title policy | q3 report | lunch zzyzx: zzyzx only is outside.
    assert counts["reference_words_outside"] == 100 / 6


def test_the_script_prints_each_file_with_rouge_as_written_and_cleaned(tmp_path, monkeypatch, capsys):
    script = benchmark("studies.summary_words")
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps(item) + "\n" for item in ITEMS))
    corpus = tmp_path / "corpus.jsonl"  # the lexicon: the training split's words, documents and summaries
    rows = [{"text": "a title policy meeting", "summary": "report"}] * 3
    corpus.write_text("".join(json.dumps(row) + "\n" for row in rows))
    monkeypatch.setattr("sys.argv", ["summary_words.py"])
    (row,) = script.main([str(predictions), "--dataset", str(corpus)])
    references = [item["reference"] for item in ITEMS]
    expected = compute_rouge(["title", "q3/report meeting", "lunch"], references, script.TYPES)
    assert row["rouge_cleaned"] == expected and row["made_up"] == 100 * 2 / 7
    assert row["rouge"] == compute_rouge([item["prediction"] for item in ITEMS], references, script.TYPES)
    assert f"| {predictions} | 2.33 | 42.9% | 28.57% | 2 |" in capsys.readouterr().out
