import json
import shutil
from pathlib import Path

import pytest

from aiayn.evaluate.evalb import metrics, read_lines
from aiayn.evaluate.evalb_params import EvalbConfig, default_param_file, read_params
from aiayn.evaluate.evalb_score import evaluate_lines
from aiayn.parsing import prepare, treebank
from aiayn.parsing.repair import delinearize
from aiayn.parsing.trees import parse_tree

SAMPLE = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ptb" / "wsj_sample"
TINY = {  # one-tree-per-line layout: raw PTB trees, one of them only empty elements
    "train": [
        "( (S (NP-SBJ (DT The) (NN dog)) (VP (VBZ barks)) (. .)) )",
        "( (S (NP-SBJ (-NONE- *)) ) )",
        "( (S (NP-SBJ=1 (PRP It)) (VP (VBD rained)) (. .)) )",
    ],
    "dev": ["( (S (NP-SBJ (NNP John)) (VP (VBD left)) (. .)) )"],
    "test": ["( (NP (NN Hello) (. !)) )", "(S (VP (VB Go) (ADVP-DIR (RB away))))"],
}


def write_tiny(root: Path, splits: dict = TINY) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for split, trees in splits.items():
        (root / f"{split}.trees").write_text("\n".join(trees) + "\n\n")
    return root


