"""Constrained decoding over subword ids: beam search that can only produce valid trees.

:func:`aiayn.parsing.repair.allowed_next` says which *tree tokens* (``(NP``, ``)NP``, ``XX``) keep a
prefix valid; the decoder works on sentencepiece ids, where a tree token is one or more pieces
(``(NP`` -> ``▁(`` ``NP``). :class:`TreeConstraint` builds a trie of every tree token's pieces (the
canonical segmentation: sentencepiece encodes each space-separated token on its own) and tracks, per
hypothesis, the open constituents, the leaves so far and the position inside the current token. Its
:meth:`~TreeConstraint.mask` is a (V,) boolean tensor of the ids allowed next, end-of-sentence
included, to apply as ``logits[~mask] = -inf`` before the top-k of each step; states are immutable,
so reordering beams is indexing a list. Every sequence the mask lets through ends as a valid tree
over exactly ``n_words`` leaves, so :func:`~aiayn.parsing.repair.repair` has nothing left to do.
It relies on sentencepiece's word-start marker: a token's first piece starts with ``▁`` and no
continuation piece does (the default ``add_dummy_prefix``), so a piece either continues the current
token or starts the next one, never both.

Use (one state per beam row; ``rows`` and ``tokens`` as the beam search selects them)::

    constraint = TreeConstraint.from_tokens(tree_tokens(train_tree_file), sp.encode, sp.get_piece_size(), eos)
    states = [constraint.start(n_words[b]) for b in ... for k in range(beam_size)]
    logits[~torch.stack([constraint.mask(s) for s in states])] = -inf
    states = [constraint.advance(states[r], t) for r, t in zip(rows, tokens)]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import torch

from aiayn.io import open_text
from aiayn.parsing.linearize import is_close, is_leaf, is_open
from aiayn.parsing.repair import Allowed, allowed_next_from


def tree_tokens(path: str | Path) -> set[str]:
    """Every distinct token of a linearized-tree file (``train.tree``): the labels and tags to allow."""
    tokens: set[str] = set()
    with open_text(path) as handle:
        for line in handle:
            tokens.update(line.split())
    return tokens


@dataclass
class _Node:
    children: dict[int, int] = field(default_factory=dict)  # piece id -> node index
    token: str | None = None  # the tree token that ends here
    below: list[str] = field(default_factory=list)  # tree tokens ending here or deeper


@dataclass(frozen=True)
class State:
    """One hypothesis: open ``(label, has a leaf)`` pairs, leaves so far, words, trie node (0: between tokens)."""

    stack: tuple[tuple[str, bool], ...]
    n_leaves: int
    n_words: int
    node: int = 0

    def allowed(self) -> Allowed:
        return allowed_next_from(list(self.stack), self.n_leaves, self.n_words)

    def apply(self, token: str) -> "State":
        """The state after the whole tree token ``token`` (assumed allowed), back between tokens."""
        stack, leaves = self.stack, self.n_leaves
        if is_open(token):
            stack = stack + ((token[1:], False),)
        elif is_close(token):
            stack = stack[:-1]
            if stack:
                stack = stack[:-1] + ((stack[-1][0], True),)
        else:
            leaves += 1
            if stack:
                stack = stack[:-1] + ((stack[-1][0], True),)
        return State(stack, leaves, self.n_words, 0)


class TreeConstraint:
    """Which subword ids keep a hypothesis on the way to a valid tree (see the module docstring)."""

    def __init__(self, token_ids: dict[str, list[int]], vocab_size: int, eos_id: int):
        self.vocab_size, self.eos_id = vocab_size, eos_id
        self.nodes = [_Node()]
        for token, ids in sorted(token_ids.items()):
            if not ids or not (is_open(token) or is_close(token) or is_leaf(token)):
                raise ValueError(f"tree token {token!r} has no pieces or is not a tree token")
            self._insert(token, ids)
        self._masks: dict[tuple, torch.Tensor] = {}

    @classmethod
    def from_tokens(cls, tokens: Iterable[str], encode: Callable[[str], list[int]], vocab_size: int,
                    eos_id: int) -> "TreeConstraint":
        """From tree tokens and the sentencepiece ``encode`` (str -> ids) of the task's model."""
        return cls({token: list(encode(token)) for token in tokens}, vocab_size, eos_id)

    def _insert(self, token: str, ids: list[int]) -> None:
        node = 0
        self.nodes[0].below.append(token)
        for piece in ids:
            if piece not in self.nodes[node].children:
                self.nodes[node].children[piece] = len(self.nodes)
                self.nodes.append(_Node())
            node = self.nodes[node].children[piece]
            self.nodes[node].below.append(token)
        self.nodes[node].token = token

    def _reachable(self, state: State, node: int) -> bool:
        """Whether some tree token through trie ``node`` is allowed in ``state``."""
        allowed = state.allowed()
        return any(allowed.permits(token) for token in self.nodes[node].below)

    def start(self, n_words: int) -> State:
        return State((), 0, n_words)

    def advance(self, state: State, piece: int) -> State:
        """The state after ``piece``; a piece the mask forbids raises ValueError."""
        node = self.nodes[state.node]
        if piece in node.children and self._reachable(state, node.children[piece]):
            return State(state.stack, state.n_leaves, state.n_words, node.children[piece])
        if node.token is not None and state.node != 0:
            return self.advance(state.apply(node.token), piece)
        raise ValueError(f"piece {piece} is not allowed here")

    def allowed_ids(self, state: State) -> list[int]:
        """The ids allowed after ``state`` (end-of-sentence included when the tree is complete)."""
        node = self.nodes[state.node]
        ids = [piece for piece, child in node.children.items() if self._reachable(state, child)]
        if state.node == 0:
            return ids + ([self.eos_id] if state.allowed().end else [])
        if node.token is not None and state.allowed().permits(node.token):
            ids += self.allowed_ids(state.apply(node.token))
        return ids

    def mask(self, state: State) -> torch.Tensor:
        """(V,) bool, True where an id is allowed; cached by what the decision depends on."""
        key = (state.node, state.stack[-2:], min(len(state.stack), 2), min(state.n_words - state.n_leaves, 2),
               state.n_leaves > 0)
        if key not in self._masks:
            mask = torch.zeros(self.vocab_size, dtype=torch.bool)
            mask[self.allowed_ids(state)] = True
            self._masks[key] = mask
        return self._masks[key]
