"""Penn Treebank trees: the `Tree` type, reading bracketed text and `.mrg` files, words and tags."""

import re
from dataclasses import dataclass, field
from pathlib import Path


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


def tree_words(tree: str) -> list[str]:
    return parse_tree(tree).words()


def tree_tags(tree: str) -> list[str]:
    return parse_tree(tree).tags()
