"""The usual Penn Treebank cleaning before training and scoring a parser (paper section 6.3).

* ``-NONE-`` leaves (traces, empty elements) are dropped, and so is every constituent left empty;
* function tags and co-indices are stripped: a label is cut at its first ``-`` or ``=``
  (``NP-SBJ-1`` -> ``NP``, ``NP=2`` -> ``NP``) unless it starts and ends with ``-`` (``-LRB-``, ``-NONE-``);
* the root becomes ``TOP``: the treebank's unlabeled outer bracket (or a ``ROOT``/``TOP`` label) is
  relabelled, any other root is wrapped;
* unary chains are kept.
"""

from __future__ import annotations

from aiayn.parsing.trees import Tree

ROOT = "TOP"
EMPTY_TAG = "-NONE-"
_ROOT_ALIASES = ("", "ROOT", "TOP")


def strip_label(label: str) -> str:
    """``NP-SBJ-1`` -> ``NP``, ``NP=2`` -> ``NP``, ``-LRB-`` and ``-NONE-`` unchanged."""
    if len(label) > 1 and label.startswith("-") and label.endswith("-"):
        return label
    for i, char in enumerate(label):
        if char in "-=" and i > 0:
            return label[:i]
    return label


def _clean(node: Tree) -> Tree | None:
    """The cleaned copy of ``node``, or None when nothing but empty elements lies below it."""
    if node.is_preterminal():
        if node.label == EMPTY_TAG:
            return None
        return Tree(strip_label(node.label), [node.children[0]])
    kept = [c for c in (_clean(child) for child in node.children) if c is not None]
    if not kept:
        return None
    return Tree(strip_label(node.label), kept)


def clean_tree(tree: Tree) -> Tree | None:
    """The cleaned, ``TOP``-rooted tree; None when the whole tree is empty elements."""
    if tree.label in _ROOT_ALIASES and not tree.is_preterminal():
        children = tree.children
    else:
        children = [tree]
    kept = [c for c in (_clean(child) for child in children) if c is not None]
    return Tree(ROOT, kept) if kept else None
