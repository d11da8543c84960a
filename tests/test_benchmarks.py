"""Every benchmark script still imports what it uses and parses its arguments: ``--help`` exits 0.

The benchmarks run outside the suite (they take minutes to hours), so a renamed or moved function they
import would otherwise go unnoticed until someone reruns a figure.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from paths import ROOT

SCRIPTS = sorted(path for path in (ROOT / "benchmarks").glob("*.py") if "def main" in path.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_a_benchmark_answers_help(script):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage:"), done.stdout[:200]


def test_the_benchmarks_with_a_main_are_found():
    assert {"learning_parity.py", "demo_learnability.py", "train_memory.py"} <= {path.name for path in SCRIPTS}
