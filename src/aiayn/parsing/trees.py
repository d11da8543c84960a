"""A small constituency tree type, a Penn Treebank s-expression reader and a one-line writer.

A :class:`Tree` has a ``label`` and ``children``; a preterminal's only child is its word (a ``str``).
The reader accepts what treebank files hold: multi-line trees, the unlabeled outer bracket of the
Penn Treebank (``( (S ...) )``, read as a node with label ``""``), and one-tree-per-line files.
Every error names the source and the line where the offending tree starts.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Iterator

_TOKEN = re.compile(r"\(|\)|[^\s()]+")


class TreeError(ValueError):
    """A tree that cannot be read, with its source and line."""


@dataclass
class Tree:
    """A constituent: ``label`` over ``children`` (subtrees, or one word for a preterminal)."""

    label: str
    children: list["Tree | str"] = field(default_factory=list)

    def is_preterminal(self) -> bool:
        return len(self.children) == 1 and isinstance(self.children[0], str)

    def preterminals(self) -> list["Tree"]:
        """The preterminals ``(TAG word)`` left to right (iterative: deep trees are fine)."""
        found, stack = [], [self]
        while stack:
            node = stack.pop()
            if node.is_preterminal():
                found.append(node)
            else:
                stack.extend(reversed([c for c in node.children if isinstance(c, Tree)]))
        return found

    def words(self) -> list[str]:
        return [p.children[0] for p in self.preterminals()]

    def tags(self) -> list[str]:
        return [p.label for p in self.preterminals()]

    def __str__(self) -> str:
        return to_string(self)


def to_string(tree: Tree) -> str:
    """One-line bracketing ``(S (NP (DT the) (NN dog)) (VP (VBZ barks)))``, as EVALB reads it."""
    parts: list[str] = []
    stack: list[Tree | str | None] = [tree]
    while stack:
        item = stack.pop()
        if item is None:
            parts.append(")")
        elif isinstance(item, str):
            parts.append(" " + item)
        else:
            parts.append(" (" + item.label)
            stack.append(None)
            stack.extend(reversed(item.children))
    return "".join(parts).lstrip()


class _Lines:
    """Map character offsets of a text to 1-based line numbers."""

    def __init__(self, text: str):
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)


def read_trees(text: str, source: str = "<string>", first_line: int = 1) -> Iterator[tuple[Tree, int]]:
    """Yield ``(tree, line)`` for every bracketed tree in ``text`` (any layout, any number per line).

    ``line`` is where the tree starts (counting from ``first_line``). Unbalanced brackets, a word
    outside any bracket, an empty constituent or a word beside subtrees raise :class:`TreeError`.
    """
    lines = _Lines(text)

    def line(offset: int) -> int:
        return first_line - 1 + lines.line(offset)

    stack: list[Tree] = []
    start = 0
    expect_label = False
    for match in _TOKEN.finditer(text):
        token = match.group()
        if expect_label:
            expect_label = False
            if token != "(" and token != ")":
                stack[-1].label = token
                continue
        if token == "(":
            if not stack:
                start = match.start()
            stack.append(Tree(""))
            expect_label = True
        elif token == ")":
            if not stack:
                raise TreeError(f"{source}:{line(match.start())}: ')' closes no bracket")
            node = stack.pop()
            problem = _problem(node)
            if problem:
                raise TreeError(f"{source}:{line(start)}: {problem}")
            if stack:
                stack[-1].children.append(node)
            else:
                yield node, line(start)
        elif not stack:
            raise TreeError(f"{source}:{line(match.start())}: word {token!r} outside any bracket")
        else:
            stack[-1].children.append(token)
    if stack:
        raise TreeError(f"{source}:{line(start)}: tree starting here is not closed ({len(stack)} open brackets)")


def _problem(node: Tree) -> str | None:
    """What is wrong with ``node`` (it needs subtrees or exactly one word), or None."""
    children = node.children
    if not children:
        return f"empty constituent ({node.label})"
    if len(children) > 1 and any(isinstance(c, str) for c in children):
        return f"constituent ({node.label} ...) mixes words and subtrees or holds several words"
    return None


def parse_tree(line: str, source: str = "<string>", line_number: int = 1) -> Tree:
    """Exactly one tree from ``line``; anything else raises :class:`TreeError` naming the line."""
    trees = list(read_trees(line, source, line_number))
    if len(trees) != 1:
        raise TreeError(f"{source}:{line_number}: expected one tree, found {len(trees)}")
    return trees[0][0]
