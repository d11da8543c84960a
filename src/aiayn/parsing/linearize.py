"""Trees as token sequences (Vinyals et al. 2015, "Grammar as a Foreign Language"; paper section 6.3).

Depth-first: a constituent ``X`` becomes ``(X``, its children, ``)X``; a preterminal becomes one
token: ``XX`` (``xx``, Vinyals et al.'s choice and the default: the words are the input, the tags
carry no structure; the paper's section 6.3 names no format) or its real tag (``pos``: the same
brackets with the POS tags kept). Example::

    (TOP (S (NP (DT the) (NN dog)) (VP (VBZ barks)) (. .)))
    xx:  (S (NP XX XX )NP (VP XX )VP XX )S
    pos: (S (NP DT NN )NP (VP VBZ )VP . )S

The ``TOP`` node is not linearized: every tree has it, so it carries no information and would only
lengthen the target by two tokens. The sequence is the linearization of ``TOP``'s children (one
constituent in the WSJ), and :func:`delinearize` wraps what it reads in ``TOP`` again.

Neither is tensor2tensor's format (the paper's code): its ``words_and_tags_from_wsj_tree``
(tensorflow/tensor2tensor, tensor2tensor/data_generators/wsj_parsing.py, the same at af52f5fa4f80 of
2017 and 02fa80bd3f94 of 2018) writes every label bare where its bracket opens, phrase labels and
POS tags alike, a closing ``/X`` for each phrase (a word closes its POS tag silently) and strips
``TOP``'s pair: the tree above becomes ``S NP DT NN /NP VP VBZ /VP . /S``. There an opening label
and a POS tag look alike until a matching ``/X`` comes or does not; here every token says what it
is (open, close or leaf) on its own, which :mod:`aiayn.parsing.repair` relies on.
"""

from __future__ import annotations

from aiayn.parsing.clean import ROOT
from aiayn.parsing.trees import Tree

MODES = ("xx", "pos")
XX = "XX"


def _plain(text: str) -> bool:
    return "(" not in text and ")" not in text


def is_open(token: str) -> bool:
    """``(X``: a label follows, itself without brackets."""
    return len(token) > 1 and token.startswith("(") and _plain(token[1:])


def is_close(token: str) -> bool:
    return token.startswith(")")


def is_leaf(token: str) -> bool:
    """A preterminal slot: ``XX``, or any tag (without brackets) in the ``pos`` linearization."""
    return _plain(token)


def linearize(tree: Tree, mode: str = "xx") -> list[str]:
    """Tokens of ``tree`` (TOP-rooted) below its root: ``(S (NP XX )NP ... )S``."""
    if mode not in MODES:
        raise ValueError(f"unknown linearization {mode!r}; expected one of {MODES}")
    tokens: list[str] = []
    stack: list[Tree | str] = list(reversed(tree.children)) if tree.label == ROOT else [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            tokens.append(item)
        elif item.is_preterminal():
            tokens.append(XX if mode == "xx" else item.label)
        else:
            tokens.append("(" + item.label)
            stack.append(")" + item.label)
            stack.extend(reversed(item.children))
    return tokens


def delinearize(tokens: list[str], words: list[str]) -> Tree:
    """The ``TOP``-rooted tree of a well-formed linearization, leaves filled with ``words``.

    Preterminals take the leaf token as their tag (``XX`` or the real tag). Malformed input (a
    close that does not match, an unclosed bracket, an empty constituent, more or fewer leaves
    than words) raises ValueError: :func:`aiayn.parsing.repair.repair` handles model outputs.
    """
    root = Tree(ROOT)
    stack = [root]
    n_leaves = 0
    for i, token in enumerate(tokens):
        if is_open(token):
            node = Tree(token[1:])
            stack[-1].children.append(node)
            stack.append(node)
        elif is_close(token):
            if len(stack) == 1 or token[1:] != stack[-1].label or not stack[-1].children:
                raise ValueError(f"token {i} {token!r} does not close an open, non-empty constituent")
            stack.pop()
        elif is_leaf(token):
            if n_leaves == len(words):
                raise ValueError(f"more leaves than the {len(words)} words")
            stack[-1].children.append(Tree(token, [words[n_leaves]]))
            n_leaves += 1
        else:
            raise ValueError(f"token {i} {token!r} is neither a bracket nor a leaf")
    if len(stack) > 1 or n_leaves != len(words) or not root.children:
        raise ValueError(f"{len(stack) - 1} unclosed brackets, {n_leaves} leaves for {len(words)} words")
    return root
