"""EVALB (COLLINS.prm settings) as an `evaluate` metric, shipped inside the package and loaded without the Hub:

    from hf_vanilla.evaluation.evalb import load_evalb_metric
    evalb = load_evalb_metric()  # or evaluate.load(str(hf_vanilla.evaluation.evalb.METRIC_DIR))
    tree = "(S (NP (NN cats)) (VP (VBP sleep)))"
    evalb.compute(predictions=[tree], references=[tree])

The computation is `hf_vanilla.evaluation.evalb.evalb` (labelled brackets, TOP and -NONE- deleted, punctuation ignored,
ADVP = PRT, all sentence lengths); a sentence whose words differ between prediction and reference is an error.
"""

import datasets
import evaluate

from hf_vanilla.evaluation.evalb import evalb

_CITATION = """\
@misc{sekine-collins-1997-evalb,
  author = {Satoshi Sekine and Michael Collins},
  title = {{EVALB}: a bracket scoring program},
  year = {1997},
  url = {https://nlp.cs.nyu.edu/evalb/}
}
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: predicted trees, PTB bracketing, one string per sentence.
    references: gold trees, in the same order and over the same words.
Returns:
    precision, recall, f1 (0-100), exact_match (0-100) and sentences.
"""


@evaluate.utils.file_utils.add_start_docstrings(__doc__, _KWARGS_DESCRIPTION)
class Evalb(evaluate.Metric):
    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=__doc__,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
            ),
            reference_urls=["https://nlp.cs.nyu.edu/evalb/"],
        )

    def _compute(self, predictions: list[str], references: list[str]) -> dict:
        return evalb(references, predictions)
