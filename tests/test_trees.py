import pytest

from aiayn.parsing.trees import Tree, TreeError, parse_tree, read_trees, to_string

PTB = """
( (S
    (NP-SBJ (NNP Pierre) (NNP Vinken) )
    (VP (MD will) )
    (. .) ))
( (S (NP-SBJ (PRP He) ) (VP (VBD left) ) (. .) ))
"""


def test_reads_multiline_trees_with_unlabeled_root_and_their_lines():
    trees = list(read_trees(PTB, "wsj_0001.mrg"))
    assert [line for _, line in trees] == [2, 6]
    first = trees[0][0]
    assert first.label == "" and first.children[0].label == "S"
    assert first.words() == ["Pierre", "Vinken", "will", "."]
    assert first.tags() == ["NNP", "NNP", "MD", "."]
    assert to_string(first) == "( (S (NP-SBJ (NNP Pierre) (NNP Vinken)) (VP (MD will)) (. .)))"


def test_one_line_round_trip():
    text = "(TOP (S (NP (DT the) (NN dog)) (VP (VBZ barks)) (. .)))"
    assert str(parse_tree(text)) == text
    assert parse_tree(text).preterminals()[1] == Tree("NN", ["dog"])


@pytest.mark.parametrize(
    "text, message",
    [
        ("(S (NP a)", "f.txt:3: tree starting here is not closed"),
        ("(S (NP a)))", "f.txt:3: ')' closes no bracket"),
        ("word (S (NP a))", "f.txt:3: word 'word' outside any bracket"),
        ("(S (NP))", "f.txt:3: empty constituent (NP)"),
        ("(S (NP a b))", "f.txt:3: constituent (NP ...) mixes words"),
        ("(S (NP a)) (S (NP b))", "f.txt:3: expected one tree, found 2"),
    ],
)
def test_errors_name_file_and_line(text, message):
    with pytest.raises(TreeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_tree(text, "f.txt", 3)


def test_deep_tree_is_written_without_recursion():
    tree = Tree("X", ["w"])
    for _ in range(5000):
        tree = Tree("X", [tree])
    assert to_string(tree).count("(") == 5001 and tree.words() == ["w"]
