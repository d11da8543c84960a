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

:func:`allowed_next` is the matching constraint for decoding: which tokens keep a prefix on the way
to a valid tree, so that beam search never needs a repair.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Allowed:
    """What may follow a prefix: ``open`` any ``(X``, ``close`` the given ``)X``, a ``leaf``, or ``end``."""

    open: bool
    close: str | None
    leaf: bool
    end: bool

    def permits(self, token: str) -> bool:
        if is_open(token):
            return self.open
        if is_close(token):
            return self.close is not None and token == self.close
        return self.leaf and is_leaf(token)


def allowed_next(prefix: list[str], n_words: int) -> Allowed:
    """The tokens that keep ``prefix`` a prefix of a valid linearization of ``n_words`` leaves.

    Invariants kept: every open bracket is closed by its own label, no constituent is empty, the
    number of leaves is exactly ``n_words``. An open bracket needs a leaf to come, so it is allowed
    only while leaves remain; the sequence may end only when everything is closed and every word
    has its leaf. A prefix that already breaks the rules raises ValueError.
    """
    stack: list[tuple[str, bool]] = []  # (label, has a leaf below)
    n_leaves = 0
    for token in prefix:
        step = allowed_next_from(stack, n_leaves, n_words)
        if not step.permits(token):
            raise ValueError(f"prefix token {token!r} is not allowed here")
        if is_open(token):
            stack.append((token[1:], False))
        elif is_close(token):
            stack.pop()
            if stack:
                stack[-1] = (stack[-1][0], True)
        else:
            n_leaves += 1
            if stack:
                stack[-1] = (stack[-1][0], True)
    return allowed_next_from(stack, n_leaves, n_words)


def allowed_next_from(stack: list[tuple[str, bool]], n_leaves: int, n_words: int) -> Allowed:
    """:func:`allowed_next` from a decoder's state: open ``(label, has_leaf)`` pairs and leaves so far."""
    remaining = n_words - n_leaves
    close = ")" + stack[-1][0] if stack and stack[-1][1] else None
    return Allowed(open=remaining > 0, close=close, leaf=remaining > 0,
                   end=not stack and remaining == 0 and n_leaves > 0)
