import functools
import random
from collections import Counter
from pathlib import Path

import pytest

from aiayn.evaluate.evalb_params import EvalbConfig
from aiayn.evaluate.evalb_score import evaluate_lines
from aiayn.parsing.clean import clean_tree
from aiayn.parsing.linearize import is_close, is_label_close, is_leaf, is_open, linearize
from aiayn.parsing.repair import KINDS, delinearize, repair
from aiayn.parsing.treebank import read_mrg_file
from aiayn.parsing.trees import Tree, parse_tree

SAMPLE = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ptb" / "wsj_sample"
WORDS = "the dog barks .".split()
GOOD = "(S (NP XX XX )NP (VP XX )VP XX )S"


@functools.lru_cache(maxsize=1)
def sample_trees() -> tuple:
    if not SAMPLE.is_dir():
        pytest.skip(f"{SAMPLE} is absent (NLTK treebank sample in the shared data folder)")
    return tuple(clean_tree(t) for path in sorted(SAMPLE.glob("wsj_*.mrg")) for t, _ in read_mrg_file(path))


def repaired(tokens: str) -> tuple[str, dict]:
    tree, repairs = repair(tokens.split(), WORDS)
    return str(tree), dict(repairs)


def test_valid_input_is_unchanged():
    assert repaired(GOOD) == (str(delinearize(GOOD.split(), WORDS)), {})


@pytest.mark.parametrize(
    "tokens, tree, repairs",
    [
        ("", "(TOP (XX the) (XX dog) (XX barks) (XX .))", {"empty_output": 1}),
        (
            "(S (NP XX XX )NP (VP XX )VP",
            "(TOP (S (NP (XX the) (XX dog)) (VP (XX barks)) (XX .)))",
            {"missing_leaf": 1, "unclosed": 1},
        ),
        (
            "(S (NP XX XX )NP (VP XX )VP XX XX XX )S",
            "(TOP (S (NP (XX the) (XX dog)) (VP (XX barks)) (XX .)))",
            {"extra_leaf": 2},
        ),
        (
            "(S (NP XX XX )VP (VP XX )VP XX )S )S",
            "(TOP (S (NP (XX the) (XX dog)) (VP (XX barks)) (XX .)))",
            {"mismatched_close": 1, "extra_close": 1},
        ),
        (
            "( (S (NP XX XX )NP (ADJP )ADJP (VP XX )VP XX )S",
            "(TOP (S (NP (XX the) (XX dog)) (VP (XX barks)) (XX .)))",
            {"garbage": 1, "empty_constituent": 1},
        ),
        (")S XX XX XX XX", "(TOP (XX the) (XX dog) (XX barks) (XX .))", {"extra_close": 1}),
        (
            "S NP DT NN /NP VP VBZ /VP . /S /S",
            "(TOP (S (NP (DT the) (NN dog)) (VP (VBZ barks)) (. .)))",
            {"extra_close": 1},
        ),
        (
            "S NP DT NN /NP /VP . /S",
            "(TOP (S (NP (DT the) (NN dog)) (. barks)) (XX .))",
            {"extra_close": 1, "missing_leaf": 1},
        ),
        ("NP DT NN /NP VBZ .", "(TOP (NP (DT the) (NN dog)) (VBZ barks) (. .))", {}),
        ("S NP /NP DT NN VBZ . /S", "(TOP (S (DT the) (NN dog) (VBZ barks) (. .)))", {"empty_constituent": 1}),
    ],
)
def test_repair_golden(tokens, tree, repairs):
    assert repaired(tokens) == (tree, repairs)


def mutilate(tokens: list[str], rng: random.Random) -> list[str]:
    """One to three random damages of the kinds a decoder makes (of any linearization)."""
    tokens = list(tokens)
    labels = ["NP", "VP", "S", "PP", "SBAR"]
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(7)
        at = rng.randint(0, len(tokens))
        brackets = [i for i, t in enumerate(tokens) if is_open(t) or is_close(t) or is_label_close(t)]
        leaves = [i for i, t in enumerate(tokens) if is_leaf(t)]
        if kind == 0 and brackets:
            del tokens[rng.choice(brackets)]
        elif kind == 1:
            tokens.insert(at, rng.choice(["(", ")", "/"]) + rng.choice(labels))
        elif kind == 2 and leaves:
            del tokens[rng.choice(leaves)]
        elif kind == 3:
            tokens.insert(at, "XX")
        elif kind == 4:
            tokens = tokens[:at]
        elif kind == 5:
            tokens.insert(at, rng.choice(["(", ")", "((", "))NP", "<unk>", "foo", "(S(", "XX)"]))
        else:
            tokens.extend([rng.choice([")", "/"]) + rng.choice(labels)] * rng.randint(1, 3))
    return tokens


def assert_valid(tree: Tree, words: list[str]) -> None:
    assert tree.label == "TOP" and tree.words() == words
    stack = [tree]
    while stack:
        node = stack.pop()
        assert node.children and node.label
        if not node.is_preterminal():
            assert all(isinstance(c, Tree) for c in node.children)
            stack.extend(node.children)


@pytest.mark.slow
def test_repair_always_gives_a_valid_tree_over_the_words():
    trees = sample_trees()
    rng = random.Random(13)
    seen: Counter = Counter()
    gold_lines, test_lines = [], []
    for tree in rng.sample(trees, 600):
        words = tree.words()
        tokens = mutilate(linearize(tree, rng.choice(["xx", "pos", "t2t"])), rng)
        fixed, repairs = repair(tokens, words)
        assert_valid(fixed, words)
        assert str(parse_tree(str(fixed))) == str(fixed)
        seen.update(repairs)
        for leaf, tag in zip(fixed.preterminals(), tree.tags()):
            leaf.label = tag
        gold_lines.append(f"{tree}\n")
        test_lines.append(f"{fixed}\n")
    assert set(seen) == set(KINDS)
    outcome = evaluate_lines(gold_lines, test_lines, EvalbConfig(delete_labels=["TOP", ",", ".", ":", "``", "''"]))
    assert outcome.messages == [] and all(row.status == 0 for row in outcome.rows)
