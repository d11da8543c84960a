"""The SLURM profile against a real scheduler (start one with .ci/slurm-up.sh, stop it with .ci/slurm-down.sh).

A toy workflow shaped like ours (a CPU stage, a GPU training stage that checkpoints and resumes, a local
table rule) runs through ``profiles/slurm`` with CI-sized resources; the project's own workflow runs on
``configs/test.yaml`` through SLURM and locally, and their tables must agree.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from slurm_helpers import ROOT, ci_profile, finish, job_field, run_snakemake, sinfo_answers, start_snakemake

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.slow,  # a real cluster's queue: half a minute and more per test
    pytest.mark.skipif(
        importlib.util.find_spec("snakemake_executor_plugin_slurm") is None,
        reason="snakemake-executor-plugin-slurm is not installed (pip install -e '.[slurm]')",
    ),
]


@pytest.fixture(autouse=True, scope="module")
def cluster_answers():
    """Asked when a test of this module runs, not when it is collected: sinfo waits 9 s for a controller
    that is not there, which a run that deselects these tests (``-m "not slow"``) need not pay."""
    if not sinfo_answers():
        pytest.skip("no SLURM cluster answers sinfo (start one: sudo .ci/slurm-up.sh)")


TOY_SNAKEFILE = r'''
rule all:
    input: "tables/summary.json"

rule tokenize:
    output: "tok/{i}.txt"
    log: "logs/tokenize_{i}.log"
    shell: "echo ${{SLURM_JOB_ID:-none}} > {output}"

# Trains STEPS steps of a second each, writing checkpoints/ckpt_<step> (no rule output: it survives a
# rerun) and resuming after the newest one, as aiayn.train does.
rule train:
    input: "tok/{i}.txt"
    output: "train/{i}/summary.json"
    log: "logs/train_{i}.log"
    params: steps=config.get("steps", 2)
    resources: gpu=1
    shell:
        """
        d=train/{wildcards.i}; mkdir -p $d/checkpoints
        start=$(ls $d/checkpoints | wc -l)
        echo "$start" >> $d/starts.txt
        for s in $(seq $((start + 1)) {params.steps}); do sleep 1; touch $d/checkpoints/ckpt_$s; done
        printf '{{"job": "%s", "cuda": "%s", "starts": "%s"}}' "${{SLURM_JOB_ID:-none}}" \
            "${{CUDA_VISIBLE_DEVICES:-none}}" "$(paste -sd, $d/starts.txt)" > {output}
        """

rule tables:
    localrule: True
    input: "train/1/summary.json", "tok/1.txt"
    output: "tables/summary.json"
    log: "logs/tables.log"
    shell: "printf '{{\"job\": \"%s\"}}' \"${{SLURM_JOB_ID:-none}}\" > {output}"
'''


@pytest.fixture
def toy(tmp_path):
    (tmp_path / "Snakefile").write_text(TOY_SNAKEFILE, encoding="utf-8")
    ci_profile(tmp_path / "profile")
    return tmp_path


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_toy_workflow_goes_through_slurm(toy):
    code, output = run_snakemake(toy, "--profile", "profile", timeout=400)
    assert code == 0, output
    tokenize_job = (toy / "tok/1.txt").read_text().strip()
    train = _read(toy / "train/1/summary.json")
    assert tokenize_job.isdigit() and train["job"].isdigit() and tokenize_job != train["job"]
    assert train["cuda"] == "0", "train's gpu=1 must reach SLURM as a GPU request"
    assert _read(toy / "tables/summary.json")["job"] == "none", "tables is a local rule"
    assert job_field(train["job"], "TresPerJob") == "gres:gpu:1"
    assert job_field(train["job"], "Requeue") == "1", "slurm-requeue: true must reach sbatch"
    logs = toy / ".snakemake" / "slurm_logs"
    assert (logs / "rule_train" / "1" / f"{train['job']}.log").is_file()
    assert (logs / "rule_tokenize" / "1" / f"{tokenize_job}.log").is_file()
    assert not (logs / "rule_tables").exists()


def _wait_for(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.5)
    return False


def _train_job(workdir: Path) -> str:
    """The SLURM id of this workflow's training job (its log is named after it), never another user's job."""
    (log,) = (workdir / ".snakemake" / "slurm_logs" / "rule_train" / "1").glob("*.log")
    return log.stem


def test_requeued_training_resumes_from_its_checkpoints(toy):
    """A running training job is requeued (as a preemption does); it runs again and resumes, not restarts."""
    checkpoints = toy / "train/1/checkpoints"
    process = start_snakemake(toy, "--profile", "profile", "--config", "steps=8")
    try:
        assert _wait_for(lambda: checkpoints.is_dir() and len(list(checkpoints.iterdir())) >= 3, 300)
        job = _train_job(toy)
        subprocess.run(["scontrol", "requeue", job], check=True)
        # SLURM holds a requeued job back for a while (BeginTime); let it start again now.
        assert _wait_for(lambda: job_field(job, "JobState") == "PENDING", 30)
        subprocess.run(["scontrol", "update", f"JobId={job}", "StartTime=now"], check=True)
    finally:
        output = finish(process, toy, timeout=400)
    assert process.returncode == 0, output
    train = _read(toy / "train/1/summary.json")
    starts = [int(s) for s in train["starts"].split(",")]
    assert train["job"] == job and len(starts) == 2 and starts[0] == 0 and starts[1] >= 3
    assert sorted(p.name for p in checkpoints.iterdir()) == sorted(f"ckpt_{s}" for s in range(1, 9))
    assert int(job_field(job, "Restarts")) == 1


PROJECT_CONFIGS = [ROOT / "config.yaml", ROOT / "configs" / "demo.yaml", ROOT / "configs" / "test.yaml"]
# Fewer runs than configs/test.yaml (a row of each table, EN-DE only) so that the SLURM run takes minutes.
KEEP = {"base", "C1", "parser"}
# The data stages of one task go to SLURM as one job (a Snakemake group) rather than a job per file.
_CHUNKED = ("tokenize", "clean_en_de", "bpe_encode", "binarize")  # data.chunks > 1: a part and a gather rule each
DATA_RULES = (
    "extract",
    "treebank",
    "bpe_learn",
    *_CHUNKED,
    *(f"{rule}_{kind}" for rule in _CHUNKED for kind in ("part", "gather")),
)


def _shrink_overlay(path: Path) -> Path:
    """Only the runs in KEEP, on EN-DE and the treebank (``run:`` limits the DAG to them)."""
    path.write_text(yaml.safe_dump({"run": {"tasks": ["en-de", "wsj"], "experiments": sorted(KEEP)}}))
    return path


def _group_data_stages(profile: Path) -> Path:
    config = yaml.safe_load((profile / "config.yaml").read_text(encoding="utf-8"))
    config["groups"] = [f"{rule}=data" for rule in DATA_RULES]
    config["group-components"] = ["data=100"]
    # A group asks SLURM for what its parallel jobs need together; these limits stack them in series
    # instead, so that the group fits the two-core, 4000 MB node (otherwise it waits forever).
    config["cores"] = 2
    config["resources"] = ["mem_mb=2000"]
    (profile / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return profile


@pytest.mark.slow
@pytest.mark.skipif(
    not (ROOT / "Snakefile").is_file() or not PROJECT_CONFIGS[-1].is_file(),
    reason="needs the project's Snakefile and configs/test.yaml",
)
def test_project_workflow_through_slurm_matches_local(tmp_path):
    """configs/test.yaml end to end, once locally and once through SLURM: the same tables.

    Threads are one per job in both runs so that CPU training is bit-for-bit the same; only the training
    cost computed the paper's way (wall-clock time x FLOP/s) may differ.
    """
    configs = [*map(str, PROJECT_CONFIGS), str(_shrink_overlay(tmp_path / "shrink.yaml"))]
    common = ("-s", str(ROOT / "Snakefile"), "--configfile", *configs, "--max-threads", "1")
    profile = _group_data_stages(ci_profile(tmp_path / "profile", mem_mb=1000))
    modes = {"local": ("--cores", "2"), "slurm": ("--profile", str(profile))}
    runs = {}
    for name, extra in modes.items():
        workdir = tmp_path / name
        workdir.mkdir()
        code, output = run_snakemake(workdir, *common, "--directory", str(workdir), *extra, timeout=1800)
        assert code == 0, output[-5000:]
        runs[name] = workdir
    slurm_logs = runs["slurm"] / ".snakemake" / "slurm_logs"
    assert list(slurm_logs.glob("rule_train/**/*.log")), f"no training job went through SLURM ({slurm_logs})"
    assert not list(slurm_logs.glob("rule_tables/**/*.log")), "tables is a local rule"
    local_tables = sorted(runs["local"].rglob("tables/table*.csv"))
    assert [p.name for p in local_tables] == ["table2.csv", "table3.csv", "table4.csv"]
    for local in local_tables:
        on_slurm = runs["slurm"] / local.relative_to(runs["local"])
        left, right = pd.read_csv(local), pd.read_csv(on_slurm)
        drop = [c for c in left.columns if c == "cost_ours_paper_method"]
        pd.testing.assert_frame_equal(left.drop(columns=drop), right.drop(columns=drop))


def _train_parser_through_profile(tmp_path: Path, train: dict) -> str:
    """Train configs/test.yaml's parser run with ``train`` overrides through the CI profile; returns
    its train.log. The data stages run locally first, so that SLURM sees only the training job."""
    overlay = tmp_path / "ranks.yaml"
    overlay.write_text(
        yaml.safe_dump(
            {"run": {"tasks": ["wsj"], "experiments": ["parser"]}, "experiments": {"parser": {"train": train}}}
        )
    )
    configs = [*map(str, PROJECT_CONFIGS), str(overlay)]
    common = ("-s", str(ROOT / "Snakefile"), "--configfile", *configs, "--directory", str(tmp_path))
    data = (
        "results/test/wsj/parser/settings/train.json",
        "data/test/bin/wsj/train/manifest.json",
        "data/test/bin/wsj/dev/manifest.json",
    )
    code, output = run_snakemake(tmp_path, *common, "--cores", "2", *data, timeout=900)
    assert code == 0, output[-5000:]
    profile = ci_profile(tmp_path / "profile", mem_mb=1500)
    summary = "results/test/wsj/parser/train/summary.json"
    code, output = run_snakemake(tmp_path, *common, "--profile", str(profile), summary, timeout=900)
    assert code == 0, output[-5000:]
    assert (tmp_path / summary).is_file()
    assert list((tmp_path / ".snakemake" / "slurm_logs").glob("rule_train/**/*.log")), "not through SLURM"
    return (tmp_path / "results/test/wsj/parser/logs/train.log").read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.skipif(
    not (ROOT / "Snakefile").is_file() or not PROJECT_CONFIGS[-1].is_file(),
    reason="needs the project's Snakefile and configs/test.yaml",
)
def test_two_cpu_ranks_train_through_the_slurm_profile(tmp_path):
    """A ``cpu_ranks: 2`` training goes to SLURM through the profile and runs as two gloo ranks under
    torchrun inside the job."""
    log = _train_parser_through_profile(tmp_path, {"gpus": 0, "cpu_ranks": 2})
    assert "relaunching under torchrun" in log and "--nproc-per-node=2" in log and "--standalone" in log, log[-3000:]
