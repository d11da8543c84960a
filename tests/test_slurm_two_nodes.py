"""Training across two SLURM nodes: hosts node1 and node2 of their own, in network namespaces
(``.ci/slurm-two-nodes.sh up``, as root; CI starts it).

The workflow's train rule with ``train.nodes: 2`` goes through ``profiles/slurm`` from node1: one
``sbatch --nodes=2``, one torchrun agent per node through ``srun``, the c10d rendezvous on the first
node's hostname, gloo between the two hosts' addresses.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from slurm_helpers import ROOT, ci_profile, finish, run_snakemake, start_snakemake

from aiayn.runtime.checkpoint import list_checkpoints, load_checkpoint

CLUSTER = ROOT / ".ci" / "slurm-two-nodes.sh"
ON_NODE1 = (str(CLUSTER), "run")
PROJECT_CONFIGS = [ROOT / "config.yaml", ROOT / "configs" / "demo.yaml", ROOT / "configs" / "test.yaml"]
TRAIN_DIR = "results/test/wsj/parser/train"
SUMMARY = f"{TRAIN_DIR}/summary.json"


def two_nodes_answer() -> bool:
    """True when node1's controller lists node1 and node2."""
    try:
        done = subprocess.run([*ON_NODE1, "sinfo", "-h", "-N", "-o", "%N"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and sorted(set(done.stdout.split())) == ["node1", "node2"]


pytestmark = [
    pytest.mark.slurm,
    pytest.mark.slow,
    pytest.mark.skipif(not two_nodes_answer(), reason="no two-node SLURM cluster (.ci/slurm-two-nodes.sh up, as root)"),
    pytest.mark.skipif(
        importlib.util.find_spec("snakemake_executor_plugin_slurm") is None,
        reason="snakemake-executor-plugin-slurm is not installed (pip install -e '.[slurm]')",
    ),
]


def set_up(workdir: Path, train: dict, profile_changes: dict | None = None) -> tuple[tuple[str, ...], Path]:
    """configs/test.yaml's parser with ``train`` overrides: its data stages run here; returns Snakemake's
    common arguments and a CI-sized profile for these nodes (with ``profile_changes``)."""
    workdir.mkdir(parents=True, exist_ok=True)  # a second training in the same folder reuses its data
    overlay = workdir / "overlay.yaml"
    overlay.write_text(
        yaml.safe_dump(
            {
                "run": {"tasks": ["wsj"], "experiments": ["parser"]},
                "experiments": {"parser": {"train": {"log_every_steps": 1, **train}}},
            }
        )
    )
    common = (
        "-s",
        str(ROOT / "Snakefile"),
        "--configfile",
        *map(str, PROJECT_CONFIGS),
        str(overlay),
        "--directory",
        str(workdir),
    )
    data = (
        "results/test/wsj/parser/settings/train.json",
        "data/test/bin/wsj/train/manifest.json",
        "data/test/bin/wsj/dev/manifest.json",
    )
    code, output = run_snakemake(workdir, *common, "--cores", "2", *data, timeout=900)
    assert code == 0, output[-5000:]
    profile = ci_profile(workdir / "profile", mem_mb=1000)
    settings = yaml.safe_load((profile / "config.yaml").read_text())
    settings["slurm-status-command"] = "squeue"  # no accounting database on these nodes
    for key, value in (profile_changes or {}).items():
        if key == "train":
            settings["set-resources"]["train"].update(value)
        else:
            settings[key] = value
    (profile / "config.yaml").write_text(yaml.safe_dump(settings, sort_keys=False))
    return common, profile


def training_processes(node: str) -> dict[int, str]:
    """pid: command line of each training process (torchrun agent or rank) in ``node``'s network namespace."""
    pids = subprocess.run(["ip", "netns", "pids", node], capture_output=True, text=True, timeout=30).stdout.split()
    found = {}
    for pid in pids:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:  # ended meanwhile
            continue
        if "torch.distributed.run" in command or "aiayn.train" in command:
            found[int(pid)] = command
    return found


def train_parser(workdir: Path, train: dict, through_slurm: bool, profile_changes: dict | None = None) -> Path:
    """:func:`set_up`, then the training here or through the profile from node1; returns its folder."""
    common, profile = set_up(workdir, train, profile_changes)
    where = ("--profile", str(profile)) if through_slurm else ("--cores", "2")
    code, output = run_snakemake(workdir, *common, *where, SUMMARY, timeout=900, on=ON_NODE1 if through_slurm else ())
    assert code == 0, output[-5000:]
    return workdir / TRAIN_DIR


def rows(train_dir: Path) -> list[tuple[str, str, str]]:
    with open(train_dir / "log.csv", encoding="utf-8") as handle:
        return [(r["step"], r["loss"], r["grad_norm"]) for r in csv.DictReader(handle) if r["tokens_per_s"]]


def test_two_nodes_train_what_one_host_of_two_ranks_trains(tmp_path):
    """One CPU rank on each of node1 and node2 (gloo between their addresses) gives the losses and
    gradient norms of one host running two ranks, bit for bit: the same global ranks see the same
    batches, one thread each."""
    across = train_parser(tmp_path / "nodes", {"gpus": 0, "cpu_ranks": 1, "nodes": 2}, through_slurm=True)
    log = (across.parent / "logs" / "train.log").read_text(encoding="utf-8")
    assert "--nnodes=2" in log and "--rdzv-endpoint=node1:29400" in log, log[-3000:]
    assert json.loads((across / "summary.json").read_text())["world_size"] == 2
    jobs = list((tmp_path / "nodes" / ".snakemake" / "slurm_logs").glob("rule_train/**/*.log"))
    assert jobs, "the training did not go through SLURM"
    one = train_parser(tmp_path / "host", {"gpus": 0, "cpu_ranks": 2}, through_slurm=False)
    assert rows(across) == rows(one) and len(rows(one)) == 24


def steps_per_second(train_dir: Path) -> float:
    """The training speed of a finished run: its steps over the seconds between the first and last (log.csv)."""
    with open(train_dir / "log.csv", encoding="utf-8") as handle:
        logged = [(int(r["step"]), float(r["elapsed"])) for r in csv.DictReader(handle) if r["tokens_per_s"]]
    return (logged[-1][0] - logged[0][0]) / (logged[-1][1] - logged[0][1])


def test_a_time_limit_stops_the_training_with_a_checkpoint_and_the_resubmission_finishes_it(tmp_path):
    """A two-minute time limit with the profile's warning scaled to it (``--signal=TERM@60``): SIGTERM
    reaches the training in its step, which writes a stop checkpoint and exits; Snakemake submits the job
    again (``restart-times``) and it resumes there, at the step the stopped submission logged: no step
    is lost. The finished run's losses are an uninterrupted run's, bit for bit. Each submission's record
    is its SLURM log (Snakemake starts train.log afresh)."""
    # The signal comes at most 60 s into a submission, and may come up to 60 s earlier (sbatch(1),
    # --signal: "the signal may be sent up to 60 seconds earlier than specified": SchedMD/slurm at 000729e6,
    # doc/man/man1/sbatch.1, and the 22.05.8 page these nodes install). The training is sized to 90 s of
    # steps at this machine's measured speed, so the first submission cannot finish it; restart-times
    # leaves room for submissions signalled early.
    probe = train_parser(
        tmp_path / "host", {"gpus": 0, "cpu_ranks": 2, "train_steps": 300, "dev_every_steps": 0}, through_slurm=False
    )
    speed = steps_per_second(probe)
    shutil.rmtree(probe.parent)  # the uninterrupted run below starts afresh, not from this one's checkpoints
    total = max(1200, math.ceil(speed * 90 / 100) * 100)
    steps = {"train_steps": total, "checkpoint_steps": 500, "dev_every_steps": 0}
    changes = {"restart-times": 8, "train": {"runtime": 2, "slurm_extra": "'--signal=TERM@60'"}}
    across = train_parser(
        tmp_path / "nodes",
        {"gpus": 0, "cpu_ranks": 1, "nodes": 2, **steps},
        through_slurm=True,
        profile_changes=changes,
    )
    jobs = sorted(
        (tmp_path / "nodes" / ".snakemake" / "slurm_logs").glob("rule_train/**/*.log"), key=lambda path: int(path.stem)
    )
    assert len(jobs) >= 2, f"the training ({total} steps at {speed:.0f} steps/s) was not submitted again: {jobs}"
    texts = [path.read_text(encoding="utf-8") for path in jobs]
    # Each submission the limit stopped logs the step; the next resumes exactly there, so no step is lost.
    # (A stop step may fall on the checkpoint_steps grid, when the signal comes in the step before a
    # checkpoint or while it is written; a signal before the first step stops a submission with nothing
    # to save.)
    stop, resumed = None, []
    for text in texts:
        if start := re.search(r"resumed from \S+ \(step (\d+),", text):
            resumed.append(int(start.group(1)))
            assert resumed[-1] == stop, f"resumed at step {resumed[-1]}, the last stop was at {stop}"
        if end := re.search(r"stopped at step (\d+);", text):
            stop = int(end.group(1))
    assert resumed, "no submission resumed the training"
    assert json.loads((across / "summary.json").read_text())["steps"] == steps["train_steps"]
    one = train_parser(tmp_path / "host", {"gpus": 0, "cpu_ranks": 2, **steps}, through_slurm=False)
    assert rows(across) == rows(one) and len(rows(one)) == steps["train_steps"]


def test_a_lost_node_fails_the_job_on_both_nodes_and_the_rerun_resumes_from_the_newest_checkpoint(tmp_path):
    """The torchrun agent on node2 is killed (SIGKILL) mid-run: node1's rank loses its peer and says so,
    naming the checkpoint to resume from; srun's ``--kill-on-bad-exit`` ends the step on both nodes, the
    job and Snakemake fail; no training process is left on either node and every checkpoint on disk
    loads. Running Snakemake again resumes from the newest of them, and the finished run's losses are an
    uninterrupted run's, bit for bit."""
    steps = {"train_steps": 900, "checkpoint_steps": 100, "keep_checkpoints": 5, "dev_every_steps": 0}
    workdir = tmp_path / "nodes"
    common, profile = set_up(workdir, {"gpus": 0, "cpu_ranks": 1, "nodes": 2, **steps})
    arguments = (*common, "--profile", str(profile), SUMMARY)
    train_dir = workdir / TRAIN_DIR
    process = start_snakemake(workdir, *arguments, on=ON_NODE1)
    deadline = time.monotonic() + 600
    while not any(step >= 200 for step, _ in list_checkpoints(train_dir)):
        assert process.poll() is None, finish(process, workdir, 0)[-5000:]
        assert time.monotonic() < deadline, "no checkpoint of step 200 within 10 minutes"
        time.sleep(0.5)
    agents = [pid for pid, command in training_processes("node2").items() if "torch.distributed.run" in command]
    assert agents and training_processes("node1"), (training_processes("node1"), training_processes("node2"))
    for pid in agents:
        os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    output = finish(process, workdir, 300)
    assert process.returncode not in (0, None), output[-5000:]
    failed_after = time.monotonic() - killed
    left = {node: training_processes(node) for node in ("node1", "node2")}
    assert not any(left.values()), f"left behind {failed_after:.0f} s after the kill: {left}"
    assert failed_after < 120, f"Snakemake took {failed_after:.0f} s to fail"
    assert not subprocess.run([*ON_NODE1, "squeue", "-h"], capture_output=True, text=True, timeout=30).stdout.strip()
    found = list_checkpoints(train_dir)
    for step, path in found:
        assert load_checkpoint(path).progress["step"] == step
    newest = found[-1][0]
    failed_log = next((workdir / ".snakemake" / "slurm_logs").glob("rule_train/**/*.log")).read_text(encoding="utf-8")
    assert "lost another rank of this 2-rank training" in failed_log and "internal error" not in failed_log, failed_log[
        -3000:
    ]
    assert f"resume from {TRAIN_DIR}/checkpoints/ckpt_{newest:08d}.pt (step {newest})" in failed_log, failed_log[-3000:]
    code, output = run_snakemake(workdir, *arguments, timeout=900, on=ON_NODE1)
    assert code == 0, output[-5000:]
    log = (train_dir.parent / "logs" / "train.log").read_text(encoding="utf-8")
    assert re.search(rf"resumed from \S+ckpt_{newest:08d}\.pt \(step {newest},", log), log[-3000:]
    one = train_parser(tmp_path / "host", {"gpus": 0, "cpu_ranks": 2, **steps}, through_slurm=False)
    assert rows(train_dir) == rows(one) and len(rows(one)) == steps["train_steps"]
