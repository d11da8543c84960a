"""An evaluation split whose two files differ in line count stops the workflow before any training
(``aiayn.data.aligned`` and the ``aligned`` rule every training waits for), naming both files."""

import json
import re
import subprocess
import sys

from paths import ROOT
from workflow_helpers import snakemake


def test_a_misaligned_test_set_is_named_with_both_counts_and_nothing_is_written(tmp_path):
    src, tgt = tmp_path / "newstest2014.en", tmp_path / "newstest2014.de"
    src.write_text("a\nb\nc\n", encoding="utf-8")
    tgt.write_text("x\ny\n", encoding="utf-8")
    out = tmp_path / "checks" / "test.aligned.json"
    command = [sys.executable, "-m", "aiayn.data.aligned", "--inputs", str(src), str(tgt), "--output", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 1 and "internal error" not in done.stderr
    assert f"misaligned parallel files ({src}: 3 lines, {tgt}: 2 lines)" in done.stderr
    assert not out.exists() and (not out.parent.exists() or not any(out.parent.iterdir()))
    tgt.write_text("x\ny\nz\n", encoding="utf-8")
    subprocess.run(command, check=True, capture_output=True, timeout=120, env={"PYTHONPATH": str(ROOT / "src")})
    assert json.loads(out.read_text()) == {"files": [str(src), str(tgt)], "lines": 3}


def test_every_translation_training_waits_for_its_dev_and_test_checks(tmp_path):
    """In the demo's DAG each of the 22 translation trainings has two checks among its inputs (dev and
    test); the parser's training none."""
    dot = snakemake(
        tmp_path, "--dag", "--configfile", str(ROOT / "config.yaml"), str(ROOT / "configs/demo.yaml")
    ).stdout
    rule = {node: label.split("\\n")[0] for node, label in re.findall(r"^\s*(\d+)\[label = \"([^\"]+)\"", dot, re.M)}
    checks_of = {node: 0 for node, name in rule.items() if name == "train"}
    for before, after in re.findall(r"^\s*(\d+) -> (\d+)", dot, re.M):
        if rule[before] == "aligned" and after in checks_of:
            checks_of[after] += 1
    assert sorted(checks_of.values()) == [0] + [2] * 22
