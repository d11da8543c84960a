"""Turn any decoded token sequence into a valid tree over exactly the input words.

A sequence-to-sequence parser can emit too few or too many leaves, unbalanced or mismatched
brackets, empty constituents or nothing at all. :func:`repair` reads the tokens left to right with
a stack and fixes each problem the same way every time, counting it by kind:

* ``garbage``: a token that is neither a bracket nor a leaf (``(`` alone, brackets inside a
  label or tag): dropped;
* ``extra_close``: a close bracket with nothing open: dropped;
* ``mismatched_close``: a close bracket whose label differs from the innermost open one: it closes
  the innermost one anyway;
* ``extra_leaf``: a leaf beyond the sentence's words: dropped;
* ``missing_leaf``: a word without a leaf: an ``XX`` leaf is added to the innermost constituent
  still open at the end (or under ``TOP``);
* ``unclosed``: a bracket still open at the end: closed;
* ``empty_constituent``: a constituent without any leaf: removed;
* ``empty_output``: no token at all: every word becomes an ``XX`` leaf directly under ``TOP``.
"""

from __future__ import annotations

from collections import Counter

from aiayn.parsing.clean import ROOT
from aiayn.parsing.linearize import XX, is_close, is_leaf, is_open
from aiayn.parsing.trees import Tree

KINDS = ("garbage", "extra_close", "mismatched_close", "extra_leaf", "missing_leaf", "unclosed",
         "empty_constituent", "empty_output")


def repair(tokens: list[str], words: list[str]) -> tuple[Tree, Counter]:
    """A ``TOP``-rooted tree whose leaves are exactly ``words``, and the repairs made (by kind).

    A well-formed linearization comes back unchanged (the same tree as ``delinearize``) with an
    empty counter. Leaves keep their token as tag (``XX`` or a real tag), ``XX`` for added ones.
    """
    repairs: Counter = Counter()
    if not tokens:
        repairs["empty_output"] += 1
        return Tree(ROOT, [Tree(XX, [word]) for word in words]), repairs
    root = Tree(ROOT)
    stack = [root]
    n_leaves = 0
    for token in tokens:
        if is_open(token):
            node = Tree(token[1:])
            stack[-1].children.append(node)
            stack.append(node)
        elif is_close(token):
            if len(stack) == 1:
                repairs["extra_close"] += 1
                continue
            if token[1:] != stack[-1].label:
                repairs["mismatched_close"] += 1
            stack.pop()
        elif not is_leaf(token):
            repairs["garbage"] += 1
        elif n_leaves == len(words):
            repairs["extra_leaf"] += 1
        else:
            stack[-1].children.append(Tree(token, [words[n_leaves]]))
            n_leaves += 1
    for word in words[n_leaves:]:
        repairs["missing_leaf"] += 1
        stack[-1].children.append(Tree(XX, [word]))
    repairs["unclosed"] += len(stack) - 1
    repairs["empty_constituent"] += _prune_empty(root)
    return root, +repairs


def _prune_empty(root: Tree) -> int:
    """Remove constituents without leaves below ``root``; return how many (iterative, post-order)."""
    removed = 0
    order, stack = [], [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(c for c in node.children if isinstance(c, Tree) and not c.is_preterminal())
    for node in reversed(order):
        kept = [c for c in node.children if isinstance(c, str) or c.is_preterminal() or c.children]
        removed += len(node.children) - len(kept)
        node.children = kept
    return removed
