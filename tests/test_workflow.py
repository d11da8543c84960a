"""The Snakemake workflow: lint, the paper's DAG (every experiment and table reachable), and that looking
at the workflow (a dry run, lint) writes nothing."""

import re

import yaml

from workflow_helpers import ROOT, snakemake, snapshot


def test_lint_is_clean():
    result = snakemake(ROOT, "--lint")
    assert "Congratulations, your workflow is in a good condition" in result.stdout + result.stderr


def test_dry_runs_and_lint_leave_the_tree_unchanged(tmp_path):
    overlay = tmp_path / "beam.yaml"
    overlay.write_text(yaml.safe_dump({"experiments": {"A1": {"decode": {"beam_size": 2}}}}))
    before = snapshot(ROOT)
    for args in (["--dry-run"], ["--dry-run", "--configfile", "configs/demo.yaml"],
                 ["--dry-run", "--configfile", "configs/demo.yaml", "configs/test.yaml", str(overlay)], ["--lint"]):
        snakemake(ROOT, *args)
    assert snapshot(ROOT) == before


def test_paper_dag_reaches_every_experiment_and_table(tmp_path):
    treebank = tmp_path / "LDC99T42"
    (treebank / "parsed/mrg/wsj/23").mkdir(parents=True)
    overlay = tmp_path / "wsj.yaml"
    overlay.write_text(yaml.safe_dump({"tasks": {"wsj": {"treebank": str(treebank)}}}))
    result = snakemake(tmp_path, "--configfile", str(ROOT / "config.yaml"), str(overlay), "--dry-run", "--forceall",
                       "--printshellcmds")
    out = result.stdout
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    for exp, spec in config["experiments"].items():
        for task in spec["tasks"]:
            assert f"results/{task}/{exp}/train/summary.json" in out, (task, exp)
    for table in ("table2", "table3", "table4"):
        assert f"results/tables/{table}.md" in out
    assert "http://statmt.org/wmt14/test-full.tgz" in out
    assert out.count("python -m aiayn.train ") == 23
    # each file is tokenized with its task's settings for its language (punctuation normalization per side)
    tokenize = [line for line in out.splitlines() if "python -m aiayn.data.tokenize" in line]
    pattern = r"--lang (\w+) --input data/raw/([\w-]+)/\S+ .*--settings data/settings/\2/tokenize\.\1\.json"
    assert tokenize and all(re.search(pattern, line) for line in tokenize), tokenize[:2]


def test_paper_dag_without_treebank_skips_table4_with_a_warning(tmp_path):
    result = snakemake(tmp_path, "--configfile", str(ROOT / "config.yaml"), "--dry-run", "--forceall")
    assert "table4 skipped: tasks.wsj.treebank is not set" in result.stdout + result.stderr
    assert "results/tables/table4.md" not in result.stdout


def test_invalid_config_fails_at_parse_time_naming_the_key(tmp_path):
    overlay = tmp_path / "bad.yaml"
    overlay.write_text(yaml.safe_dump({"defaults": {"model": {"d_modle": 512}}}))
    result = snakemake(tmp_path, "--configfile", str(ROOT / "config.yaml"), str(overlay), "--dry-run", check=False)
    assert result.returncode != 0
    message = result.stdout + result.stderr
    assert "defaults.model" in message and "d_modle" in message
