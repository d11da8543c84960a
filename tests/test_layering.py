"""The import layers of src/aiayn (CONTRIBUTING.md, "House rules"): which package may import which, checked.

Every module is parsed with ``ast``; every import at any depth (inside functions too), absolute or
relative, ``import aiayn.x`` or ``from aiayn import x``, is an edge from the importing package to the
imported one. A package is a folder under src/aiayn or a top-level module (``config``, ``io``, ...).
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "aiayn"

# Package -> the aiayn packages it may import (itself always). Lower layers first; nothing imports upwards.
CONTRACT: dict[str, set[str]] = {
    "aiayn": set(),  # the package's __init__: a version string
    "io": set(),
    "settings": {"io"},
    "options": set(),  # every option's definition (standard library only), importable
    "paths": set(),  # every file name of a run and of the results directory (standard library only)
    "cli": set(),  # from everywhere (below), as are the shared command-line flags
    "model": set(),
    "data": {"io", "settings"},
    "runtime": {"model", "data", "io", "settings"},
    "evaluate": {"runtime", "model", "data", "io", "settings"},
    "decode": {"evaluate", "runtime", "model", "data", "io", "settings"},
    "train": {"evaluate", "runtime", "model", "data", "io", "settings"},
    "parsing": {"decode", "evaluate", "runtime", "model", "data", "io", "settings"},
    "export": {"decode", "runtime", "model", "data", "io", "settings"},
    "report": {"config", "runs", "parsing", "decode", "evaluate", "runtime", "model", "data", "io", "settings"},
    "runs": set(),  # what a valid config runs, each run's settings and files: options and paths alone
    "config": {"runs", "io", "settings"},
    "describe": {"config", "runs", "runtime", "model", "data", "io", "settings"},
    "demo": {"config", "parsing", "data", "io", "settings"},
}
EVERYONE_MAY_IMPORT = {"options", "cli", "paths"}
# The workflow (Snakefile, workflow/rules) imports what a config runs and where its files go, never the report.
WORKFLOW_NEVER = ("aiayn.report",)
WORKFLOW = [SRC.parents[1] / "Snakefile", *sorted((SRC.parents[1] / "workflow").rglob("*.smk"))]

# Package -> the only third-party top-level modules it may import (the standard library always).
THIRD_PARTY_ONLY: dict[str, set[str]] = {"model": {"torch"}}
# Package -> third-party modules it must not import: the data stages write files without torch.
THIRD_PARTY_NEVER: dict[str, set[str]] = {
    "data": {"torch"},
    "io": {"torch"},
    "settings": {"torch"},
    "runs": {"torch"},
    "config": {"torch"},
    "options": {"torch"},
    "cli": {"torch"},
    "paths": {"torch"},
}


@dataclass(frozen=True)
class Import:
    """One import statement's edge: ``file:line``, the importing package, the imported top-level module
    (an aiayn package, or a third-party or standard module with ``aiayn`` False)."""

    file: str
    line: int
    importer: str
    imported: str
    aiayn: bool = True


def package_of(path: Path) -> str:
    """``src/aiayn/train/step.py`` -> ``train``; ``src/aiayn/io.py`` -> ``io``; the root __init__ -> ``aiayn``."""
    parts = path.relative_to(SRC).with_suffix("").parts
    return "aiayn" if parts == ("__init__",) else parts[0]


def _module_names(node: ast.AST, path: Path) -> list[str]:
    """Dotted names an import node brings in (a relative one resolved against ``path``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        here = ["aiayn", *path.relative_to(SRC).with_suffix("").parts][:-1]  # the module's package
        here = here[: len(here) - (node.level - 1)]
        base = ".".join(here + ([node.module] if node.module else []))
    return [f"{base}.{alias.name}" for alias in node.names] if base == "aiayn" else [base]


def imports_of(path: Path) -> list[Import]:
    """Every import of one source file, at any nesting level."""
    importer = package_of(path)
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()} | {
        p.stem for p in SRC.glob("*.py") if p.stem != "__init__"
    }
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        for name in _module_names(node, path):
            parts = name.split(".")
            where = str(path.relative_to(SRC.parents[1]))
            if parts[0] != "aiayn":
                found.append(Import(where, node.lineno, importer, parts[0], aiayn=False))
            elif len(parts) > 1 and parts[1] in packages | EVERYONE_MAY_IMPORT and parts[1] != importer:
                found.append(Import(where, node.lineno, importer, parts[1]))
    return sorted(found, key=lambda edge: edge.line)


def all_imports() -> list[Import]:
    return [edge for path in sorted(SRC.rglob("*.py")) for edge in imports_of(path)]


