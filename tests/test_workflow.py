"""The Snakemake workflow: lint, the paper's DAG (every experiment and table reachable), and that looking
at the workflow (a dry run, lint) writes nothing."""

import re
import shlex

import pytest
import yaml
from workflow_helpers import ROOT, snakemake, snapshot

pytestmark = pytest.mark.slow  # every test runs Snakemake (4-20 s each on two cores)


def test_lint_is_clean():
    result = snakemake(ROOT, "--lint")
    assert "Congratulations, your workflow is in a good condition" in result.stdout + result.stderr


def test_dry_runs_and_lint_leave_the_tree_unchanged(tmp_path):
    overlay = tmp_path / "beam.yaml"
    overlay.write_text(yaml.safe_dump({"experiments": {"A1": {"decode": {"beam_size": 2}}}}))
    before = snapshot(ROOT)
    for args in (
        ["--dry-run"],
        ["--dry-run", "--configfile", "configs/demo.yaml"],
        ["--dry-run", "--configfile", "configs/demo.yaml", "configs/test.yaml", str(overlay)],
        ["--lint"],
    ):
        snakemake(ROOT, *args)
    assert snapshot(ROOT) == before


def test_paper_dag_reaches_every_experiment_and_table(tmp_path):
    treebank = tmp_path / "LDC99T42"
    (treebank / "parsed/mrg/wsj/23").mkdir(parents=True)
    overlay = tmp_path / "wsj.yaml"
    overlay.write_text(yaml.safe_dump({"tasks": {"wsj": {"treebank": str(treebank)}}}))
    result = snakemake(
        tmp_path, "--configfile", str(ROOT / "config.yaml"), str(overlay), "--dry-run", "--forceall", "--printshellcmds"
    )
    out = result.stdout
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    for exp, spec in config["experiments"].items():
        for task in spec["tasks"]:
            assert f"results/{task}/{exp}/train/summary.json" in out, (task, exp)
    for table in ("table2", "table3", "table4"):
        assert f"results/tables/{table}.md" in out
    assert "http://statmt.org/wmt14/test-full.tgz" in out
    assert out.count("python -m aiayn.train ") == 23
    # the attention figures: from the averaged base EN-DE model, its source side tokenized as in training
    assert (
        "python -m aiayn.report.attention --checkpoint results/en-de/base/avg.pt --spm data/bpe/en-de/spm.model"
        " --lang en --tokenize-settings data/settings/en-de/tokenize.en.json"
        " --settings results/settings/attention.json --out-dir results/attention"
    ) in out
    # each file is tokenized with its task's settings for its language (punctuation normalization per side)
    tokenize = [line for line in out.splitlines() if "python -m aiayn.data.tokenize" in line]
    pattern = r"--lang (\w+) --input data/raw/([\w-]+)/\S+ .*--settings data/settings/\2/tokenize\.\1\.json"
    assert tokenize and all(re.search(pattern, line) for line in tokenize), tokenize[:2]
    # a parsing task's subword model keeps its training trees' brackets whole; a translation task's has none
    learn = {
        re.search(r"--model-prefix data/bpe/([\w-]+)/", line).group(1): line
        for line in out.splitlines()
        if "python -m aiayn.data.bpe learn" in line
    }
    assert "--symbols data/tok/wsj/train.symbols --threads" in learn["wsj"], learn["wsj"]
    assert "--symbols  --threads" in learn["en-de"], learn["en-de"]


def test_paper_dag_without_treebank_skips_table4_with_a_warning(tmp_path):
    result = snakemake(tmp_path, "--configfile", str(ROOT / "config.yaml"), "--dry-run", "--forceall")
    assert "table4 skipped: tasks.wsj.treebank is not set" in result.stdout + result.stderr
    assert "results/tables/table4.md" not in result.stdout


def test_every_command_quotes_its_paths(tmp_path):
    """A data and results directory with a space and shell characters (a home folder "Jane Doe (work)"):
    every command of the demo's whole DAG keeps each path one word. tests/test_end_to_end.py runs such a
    workflow."""
    root = tmp_path / "Jane Doe (work)"
    overlay = tmp_path / "spaces.yaml"
    overlay.write_text(
        yaml.safe_dump(
            {
                "data_dir": f"{root}/data",
                "results_dir": f"{root}/results",
                "data": {"mirror": f"{root}/data/mirror", "lock": f"{root}/data/mirror/sources.lock"},
                "tasks": {"wsj": {"treebank": f"{root}/data/mirror/treebank"}},
            }
        )
    )
    result = snakemake(
        tmp_path,
        "--configfile",
        str(ROOT / "config.yaml"),
        str(ROOT / "configs/demo.yaml"),
        str(overlay),
        "--dry-run",
        "--forceall",
        "--printshellcmds",
    )
    commands = [line for line in result.stdout.splitlines() if "python -m aiayn" in line]
    rules = set(re.findall(r"^rule (\w+):", result.stdout, re.M)) - {"all"}
    assert len(commands) >= len(rules) > 20
    for command in commands:
        words = [word for word in shlex.split(command) if "Jane" in word]
        assert words and all(str(root) in word for word in words), command


