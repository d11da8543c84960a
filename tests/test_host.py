"""What a machine's GPUs are, told without torch (``aiayn.runtime.host``), and the workflow's check at its
start: a training that asks for GPUs this machine's torch cannot use stops the workflow before any job."""

import importlib.metadata

import pytest
from paths import ROOT
from workflow_helpers import snakemake

from aiayn.runtime import host


@pytest.mark.parametrize(
    "version, gpus, usable",
    [("2.13.0+cpu", 8, 0), ("2.13.0", 0, 0), ("2.13.0+cu130", 2, 2), ("2.11.0", 1, 1)],
)
def test_usable_gpus_are_none_with_a_cpu_build_else_the_drivers(monkeypatch, version, gpus, usable):
    monkeypatch.setattr(importlib.metadata, "version", lambda name: version)
    monkeypatch.setattr(host, "physical_gpu_count", lambda: gpus)
    count, why = host.usable_gpus()
    assert count == usable and (("CPU build" in why) == version.endswith("+cpu"))


def test_the_problem_names_the_key_the_runs_and_why():
    assert host.training_gpus_problem({"en-de/base": 1, "wsj/parser": 0}, (1, "one")) is None
    runs = {f"en-de/{name}": 2 for name in "ABCDEFG"} | {"wsj/parser": 0}
    problem = host.training_gpus_problem(runs, (0, "torch 2.13.0+cpu is a CPU build"))
    assert problem.startswith("train.gpus asks for up to 2 GPU(s) a training (en-de/A, en-de/B, en-de/C, en-de/D, ")
    assert "en-de/E and 2 more), and this machine has 0 that torch can use (torch 2.13.0+cpu is a CPU build)" in problem
    assert "set train.gpus: 0 to train on the CPU" in problem


def test_the_workflow_stops_before_any_job_when_its_trainings_need_gpus_it_lacks(tmp_path, monkeypatch):
    """On this CPU build of torch, the demo with train.gpus: 1: the run stops at once, naming train.gpus, and
    no job ran (no data folder); a dry run only plans."""
    if host.usable_gpus()[0]:
        pytest.skip("this machine's torch has a GPU")
    overlay = tmp_path / "gpus.yaml"
    overlay.write_text("defaults: {train: {gpus: 1}}\n")
    configs = [str(ROOT / "config.yaml"), str(ROOT / "configs/demo.yaml"), str(overlay)]
    done = snakemake(tmp_path, "--cores", "1", "--configfile", *configs, check=False)
    assert done.returncode == 1
    assert "train.gpus asks for up to 1 GPU(s) a training" in done.stdout + done.stderr
    assert not (tmp_path / "data").exists() and not (tmp_path / "results").exists()
    assert snakemake(tmp_path, "-n", "--cores", "1", "--configfile", *configs).returncode == 0
