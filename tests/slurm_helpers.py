"""Helpers for the SLURM tests: is a cluster there, the shipped profile with CI overrides, running Snakemake."""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import sys
from pathlib import Path

import yaml
from paths import ROOT

SLURM_PROFILE = ROOT / "profiles" / "slurm" / "config.yaml"


def sinfo_answers() -> bool:
    """True when a SLURM controller answers (not merely when the client is installed)."""
    try:
        return subprocess.run(["sinfo", "-h"], capture_output=True, timeout=15).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def sacct_works() -> bool:
    """True when ``sacct`` reads an accounting database (without one it prints "...disabled" and exits 0)."""
    try:
        done = subprocess.run(["sacct", "-n", "-X"], capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and "disabled" not in done.stdout + done.stderr


def ci_profile(directory: Path, mem_mb: int = 200) -> Path:
    """``profiles/slurm`` as shipped, with the overrides a 2-core CI node needs; returns the profile folder.

    Only sizes and waits change: memory fits the node, one thread per job, status checks start after 2 s,
    every job's SLURM log is kept (the tests read them), squeue answers status where sacct cannot.
    """
    profile = yaml.safe_load(SLURM_PROFILE.read_text(encoding="utf-8"))
    ci = copy.deepcopy(profile)
    ci.update(
        {
            "jobs": 2,
            "latency-wait": 5,
            "max-threads": 1,
            "restart-times": 0,
            "slurm-init-seconds-before-status-checks": 2,
            "slurm-keep-successful-logs": True,
            "default-resources": {**profile["default-resources"], "mem_mb": mem_mb, "runtime": 30},
        }
    )
    for resources in ci["set-resources"].values():
        resources["mem_mb"] = mem_mb
    if not sacct_works():
        ci["slurm-status-command"] = "squeue"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.yaml").write_text(yaml.safe_dump(ci, sort_keys=False), encoding="utf-8")
    return directory


def snakemake_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", *args]


def start_snakemake(workdir: Path, *args: str, on: tuple[str, ...] = ()) -> subprocess.Popen:
    """Start Snakemake in ``workdir`` (its output goes to ``workdir/snakemake.out``), through the command
    prefix ``on`` if given (another host: ``.ci/slurm-two-nodes.sh run``)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    with open(workdir / "snakemake.out", "w", encoding="utf-8") as out:  # the child keeps its own copy
        return subprocess.Popen(
            [*on, *snakemake_command(*args)], cwd=workdir, stdout=out, stderr=subprocess.STDOUT, env=env
        )


def finish(process: subprocess.Popen, workdir: Path, timeout: float) -> str:
    """Wait for Snakemake; past ``timeout`` stop it with SIGINT (it ignores SIGTERM while it waits on jobs)."""
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    return (workdir / "snakemake.out").read_text(encoding="utf-8")


def run_snakemake(workdir: Path, *args: str, timeout: float = 300, on: tuple[str, ...] = ()) -> tuple[int, str]:
    """Run Snakemake to the end (through the prefix ``on``, as :func:`start_snakemake`); returns its exit
    status and its output."""
    process = start_snakemake(workdir, *args, on=on)
    output = finish(process, workdir, timeout)
    return process.returncode, output


def job_field(job_id: str, name: str) -> str:
    """One ``Name=value`` field of ``scontrol show job`` (finished jobs stay listed for MinJobAge)."""
    text = subprocess.run(["scontrol", "show", "job", job_id], capture_output=True, text=True, timeout=15).stdout
    for token in text.split():
        if token.startswith(name + "="):
            return token.split("=", 1)[1]
    raise AssertionError(f"scontrol show job {job_id} has no {name}: {text}")
