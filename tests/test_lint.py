"""The linter's verdict is part of the suite: ``ruff check`` (configured in pyproject.toml: line length
120, pycodestyle, pyflakes, import order) passes on the package, the tests and the benchmarks."""

from __future__ import annotations

import shutil
import subprocess
import sys

from paths import ROOT


def test_ruff_finds_nothing():
    command = [sys.executable, "-m", "ruff"] if shutil.which("ruff") is None else ["ruff"]
    done = subprocess.run([*command, "check", "--no-cache", "src", "tests", "benchmarks"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
