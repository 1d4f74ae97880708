"""More training trees from the ones a treebank has: subtree substitution (Shi, Livescu and Gimpel, 2021), each new
tree a training tree in which one constituent is swapped for a constituent of the same label from another tree."""

import random
from collections import defaultdict

from .trees import Tree, parse_tree

NodePath = tuple[int, ...]  # child indices from the root to a node


def _phrases(tree: Tree) -> list[tuple[NodePath, Tree]]:
    """Every constituent below the root that is not a preterminal, with its path, without recursion."""
    found, stack = [], [((), tree)]
    while stack:
        path, node = stack.pop()
        for index, child in enumerate(node.children):
            if isinstance(child, Tree) and not child.is_preterminal:
                found.append(((*path, index), child))
                stack.append(((*path, index), child))
    return found


def _substituted(root: Tree, path: NodePath, donor: Tree) -> Tree:
    """A new tree: `root` with the node at `path` replaced by `donor`; only the nodes on the path are copied, the
    rest is shared."""
    new = node = Tree(root.label, list(root.children))
    for index in path[:-1]:
        child = node.children[index]
        node.children[index] = node = Tree(child.label, list(child.children))
    node.children[path[-1]] = donor
    return new


def substituted_trees(trees: list[str], count: int, seed: int, max_words: int | None = None) -> list[str]:
    """`count` new trees, drawn with `random.Random(seed)`: a tree of `trees` at random, one of its constituents (not
    the root, not a preterminal) at random, replaced by a constituent of the same label from another tree at random.
    A draw that would repeat a tree already made, be one of `trees`, or have more than `max_words` words (default:
    the longest of `trees`) is drawn again; a ValueError where no constituent label is shared by two trees."""
    if count < 0:
        raise ValueError(f"count must be at least 0, not {count}")
    parsed = [parse_tree(tree) for tree in trees]
    lengths = [len(tree.words()) for tree in parsed]
    limit = max_words if max_words is not None else max(lengths, default=0)
    spans = [_phrases(tree) for tree in parsed]
    by_label: dict[str, list[tuple[int, Tree]]] = defaultdict(list)  # label -> (its tree's number, constituent)
    for number, tree_spans in enumerate(spans):
        for _, node in tree_spans:
            by_label[node.label].append((number, node))
    trees_of = {label: {number for number, _ in found} for label, found in by_label.items()}
    candidates = [n for n, tree_spans in enumerate(spans) if any(len(trees_of[s.label]) > 1 for _, s in tree_spans)]
    if count and not candidates:
        raise ValueError("no constituent label is shared by two trees: nothing to substitute")
    rng, seen, made = random.Random(seed), set(trees), []
    for _ in range(count * 50):  # a bound on draws, for sets too small to give `count` distinct trees
        if len(made) == count:
            break
        number = rng.choice(candidates)
        path, node = rng.choice(spans[number])
        donor_tree, donor = rng.choice(by_label[node.label])
        if donor_tree == number or lengths[number] - len(node.words()) + len(donor.words()) > limit:
            continue
        new = str(_substituted(parsed[number], path, donor))
        if new not in seen:
            seen.add(new)
            made.append(new)
    return made
