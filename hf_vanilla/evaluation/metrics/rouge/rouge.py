"""ROUGE F1 with stemming as an `evaluate` metric, shipped inside the package and loaded without the Hub:

    from hf_vanilla.evaluation.rouge import load_rouge_metric
    rouge = load_rouge_metric()  # or evaluate.load(str(hf_vanilla.evaluation.rouge.METRIC_DIR))
    rouge.compute(predictions=["the cat sat"], references=[["a cat sat", "the cat was sitting"]])

The computation is `hf_vanilla.evaluation.rouge.compute_rouge` on Google's `rouge_score`: mean F1 on 0-100 of
rouge1, rouge2, rougeL and rougeLsum (or the `rouge_types` asked for), Porter stemming, the best reference's F1 per
item and type when an item has several, and sentences for ROUGE-Lsum by `sentence_lines`.
"""

import datasets
import evaluate

from hf_vanilla.evaluation.rouge import ROUGE_TYPES, compute_rouge

_CITATION = """\
@inproceedings{lin-2004-rouge,
  title = {{ROUGE}: A Package for Automatic Evaluation of Summaries},
  author = {Chin-Yew Lin},
  booktitle = {Text Summarization Branches Out},
  year = {2004},
  pages = {74--81},
  url = {https://aclanthology.org/W04-1013}
}
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: one summary per item.
    references: per item, one reference summary or a list of them.
    rouge_types: a subset of rouge1, rouge2, rougeL, rougeLsum (default: all four).
Returns:
    per ROUGE type, the mean F1 over the items on 0-100.
"""


@evaluate.utils.file_utils.add_start_docstrings(__doc__, _KWARGS_DESCRIPTION)
class Rouge(evaluate.Metric):
    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=__doc__,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=[
                datasets.Features(
                    {
                        "predictions": datasets.Value("string"),
                        "references": datasets.Sequence(datasets.Value("string")),
                    }
                ),
                datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
            ],
            codebase_urls=["https://github.com/google-research/google-research/tree/master/rouge"],
            reference_urls=["https://aclanthology.org/W04-1013"],
        )

    def _compute(self, predictions: list[str], references: list, rouge_types: list[str] | None = None) -> dict:
        return compute_rouge(predictions, references, rouge_types or ROUGE_TYPES)
