"""Sampling whole sentences: English text, its tree, and its German or French translation.

Each call draws from its own ``random.Random`` seeded with a string (``"<seed>:<purpose>"``), so
every split and language pair is reproducible on its own and the outputs do not depend on the order
in which they are generated.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass

from .english import english_text, sentence_tree
from .french import french_sentence
from .german import german_sentence
from .grammar import Clause, sample_sentence
from .lexicon import lexicon
from .treebank import Tree

log = logging.getLogger(__name__)
MIN_WORDS, MAX_WORDS = 5, 20
REALIZERS = {"de": german_sentence, "fr": french_sentence}


@dataclass
class Sentence:
    clause: Clause
    tree: Tree
    en: str


def rng_for(seed: int, purpose: str) -> random.Random:
    """An independent generator for one purpose ("en-de:train", "treebank", ...)."""
    return random.Random(f"{seed}:{purpose}")


def sample(rng: random.Random, n: int, exclude: set[str] | frozenset[str] = frozenset(),
           unique: bool = False, what: str = "sentences") -> list[Sentence]:
    """``n`` sentences of 5-20 words (punctuation included) whose English text is not in ``exclude``.

    Sentences outside the length range are redrawn. With ``unique`` (held-out sets, treebank) they
    are also distinct from each other. The redraws are counted in the log.
    """
    lex = lexicon()
    out: list[Sentence] = []
    seen = set(exclude)
    length_drops = duplicate_drops = 0
    while len(out) < n:
        clause = sample_sentence(rng, lex)
        tree = sentence_tree(clause)
        if not MIN_WORDS <= len(tree.words()) <= MAX_WORDS:
            length_drops += 1
            continue
        text = english_text(tree)
        if text in seen:
            duplicate_drops += 1
            continue
        if unique:
            seen.add(text)
        out.append(Sentence(clause, tree, text))
    log.info("%s: kept %d, redrew %d outside %d-%d words and %d excluded or repeated",
             what, n, length_drops, MIN_WORDS, MAX_WORDS, duplicate_drops)
    return out


def translate(sentences: list[Sentence], lang: str) -> list[str]:
    """The ``lang`` ("de" or "fr") side of ``sentences``."""
    if lang not in REALIZERS:
        raise ValueError(f"no demo realizer for language {lang!r}; known: {sorted(REALIZERS)}")
    return [REALIZERS[lang](s.clause) for s in sentences]
