"""aiayn.paths: every run file named once, and nowhere else in src/ or workflow/."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

from aiayn.paths import CHECKPOINT_RE, ResultPaths, RunPaths, TrainPaths

ROOT = Path(__file__).resolve().parents[1]
HOME = ROOT / "src" / "aiayn" / "paths.py"

# The names of a run's files and of the results directory's own, as they would be spelled elsewhere:
# whole names (not inside a longer one: hf's tokenizer_config.json is not config.json) and suffixes.
# ``.trees`` is left out: a user's treebank files carry the same suffix (aiayn.parsing.treebank).
WHOLE = [
    "checkpoint_last.pt",
    "summary.json",
    "log.csv",
    "compile-cache",
    "avg.pt",
    "inference.json",
    "figures.json",
    "config.json",
    "dev-last",
    "test-avg",
    "test-copy",
    "test-flat",
    "settings/train.json",
    "settings/average.json",
    "settings/decode.json",
    "settings/bleu.json",
    "settings/perplexity.json",
    "settings/attention.json",
]
SUFFIXES = ["ckpt_", ".hyp.tok", ".hyp.txt", ".bleu.json", ".evalb.txt", ".evalb.json", ".ppl.json"]
NAME_RE = re.compile(
    "|".join([*(rf"(?<![\w-]){re.escape(name)}" for name in WHOLE), *(re.escape(name) for name in SUFFIXES)])
)
# Spelled in aiayn.paths as they are above; the others are composed there (``f"{split}-{kind}"``,
# ``f"{stage}.json"``), which is why a copy of one elsewhere would still be a second spelling.
COMPOSED = {"test-avg", "test-copy", "test-flat", *(name for name in WHOLE if name.startswith("settings/"))}


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, kinds) and node.body and isinstance(node.body[0], ast.Expr)
        if isinstance(node.body[0].value, ast.Constant)
    }


def python_literals(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every string literal of a Python module but its docstrings (an f-string's
    literal parts included)."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
    ]


def snakemake_literals(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every string token of a Snakefile or .smk file (comments are not strings)."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return [(token.start[0], token.string) for token in tokens if token.type == tokenize.STRING]


def spellings(files: list[Path], root: Path = ROOT) -> dict[str, list[str]]:
    """``{name: ["file:line", ...]}``: where each run file name is spelled as a literal."""
    found: dict[str, list[str]] = {}
    for path in files:
        text = path.read_text(encoding="utf-8")
        literals = python_literals(text) if path.suffix == ".py" else snakemake_literals(text)
        for line, literal in literals:
            for match in NAME_RE.finditer(literal):
                found.setdefault(match.group(0), []).append(f"{path.relative_to(root)}:{line}")
    return found


def sources() -> list[Path]:
    return [
        *sorted((ROOT / "src" / "aiayn").rglob("*.py")),
        ROOT / "Snakefile",
        *sorted((ROOT / "workflow").rglob("*.smk")),
    ]


def test_every_run_file_name_is_spelled_in_one_module_only():
    """Renaming a run's output is one edit, in aiayn.paths: no other module of src/ or workflow/ spells one."""
    elsewhere = {
        name: where
        for name, where in spellings(sources()).items()
        if {place.split(":")[0] for place in where} != {str(HOME.relative_to(ROOT))}
    }
    assert elsewhere == {}


def test_every_name_is_defined_in_the_paths_module():
    """The lists above are the module's: each name is spelled there (a stale entry checks nothing)."""
    assert set(spellings([HOME])) == {*WHOLE, *SUFFIXES} - COMPOSED


def test_a_name_spelled_twice_is_found(tmp_path):
    """A literal in a rule or in code counts; a comment, a docstring and a longer name do not."""
    rules = tmp_path / "rules.smk"
    rules.write_text('# avg.pt in a comment\nrule x:\n    output:\n        f"{R}/{{task}}/avg.pt",\n')
    module = tmp_path / "reader.py"
    module.write_text(
        '"""Reads summary.json."""\nPATH = "train/summary.json"\nHF = "tokenizer_config.json"\n'
        'SCORE = f"{split}-last.bleu.json"\n'
    )
    assert spellings([rules, module], tmp_path) == {
        "avg.pt": ["rules.smk:4"],
        "summary.json": ["reader.py:2"],
        ".bleu.json": ["reader.py:4"],
    }


def test_the_workflow_patterns_are_the_paths_of_a_run():
    """A rule's pattern (wildcards in) and a reader's path (names in) come from the same method."""
    pattern = ResultPaths("results").run("{task}", "{exp}").hyp_tok("{split}", "{ckpt}")
    assert pattern == "results/{task}/{exp}/{split}-{ckpt}.hyp.tok"
    run = ResultPaths("results").run("en-de", "base")
    assert run.hyp_tok("test", "avg") == pattern.format(task="en-de", exp="base", split="test", ckpt="avg")
    assert run.checkpoint("avg") == "results/en-de/base/avg.pt"
    assert run.checkpoint("last") == run.train.last == "results/en-de/base/train/checkpoint_last.pt"
    assert run.score(True, "test", "avg") == run.bleu("test", "avg")
    assert run.score(False, "test", "avg") == run.evalb("test", "avg")
    with pytest.raises(ValueError, match="'avg' or 'last'"):
        run.checkpoint("best")


def test_a_directory_with_spaces_or_a_trailing_name_is_kept_as_given():
    assert ResultPaths("my results").run("en-de", "base.seed2").dir == "my results/en-de/base.seed2"
    assert RunPaths("./r/x").settings("decode") == "./r/x/settings/decode.json"


def test_a_checkpoint_name_reads_back_its_step():
    name = Path(TrainPaths("out").checkpoint(1400)).name
    assert CHECKPOINT_RE.match(name).group(1) == "00001400"
