import pytest

from aiayn.parsing.clean import clean_tree, strip_label
from aiayn.parsing.trees import parse_tree


@pytest.mark.parametrize(
    "label, expected",
    [
        ("NP-SBJ", "NP"),
        ("NP-SBJ-1", "NP"),
        ("NP=2", "NP"),
        ("PP-LOC=3", "PP"),
        ("S-TPC-1", "S"),
        ("-LRB-", "-LRB-"),
        ("-RRB-", "-RRB-"),
        ("-NONE-", "-NONE-"),
        ("PRP$", "PRP$"),
        ("ADVP|PRT", "ADVP|PRT"),
        ("-", "-"),
        ("", ""),
    ],
)
def test_strip_label(label, expected):
    assert strip_label(label) == expected


@pytest.mark.parametrize(
    "raw, clean",
    [
        # function tags and co-indices go; the unlabeled root becomes TOP
        (
            "( (S (NP-SBJ-1 (NNP Mr.) (NNP Vinken)) (VP (VBZ is) (NP-PRD=2 (NN chairman))) (. .)) )",
            "(TOP (S (NP (NNP Mr.) (NNP Vinken)) (VP (VBZ is) (NP (NN chairman))) (. .)))",
        ),
        # -NONE- leaves go, and so do the constituents they leave empty (the whole subject chain)
        (
            "( (S (NP-SBJ (NP (-NONE- *-1))) (VP (VBD left) (S (NP-SBJ (-NONE- *PRO*)) (VP (TO to)))) (. .)) )",
            "(TOP (S (VP (VBD left) (S (VP (TO to)))) (. .)))",
        ),
        # -LRB-/-RRB- tags are kept, unary chains are kept
        (
            "( (S (NP (NP (-LRB- -LRB-) (NN a) (-RRB- -RRB-))) (VP (VB go))) )",
            "(TOP (S (NP (NP (-LRB- -LRB-) (NN a) (-RRB- -RRB-))) (VP (VB go))))",
        ),
        # an already TOP- or ROOT-rooted tree keeps one root; a bare tree is wrapped
        ("(ROOT (S (VP (VB go))))", "(TOP (S (VP (VB go))))"),
        ("(TOP (S (VP (VB go))))", "(TOP (S (VP (VB go))))"),
        ("(S (VP (VB go)))", "(TOP (S (VP (VB go))))"),
        ("(NNP Hello)", "(TOP (NNP Hello))"),
    ],
)
def test_clean_tree_golden(raw, clean):
    assert str(clean_tree(parse_tree(raw))) == clean


def test_tree_of_only_empty_elements_is_none():
    assert clean_tree(parse_tree("( (S (-NONE- *T*) (NP (-NONE- *))) )")) is None