def test_invalid_config_fails_at_parse_time_naming_the_key(tmp_path):
    overlay = tmp_path / "bad.yaml"
    overlay.write_text(yaml.safe_dump({"defaults": {"model": {"d_modle": 512}}}))
    result = snakemake(tmp_path, "--configfile", str(ROOT / "config.yaml"), str(overlay), "--dry-run", check=False)
    assert result.returncode != 0
    message = result.stdout + result.stderr
    assert "defaults.model" in message and "d_modle" in message


def _planned(result) -> dict[str, int]:
    assert result.returncode == 0, result.stderr[-3000:]
    return {rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", result.stdout, re.M)}


def test_one_experiment_alone_and_null_drops_tasks(tmp_path):
    """`run:` limits the DAG to one experiment (and what its tables need); `null` in an overlay deletes a
    task, and the experiments that trained on it keep their other tasks."""
    alone = tmp_path / "alone.yaml"
    alone.write_text(yaml.safe_dump({"run": {"experiments": ["C1"]}}))
    jobs = _planned(snakemake(tmp_path, "--configfile", str(ROOT / "config.yaml"), str(alone), "--dry-run"))
    assert jobs["train"] == 1 and jobs["perplexity"] == 1 and "average" not in jobs
    assert "attention_figures" not in jobs  # their run (base on en-de) is left out
    dropped = tmp_path / "dropped.yaml"
    dropped.write_text(
        yaml.safe_dump({"tasks": {"en-fr": None, "wsj": None}, "experiments": {"big": None}, "figures": None})
    )
    result = snakemake(
        tmp_path, "--configfile", str(ROOT / "config.yaml"), str(dropped), "--dry-run", "--printshellcmds"
    )
    assert _planned(result)["train"] == 19 and "attention_figures" not in _planned(result)
    assert "results/en-fr/" not in result.stdout and "data/raw/en-fr/" not in result.stdout
    assert "results/en-de/big/" not in result.stdout and "results/en-de/base/" in result.stdout


def test_unknown_run_choice_is_an_error_naming_the_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"run": {"experiments": ["C9"]}}))
    result = snakemake(tmp_path, "--configfile", str(ROOT / "config.yaml"), str(bad), "--dry-run", check=False)
    assert result.returncode != 0 and "run.experiments: unknown experiment 'C9'" in result.stdout + result.stderr


def test_two_seeds_for_two_rows_train_four_runs(tmp_path):
    """``seeds: 2`` on base and C1 trains each twice: the first seed in the experiment's directory, the
    second in ``<exp>.seed2`` with train.seed 2; each is decoded and scored on dev, base's also on test."""
    overlay = tmp_path / "seeds.yaml"
    overlay.write_text(
        yaml.safe_dump(
            {
                "run": {"tasks": ["en-de"], "experiments": ["base", "C1"]},
                "experiments": {"base": {"seeds": 2}, "C1": {"seeds": 2}},
            }
        )
    )
    result = snakemake(
        tmp_path, "--configfile", str(ROOT / "config.yaml"), str(overlay), "--dry-run", "--printshellcmds"
    )
    jobs = _planned(result)
    assert (jobs["train"], jobs["perplexity"], jobs["average"]) == (4, 4, 2)
    trained = set(re.findall(r"python -m aiayn\.train .*--out-dir results/en-de/(\S+)/train ", result.stdout))
    assert trained == {"base", "base.seed2", "C1", "C1.seed2"}
    dev = set(re.findall(r"--output results/en-de/(\S+)/dev-last\.bleu\.json", result.stdout))
    assert dev == trained
    test = set(re.findall(r"--output results/en-de/(\S+)/test-avg\.bleu\.json", result.stdout))
    assert test == {"base", "base.seed2"}
    [settings] = [
        line
        for line in result.stdout.splitlines()
        if "python -m aiayn.settings" in line and "--output results/en-de/C1.seed2/settings/train.json" in line
    ]
    assert '"seed": 2' in settings and '"experiment": "C1"' in settings
