"""The standard clean-up of Penn Treebank trees before training and scoring."""

import re

from .trees import Tree, TreebankError, parse_tree

KEPT_HYPHEN_LABELS = {"-LRB-", "-RRB-", "-NONE-"}


def strip_label(label: str) -> str:
    """NP-SBJ-1 -> NP, PP-LOC=2 -> PP; -LRB-, -RRB-, -NONE- stay."""
    if label in KEPT_HYPHEN_LABELS or not label:
        return label
    return re.split(r"[-=]", label)[0] or label


def _clean(node: Tree) -> Tree | None:
    if node.is_preterminal:
        return None if node.label == "-NONE-" else Tree(node.label, list(node.children))
    children = [c for c in (_clean(child) for child in node.children) if c is not None]
    return Tree(strip_label(node.label), children) if children else None


def preprocess(tree: str) -> str:
    """The standard clean-up: drop -NONE- elements and the constituents they leave empty, strip function tags and
    indices, drop an empty or TOP root. POS tags stay."""
    cleaned = _clean(parse_tree(tree))
    if cleaned is None:
        raise TreebankError(f"tree has no words once empty elements are removed: {tree[:80]}")
    while cleaned.label in ("", "TOP") and len(cleaned.children) == 1 and not cleaned.is_preterminal:
        cleaned = cleaned.children[0]
    return str(cleaned)
