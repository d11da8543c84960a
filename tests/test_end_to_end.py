"""The whole workflow on a config smaller than the demo: every table row exists, numbers are sane,
changing one config value reruns exactly what depends on it, and a dry run changes no file."""

import csv
import json
import math
import re

import pytest
import workflow_helpers
import yaml
from workflow_helpers import ROOT, snapshot

from aiayn.config import load as load_config
from aiayn.data.clean import REASONS

CONFIGS = [str(ROOT / "config.yaml"), str(ROOT / "configs/demo.yaml"), str(ROOT / "configs/test.yaml")]

pytestmark = pytest.mark.slow


def snakemake(workdir, *args, configs=CONFIGS):
    return workflow_helpers.snakemake(workdir, "--cores", "2", "--configfile", *configs, *args, check=False)


def planned_jobs(result) -> dict[str, int]:
    """Job counts by rule from a dry run's table."""
    assert result.returncode == 0, result.stderr
    return {rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", result.stdout, re.M)}


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
    for name in ("table2", "table3", "table4", "experiments"):
        for ext in ("md", "csv", "tex", "html"):
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
    # every run's dev perplexity (the experiments table): 19 Table 3 rows, base and big on EN-FR, the parser
    assert len(list(results.rglob("dev-last.ppl.json"))) == 23
    assert len(list(results.rglob("test-avg.bleu.json"))) == 4


def line_count(path) -> int:
    return path.read_bytes().count(b"\n")


@pytest.mark.parametrize("task", ["en-de", "en-fr"])
def test_data_stages_kept_their_counts(run, task):
    """clean's statistics are the counts of the files it read and wrote: each configured corpus read whole
    (the demo splits its train_pairs over the task's corpora, the first ones taking the remainder), every
    pair counted once, as kept or under one drop reason, and the kept pairs are the training lines."""
    config = load_config(*CONFIGS)
    data, (src, tgt) = run / config["data_dir"], task.split("-")
    stats = json.loads((data / f"clean/{task}/train.stats.json").read_text())
    assert stats["rules"] == config["data"]["clean"] == json.loads((data / "settings/clean.json").read_text())
    corpora, pairs = config["tasks"][task]["train"], config["demo"]["train_pairs"]
    assert list(stats["corpora"]) == sorted(f"{config['data_dir']}/tok/{task}/{c}" for c in corpora)
    for i, corpus in enumerate(corpora):
        prefix = f"{config['data_dir']}/tok/{task}/{corpus}"
        counts = stats["corpora"][prefix]
        expected = pairs // len(corpora) + (i < pairs % len(corpora))
        assert counts["read"] == expected == line_count(run / f"{prefix}.{src}") == line_count(run / f"{prefix}.{tgt}")
        assert counts["read"] == counts["kept"] + sum(counts[reason] for reason in REASONS), prefix
    assert stats["total"] == {key: sum(c[key] for c in stats["corpora"].values()) for key in ("read", "kept", *REASONS)}
    assert stats["total"]["read"] == pairs
    kept = stats["total"]["kept"]
    assert kept == line_count(data / f"clean/{task}/train.{src}") == line_count(data / f"clean/{task}/train.{tgt}")
    # the demo's sentences are 1..80 tokens long and within the length ratio: nothing is dropped
    assert kept == pairs, stats["total"]


def test_changing_one_value_reruns_exactly_what_depends_on_it(run, tmp_path):
    unchanged = snakemake(run, "--dry-run")
    assert "Nothing to be done" in unchanged.stdout + unchanged.stderr
    overlay = tmp_path / "change.yaml"
    overlay.write_text(yaml.safe_dump({"experiments": {"A1": {"decode": {"beam_size": 2}}}}))
    jobs = planned_jobs(snakemake(run, "--dry-run", configs=[*CONFIGS, str(overlay)]))
    # A1's decode.json and the run's config.json (the tables and plots read it) are written again.
    assert jobs == {
        "settings": 2,
        "translate": 1,
        "detokenize": 1,
        "bleu": 1,
        "tables": 1,
        "plots": 1,
        "all": 1,
        "total": 8,
    }
    retrain = tmp_path / "retrain.yaml"
    retrain.write_text(yaml.safe_dump({"experiments": {"A2": {"model": {"d_ff": 128}}}}))
    jobs = planned_jobs(snakemake(run, "--dry-run", configs=[*CONFIGS, str(retrain)]))
    assert jobs == {
        "settings": 2,
        "train": 1,
        "perplexity": 1,
        "translate": 1,
        "detokenize": 1,
        "bleu": 1,
        "tables": 1,
        "plots": 1,
        "all": 1,
        "total": 10,
    }


def test_dry_runs_and_lint_change_no_file(run, tmp_path):
    overlay = tmp_path / "change.yaml"
    overlay.write_text(yaml.safe_dump({"experiments": {"A1": {"decode": {"beam_size": 2}}}, "demo": {"seed": 3}}))
    before = snapshot(run)
    for args, configs in ((["--dry-run"], CONFIGS), (["--dry-run"], [*CONFIGS, str(overlay)]), (["--lint"], CONFIGS)):
        assert snakemake(run, *args, configs=configs).returncode == 0
    assert snapshot(run) == before
    assert "Nothing to be done" in snakemake(run, "--dry-run").stdout


def test_paths_with_spaces_and_shell_characters_run(tmp_path):
    """Every path a rule's command names is quoted: a data and results directory such as a home folder
    "Jane Doe (work)" holds runs the workflow as any other."""
    root = tmp_path / "Jane Doe (work)"
    data, results = root / "my data", root / "my results"
    overlay = tmp_path / "spaces.yaml"
    overlay.write_text(
        yaml.safe_dump(
            {
                "data_dir": str(data),
                "results_dir": str(results),
                "data": {"mirror": str(data / "mirror"), "lock": str(data / "mirror/sources.lock")},
                "tasks": {"wsj": {"treebank": str(data / "mirror/treebank")}},
                "run": {"tasks": ["en-de"], "experiments": ["base", "big"]},
            }
        ),
        encoding="utf-8",
    )  # big: 2 ranks, torchrun
    result = snakemake(tmp_path, configs=[*CONFIGS, str(overlay)])
    assert result.returncode == 0, result.stderr[-6000:]
    for exp in ("base", "big"):
        bleu = json.loads((results / f"en-de/{exp}/test-avg.bleu.json").read_text(encoding="utf-8"))
        assert 0.0 <= bleu["sacrebleu"] <= 100.0
