"""Constituency parsing as translation (section 6.3): Penn Treebank trees (`trees`), their clean-up (`cleanup`), their
linearization and the repair of any model output (`linearization`), decoding under the grammar of trees (`grammar`),
and more training trees by subtree substitution (`augmentation`). EVALB lives beside BLEU in
`hf_vanilla.evaluation.evalb`, the WSJ splits beside the other corpora in `hf_vanilla.data.treebank`."""

from .cleanup import KEPT_HYPHEN_LABELS, preprocess, strip_label
from .linearization import PLACEHOLDER, delinearize, linearize, linearize_leaves, needed_repair, tree_from_output
from .trees import Tree, TreebankError, parse_tree, read_treebank, tree_tags, tree_words

__all__ = [
    "KEPT_HYPHEN_LABELS",
    "PLACEHOLDER",
    "Tree",
    "TreebankError",
    "delinearize",
    "linearize",
    "linearize_leaves",
    "needed_repair",
    "parse_tree",
    "preprocess",
    "read_treebank",
    "strip_label",
    "tree_from_output",
    "tree_tags",
    "tree_words",
]