def violations(edges: list[Import], contract: dict[str, set[str]] = CONTRACT) -> list[str]:
    """``file:line: importer -> imported`` for every edge the contract does not allow."""
    bad = []
    for edge in edges:
        if not edge.aiayn:
            only, never = THIRD_PARTY_ONLY.get(edge.importer), THIRD_PARTY_NEVER.get(edge.importer, set())
            stdlib = edge.imported in sys.stdlib_module_names or edge.imported == "__future__"
            if (only is not None and not stdlib and edge.imported not in only) or edge.imported in never:
                bad.append(f"{edge.file}:{edge.line}: {edge.importer} imports {edge.imported} (third-party)")
            continue
        if edge.importer not in contract:
            bad.append(f"{edge.file}:{edge.line}: package {edge.importer} is not in the contract")
        elif edge.imported not in contract[edge.importer] | EVERYONE_MAY_IMPORT:
            bad.append(f"{edge.file}:{edge.line}: {edge.importer} -> {edge.imported}")
    return bad


def test_imports_follow_the_contract():
    assert violations(all_imports()) == []


def workflow_imports(files: list[Path]) -> list[str]:
    """``file:line: module`` of every import in the workflow's files of a module under :data:`WORKFLOW_NEVER`."""
    found = []
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            words = line.split("#")[0].split()
            if words[:1] in (["import"], ["from"]) and len(words) > 1 and words[1].startswith(WORKFLOW_NEVER):
                found.append(f"{path.name}:{number}: {words[1]}")
    return found


def test_the_workflow_does_not_import_the_report():
    assert WORKFLOW and workflow_imports(WORKFLOW) == []


def test_a_workflow_import_of_the_report_is_found(tmp_path):
    rules = tmp_path / "common.smk"
    rules.write_text("import json\nfrom aiayn.report.experiments import table_runs  # targets\nimport aiayn.report\n")
    assert workflow_imports([rules]) == [
        "common.smk:2: aiayn.report.experiments",
        "common.smk:3: aiayn.report",
    ]


def test_every_package_is_in_the_contract():
    packages = {package_of(path) for path in SRC.rglob("*.py")}
    assert packages - set(CONTRACT) == set()


def test_the_contract_has_no_cycle():
    """Each package's allowed imports lie strictly below it: a topological order exists."""
    remaining = {package: set(allowed) for package, allowed in CONTRACT.items()}
    while remaining:
        ready = [package for package, allowed in remaining.items() if not allowed & set(remaining)]
        assert ready, f"cycle among {sorted(remaining)}"
        for package in ready:
            del remaining[package]


def test_an_upward_import_is_reported_with_its_file_and_line():
    edges = [
        Import("src/aiayn/model/transformer.py", 17, "model", "runtime"),
        Import("src/aiayn/evaluate/perplexity.py", 30, "evaluate", "train"),
        Import("src/aiayn/decode/beam.py", 3, "decode", "runtime"),  # allowed
        Import("src/aiayn/model/layers.py", 5, "model", "options"),  # allowed to everyone
        Import("src/aiayn/model/init.py", 9, "model", "numpy", aiayn=False),
        Import("src/aiayn/model/init.py", 10, "model", "math", aiayn=False),
    ]  # standard library
    assert violations(edges) == [
        "src/aiayn/model/transformer.py:17: model -> runtime",
        "src/aiayn/evaluate/perplexity.py:30: evaluate -> train",
        "src/aiayn/model/init.py:9: model imports numpy (third-party)",
    ]


def test_imports_are_found_at_any_depth_and_relative(tmp_path, monkeypatch):
    """A function-level import, ``from aiayn import x`` and ``from .. import x`` are all edges."""
    root = tmp_path / "src" / "aiayn"
    (root / "model").mkdir(parents=True)
    (root / "model" / "__init__.py").write_text("")
    (root / "train").mkdir()
    (root / "train" / "__init__.py").write_text("")
    (root / "io.py").write_text("")
    source = root / "model" / "leak.py"
    source.write_text(
        "import torch\n\ndef f():\n    from aiayn import train\n    from .. import io\n"
        "    from ..train import loop\n    import aiayn.train.step\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "SRC", root)
    found = [(edge.line, edge.imported) for edge in imports_of(source)]
    assert found == [(1, "torch"), (4, "train"), (5, "io"), (6, "train"), (7, "train")]
    assert violations(imports_of(source)) == [
        f"src/aiayn/model/leak.py:{line}: model -> {name}"
        for line, name in ((4, "train"), (5, "io"), (6, "train"), (7, "train"))
    ]
