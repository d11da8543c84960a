"""The sbatch line snakemake-executor-plugin-slurm (the version pyproject's ``slurm`` extra pins) writes for
a training job's resources (aiayn.train.slurm), built by the plugin's own functions."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from aiayn.train.slurm import SRUN_ONE_AGENT_PER_NODE, train_launcher, train_resources


def _import_plugin(*modules: str) -> list:
    """The plugin's modules, imported with an ``scontrol`` that fails at once first in PATH: the package asks
    ``scontrol show config`` for MinJobAge when imported, for a help text (``"help": _get_status_command_help()``
    in ``snakemake_executor_plugin_slurm/__init__.py`` -> ``get_min_job_age`` in ``job_status_query.py``, timeout
    10 s; snakemake/snakemake-executor-plugin-slurm at cdc05f9, and the 2.8.0 the extra pins), which waits
    where a SLURM client is installed and no controller answers. The sbatch line does not depend on it."""
    path = os.environ.get("PATH", "")
    with tempfile.TemporaryDirectory() as stand_in:
        scontrol = Path(stand_in, "scontrol")
        scontrol.write_text("#!/bin/sh\nexit 1\n")
        scontrol.chmod(0o755)
        os.environ["PATH"] = os.pathsep.join((stand_in, path))
        try:
            return [pytest.importorskip(f"snakemake_executor_plugin_slurm.{module}") for module in modules]
        finally:
            os.environ["PATH"] = path


submit_string, plugin_utils, validation = _import_plugin("submit_string", "utils", "validation")

SIGNAL = "--signal=TERM@300"  # profiles/slurm/config.yaml's slurm_extra for train


class _Resources(dict):
    """What the plugin reads from ``job.resources``: ``.get`` and attribute access."""

    __getattr__ = dict.__getitem__


class _Job:
    def __init__(self, resources: dict, threads: int):
        self.resources = _Resources({k: v for k, v in resources.items() if v is not None})
        self.threads = threads


def sbatch_line(train: dict, threads: int = 8) -> str:
    """The plugin's sbatch call, as its executor assembles it (``get_submit_command`` + gres)."""
    job = _Job(train_resources(train, threads) | {"runtime": 2880, "mem_mb": 64000, "slurm_extra": SIGNAL}, threads)
    validation.validate_slurm_extra(job)
    params = {
        "run_uuid": "JOB",
        "slurm_logfile": "LOG",
        "comment_str": "rule_train",
        "account": "",
        "partition": "-p gpu",
        "workdir": "/work",
    }
    call = submit_string.get_submit_command(job, params)
    return " ".join((call + plugin_utils.set_gres_string(job)).split())


def test_two_nodes_of_eight_gpus_one_agent_per_node():
    line = sbatch_line({"gpus": 8, "nodes": 2})
    print(line)
    assert line == (
        "sbatch --parsable --job-name JOB --output LOG --export=ALL --comment rule_train -p gpu"
        " -t 2880 --mem 64000 --nodes=2 --ntasks=2 --cpus-per-task=8 --signal=TERM@300"
        " -D /work --gres=gpu:8"
    )
    assert train_launcher({"gpus": 8, "nodes": 2}) == SRUN_ONE_AGENT_PER_NODE.format(nodes=2)
    assert train_launcher({"gpus": 8, "nodes": 2}).startswith("srun --nodes=2 --ntasks=2 ")


def test_two_nodes_of_cpu_ranks():
    line = sbatch_line({"gpus": 0, "cpu_ranks": 2, "nodes": 2}, threads=2)
    print(line)
    assert " --nodes=2 --ntasks=2 --cpus-per-task=2 " in line
    assert "gres" not in line and "gpus" not in line


def test_one_node_asks_for_what_it_did_before():
    line = sbatch_line({"gpus": 8, "nodes": 1})
    print(line)
    assert line == (
        "sbatch --parsable --job-name JOB --output LOG --export=ALL --comment rule_train -p gpu"
        " -t 2880 --mem 64000 --cpus-per-task=8 --signal=TERM@300 -D /work --gpus=8"
    )
    assert "--nodes" not in line and "--ntasks" not in line
    assert train_launcher({"gpus": 8}) == ""


def test_one_node_cpu_training_is_one_task():
    line = sbatch_line({"gpus": 0, "cpu_ranks": 2}, threads=2)
    print(line)
    assert " --ntasks=1 --cpus-per-task=2 " in line


def test_mpi_job_without_tasks_is_refused_by_the_plugin():
    """Why ``tasks`` travels with ``mpi``: the plugin refuses an MPI job without a task count."""
    job = _Job({"mpi": "srun", "nodes": 2}, 8)
    with pytest.raises(Exception, match="tasks"):
        submit_string.get_submit_command(
            job,
            {"run_uuid": "J", "slurm_logfile": "L", "comment_str": "c", "account": "", "partition": "", "workdir": ""},
        )
