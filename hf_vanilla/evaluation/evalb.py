"""EVALB's labelled bracket scoring with COLLINS.prm settings, and the same as an `evaluate` metric."""

from collections import Counter
from pathlib import Path

from ..parsing.cleanup import strip_label
from ..parsing.trees import Tree, parse_tree

# COLLINS.prm: labels deleted before scoring, punctuation tags whose words are not counted, labels counted as equal.
EVALB_DELETED_LABELS = {"TOP", "-NONE-", ""}
EVALB_PUNCTUATION_TAGS = {",", ":", "``", "''", "."}
EVALB_EQUAL_LABELS = {"PRT": "ADVP"}
# The `evaluate` metric (a loading script shipped with the package): `evaluate.load(str(METRIC_DIR))`.
METRIC_DIR = Path(__file__).resolve().parent / "metrics" / "evalb"


def _ignored_positions(gold: Tree) -> set[int]:
    """Positions of the words EVALB does not count: those the GOLD tree tags as punctuation (or -NONE-), so that a
    prediction's own tags (placeholders, wrong POS) never change which words are counted."""
    return {i for i, tag in enumerate(gold.tags()) if tag in EVALB_PUNCTUATION_TAGS or tag == "-NONE-"}


def _brackets(tree: Tree, ignored: set[int]) -> Counter:
    """EVALB's view of a tree: the multiset of labelled spans (label, start, end) over the counted words (those not
    in `ignored`), without preterminals and deleted labels."""
    brackets: Counter = Counter()
    position = counted = 0
    starts = []  # the counted words before each open constituent
    for event, node in tree.walk():
        if event == "leaf":
            counted += position not in ignored
            position += 1
        elif event == "open":
            starts.append(counted)
        else:
            start = starts.pop()
            label = strip_label(node.label)
            label = EVALB_EQUAL_LABELS.get(label, label)
            if label not in EVALB_DELETED_LABELS and counted > start:
                brackets[(label, start, counted)] += 1
    return brackets


def evalb(gold: list[str], pred: list[str]) -> dict:
    """Labelled bracket precision, recall and F1 (0-100) and exact match over a corpus, as EVALB computes them with
    COLLINS.prm. Raises ValueError naming the first sentence whose words differ between gold and prediction."""
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold trees but {len(pred)} predicted trees.")
    matched = gold_total = pred_total = exact = 0
    for index, (gold_tree, pred_tree) in enumerate(zip(gold, pred)):
        gold_parsed, pred_parsed = parse_tree(gold_tree), parse_tree(pred_tree)
        if gold_parsed.words() != pred_parsed.words():
            raise ValueError(f"sentence {index}: the predicted tree's words differ from the gold tree's.")
        ignored = _ignored_positions(gold_parsed)
        gold_brackets, pred_brackets = _brackets(gold_parsed, ignored), _brackets(pred_parsed, ignored)
        common = sum((gold_brackets & pred_brackets).values())
        matched += common
        gold_total += sum(gold_brackets.values())
        pred_total += sum(pred_brackets.values())
        exact += gold_brackets == pred_brackets
    precision = 100.0 * matched / pred_total if pred_total else 0.0
    recall = 100.0 * matched / gold_total if gold_total else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": round(precision, 2),
        "recall": round(recall, 2),
        "f1": round(f1, 2),
        "exact_match": round(100.0 * exact / len(gold), 2) if gold else 0.0,
        "sentences": len(gold),
    }


def load_evalb_metric():
    """EVALB as an `evaluate` metric, loaded from the package's own folder (no Hub access)."""
    import evaluate

    return evaluate.load(str(METRIC_DIR))
