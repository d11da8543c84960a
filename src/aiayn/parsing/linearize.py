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
constituent in the WSJ), and :func:`aiayn.parsing.repair.delinearize` wraps what it reads in ``TOP`` again.

``t2t`` is tensor2tensor's format (the paper's code): its ``words_and_tags_from_wsj_tree``
(tensorflow/tensor2tensor, tensor2tensor/data_generators/wsj_parsing.py, the same at af52f5fa4f80 of
2017 and at the release v1.6.0 of 2018) writes every label bare where its bracket opens, phrase labels and
POS tags alike, a closing ``/X`` for each phrase (a word closes its POS tag silently) and strips
``TOP``'s pair::

    t2t: S NP DT NN /NP VP VBZ /VP . /S

There an opening label and a POS tag look alike until a matching ``/X`` comes or does not: a bare
label is a leaf unless a later ``/X`` of the same constituent claims it
(:func:`aiayn.parsing.repair.repair` reads all three formats that way).
"""

from __future__ import annotations

from aiayn.parsing.clean import ROOT
from aiayn.parsing.trees import Tree

MODES = ("xx", "pos", "t2t")
XX = "XX"


def _plain(text: str) -> bool:
    return "(" not in text and ")" not in text


def is_open(token: str) -> bool:
    """``(X``: a label follows, itself without brackets."""
    return len(token) > 1 and token.startswith("(") and _plain(token[1:])


def is_close(token: str) -> bool:
    """``)X``: closes the innermost open ``(`` constituent."""
    return token.startswith(")")


def is_label_close(token: str) -> bool:
    """``/X`` (``t2t``): closes the nearest bare label ``X`` before it."""
    return len(token) > 1 and token.startswith("/") and _plain(token)


def is_leaf(token: str) -> bool:
    """A preterminal slot: ``XX``, a tag (``pos``), or a bare label (``t2t``: a leaf unless a ``/X`` closes it)."""
    return _plain(token) and not is_label_close(token)


def kept_whole(token: str, mode: str) -> bool:
    """Whether the subword model keeps ``token`` of a ``mode`` linearization in one piece
    (:mod:`aiayn.data.bpe` ``--symbols``): every bracket, and ``t2t``'s ``/X``. Not ``t2t``'s bare
    labels: a kept-whole piece matches at the start of any word (``NP`` in ``NPR``, ``S`` in
    ``Sales``), so those are left to BPE, which learns the frequent ones as pieces."""
    return is_label_close(token) if mode == "t2t" else is_open(token) or is_close(token)


def linearize(tree: Tree, mode: str = "xx") -> list[str]:
    """Tokens of ``tree`` (TOP-rooted) below its root: ``(S (NP XX )NP ... )S`` or ``S NP DT /NP ... /S``."""
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
            tokens.append(item.label if mode == "t2t" else "(" + item.label)
            stack.append(("/" if mode == "t2t" else ")") + item.label)
            stack.extend(reversed(item.children))
    return tokens