def run(treebank: Path, out: Path, *extra: str, train=(2, 21), dev=(22, 22), test=(23, 23), **settings) -> int:
    """The CLI with a settings file as the workflow writes it: splits, and ``linearization``/``silver`` if given."""
    path = out.with_name(f"{out.name}.settings.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"splits": {"train": train, "dev": dev, "test": test}, **settings}))
    return prepare.main(["--treebank", str(treebank), "--out-dir", str(out), "--settings", str(path), *extra])


def read(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_line_layout_golden(tmp_path):
    assert run(write_tiny(tmp_path / "tb"), tmp_path / "out") == 0
    out = tmp_path / "out"
    assert read(out / "train.words") == ["The dog barks .", "It rained ."]
    assert read(out / "train.tree") == ["(S (NP XX XX )NP (VP XX )VP XX )S", "(S (NP XX )NP (VP XX )VP XX )S"]
    assert read(out / "test.gold") == ["(TOP (NP (NN Hello) (. !)))", "(TOP (S (VP (VB Go) (ADVP (RB away)))))"]
    assert read(out / "test.tree") == ["(NP XX XX )NP", "(S (VP XX (ADVP XX )ADVP )VP )S"]
    assert read(out / "dev.words") == ["John left ."]
    assert not (out / "train.gold").exists()
    # the training brackets, most frequent first; the test trees' ADVP is not among them
    assert read(out / "train.symbols") == ["(NP", "(S", "(VP", ")NP", ")S", ")VP"]
    for line, words, tree in zip(read(out / "test.gold"), read(out / "test.words"), read(out / "test.tree")):
        gold = parse_tree(line)
        assert gold.words() == words.split()
        assert [p.children for p in delinearize(tree.split(), words.split()).preterminals()] == [
            p.children for p in gold.preterminals()
        ]


def test_pos_linearization_and_silver(tmp_path):
    silver = tmp_path / "silver.trees"
    silver.write_text("".join(f"(TOP (SQ (NP (NN s{i})) (VP (VB v))))\n" for i in range(10)))
    assert (
        run(
            write_tiny(tmp_path / "tb"),
            tmp_path / "out",
            "--seed",
            "3",
            linearization="pos",
            silver={"path": str(silver), "ratio": 1.5},
        )
        == 0
    )
    words = read(tmp_path / "out" / "train.words")
    assert words[:2] == ["The dog barks .", "It rained ."] and len(words) == 2 + 3
    assert all(w.startswith("s") and w.endswith(" v") for w in words[2:])
    assert read(tmp_path / "out" / "train.tree")[0] == "(S (NP DT NN )NP (VP VBZ )VP . )S"
    assert (
        run(
            write_tiny(tmp_path / "tb"),
            tmp_path / "again",
            "--seed",
            "3",
            linearization="pos",
            silver={"path": str(silver), "ratio": 1.5},
        )
        == 0
    )
    assert read(tmp_path / "again" / "train.words") == words
    # the silver trees' brackets count too (3 SQ, 2 + 3 NP)
    assert read(tmp_path / "out" / "train.symbols") == ["(NP", "(VP", ")NP", ")VP", "(SQ", ")SQ", "(S", ")S"]


def test_t2t_linearization_keeps_only_its_closes_whole(tmp_path):
    """tensor2tensor's format: bare labels and tags, /X closes; only the closes go to the subword model
    whole (a bare label kept whole would split the words that start with it)."""
    assert run(write_tiny(tmp_path / "tb"), tmp_path / "out", linearization="t2t") == 0
    out = tmp_path / "out"
    assert read(out / "train.tree") == ["S NP DT NN /NP VP VBZ /VP . /S", "S NP PRP /NP VP VBD /VP . /S"]
    assert read(out / "train.symbols") == ["/NP", "/S", "/VP"]
    for line, words, tree in zip(read(out / "test.gold"), read(out / "test.words"), read(out / "test.tree")):
        assert str(delinearize(tree.split(), words.split())) == line


def test_errors_name_the_file_and_line(tmp_path, capfd):
    broken = dict(TINY, dev=["( (S (NP (NNP John)) (VP (VBD left)) )"])
    assert run(write_tiny(tmp_path / "tb", broken), tmp_path / "out") == 1
    assert f"{tmp_path / 'tb' / 'dev.trees'}:1: tree starting here is not closed" in capfd.readouterr().err
    two = dict(TINY, test=["(S (NP a))", "(S (NP a)) (S (NP b))"])
    assert run(write_tiny(tmp_path / "tb1", two), tmp_path / "out") == 1
    assert f"{tmp_path / 'tb1' / 'test.trees'}:2: expected one tree, found 2" in capfd.readouterr().err
    empty = dict(TINY, test=["( (S (-NONE- *)) )"])
    assert run(write_tiny(tmp_path / "tb2", empty), tmp_path / "out") == 1
    assert "split 'test' is empty" in capfd.readouterr().err and not (tmp_path / "out" / "test.words").exists()
    assert run(tmp_path / "nowhere", tmp_path / "out") == 1
    assert run(tmp_path / "tb", tmp_path / "out", train=(5, 2)) == 1
    assert "splits.train: bad WSJ section range [5, 2]" in capfd.readouterr().err


def ldc_layout(root: Path, files_per_section: int | None = None) -> Path:
    """The NLTK sample laid out as LDC99T42: wsj_00* in section 00, wsj_01* in section 01."""
    if not SAMPLE.is_dir():
        pytest.skip(f"{SAMPLE} is absent (NLTK treebank sample in the shared data folder)")
    for section in ("00", "01"):
        folder = root / "parsed" / "mrg" / "wsj" / section
        folder.mkdir(parents=True)
        for path in sorted(SAMPLE.glob(f"wsj_{section}*.mrg"))[:files_per_section]:
            shutil.copy(path, folder)
    return root


@pytest.mark.slow
def test_ldc_layout_counts(tmp_path):
    out = tmp_path / "out"
    assert run(ldc_layout(tmp_path / "treebank_3"), out, train=(0, 0), dev=(1, 1), test=(1, 1)) == 0
    counts = {
        name: len(read(out / name))
        for name in [
            "train.words",
            "train.tree",
            "dev.words",
            "dev.tree",
            "dev.gold",
            "test.words",
            "test.tree",
            "test.gold",
        ]
    }
    assert counts == {
        "train.words": 1921,
        "train.tree": 1921,
        "dev.words": 1993,
        "dev.tree": 1993,
        "dev.gold": 1993,
        "test.words": 1993,
        "test.tree": 1993,
        "test.gold": 1993,
    }
    assert read(out / "train.words")[0].startswith("Pierre Vinken , 61 years old , will join the board")
    text = (out / "test.gold").read_text()
    assert (
        "-NONE-" not in text
        and "NP-SBJ" not in text
        and (out / "test.gold").read_bytes() == (out / "dev.gold").read_bytes()
    )
    outcome = evaluate_lines(
        read_lines(out / "test.gold"), read_lines(out / "test.gold"), read_params(default_param_file())
    )
    assert metrics(outcome, EvalbConfig())["f1"] == 100.0


def test_finds_the_wsj_folder_from_root_parent_or_itself(tmp_path):
    wsj = tmp_path / "LDC99T42" / "treebank_3" / "parsed" / "mrg" / "wsj"
    (wsj / "23").mkdir(parents=True)
    for where in (tmp_path / "LDC99T42", tmp_path / "LDC99T42" / "treebank_3", wsj):
        assert treebank.find_wsj(where) == wsj
    with pytest.raises(FileNotFoundError, match="no LDC99T42 treebank"):
        treebank.find_wsj(tmp_path / "elsewhere")


def test_ldc_layout_with_missing_sections(tmp_path, capfd):
    root = ldc_layout(tmp_path / "tb", files_per_section=3)
    assert run(root, tmp_path / "out", train=(0, 21), dev=(1, 1), test=(1, 3)) == 0
    assert "test: sections 02 03 have no .mrg files (3 files in the others)" in capfd.readouterr().err
    expected = sum(
        1
        for path in sorted(SAMPLE.glob("wsj_00*.mrg"))[:3] + sorted(SAMPLE.glob("wsj_01*.mrg"))[:3]
        for _ in treebank.read_mrg_file(path)
    )
    assert len(read(tmp_path / "out" / "train.words")) == expected
    assert run(root, tmp_path / "out2", train=(2, 21), dev=(1, 1), test=(1, 1)) == 1
    assert "split 'train' is empty: no .mrg file in WSJ sections 02-21" in capfd.readouterr().err


def test_broken_silver_tree_names_its_line(tmp_path, capfd):
    silver = tmp_path / "silver.trees"
    silver.write_text("(TOP (S (NN a)))\n\n(TOP (S (NN b))\n")
    assert run(write_tiny(tmp_path / "tb"), tmp_path / "out", silver={"path": str(silver), "ratio": 5}) == 1
    err = capfd.readouterr().err
    assert "asked for, the file has 2: using them all" in err and f"{silver}:3: tree starting here is not closed" in err
