"""aiayn-translate and aiayn-parse on a workflow's run directory give the workflow's own outputs, line for
line: the test set's translations (``test-avg.hyp.txt``) and trees (``test-avg.trees``, less the gold tags).

One small workflow run (configs/test.yaml, base on EN-DE and the parser only, trained long enough to
write more than empty lines): about a minute of CPU time."""

import subprocess
import sys

import pytest
import workflow_helpers
import yaml
from workflow_helpers import ROOT

from aiayn.parsing.postprocess import with_gold_tags
from aiayn.parsing.trees import parse_tree

pytestmark = pytest.mark.slow

TRAINING = {
    "defaults": {"train": {"train_steps": 200, "checkpoint_steps": 50, "dev_every_steps": 100, "warmup_steps": 50}},
    "experiments": {
        "parser": {"train": {"train_steps": 800, "checkpoint_steps": 200, "warmup_steps": 50, "lr_scale": 1.0}}
    },
}
TRANSLATION, PARSER = "results/test/en-de/base", "results/test/wsj/parser"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("interactive_workflow")
    overlay = workdir / "training.yaml"
    overlay.write_text(yaml.safe_dump(TRAINING))
    targets = [
        f"{TRANSLATION}/test-avg.hyp.txt",
        f"{PARSER}/test-avg.trees",
        f"{TRANSLATION}/inference.json",
        f"{PARSER}/inference.json",
    ]
    configs = [
        str(ROOT / "config.yaml"),
        str(ROOT / "configs/demo.yaml"),
        str(ROOT / "configs/test.yaml"),
        str(overlay),
    ]
    workflow_helpers.snakemake(workdir, "--cores", "2", *targets, "--configfile", *configs)
    return workdir


def command(workdir, module, *args):
    """Run ``python -m module`` from elsewhere than the workflow's directory; its standard output."""
    result = subprocess.run(
        [sys.executable, "-m", module, *args, "--device", "cpu", "--threads", "1"],
        cwd=workdir.parent,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_translating_the_test_source_gives_the_workflows_hypotheses(workdir):
    source = workdir / "data/test/raw/en-de/newstest2014.en"
    got = command(workdir, "aiayn.decode.translate_text", "--run", str(workdir / TRANSLATION), "--input", str(source))
    expected = (workdir / TRANSLATION / "test-avg.hyp.txt").read_text(encoding="utf-8")
    assert got == expected
    assert sum(1 for line in expected.splitlines() if line) >= len(expected.splitlines()) // 2


def test_parsing_the_test_words_gives_the_workflows_trees(workdir):
    words = (workdir / "data/test/tok/wsj/test.words").read_text(encoding="utf-8")
    got = command(
        workdir,
        "aiayn.parsing.parse",
        "--run",
        str(workdir / PARSER),
        "--tokenized",
        "--input",
        str(workdir / "data/test/tok/wsj/test.words"),
    ).splitlines()
    gold = (workdir / "data/test/tok/wsj/test.gold").read_text(encoding="utf-8").splitlines()
    expected = (workdir / PARSER / "test-avg.trees").read_text(encoding="utf-8").splitlines()
    assert len(got) == len(expected) == len(words.splitlines())
    retagged = [
        str(with_gold_tags(parse_tree(tree, "aiayn-parse", n), parse_tree(g, "gold", n)))
        for n, (tree, g) in enumerate(zip(got, gold), start=1)
    ]
    assert retagged == expected
    assert all(tree.startswith("(TOP ") and "(XX " in tree for tree in got)  # the model's tags: xx
