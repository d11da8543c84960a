"""The whole workflow on a config smaller than the demo: every table row exists, numbers are sane,
and changing one config value reruns exactly what depends on it."""

import csv
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = [str(ROOT / "config.yaml"), str(ROOT / "configs/demo.yaml"), str(ROOT / "configs/test.yaml")]

pytestmark = pytest.mark.slow


def snakemake(workdir, *args, configs=CONFIGS):
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--directory", str(workdir),
           "--cores", "2", "--configfile", *configs, *args]
    return subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("e2e")
    result = snakemake(workdir)
    if result.returncode != 0:
        logs = "\n".join(f"== {p}\n{p.read_text()[-3000:]}" for p in sorted(workdir.rglob("*.log"))[-6:])
        pytest.fail(f"workflow failed:\n{result.stderr[-6000:]}\n{logs}")
    return workdir


def rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def number(text):
    return float(text) if text not in ("", "n/a", None) else math.nan


def test_every_table_and_row_is_written(run):
    tables = run / "results/test/tables"
    for name in ("table2", "table3", "table4"):
        for ext in ("md", "csv", "tex"):
            assert (tables / f"{name}.{ext}").stat().st_size > 0, f"{name}.{ext}"
    config = yaml.safe_load((ROOT / "configs/demo.yaml").read_text())
    table3 = (tables / "table3.md").read_text()
    for exp in ["base", *[e for e in config["experiments"] if e not in ("big", "parser")], "big"]:
        assert re.search(rf"^\|\s*{re.escape(exp)}\s*\|", table3, re.M), f"Table 3 row {exp} missing"


def test_metrics_are_finite_and_in_range(run):
    results = run / "results/test"
    for path in results.rglob("*.bleu.json"):
        metrics = yaml.safe_load(path.read_text())
        for key in ("sacrebleu", "paper_bleu"):
            assert 0.0 <= metrics[key] <= 100.0, (path, key)
    for path in results.rglob("*.ppl.json"):
        ppl = yaml.safe_load(path.read_text())["ppl"]
        assert math.isfinite(ppl) and ppl >= 1.0, path
    for path in results.rglob("*.evalb.json"):
        f1 = yaml.safe_load(path.read_text())["f1"]
        assert 0.0 <= f1 <= 100.0, path
    assert len(list(results.rglob("dev-last.ppl.json"))) == 20
    assert len(list(results.rglob("test-avg.bleu.json"))) == 4


def test_data_stages_kept_their_counts(run):
    stats = yaml.safe_load((run / "data/test/clean/en-de/train.stats.json").read_text())
    assert "europarl_v7" in str(stats)


def test_changing_one_value_reruns_exactly_what_depends_on_it(run, tmp_path):
    unchanged = snakemake(run, "--dry-run")
    assert "Nothing to be done" in unchanged.stdout + unchanged.stderr
    overlay = tmp_path / "change.yaml"
    overlay.write_text(yaml.safe_dump({"experiments": {"A1": {"decode": {"beam_size": 2}}}}))
    result = snakemake(run, "--dry-run", configs=[*CONFIGS, str(overlay)])
    assert result.returncode == 0, result.stderr
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", result.stdout, re.M))
    assert jobs.get("translate") == "1" and jobs.get("bleu") == "1" and jobs.get("detokenize") == "1"
    assert "train" not in jobs and "perplexity" not in jobs and "bpe_learn" not in jobs
    retrain = tmp_path / "retrain.yaml"
    retrain.write_text(yaml.safe_dump({"experiments": {"A2": {"model": {"d_ff": 128}}}}))
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", snakemake(run, "--dry-run", configs=[*CONFIGS, str(retrain)]).stdout, re.M))
    assert jobs.get("train") == "1" and jobs.get("perplexity") == "1" and "bpe_learn" not in jobs
