"""Constituency parsing as translation (section 6.3): Penn Treebank trees, their linearization (Vinyals et al., 2015),
the repair of whatever a model outputs back into a tree, and EVALB's bracket scoring."""

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

PLACEHOLDER = "XX"
# COLLINS.prm: labels deleted before scoring, punctuation tags whose words are not counted, labels counted as equal.
EVALB_DELETED_LABELS = {"TOP", "-NONE-", ""}
EVALB_PUNCTUATION_TAGS = {",", ":", "``", "''", "."}
EVALB_EQUAL_LABELS = {"PRT": "ADVP"}
KEPT_HYPHEN_LABELS = {"-LRB-", "-RRB-", "-NONE-"}


class TreebankError(ValueError):
    """Malformed treebank input, naming the file and line."""


@dataclass
class Tree:
    label: str
    children: list = field(default_factory=list)  # Trees, or one word (str) for a preterminal

    @property
    def is_preterminal(self) -> bool:
        return len(self.children) == 1 and isinstance(self.children[0], str)

    def words(self) -> list[str]:
        return [self.children[0]] if self.is_preterminal else [w for c in self.children for w in c.words()]

    def tags(self) -> list[str]:
        return [self.label] if self.is_preterminal else [t for c in self.children for t in c.tags()]

    def __str__(self) -> str:
        inner = self.children[0] if self.is_preterminal else " ".join(str(c) for c in self.children)
        return f"({self.label} {inner})"


_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def _parse_all(text: str, source: str = "<string>") -> list[Tree]:
    """Every bracketed tree in `text`. Raises TreebankError naming `source` and the line of the problem."""
    trees: list[Tree] = []
    stack: list[tuple[Tree, int]] = []
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line_of(offset: int) -> int:
        low, high = 0, len(line_starts) - 1
        while low < high:
            middle = (low + high + 1) // 2
            if line_starts[middle] <= offset:
                low = middle
            else:
                high = middle - 1
        return low + 1

    matches = list(_TOKEN.finditer(text))
    index = 0
    while index < len(matches):
        match = matches[index]
        token = match.group()
        if token == "(":
            label = ""
            if index + 1 < len(matches) and matches[index + 1].group() not in "()":
                label = matches[index + 1].group()
                index += 1
            stack.append((Tree(label), match.start()))
        elif token == ")":
            if not stack:
                raise TreebankError(f"{source}, line {line_of(match.start())}: unbalanced ')' closes no bracket")
            node, start = stack.pop()
            words = [c for c in node.children if isinstance(c, str)]
            if words and len(node.children) > 1:
                raise TreebankError(
                    f"{source}, line {line_of(start)}: leaf {words[0]!r} outside a preterminal in ({node.label} ...)"
                )
            if not node.children:
                raise TreebankError(f"{source}, line {line_of(start)}: empty bracket ({node.label})")
            if stack:
                stack[-1][0].children.append(node)
            else:
                trees.append(node)
        else:
            if not stack:
                raise TreebankError(f"{source}, line {line_of(match.start())}: leaf {token!r} outside any bracket")
            stack[-1][0].children.append(token)
        index += 1
    if stack:
        raise TreebankError(f"{source}, line {line_of(stack[0][1])}: unbalanced '(' is never closed")
    return trees


def parse_tree(text: str) -> Tree:
    """One tree from its bracketed string."""
    trees = _parse_all(text)
    if len(trees) != 1:
        raise TreebankError(f"expected one tree, found {len(trees)}")
    return trees[0]


