"""The workflow with two seeds for two Table 3 rows on the end-to-end test's tiny config: four models
train, and Table 3 and the experiments table report mean ± sd over the seeds."""

import csv
import math

import pytest
import workflow_helpers
import yaml
from workflow_helpers import ROOT

pytestmark = pytest.mark.slow

OVERLAY = {
    "run": {"tasks": ["en-de"], "experiments": ["base", "C1"]},
    "experiments": {"base": {"seeds": 2}, "C1": {"seeds": 2}},
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("seeds")
    overlay = workdir / "seeds.yaml"
    overlay.write_text(yaml.safe_dump(OVERLAY))
    configs = [
        str(ROOT / "config.yaml"),
        str(ROOT / "configs/demo.yaml"),
        str(ROOT / "configs/test.yaml"),
        str(overlay),
    ]
    result = workflow_helpers.snakemake(workdir, "--cores", "2", "--configfile", *configs, check=False)
    if result.returncode != 0:
        logs = "\n".join(f"== {p}\n{p.read_text()[-3000:]}" for p in sorted(workdir.rglob("*.log"))[-6:])
        pytest.fail(f"workflow failed:\n{result.stderr[-6000:]}\n{logs}")
    return workdir / "results/test"


def rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return {row.get("row") or row["experiment"]: row for row in csv.DictReader(handle)}


def test_each_seed_trains_with_its_own_seed(run):
    for name, seed in (("base", 1), ("base.seed2", 2), ("C1", 1), ("C1.seed2", 2)):
        summary = yaml.safe_load((run / "en-de" / name / "train/summary.json").read_text())
        assert summary["settings"]["train"]["seed"] == seed and summary["experiment"] == name.split(".")[0]
    first, second = (
        yaml.safe_load((run / "en-de" / n / "dev-last.ppl.json").read_text())["ppl"] for n in ("base", "base.seed2")
    )
    assert first != second  # another seed, another model


def test_table3_reports_mean_sd_and_resolution_over_two_seeds(run):
    table = rows(run / "tables/table3.csv")
    for name in ("base", "C1"):
        row = table[name]
        assert row["seeds"] == "2"
        for key in ("ppl_ours", "ppl_ours_sd", "bleu_ours", "bleu_ours_sd"):
            assert math.isfinite(float(row[key])) and float(row[key]) >= 0, (name, key)
    assert table["C1"]["bleu_resolved"] in ("yes", "no") and table["C1"]["ppl_paper_diff"] == "1.19"
    assert table["A1"]["seeds"] == "" and table["A1"]["ppl_ours"] == ""  # a row that did not run
    md = (run / "tables/table3.md").read_text()
    assert " ± " in md and "Welch" in md


def test_experiments_table_reports_both_seeds(run):
    table = rows(run / "tables/experiments.csv")
    assert set(table) == {"base", "C1"} and {row["seeds"] for row in table.values()} == {"2"}
    assert math.isfinite(float(table["base"]["test_bleu_sd"])) and table["C1"]["test_bleu"] == ""
