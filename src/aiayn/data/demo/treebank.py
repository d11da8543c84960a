"""Penn Treebank trees: a small tree type and the ``.mrg`` file layout of the WSJ treebank.

A ``.mrg`` file holds one article: each tree wrapped in an unlabeled outer bracket ``( (S ...) )``,
printed over several indented lines as the treebank's own pretty-printer does (a phrase's leading
preterminals stay on its line; every child after the first phrase starts a new line, indented two
spaces deeper than its parent), and a blank line between trees.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SECTIONS = range(25)       # WSJ sections 00-24


@dataclass
class Tree:
    """A constituent (``children`` non-empty) or a preterminal (``word`` set, no children)."""
    label: str
    children: list[Tree] = field(default_factory=list)
    word: str = ""

    @property
    def is_preterminal(self) -> bool:
        return not self.children

    def preterminals(self) -> list[Tree]:
        if self.is_preterminal:
            return [self]
        return [leaf for child in self.children for leaf in child.preterminals()]

    def words(self) -> list[str]:
        """The sentence's words: leaves without empty elements (``-NONE-``)."""
        return [leaf.word for leaf in self.preterminals() if leaf.label != "-NONE-"]

    def one_line(self) -> str:
        if self.is_preterminal:
            return f"({self.label} {self.word})"
        return f"({self.label} " + " ".join(child.one_line() for child in self.children) + ")"


def leaf(tag: str, word: str) -> Tree:
    return Tree(tag, word=word)


def node(label: str, *children: Tree) -> Tree:
    return Tree(label, list(children))


def _render(tree: Tree, column: int) -> str:
    """One tree in the treebank's layout; ``column`` is where its opening bracket stands."""
    if tree.is_preterminal:
        return f"({tree.label} {tree.word}) "
    text = f"({tree.label} "
    broken = False
    for child in tree.children:
        if child.is_preterminal and not broken:
            text += _render(child, 0)
            continue
        broken = True
        text += "\n" + " " * (column + 2) + _render(child, column + 2)
    return text + ")"


def format_tree(tree: Tree) -> str:
    """``( (S ...) )`` over several lines, as in the WSJ ``.mrg`` files (without a final newline)."""
    return "( " + _render(tree, 2) + ")"


def format_mrg(trees: list[Tree]) -> str:
    """A whole ``.mrg`` file: trees separated by blank lines, ending with a newline."""
    return "\n\n".join(format_tree(t) for t in trees) + "\n"


def mrg_path(section: int, number: int) -> str:
    """``parsed/mrg/wsj/NN/wsj_NNMM.mrg``: file ``number`` (0-99) of ``section`` (0-24)."""
    if section not in SECTIONS or not 0 <= number < 100:
        raise ValueError(f"no WSJ file {number} in section {section}")
    return f"parsed/mrg/wsj/{section:02d}/wsj_{section:02d}{number:02d}.mrg"


def section_sizes(total: int) -> list[int]:
    """Trees per section 00-24: 10% each to the dev (22) and test (23) sections, the rest spread evenly.

    Sections outside train/dev/test (00, 01, 24) get as many as a training section.
    """
    if total < 25:
        raise ValueError(f"--trees must be at least 25 (one per WSJ section), got {total}")
    held_out = max(1, total // 10)
    rest = total - 2 * held_out
    sizes = [rest // 23 + (1 if i < rest % 23 else 0) for i in range(23)]
    return sizes[:22] + [held_out, held_out] + sizes[22:]
