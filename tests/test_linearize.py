import functools
from pathlib import Path

import pytest

from aiayn.parsing.clean import clean_tree
from aiayn.parsing.linearize import linearize
from aiayn.parsing.repair import delinearize
from aiayn.parsing.treebank import read_mrg_file
from aiayn.parsing.trees import parse_tree

SAMPLE = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ptb" / "wsj_sample"
TREE = "(TOP (S (NP (DT the) (NN dog)) (VP (VBZ barks)) (. .)))"


@functools.lru_cache(maxsize=1)
def sample_trees() -> tuple:
    if not SAMPLE.is_dir():
        pytest.skip(f"{SAMPLE} is absent (NLTK treebank sample in the shared data folder)")
    return tuple(clean_tree(t) for path in sorted(SAMPLE.glob("wsj_*.mrg")) for t, _ in read_mrg_file(path))


def test_golden_linearizations():
    tree = parse_tree(TREE)
    assert " ".join(linearize(tree, "xx")) == "(S (NP XX XX )NP (VP XX )VP XX )S"
    assert " ".join(linearize(tree, "pos")) == "(S (NP DT NN )NP (VP VBZ )VP . )S"
    assert " ".join(linearize(tree, "t2t")) == "S NP DT NN /NP VP VBZ /VP . /S"
    assert linearize(parse_tree("(TOP (NNP Hello))")) == ["XX"]
    with pytest.raises(ValueError, match="unknown linearization"):
        linearize(tree, "tags")


def test_delinearize_restores_top_and_words():
    words = "the dog barks .".split()
    assert str(delinearize("(S (NP DT NN )NP (VP VBZ )VP . )S".split(), words)) == TREE
    xx = delinearize("(S (NP XX XX )NP (VP XX )VP XX )S".split(), words)
    assert str(xx) == "(TOP (S (NP (XX the) (XX dog)) (VP (XX barks)) (XX .)))"
    assert str(delinearize("S NP DT NN /NP VP VBZ /VP . /S".split(), words)) == TREE


@pytest.mark.parametrize(
    "tokens, message",
    [
        ("(S (NP XX XX )VP (VP XX )VP XX )S", "mismatched_close 1"),
        ("(S (NP XX XX )NP (VP XX )VP XX", "unclosed 1"),
        ("(S (NP XX XX )NP (VP XX )VP )S", "missing_leaf 1"),
        ("(S (NP )NP XX XX XX XX )S", "empty_constituent 1"),
        ("", "empty_output 1"),
        ("S NP DT NN /NP VP VBZ /PP . /S", "extra_close 1, extra_leaf 1"),  # VP stays a leaf: 5 slots
        ("S NP DT NN /NP VP VBZ /VP .", "extra_leaf 1"),  # S, never closed, is a leaf
    ],
)
def test_delinearize_rejects_malformed(tokens, message):
    with pytest.raises(ValueError) as excinfo:
        delinearize(tokens.split(), "the dog barks .".split())
    assert str(excinfo.value) == f"not a well-formed linearization of 4 words: {message}"


@pytest.mark.parametrize("mode", [pytest.param("xx", marks=pytest.mark.slow), "pos", "t2t"])  # xx: 4 s
def test_round_trip_on_every_sample_tree(mode):
    trees = sample_trees()
    assert len(trees) == 3914
    for tree in trees:
        back = delinearize(linearize(tree, mode), tree.words())
        if mode == "xx":
            for leaf, tag in zip(back.preterminals(), tree.tags()):
                leaf.label = tag
        assert str(back) == str(tree)
