"""Penn Treebank trees: the `Tree` type, reading bracketed text and `.mrg` files, words and tags.

Trees of any depth are safe: building, walking and printing them use explicit stacks, never recursion (a file of
10,000 nested brackets is a 10,000-deep tree, not a RecursionError)."""

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

logger = logging.getLogger(__name__)

# Annotators' comment lines, outside any tree: `# ...` or `% ...` as the first thing on a line.
COMMENT_MARKS = ("#", "%")


class TreebankError(ValueError):
    """Malformed treebank input, naming the file and line."""


@dataclass
class Tree:
    label: str
    children: list = field(default_factory=list)  # Trees, or one word (str) for a preterminal

    @property
    def is_preterminal(self) -> bool:
        return len(self.children) == 1 and isinstance(self.children[0], str)

    def walk(self) -> Iterator[tuple[str, "Tree"]]:
        """Depth-first, left to right, without recursion: ("open", node) and ("close", node) around each constituent,
        ("leaf", node) for each preterminal."""
        stack: list[tuple[Tree, bool]] = [(self, False)]
        while stack:
            node, closing = stack.pop()
            children = node.children
            if closing:
                yield "close", node
            elif len(children) == 1 and isinstance(children[0], str):  # is_preterminal, inlined: the hot loop
                yield "leaf", node
            else:
                yield "open", node
                stack.append((node, True))
                stack.extend([(child, False) for child in reversed(children)])

    def words(self) -> list[str]:
        return [node.children[0] for event, node in self.walk() if event == "leaf"]

    def tags(self) -> list[str]:
        return [node.label for event, node in self.walk() if event == "leaf"]

    def __str__(self) -> str:
        parts: list[str] = []
        follows_sibling = False
        for event, node in self.walk():
            if event == "close":
                parts.append(")")
            else:
                parts.append(" " if follows_sibling else "")
                parts.append(f"({node.label} {node.children[0]})" if event == "leaf" else f"({node.label} ")
            follows_sibling = event != "open"
        return "".join(parts)


_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def _parse_all(text: str, source: str = "<string>", comments: bool = True) -> list[Tree]:
    """Every bracketed tree in `text`. Raises TreebankError naming `source` and the line of the problem. With
    `comments`, lines starting with `#` or `%` outside any tree are skipped (and counted in a log line)."""
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

    def starts_its_line(offset: int) -> bool:
        return not text[text.rfind("\n", 0, offset) + 1 : offset].strip()

    matches = list(_TOKEN.finditer(text))
    index = skipped = 0
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
        elif not stack and comments and token.startswith(COMMENT_MARKS) and starts_its_line(match.start()):
            end = text.find("\n", match.start())
            while index + 1 < len(matches) and (end == -1 or matches[index + 1].start() < end):
                index += 1
            skipped += 1
        else:
            if not stack:
                raise TreebankError(f"{source}, line {line_of(match.start())}: leaf {token!r} outside any bracket")
            stack[-1][0].children.append(token)
        index += 1
    if stack:
        raise TreebankError(f"{source}, line {line_of(stack[0][1])}: unbalanced '(' is never closed")
    if skipped:
        logger.warning(f"{source}: skipped {skipped} comment line{'s' * (skipped > 1)} (# or % outside any tree)")
    return trees


def parse_tree(text: str) -> Tree:
    """One tree from its bracketed string."""
    trees = _parse_all(text, comments=False)
    if len(trees) != 1:
        raise TreebankError(f"expected one tree, found {len(trees)}")
    return trees[0]


def _read_text(file: Path) -> str:
    """A file's UTF-8 text (a leading byte-order mark dropped); undecodable bytes are a TreebankError naming the
    line, never silently replaced: they would become training and gold words."""
    data = file.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise TreebankError(
            f"{file}, line {line}: not UTF-8 (byte 0x{data[error.start]:02x}); convert the file, e.g. with iconv"
        ) from None


def read_treebank(path: str | Path, comments: bool = True) -> list[str]:
    """Every tree of a `.mrg` file, or of all `.mrg` files under a folder (LDC's `parsed/mrg/wsj/SS/wsj_SSNN.mrg` or
    NLTK's `combined/wsj_NNNN.mrg`), in file order, each as a one-line bracketed string. Annotators' comment lines
    (starting with `#` or `%`, outside any tree) are skipped and counted in a log line; `comments=False` makes them
    an error naming the file and line."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"No treebank at {path}")
    files = sorted(f for f in path.rglob("*.mrg") if f.is_file()) if path.is_dir() else [path]
    if not files:
        raise FileNotFoundError(f"No .mrg files under {path}")
    return [str(tree) for file in files for tree in _parse_all(_read_text(file), str(file), comments)]


def tree_words(tree: str) -> list[str]:
    return parse_tree(tree).words()


def tree_tags(tree: str) -> list[str]:
    return parse_tree(tree).tags()
