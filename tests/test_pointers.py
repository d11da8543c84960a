"""Every pointer the prose gives resolves: a path (``src/aiayn/...``, ``tests/...``, ``benchmarks/...``,
``workflow/...``, ``configs/...``, ``profiles/...``, ``docs/...``, ``envs/...``) names a file or folder
of the checkout, and a dotted name (``aiayn.x.y``) a module or an attribute of one.

Read: README.md, CONTRIBUTING.md, CHANGELOG.md, docs/ (and docs/studies/), config.yaml, configs/, profiles/,
benchmarks/RESULTS.md, and the comments and
docstrings of src/ and workflow/ (string values in code are data, not pointers). A moved module or a
renamed function then fails here, naming the file that still points at it.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import io
import re
import tokenize
from pathlib import Path

from paths import ROOT

PATH = re.compile(r"(?<![\w/.-])((?:src/aiayn|tests|benchmarks|workflow|configs|profiles|docs|envs)/[\w./-]*\w)")
NAME = re.compile(r"(?<![\w./-])(aiayn(?:\.[A-Za-z_]\w*)+)")
SECTION = re.compile(r"((?:[\w-]+/)*[\w-]+\.md)`?, \"([^\"]+)\"")  # docs/parsing.md, "Vocabulary"


def python_prose(path: Path) -> str:
    """The comments and docstrings of a Python (or Snakemake) file."""
    text = path.read_text(encoding="utf-8")
    parts = [tok.string for tok in tokenize.generate_tokens(io.StringIO(text).readline) if tok.type == tokenize.COMMENT]
    if path.suffix == ".py":
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                parts.append(ast.get_docstring(node) or "")
    return "\n".join(parts)


def prose() -> dict[str, str]:
    """``{file: the text whose pointers must resolve}``."""
    whole = [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        ROOT / "CHANGELOG.md",
        ROOT / "config.yaml",
        ROOT / "benchmarks" / "RESULTS.md",
        *sorted((ROOT / "docs").rglob("*.md")),
        *sorted((ROOT / "configs").glob("*.yaml")),
        *sorted(p for p in (ROOT / "profiles").rglob("*") if p.is_file()),
    ]
    code = [
        *sorted((ROOT / "src" / "aiayn").rglob("*.py")),
        *sorted((ROOT / "workflow").rglob("*.smk")),
        ROOT / "Snakefile",
    ]
    texts = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in whole}
    texts |= {str(p.relative_to(ROOT)): python_prose(p) for p in code}
    return texts


def resolves(name: str) -> bool:
    """``aiayn.a.b.c``: the longest importable module prefix, then attributes."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        module = ".".join(parts[:i])
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            obj = importlib.import_module(module)
            for attribute in parts[i:]:
                if not hasattr(obj, attribute):
                    return False
                obj = getattr(obj, attribute)
            return True
    return False


def headings(path: Path) -> list[str]:
    """The markdown headings of ``path`` without their ``#``, and the bold leads of its paragraphs."""
    text = path.read_text(encoding="utf-8")
    return [*re.findall(r"^#+\s+(.+?)\s*$", text, re.M), *re.findall(r"^\*\*(.+?)\*\*", text, re.M)]


def section_found(document: str, section: str) -> bool:
    """``document`` (a path from the checkout's root, or a bare name found there or under benchmarks/) has
    a heading that starts with ``section``."""
    candidates = [ROOT / document] if "/" in document else [ROOT / document, ROOT / "benchmarks" / document]
    section = " ".join(section.split())  # a pointer wrapped across lines
    return any(path.is_file() and any(h.startswith(section) for h in headings(path)) for path in candidates)


def test_every_path_and_name_the_prose_gives_resolves():
    stale = []
    for where, text in prose().items():
        stale += [
            f"{where}: path {p}"
            for p in PATH.findall(text)
            if not any(c in p for c in "<*{") and not (ROOT / p).exists()
        ]
        stale += [f"{where}: name {n}" for n in sorted(set(NAME.findall(text))) if not resolves(n)]
        stale += [f"{where}: section {d}, {s!r}" for d, s in SECTION.findall(text) if not section_found(d, s)]
    assert not stale, "\n".join(stale)


def test_a_stale_pointer_is_found():
    assert PATH.findall("see src/aiayn/train/precision.py, (src/aiayn/runtime/) and ../../envs/x") == [
        "src/aiayn/train/precision.py",
        "src/aiayn/runtime/"[:-1],
    ]
    assert not (ROOT / "src/aiayn/train/precision.py").exists() and (ROOT / "src/aiayn/runtime").is_dir()
    assert NAME.findall("aiayn.data.tokenize.normalizes and envs/aiayn.yaml") == ["aiayn.data.tokenize.normalizes"]
    assert not resolves("aiayn.data.tokenize.normalizes") and resolves("aiayn.options.data.normalizes")


def test_a_stale_section_pointer_is_found():
    pointers = '(`docs/studies/initialisation.md`, "Learning parity with fairseq"; README.md, "When a run")'
    assert SECTION.findall(pointers) == [
        ("docs/studies/initialisation.md", "Learning parity with fairseq"),
        ("README.md", "When a run"),
    ]
    assert section_found("docs/studies/initialisation.md", "Learning parity with fairseq")
    assert section_found("RESULTS.md", "Learning against fairseq-train")
    assert section_found("README.md", "When a run stops")
    assert not section_found("README.md", "Initialisation") and not section_found("docs/parsing.md", "The demo")
    assert section_found("docs/studies/initialisation.md", "Learning parity with\nfairseq")
    assert not section_found("RESULTS.md", "Learning parity with fairseq")  # moved to docs/studies/


def test_the_front_page_and_the_results_point_only_inside_the_repository():
    """A reader reruns every figure from the repository alone: README.md and benchmarks/RESULTS.md name no
    path outside it (``../shared/...``, an absolute path to a machine's folders)."""
    outside = re.compile(r"(?<![\w.])(?:\.\./[\w./-]+|/(?:work|home|tmp|root)/[\w./-]+)")
    for name in ("README.md", "benchmarks/RESULTS.md"):
        found = outside.findall((ROOT / name).read_text(encoding="utf-8"))
        assert not found, (name, found)
    assert outside.findall("see `../shared/reference/peers.md` and /work/venvs/fairseq") == [
        "../shared/reference/peers.md",
        "/work/venvs/fairseq",
    ]
