"""Turn any decoded token sequence into a valid tree over exactly the input words.

A sequence-to-sequence parser can emit too few or too many leaves, unbalanced or mismatched
brackets, empty constituents or nothing at all. :func:`repair` reads the tokens left to right with
a stack and fixes each problem the same way every time, counting it by kind. It reads every
linearization of :mod:`aiayn.parsing.linearize`: ``(X`` opens and ``)X`` closes a constituent; a
bare token is a leaf slot, unless a later ``/X`` (``t2t``) closes the nearest bare ``X`` before it in
the same constituent, which turns that ``X`` into a constituent of everything after it; the words
go into the leaf slots left to right at the end. Kinds:

* ``garbage``: a token that is neither a bracket nor a leaf (``(`` alone, brackets inside a
  label or tag): dropped;
* ``extra_close``: a close bracket with nothing open, or a ``/X`` with no bare ``X`` before it in
  the same constituent: dropped;
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
from aiayn.parsing.linearize import XX, is_close, is_label_close, is_leaf, is_open
from aiayn.parsing.trees import Tree

KINDS = (
    "garbage",
    "extra_close",
    "mismatched_close",
    "extra_leaf",
    "missing_leaf",
    "unclosed",
    "empty_constituent",
    "empty_output",
)


class _Slot:
    """A leaf whose word is not yet known (and, in ``t2t``, a bare label a ``/X`` may still claim)."""

    __slots__ = ("tag",)

    def __init__(self, tag: str):
        self.tag = tag


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
    for token in tokens:
        children = stack[-1].children
        if is_open(token):
            node = Tree(token[1:])
            children.append(node)
            stack.append(node)
        elif is_close(token):
            if len(stack) == 1:
                repairs["extra_close"] += 1
                continue
            if token[1:] != stack[-1].label:
                repairs["mismatched_close"] += 1
            stack.pop()
        elif is_label_close(token):
            label = token[1:]
            at = next(
                (
                    i
                    for i in range(len(children) - 1, -1, -1)
                    if isinstance(children[i], _Slot) and children[i].tag == label
                ),
                None,
            )
            if at is None:
                repairs["extra_close"] += 1
                continue
            children[at:] = [Tree(label, children[at + 1 :])]
        elif is_leaf(token):
            children.append(_Slot(token))
        else:
            repairs["garbage"] += 1
    n_leaves = _fill(root, words, repairs)
    for word in words[n_leaves:]:
        repairs["missing_leaf"] += 1
        stack[-1].children.append(Tree(XX, [word]))
    repairs["unclosed"] += len(stack) - 1
    repairs["empty_constituent"] += _prune_empty(root)
    return root, +repairs


def delinearize(tokens: list[str], words: list[str]) -> Tree:
    """The ``TOP``-rooted tree of a well-formed linearization (any mode), leaves filled with ``words``.

    Preterminals take the leaf token as their tag (``XX`` or the real tag). Input that :func:`repair`
    would have to repair (a close that does not match, an unclosed bracket, an empty constituent,
    more or fewer leaves than words) raises ValueError naming the repairs by kind.
    """
    tree, repairs = repair(tokens, words)
    if repairs:
        found = ", ".join(f"{kind} {n}" for kind, n in sorted(repairs.items()))
        raise ValueError(f"not a well-formed linearization of {len(words)} words: {found}")
    return tree


def _fill(root: Tree, words: list[str], repairs: Counter) -> int:
    """Put ``words`` into the leaf slots below ``root``, left to right; drop slots beyond the words
    (``extra_leaf``); return how many words went in (iterative, depth first)."""
    n_leaves = 0
    pending = [(root, iter(root.children))]
    root.children = []
    while pending:
        node, rest = pending[-1]
        child = next(rest, None)
        if child is None:
            pending.pop()
        elif isinstance(child, _Slot):
            if n_leaves == len(words):
                repairs["extra_leaf"] += 1
                continue
            node.children.append(Tree(child.tag, [words[n_leaves]]))
            n_leaves += 1
        else:
            node.children.append(child)
            pending.append((child, iter(child.children)))
            child.children = []
    return n_leaves


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