def read_treebank(path: str | Path) -> list[str]:
    """Every tree of a `.mrg` file, or of all `.mrg` files under a folder (LDC's `parsed/mrg/wsj/SS/wsj_SSNN.mrg` or
    NLTK's `combined/wsj_NNNN.mrg`), in file order, each as a one-line bracketed string."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"No treebank at {path}")
    files = sorted(path.rglob("*.mrg")) if path.is_dir() else [path]
    if not files:
        raise FileNotFoundError(f"No .mrg files under {path}")
    return [str(tree) for file in files for tree in _parse_all(file.read_text(encoding="utf-8", errors="replace"), str(file))]


def _strip_label(label: str) -> str:
    """NP-SBJ-1 -> NP, PP-LOC=2 -> PP; -LRB-, -RRB-, -NONE- stay."""
    if label in KEPT_HYPHEN_LABELS or not label:
        return label
    return re.split(r"[-=]", label)[0] or label


def _clean(node: Tree) -> Tree | None:
    if node.is_preterminal:
        return None if node.label == "-NONE-" else Tree(node.label, list(node.children))
    children = [c for c in (_clean(child) for child in node.children) if c is not None]
    return Tree(_strip_label(node.label), children) if children else None


def preprocess(tree: str) -> str:
    """The standard clean-up: drop -NONE- elements and the constituents they leave empty, strip function tags and
    indices, drop an empty or TOP root. POS tags stay."""
    cleaned = _clean(parse_tree(tree))
    if cleaned is None:
        raise TreebankError(f"tree has no words once empty elements are removed: {tree[:80]}")
    while cleaned.label in ("", "TOP") and len(cleaned.children) == 1 and not cleaned.is_preterminal:
        cleaned = cleaned.children[0]
    return str(cleaned)


def tree_words(tree: str) -> list[str]:
    return parse_tree(tree).words()


def tree_tags(tree: str) -> list[str]:
    return parse_tree(tree).tags()


def linearize(tree: str, with_pos: bool = False, with_words: bool = False) -> str:
    """Vinyals et al. (2015): `(S (NP XX XX )NP (VP XX (NP XX XX )NP )VP XX )S`. Each word becomes `XX`, its POS
    tag with `with_pos=True`, or stays itself with `with_words=True` (`(S (NP The cat )NP ...`)."""
    if with_pos and with_words:
        raise ValueError("linearize: with_pos and with_words exclude each other.")

    def walk(node: Tree) -> list[str]:
        if node.is_preterminal:
            return [node.children[0] if with_words else node.label if with_pos else PLACEHOLDER]
        return [f"({node.label}"] + [t for c in node.children for t in walk(c)] + [f"){node.label}"]

    return " ".join(walk(parse_tree(tree)))


def delinearize(linearized: str, words: list[str], tags: list[str] | None = None) -> str:
    """A well-formed tree whose leaves are exactly `words`, from any model output: unmatched closing brackets are
    dropped, a mislabelled one closes the innermost open bracket, extra placeholders are ignored, missing ones are
    added at the end, constituents left without words are removed, and several top-level pieces are joined under a
    TOP root (which EVALB ignores). Preterminals take `tags`, else the placeholder token itself when it is not XX."""
    if not words:
        raise ValueError("delinearize needs at least one word.")
    if tags is not None and len(tags) != len(words):
        raise ValueError(f"{len(tags)} tags for {len(words)} words.")
    root = Tree("TOP")
    stack = [root]
    position = 0

    def leaf(token: str) -> Tree:
        tag = tags[position] if tags is not None else (PLACEHOLDER if token == PLACEHOLDER else token)
        return Tree(tag, [words[position]])

    for token in linearized.split():
        if token.startswith("(") and len(token) > 1:
            node = Tree(token[1:])
            stack[-1].children.append(node)
            stack.append(node)
        elif token.startswith(")"):
            if len(stack) > 1:
                stack.pop()
        elif token != "(" and position < len(words):
            stack[-1].children.append(leaf(token))
            position += 1
    while position < len(words):
        stack[-1].children.append(leaf(PLACEHOLDER))
        position += 1

    def prune(node: Tree) -> Tree | None:
        if node.is_preterminal:
            return node
        children = [c for c in (prune(child) for child in node.children) if c is not None]
        return Tree(node.label, children) if children else None

    pruned = prune(root)
    if len(pruned.children) == 1 and not pruned.children[0].is_preterminal:
        return str(pruned.children[0])
    return str(pruned)


def tree_from_output(output: str, words: list[str], leaves: str = "placeholder") -> str:
    """`delinearize` for a parser whose trees have `leaves` (`placeholder`, `pos` or `words`, as the model's
    `config.tree_leaves`): copied words are not tags, so their preterminals get the XX placeholder."""
    return delinearize(output, words, [PLACEHOLDER] * len(words) if leaves == "words" and words else None)


def linearize_leaves(tree: str, leaves: str = "placeholder") -> str:
    """`linearize` with the leaves a parser emits: `placeholder`, `pos` or `words` (the model's `config.tree_leaves`)."""
    return linearize(tree, with_pos=leaves == "pos", with_words=leaves == "words")


def needed_repair(output: str, words: list[str], leaves: str = "placeholder") -> bool:
    """Whether `delinearize` had to change a parser's output (unbalanced or mislabelled brackets, a wrong number of
    leaves, empty constituents, several top-level pieces; with copied words, also any word not copied exactly)."""
    return linearize_leaves(tree_from_output(output, words, leaves), leaves) != " ".join(output.split())


def _ignored_positions(gold: Tree) -> set[int]:
    """Positions of the words EVALB does not count: those the GOLD tree tags as punctuation (or -NONE-), so that a
    prediction's own tags (placeholders, wrong POS) never change which words are counted."""
    return {i for i, tag in enumerate(gold.tags()) if tag in EVALB_PUNCTUATION_TAGS or tag == "-NONE-"}


def _brackets(tree: Tree, ignored: set[int]) -> Counter:
    """EVALB's view of a tree: the multiset of labelled spans (label, start, end) over the counted words (those not
    in `ignored`), without preterminals and deleted labels."""
    brackets: Counter = Counter()
    position = counted = 0

    def walk(node: Tree) -> None:
        nonlocal position, counted
        if node.is_preterminal:
            counted += position not in ignored
            position += 1
            return
        start = counted
        for child in node.children:
            walk(child)
        label = _strip_label(node.label)
        label = EVALB_EQUAL_LABELS.get(label, label)
        if label not in EVALB_DELETED_LABELS and counted > start:
            brackets[(label, start, counted)] += 1

    walk(tree)
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


# Standard splits. LDC: WSJ sections 02-21 train, 22 development, 23 test. NLTK's 199-file sample: files 0001-0159
# train, 0160-0179 development, 0180-0199 test.
LDC_SPLITS = {"train": range(2, 22), "validation": range(22, 23), "test": range(23, 24)}
NLTK_SPLITS = {"train": range(1, 160), "validation": range(160, 180), "test": range(180, 200)}


def treebank_splits(path: str | Path) -> dict[str, list[str]]:
    """Preprocessed trees of each split of a WSJ treebank: LDC's layout (a folder with section folders 00-24) or
    NLTK's sample (`combined/wsj_0001.mrg` ..), split as `LDC_SPLITS` / `NLTK_SPLITS`."""
    path = Path(path)
    files = sorted(path.rglob("wsj_*.mrg"))
    if not files:
        raise FileNotFoundError(f"No wsj_*.mrg files under {path}")
    numbers = {file: int(file.stem.split("_")[1]) for file in files}
    sectioned = any(file.parent.name.isdigit() for file in files)
    splits = LDC_SPLITS if sectioned else NLTK_SPLITS
    key = (lambda number: number // 100) if sectioned else (lambda number: number)
    return {
        split: [preprocess(tree) for file in files if key(numbers[file]) in chosen for tree in read_treebank(file)]
        for split, chosen in splits.items()
    }
