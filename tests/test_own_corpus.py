"""A researcher's own corpus through the whole chain to a BLEU: configs/own-corpus.yaml with its paths
filled in by one overlay pointing at real WMT text given as plain files (a gzipped training sample, an
xz-compressed dev set, an sgm test set read where it lies), a tiny model; then the experiments table,
one more experiment run alone, and the report opened in a real browser (tests/browser.py)."""

import csv
import gzip
import lzma
import math
import re

import browser
import pytest
import workflow_helpers
import yaml
from workflow_helpers import ROOT

pytestmark = pytest.mark.slow

WMT = ROOT.parent / "shared" / "data" / "wmt"
if not WMT.is_dir():  # a worktree beside shared/, or a clone with shared/ beside it
    WMT = ROOT.parents[1] / "shared" / "data" / "wmt"
CONFIGS = [str(ROOT / "config.yaml"), str(ROOT / "configs/own-corpus.yaml")]
TINY = {
    "model": {"n_layers": 1, "d_model": 32, "d_ff": 64, "n_heads": 2, "d_k": 16, "d_v": 16},
    "train": {
        "gpus": 0,
        "train_steps": 60,
        "warmup_steps": 20,
        "tokens_per_step": 1500,
        "tokens_per_pass": 1500,
        "checkpoint_steps": 20,
        "dev_every_steps": 30,
        "log_every_steps": 10,
    },
    "average": {"last": 2},
    "decode": {"beam_size": 2, "max_len_b": 10},
}


def _head(lines: int, source, target) -> None:
    with open(source, encoding="utf-8") as handle:
        text = "".join(line for _, line in zip(range(lines), handle))
    opener = {".gz": gzip.open, ".xz": lzma.open}.get(target.suffix, open)
    with opener(target, "wt", encoding="utf-8") as out:
        out.write(text)


def _overlay(tmp) -> dict:
    """configs/own-corpus.yaml's FILL IN blocks, for EN-FR: News Commentary (raw text, gzipped), newstest2013
    (xz) and newstest2014 (sgm, the shared files themselves), every file a plain file of its own."""
    corpus = tmp / "corpus"
    corpus.mkdir()
    for lang in ("en", "fr"):
        _head(2000, WMT / f"train_sample/moses-nc-5k.fr-en.{lang}", corpus / f"train.{lang}.gz")
        _head(60, WMT / f"plain/newstest2013.{lang}", corpus / f"dev.{lang}.xz")
    sgm = WMT / "sgm_newstest2014-full"
    _head(120, sgm / "newstest2014-fren-src.en.sgm", corpus / "test.en.sgm")
    _head(120, sgm / "newstest2014-fren-ref.fr.sgm", corpus / "test.fr.sgm")
    files = {
        split: {"files": {"de": None, **{lang: str(corpus / f"{split}.{lang}{suffix}") for lang in ("en", "fr")}}}
        for split, suffix in (("train", ".gz"), ("dev", ".xz"), ("test", ".sgm"))
    }  # null: the template's de goes
    return {
        "threads": {"data": 1, "train": 1, "decode": 1},
        "tasks": {"mine": {"src": "en", "tgt": "fr", "vocab_size": 500}},
        "sources": {f"my_{split}": value for split, value in files.items()},
        "defaults": TINY,
    }


def snakemake(workdir, *args, configs):
    return workflow_helpers.snakemake(workdir, "--cores", "2", "--configfile", *configs, *args, check=False)


def _fail(result, workdir):
    logs = "\n".join(f"== {p}\n{p.read_text()[-2000:]}" for p in sorted(workdir.rglob("*.log"))[-6:])
    pytest.fail(f"workflow failed:\n{result.stderr[-5000:]}\n{logs}")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if not WMT.is_dir():
        pytest.skip("the shared WMT data is not beside the project")
    workdir = tmp_path_factory.mktemp("own")
    overlay = workdir / "my-files.yaml"
    overlay.write_text(yaml.safe_dump(_overlay(workdir)))
    configs = [*CONFIGS, str(overlay)]
    result = snakemake(workdir, configs=configs)
    if result.returncode != 0:
        _fail(result, workdir)
    return workdir, configs, result


def rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_plain_files_run_through_the_chain_to_bleu(run):
    workdir, _, result = run
    results, data = workdir / "results/own", workdir / "data/own"
    for lang in ("en", "fr"):  # the segs of the first 120 lines of each sgm file
        assert sum(1 for _ in open(data / f"raw/mine/my_test.{lang}", encoding="utf-8")) == 112
    assert (data / "raw/mine/my_dev.en").read_text(encoding="utf-8").splitlines()[0] == (
        WMT / "plain/newstest2013.en"
    ).read_text(encoding="utf-8").splitlines()[0]
    record = (data / "downloads/my_train/en/train.en.gz.sha256").read_text()
    assert re.fullmatch(r"[0-9a-f]{64}  train\.en\.gz\n", record)
    assert "local file without a lock entry" in (data / "logs/download/my_train/en/train.en.gz.log").read_text()
    bleu = yaml.safe_load((results / "mine/base/test-avg.bleu.json").read_text())
    assert bleu["lines"] == 112 and 0.0 <= bleu["sacrebleu"] <= 100.0 and math.isfinite(bleu["paper_bleu"])
    trained = re.findall(r"^train\s+(\d+)$", result.stdout + result.stderr, re.M)
    assert trained == ["1"], "the paper's runs must not start"
    assert not (workdir / "data/own/downloads/test-full.tgz").exists()


def test_experiments_table_reports_the_run(run):
    workdir = run[0]
    tables = workdir / "results/own/tables"
    assert sorted(p.name for p in tables.iterdir()) == [
        "experiments.csv",
        "experiments.html",
        "experiments.md",
        "experiments.tex",
    ]
    (row,) = rows(tables / "experiments.csv")
    assert row["task"] == "mine" and row["experiment"] == "base" and row["changes"] == "(defaults)"
    assert float(row["dev_ppl"]) > 1 and 0 <= float(row["test_sacrebleu"]) <= 100
    assert float(row["tokens_per_second"]) > 0 and int(row["steps"]) == 60


def test_training_logs_progress_with_an_eta(run):
    log = (run[0] / "results/own/mine/base/logs/train.log").read_text()
    progress = re.findall(r"step (\d+)/60 .*tokens/s .*loss .*lr .*ETA", log)
    assert progress[:3] == ["10", "20", "30"], log[-2000:]


def test_one_more_experiment_runs_alone_and_joins_the_table(run, tmp_path):
    workdir, configs, _ = run
    variation = tmp_path / "variation.yaml"
    variation.write_text(
        yaml.safe_dump(
            {
                "experiments": {"wide_ff": {"tasks": ["mine"], "tables": [], "model": {"d_ff": 128}}},
                "run": {"experiments": ["base", "wide_ff"]},
            }
        )
    )
    plan = snakemake(workdir, "--dry-run", configs=[*configs, str(variation)])
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", plan.stdout, re.M))
    assert jobs["train"] == "1" and "bpe_learn" not in jobs and "tokenize" not in jobs, plan.stdout[-3000:]
    result = snakemake(workdir, configs=[*configs, str(variation)])
    if result.returncode != 0:
        _fail(result, workdir)
    table = {row["experiment"]: row for row in rows(workdir / "results/own/tables/experiments.csv")}
    assert table["wide_ff"]["changes"] == "model.d_ff=128" and float(table["wide_ff"]["dev_ppl"]) > 1


def test_report_renders_tables_and_images_in_a_browser(run, tmp_path):
    workdir, configs, _ = run
    chromium = browser.find_chromium()
    if chromium is None:
        pytest.skip("no chromium binary (apt-get install -y chromium)")
    report = workdir / "report.html"
    result = snakemake(workdir, "--report", str(report), configs=configs)
    assert result.returncode == 0, result.stderr[-3000:]
    shot = tmp_path / "report.png"
    seen = browser.inspect_report(chromium, report, shot)
    assert seen["tables"] and all(n > 0 for n in seen["tables"].values()), seen
    assert seen["images"] and all(width > 0 for width in seen["images"].values()), seen
    assert shot.stat().st_size > 0
