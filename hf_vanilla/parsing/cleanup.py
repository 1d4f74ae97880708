"""The standard clean-up of Penn Treebank trees before training and scoring."""

import re

from .trees import Tree, TreebankError, parse_tree

KEPT_HYPHEN_LABELS = {"-LRB-", "-RRB-", "-NONE-"}


def strip_label(label: str) -> str:
    """NP-SBJ-1 -> NP, PP-LOC=2 -> PP; -LRB-, -RRB-, -NONE- stay."""
    if label in KEPT_HYPHEN_LABELS or not label:
        return label
    return re.split(r"[-=]", label)[0] or label


def _clean(tree: Tree) -> Tree | None:
    """`tree` without -NONE- elements and the constituents they leave empty, labels stripped (any depth)."""
    kept: list[list[Tree]] = [[]]  # the kept children of each open constituent
    for event, node in tree.walk():
        if event == "open":
            kept.append([])
        elif event == "leaf":
            if node.label != "-NONE-":
                kept[-1].append(Tree(node.label, list(node.children)))
        elif children := kept.pop():
            kept[-1].append(Tree(strip_label(node.label), children))
    return kept[0][0] if kept[0] else None


def preprocess(tree: str) -> str:
    """The standard clean-up: drop -NONE- elements and the constituents they leave empty, strip function tags and
    indices, drop an empty or TOP root. POS tags stay."""
    cleaned = _clean(parse_tree(tree))
    if cleaned is None:
        raise TreebankError(f"tree has no words once empty elements are removed: {tree[:80]}")
    while cleaned.label in ("", "TOP") and len(cleaned.children) == 1 and not cleaned.is_preterminal:
        cleaned = cleaned.children[0]
    return str(cleaned)
