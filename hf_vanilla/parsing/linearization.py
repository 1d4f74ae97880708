"""Trees as token sequences (Vinyals et al., 2015) and back: linearization, and the repair of any model output."""

from collections.abc import Callable

from ..configuration_vanilla import LINEARIZATIONS
from .trees import Tree, parse_tree

PLACEHOLDER = "XX"


def linearize(tree: str, with_pos: bool = False, with_words: bool = False, linearization: str = "top-down") -> str:
    """Vinyals et al. (2015): `(S (NP XX XX )NP (VP XX (NP XX XX )NP )VP XX )S`. Each word becomes `XX`, its POS
    tag with `with_pos=True`, or stays itself with `with_words=True` (`(S (NP The cat )NP ...`). `linearization=
    "in-order"` writes each label after its constituent's first child instead (Liu & Zhang, 2017): `XX (NP XX )NP
    (S XX (VP XX (NP XX )NP )VP XX )S`."""
    if with_pos and with_words:
        raise ValueError("linearize: with_pos and with_words exclude each other.")
    check_linearization(linearization)

    def leaf(node: Tree) -> str:
        return node.children[0] if with_words else node.label if with_pos else PLACEHOLDER

    if linearization == "in-order":
        return " ".join(_in_order(parse_tree(tree), leaf))
    symbols = {"open": lambda node: f"({node.label}", "close": lambda node: f"){node.label}", "leaf": leaf}
    return " ".join(symbols[event](node) for event, node in parse_tree(tree).walk())


def check_linearization(linearization: str) -> None:
    """A ValueError naming the choices for anything but one of `LINEARIZATIONS`."""
    if linearization not in LINEARIZATIONS:
        raise ValueError(f"linearization must be one of {list(LINEARIZATIONS)}, got {linearization!r}")


def _in_order(root: Tree, leaf: Callable[[Tree], str]) -> list[str]:
    """The in-order symbols of `root`: a constituent's first child's, its label, its other children's, its closing
    bracket. A stack of what is still to write, not recursion: a tree may nest thousands deep."""
    symbols: list[str] = []
    to_write: list[Tree | str] = [root]
    while to_write:
        item = to_write.pop()
        if isinstance(item, str):
            symbols.append(item)
        elif item.is_preterminal:
            symbols.append(leaf(item))
        else:
            first, *rest = item.children
            to_write += [f"){item.label}", *reversed(rest), f"({item.label}", first]
    return symbols


def _without_brackets(symbol: str) -> str:
    """A label or tag as the tree can hold it: brackets inside a model's symbol (`((NP`, `NN)`) are dropped."""
    return symbol.replace("(", "").replace(")", "")


def delinearize(
    linearized: str, words: list[str], tags: list[str] | None = None, linearization: str = "top-down"
) -> str:
    """A well-formed tree whose leaves are exactly `words`, from any model output: unmatched closing brackets are
    dropped, a mislabelled one closes the innermost open bracket, extra placeholders are ignored, missing ones are
    added at the end, constituents left without words are removed, brackets inside a label are dropped, and several
    top-level pieces are joined under a TOP root (which EVALB ignores). Preterminals take `tags`, else the placeholder
    token itself when it is not XX. Words must be PTB words: no brackets (-LRB-, -RRB-), no whitespace. Under
    `linearization="in-order"` an opening bracket takes the symbol before it (the last one written at that level) as
    its first child."""
    if not words:
        raise ValueError("delinearize needs at least one word.")
    for number, word in enumerate(words, 1):
        if not word or any(c in "()" or c.isspace() for c in word):
            raise ValueError(
                f"delinearize: word {number} {word!r} is empty or holds a bracket or whitespace (PTB writes brackets "
                "as -LRB- and -RRB-)."
            )
    if tags is not None and len(tags) != len(words):
        raise ValueError(f"{len(tags)} tags for {len(words)} words.")
    check_linearization(linearization)
    root = Tree("TOP")
    stack = [root]
    position = 0

    def leaf(token: str) -> Tree:
        tag = tags[position] if tags is not None else (PLACEHOLDER if token == PLACEHOLDER else token)
        return Tree(tag, [words[position]])

    for token in linearized.split():
        if token.startswith("("):
            if label := _without_brackets(token[1:]):  # a lone "(" opens nothing
                node, siblings = Tree(label), stack[-1].children
                if linearization == "in-order" and siblings:
                    node.children.append(siblings.pop())
                siblings.append(node)
                stack.append(node)
        elif token.startswith(")"):
            if len(stack) > 1:
                stack.pop()
        elif position < len(words):
            stack[-1].children.append(leaf(_without_brackets(token)))
            position += 1
    while position < len(words):
        stack[-1].children.append(leaf(PLACEHOLDER))
        position += 1

    kept: list[list[Tree]] = [[]]  # constituents without words are removed (bottom-up, any depth)
    for event, node in root.walk():
        if event == "open":
            kept.append([])
        elif event == "leaf":
            kept[-1].append(node)
        elif children := kept.pop():
            kept[-1].append(Tree(node.label, children))
    pruned = kept[0][0]
    if len(pruned.children) == 1 and not pruned.children[0].is_preterminal:
        return str(pruned.children[0])
    return str(pruned)


def tree_from_output(
    output: str, words: list[str], leaves: str = "placeholder", linearization: str = "top-down"
) -> str:
    """`delinearize` for a parser whose trees have `leaves` (`placeholder`, `pos` or `words`, as the model's
    `config.tree_leaves`) in its `linearization` (`config.linearization`): copied words are not tags, so their
    preterminals get the XX placeholder."""
    tags = [PLACEHOLDER] * len(words) if leaves == "words" and words else None
    return delinearize(output, words, tags, linearization)


def linearize_leaves(tree: str, leaves: str = "placeholder", linearization: str = "top-down") -> str:
    """`linearize` with the leaves a parser emits: `placeholder`, `pos` or `words` (as `config.tree_leaves`), in its
    `linearization` (`config.linearization`)."""
    return linearize(tree, with_pos=leaves == "pos", with_words=leaves == "words", linearization=linearization)


def needed_repair(output: str, words: list[str], leaves: str = "placeholder", linearization: str = "top-down") -> bool:
    """Whether `delinearize` had to change a parser's output (unbalanced or mislabelled brackets, a wrong number of
    leaves, empty constituents, several top-level pieces; with copied words, also any word not copied exactly)."""
    repaired = tree_from_output(output, words, leaves, linearization)
    return linearize_leaves(repaired, leaves, linearization) != " ".join(output.split())
