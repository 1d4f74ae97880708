"""A parse tree drawn as a standalone SVG picture, words along the bottom and each constituent centred over its
children, as textbooks draw them. Laid out without recursion, like the rest of `trees`, so any depth draws."""

from html import escape

from .trees import Tree, parse_tree

FONT_SIZE = 13
CHAR_WIDTH = 0.62 * FONT_SIZE  # a monospace character's advance, so that widths are known without measuring text
GAP = 14  # between neighbouring leaves
LEVEL = 38  # between tree levels
MARGIN = 12


def tree_svg(tree: str | Tree) -> str:
    """The SVG (a complete `<svg>` element) of a bracketed tree or a `Tree`. Labels are `<text class="label">`,
    words `<text class="word">` in sentence order, branches `<line>`s."""
    root = parse_tree(tree) if isinstance(tree, str) else tree
    x: dict[int, float] = {}  # id(node) -> horizontal centre
    depth: dict[int, int] = {}
    cursor = float(MARGIN)
    open_nodes: list[Tree] = []
    for event, node in root.walk():
        if event == "open":
            depth[id(node)] = len(open_nodes)
            open_nodes.append(node)
        elif event == "leaf":
            width = max(len(node.label), len(node.children[0])) * CHAR_WIDTH
            x[id(node)], depth[id(node)] = cursor + width / 2, len(open_nodes)
            cursor += width + GAP
        else:
            open_nodes.pop()
            x[id(node)] = (x[id(node.children[0])] + x[id(node.children[-1])]) / 2
    word_level = max(depth.values()) + 1

    def y(level: int) -> float:
        return MARGIN + FONT_SIZE + level * LEVEL

    labels, words, lines = [], [], []
    for event, node in root.walk():
        if event == "close":
            continue
        top = y(depth[id(node)])
        labels.append(_text(x[id(node)], top, node.label, "label"))
        if event == "leaf":
            words.append(_text(x[id(node)], y(word_level), node.children[0], "word"))
            lines.append(_line(x[id(node)], top + 4, x[id(node)], y(word_level) - FONT_SIZE))
        else:
            for child in node.children:
                lines.append(_line(x[id(node)], top + 4, x[id(child)], y(depth[id(child)]) - FONT_SIZE))
    width, height = cursor - GAP + MARGIN, y(word_level) + MARGIN
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.1f} {height:.1f}" font-family="monospace" font-size="{FONT_SIZE}">'
        '<rect width="100%" height="100%" fill="white"/>'
        f'<g stroke="#777" stroke-width="1">{"".join(lines)}</g>'
        f'<g fill="#1f3c88" font-weight="bold">{"".join(labels)}</g>'
        f'<g fill="black">{"".join(words)}</g></svg>'
    )


def _text(x: float, y: float, text: str, kind: str) -> str:
    return f'<text class="{kind}" x="{x:.1f}" y="{y:.1f}" text-anchor="middle">{escape(text)}</text>'


def _line(x1: float, y1: float, x2: float, y2: float) -> str:
    return f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}"/>'
