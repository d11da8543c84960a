"""The linters' verdict is part of the suite: ``ruff check`` (configured in pyproject.toml: line length
120, pycodestyle, pyflakes, import order) and ``ruff format --check`` pass on the package, the tests and
the benchmarks, ``snakefmt --check`` on the Snakefile and the rules: the checks of
``.pre-commit-config.yaml``."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys

import pytest
from paths import ROOT


def _tool(name: str) -> list[str]:
    return [sys.executable, "-m", name] if shutil.which(name) is None else [name]


@pytest.mark.parametrize("check", [["check", "--no-cache"], ["format", "--check", "--no-cache"]])
def test_ruff_finds_nothing(check):
    done = subprocess.run(
        [*_tool("ruff"), *check, "src", "tests", "benchmarks"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]


def test_snakefmt_finds_nothing():
    rules = ["Snakefile", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "workflow" / "rules").glob("*.smk"))]
    done = subprocess.run(
        [*_tool("snakefmt"), "--check", *rules], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]


def _commands() -> list[tuple[str, str]]:
    """``(module, the name its usage line gives)`` of every module with a ``main``: its console script's
    name (pyproject.toml), else ``python -m <module>``, how the workflow's rules run it."""
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    named = {target.split(":")[0]: name for name, target in scripts.items()}
    found = []
    for path in sorted((ROOT / "src" / "aiayn").rglob("*.py")):
        if "\ndef main(" in path.read_text(encoding="utf-8"):
            module = ".".join(path.with_suffix("").relative_to(ROOT / "src").parts)
            run = module.removesuffix(".__main__")  # a package's __main__ runs as the package
            found.append((module, named.get(module, f"python -m {run}")))
    return found


@pytest.mark.parametrize("module, name", _commands())
def test_every_command_names_itself_as_it_is_run(module, name, capsys):
    """argparse names a command after its file (``bpe.py: error: ...``), which no user runs."""
    with pytest.raises(SystemExit) as done:
        importlib.import_module(module).main(["--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: {name} "), module
