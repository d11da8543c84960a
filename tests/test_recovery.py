"""A workflow killed with SIGKILL (Snakemake and its jobs, the whole process group) while a job had
written part of its outputs resumes with the README's one-command recipe."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import tarfile
import time

import pytest
from workflow_helpers import ROOT

pytestmark = pytest.mark.slow

CONFIGS = [str(ROOT / "config.yaml"), str(ROOT / "configs/demo.yaml"), str(ROOT / "configs/test.yaml")]
MIRROR = "data/test/mirror"
TARGET = f"{MIRROR}/sources.lock"  # the demo mirror's last output; its archives are written before it
RESUME = "snakemake --unlock --configfile configs/demo.yaml && snakemake --cores all --configfile configs/demo.yaml"


def command(workdir, *args):
    return [
        sys.executable,
        "-m",
        "snakemake",
        TARGET,
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--directory",
        str(workdir),
        "--cores",
        "2",
        *args,
        "--configfile",
        *CONFIGS,
    ]


def kill_while_half_written(workdir) -> bool:
    """Start the workflow; SIGKILL its process group once the demo mirror job has written some of its
    outputs but not the last; False if the job finished before that moment was seen."""
    process = subprocess.Popen(
        command(workdir), cwd=workdir, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    mirror = workdir / MIRROR
    try:
        while process.poll() is None:
            if mirror.is_dir() and any(p.suffix == ".tgz" for p in mirror.iterdir()):
                if not (mirror / "sources.lock").exists():
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
                    return True
                break
            time.sleep(0.01)
        return False
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def run(workdir, *args):
    return subprocess.run(command(workdir, *args), cwd=workdir, capture_output=True, text=True)


def test_the_readme_resume_recipe_recovers_from_sigkill(tmp_path):
    assert RESUME in (ROOT / "README.md").read_text(), "README's resume recipe changed: update this test"
    for attempt in range(3):
        workdir = tmp_path / f"attempt{attempt}"
        workdir.mkdir()
        if kill_while_half_written(workdir):
            break
    else:
        pytest.fail("the demo mirror job finished three times before it could be killed half-way")
    stale = run(workdir)
    assert stale.returncode != 0 and "Directory cannot be locked" in stale.stdout + stale.stderr
    # The recipe: unlock, then the same command (the default profile reruns the incomplete job).
    unlock = run(workdir, "--unlock")
    assert unlock.returncode == 0, unlock.stderr
    resumed = run(workdir)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert not [p for p in (workdir / MIRROR).iterdir() if p.name.endswith(".tmp")]
    # Every archive the lock names is whole: the size and sha256 it records, and a tar that reads to the end.
    lock = json.loads((workdir / TARGET).read_text())
    archives = sorted(p.name for p in (workdir / MIRROR).iterdir() if p.is_file() and p.name != "sources.lock")
    assert sorted(lock) == archives and archives
    for name, entry in lock.items():
        data = (workdir / MIRROR / name).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (entry["size"], entry["sha256"]), name
        with tarfile.open(workdir / MIRROR / name) as archive:
            assert archive.getmembers(), name
