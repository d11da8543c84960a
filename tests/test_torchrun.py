"""Training through its real launcher: ``python -m aiayn.train`` relaunching itself under torchrun as
gloo ranks on the CPU (``train.gpus: 0``, ``train.cpu_ranks``), the code path a multi-GPU run takes."""

import csv
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from paths import ROOT
from torch.distributed.run import get_args_parser
from train_helpers import settings

from aiayn.options import TrainConfig
from aiayn.train.distributed import first_host, rendezvous_endpoint, threads_per_rank, torchrun_command

SRC = str(ROOT / "src")

# Two ranks of one pass each against one rank of two passes: the same tokens per step, gradients
# summed in another order (DDP's all-reduce), so float32 rounding differs in the last bits and grows a
# little over 20 Adam steps. Measured (torch 2.13 CPU): weights within 4.1e-6 absolute, the losses and
# gradient norms log.csv writes equal at all 20 steps; the bounds leave room for another CPU's kernels.
# The model starts from fairseq's initialisation: from tensor2tensor's (``model.init: t2t``) this toy
# model's float32 rounding is amplified instead (Adam steps along directions the loss hardly sees):
# one rank on 1 thread against 1 rank on 2 threads, no DDP at all, ends 0.108 apart in a weight at
# step 20, losses within 5.3e-5, so no tolerance could tell DDP's order from a bug there.
RTOL, ATOL = 1e-5, 1e-5


@pytest.fixture
def data(toy_task):
    """The toy task conftest.py builds once per session."""
    return toy_task


def train_cli(data: Path, run: dict, out: Path, threads: int = 2, **popen) -> subprocess.Popen:
    """Start ``python -m aiayn.train`` as the workflow's rule does (``--threads``, ``--log``)."""
    (out.parent / f"{out.name}.json").write_text(json.dumps(run))
    cmd = [
        sys.executable,
        "-m",
        "aiayn.train",
        "--data",
        str(data),
        "--settings",
        str(out.parent / f"{out.name}.json"),
        "--out-dir",
        str(out),
        "--threads",
        str(threads),
        "--log",
        str(out.parent / f"{out.name}.log"),
    ]
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen)


def finish(proc: subprocess.Popen, timeout: int = 180) -> tuple[int, str]:
    out, _ = proc.communicate(timeout=timeout)
    return proc.returncode, out


def last_weights(out: Path) -> dict:
    return torch.load(out / "checkpoint_last.pt", weights_only=True)["model"]


def log_rows(out: Path) -> list[dict]:
    return [r for r in csv.DictReader(open(out / "log.csv")) if r["tokens_per_s"]]


def wait_for_rows(proc: subprocess.Popen, out: Path, rows: int, seconds: float = 120) -> None:
    """Wait until the running training ``proc`` has logged ``rows`` steps to ``out/log.csv``."""
    deadline = time.monotonic() + seconds
    while not (out / "log.csv").exists() or len(log_rows(out)) < rows:
        assert proc.poll() is None and time.monotonic() < deadline, "the run ended before it logged enough steps"
        time.sleep(0.02)


def test_torchrun_hands_every_worker_flag_to_the_worker():
    """torchrun's own parser (allow_abbrev) must never see the worker's flags: ``--log`` is ambiguous
    to it (exit 2) and ``--nn`` would be taken as its ``--nnodes``."""
    argv = ["--data", "d", "--log", "train.log", "--nn", "3", "--max-steps-this-run", "5", "--threads", "8"]
    command = torchrun_command(argv, 2)
    assert command[1:3] == ["-m", "torch.distributed.run"]
    args = get_args_parser().parse_args(command[3:])
    assert args.module and args.training_script == "aiayn.train" and args.nproc_per_node == "2"
    worker = args.training_script_args
    assert (worker[1:] if worker[:1] == ["--"] else worker) == argv


def test_threads_are_the_jobs_cpus_shared_by_its_ranks(monkeypatch):
    assert threads_per_rank(8, 1) == 8 and threads_per_rank(None, 1) is None
    assert threads_per_rank(8, 2) == 4 and threads_per_rank(8, 3) == 2 and threads_per_rank(2, 8) == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(6)))
    assert threads_per_rank(None, 2) == 3


def test_cpu_ranks_need_gpus_zero():
    assert TrainConfig(gpus=0, cpu_ranks=3).local_ranks == 3 and TrainConfig(gpus=2).local_ranks == 2
    with pytest.raises(ValueError, match=r"train.cpu_ranks=2 needs train.gpus: 0"):
        TrainConfig(gpus=1, cpu_ranks=2)
    with pytest.raises(ValueError, match=r"train.cpu_ranks: 0 is less than the minimum of 1"):
        TrainConfig(gpus=0, cpu_ranks=0)


@pytest.mark.slow
@pytest.mark.parametrize("ranks, step_tokens", [(2, 128), (3, 120)])
def test_cpu_ranks_under_torchrun_equal_one_rank_with_accumulation(data, tmp_path, ranks, step_tokens):
    """20 steps of ``step_tokens``: one rank of ``ranks`` passes, and ``ranks`` torchrun ranks of one pass
    each (the workflow's command line: ``--threads 2 --log FILE``): same loss, gradient norm, weights."""
    base = dict(
        train_steps=20,
        dev_every_steps=0,
        log_every_steps=1,
        checkpoint_steps=0,
        keep_checkpoints=1,
        tokens_per_step=step_tokens,
        tokens_per_pass=step_tokens // ranks,
    )
    runs = {}
    for n in (1, ranks):
        run = settings(cpu_ranks=n, **base)
        run["model"]["dropout"] = 0.0  # dropout masks are drawn per rank
        run["model"]["init"] = "fairseq"  # see RTOL
        status, output = finish(train_cli(data, run, tmp_path / f"r{n}"))
        assert status == 0, output
        runs[n] = tmp_path / f"r{n}"
    assert "relaunching under torchrun" in output
    assert (
        f"{ranks} rank(s) on cpu (cpu, fp32); 1 forward pass(es) of <= {step_tokens // ranks} tokens per rank: "
        f"{step_tokens} tokens per step"
    ) in output
    summaries = {r: json.loads((out / "summary.json").read_text()) for r, out in runs.items()}
    assert (summaries[1]["world_size"], summaries[ranks]["world_size"]) == (1, ranks)
    assert summaries[1]["tokens_tgt"] == summaries[ranks]["tokens_tgt"]
    one, many = log_rows(runs[1]), log_rows(runs[ranks])
    assert [r["step"] for r in one] == [r["step"] for r in many] == [str(s) for s in range(1, 21)]
    for key in ("loss", "grad_norm"):
        torch.testing.assert_close(
            torch.tensor([float(r[key]) for r in many], dtype=torch.float64),
            torch.tensor([float(r[key]) for r in one], dtype=torch.float64),
            rtol=RTOL,
            atol=ATOL,
        )
    weights = [last_weights(out) for out in runs.values()]
    for name, value in weights[0].items():
        torch.testing.assert_close(weights[1][name], value, rtol=RTOL, atol=ATOL)


CHILD = """
import signal, sys, time
def stop(signum, frame):
    open(sys.argv[1], "a").write("signal\\n")
    time.sleep(1)
    open(sys.argv[1], "a").write("stopped\\n")
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
print("ready", flush=True)
time.sleep(60)
"""

PARENT = """
import sys
from aiayn.train import distributed
distributed.torchrun_command = lambda *args: [sys.executable, "-c", sys.argv[1], sys.argv[2]]
sys.exit(distributed.relaunch_under_torchrun([], 2))
"""


@pytest.mark.slow
def test_the_relaunch_parent_forwards_sigterm_and_waits(tmp_path):
    """A SIGTERM to the first process alone (what a scheduler may send) reaches torchrun, and the
    parent exits after it with 143, leaving no orphan behind."""
    record = tmp_path / "child.txt"
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, CHILD, str(record)], env=env, stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout.readline().strip() == "ready"
    parent.send_signal(signal.SIGTERM)
    assert parent.wait(timeout=30) == 143
    assert record.read_text() == "signal\nstopped\n"


@pytest.mark.slow
def test_sigterm_to_the_torchrun_group_then_the_same_command_is_bit_identical(data, tmp_path):
    """Two CPU ranks under torchrun, SIGTERM to the command's process group mid-run (the relaunch parent
    and torchrun; torchrun passes it on to its workers, which it starts in sessions of their own: torch
    2.13, torch/distributed/elastic/multiprocessing/subprocess_handler/subprocess_handler.py), then the
    same command again: every logged loss and the final weights equal those of a run never
    interrupted, bit for bit."""
    run = settings(
        cpu_ranks=2, train_steps=300, dev_every_steps=0, log_every_steps=1, checkpoint_steps=100, keep_checkpoints=5
    )
    status, output = finish(train_cli(data, run, tmp_path / "whole"))
    assert status == 0, output
    split = tmp_path / "split"
    proc = train_cli(data, run, split, start_new_session=True)
    wait_for_rows(proc, split, 20)
    os.killpg(proc.pid, signal.SIGTERM)
    status, output = finish(proc)
    assert status == 143 and not (split / "summary.json").exists(), output
    stop_step = int(sorted((split / "checkpoints").glob("ckpt_*.pt"))[-1].name[5:13])  # the stop checkpoint
    assert 20 <= stop_step < 300 and f"stopped at step {stop_step}" in output, output
    status, output = finish(train_cli(data, run, split))
    assert status == 0 and "resumed from" in output, output
    assert [(r["step"], r["loss"], r["grad_norm"]) for r in log_rows(split)] == [
        (r["step"], r["loss"], r["grad_norm"]) for r in log_rows(tmp_path / "whole")
    ]
    whole, resumed = (last_weights(out) for out in (tmp_path / "whole", split))
    assert all(torch.equal(value, resumed[name]) for name, value in whole.items())


# Loaded by every Python process started with its folder first on PYTHONPATH; only rank 1 of a torchrun
# job, and only until the file OOM_ONCE exists, runs out of memory in the forward passes of step 3.
OUT_OF_MEMORY_ONCE = """
import os
if os.environ.get("RANK") == "1" and not os.path.exists(os.environ["OOM_ONCE"]):
    import torch
    from aiayn.train import trainer
    original = trainer.Trainer.micro_step

    def micro_step(self, batch):
        if self.progress.step + 1 == 3:
            open(os.environ["OOM_ONCE"], "w").close()
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB (GPU 1; 79.11 GiB total)")
        return original(self, batch)

    trainer.Trainer.micro_step = micro_step
"""


@pytest.mark.slow
def test_a_rank_out_of_memory_ends_the_job_naming_the_pass_and_a_smaller_one_resumes_on_both_ranks(
    data, tmp_path, monkeypatch
):
    """Rank 1 of two under torchrun runs out of memory in step 3: its line names the step and
    train.tokens_per_pass, rank 0's says it lost rank 1 and points to that error, nothing reads as a bug;
    with half the tokens a pass, the same command resumes both ranks from step 2 in two passes a step."""
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(OUT_OF_MEMORY_ONCE, encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(inject) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("OOM_ONCE", str(tmp_path / "ran-out"))
    run = settings(
        cpu_ranks=2,
        train_steps=5,
        dev_every_steps=0,
        log_every_steps=1,
        checkpoint_steps=1,
        keep_checkpoints=5,
        tokens_per_step=256,
        tokens_per_pass=128,
    )
    status, output = finish(train_cli(data, run, tmp_path / "run"))
    assert status != 0 and (tmp_path / "ran-out").exists(), output
    assert "error: out of memory on cpu after step 2 (CUDA out of memory. Tried to allocate 20.00 GiB" in output, output
    assert "train.tokens_per_pass=128 tokens a side" in output and "internal error" not in output, output
    assert "error: lost another rank of this 2-rank training" in output and "rank's own error" in output, output
    assert "resume from " + str(tmp_path / "run" / "checkpoints" / "ckpt_00000002.pt") + " (step 2)" in output, output
    run["train"]["tokens_per_pass"] = 64
    status, output = finish(train_cli(data, run, tmp_path / "run"))
    assert status == 0 and "resumed from" in output and "(step 2," in output, output
    assert "2 forward pass(es) of <= 64 tokens per rank: 256 tokens per step" in output, output
    assert [int(row["step"]) for row in log_rows(tmp_path / "run")][-3:] == [3, 4, 5]


def ranks_of(out: Path) -> list[int]:
    """Process ids of the torchrun workers training into ``out`` (their command line names it)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            b"aiayn.train" in cmd
            and str(out).encode() in cmd
            and b"torch.distributed.run" not in cmd
            and os.environ.get("TORCHELASTIC_RUN_ID") is None
            and proc.name.isdigit()
        ):
            environ = (proc / "environ").read_bytes() if (proc / "environ").exists() else b""
            if b"LOCAL_RANK=" in environ:
                found.append(int(proc.name))
    return found


def gone(pids: list[int]) -> bool:
    for pid in pids:
        try:
            if (Path("/proc") / str(pid) / "stat").read_text().split(")")[-1].split()[0] != "Z":
                return False
        except OSError:
            continue
    return True


@pytest.mark.slow
def test_ranks_die_with_a_killed_torchrun(data, tmp_path):
    """SIGKILL to the command's process group (the OOM killer, a killed Snakemake) kills the relaunch
    parent and torchrun but not the ranks, which torchrun starts in sessions of their own; each rank
    asks the kernel to kill it with its parent (``die_with_parent``), so none trains on, orphaned."""
    run = settings(cpu_ranks=2, train_steps=100000, dev_every_steps=0, log_every_steps=1, checkpoint_steps=0)
    out = tmp_path / "run"
    proc = train_cli(data, run, out, start_new_session=True)
    wait_for_rows(proc, out, 3)
    ranks = ranks_of(out)
    assert len(ranks) == 2, ranks
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()  # orphaned ranks would hold the pipe open
    deadline = time.monotonic() + 20
    while not gone(ranks) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = [pid for pid in ranks if not gone([pid])]
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    assert not alive, f"ranks {alive} outlived their torchrun"


def test_several_nodes_meet_at_a_c10d_rendezvous():
    assert (
        first_host("gpu-a[07-09,12],cpu1") == "gpu-a07" and first_host("n1,n2") == "n1" and first_host("n[3]") == "n3"
    )
    assert rendezvous_endpoint("10.0.0.5:29500", {"SLURM_JOB_NODELIST": "n[1-2]"}) == "10.0.0.5:29500"
    assert rendezvous_endpoint("", {"SLURM_JOB_NODELIST": "gpu[04-05]"}) == "gpu04:29400"
    with pytest.raises(ValueError, match="train.rendezvous"):
        rendezvous_endpoint("", {})
    with pytest.raises(ValueError, match="train.rendezvous must be HOST:PORT"):
        TrainConfig(rendezvous="host")
    one, two = torchrun_command(["--log", "x"], 8), torchrun_command(["--log", "x"], 8, 2, "gpu04:29400", "77")
    assert "--standalone" in one and not any(a.startswith("--rdzv") for a in one)
    args = get_args_parser().parse_args(two[3:])
    assert (args.nnodes, args.nproc_per_node, args.rdzv_backend, args.rdzv_endpoint, args.rdzv_id, args.standalone) == (
        "2",
        "8",
        "c10d",
        "gpu04:29400",
        "77",
        False,
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_two_torchrun_agents_as_two_nodes_equal_one_agent_with_two_ranks(data, tmp_path):
    """Two nodes of one CPU rank each (two agents on this machine, a localhost c10d rendezvous) train
    what one node of two ranks trains, bit for bit: the same global ranks see the same batches. Each
    agent gets one thread, as each rank of the one node does (2 CPUs / 2 ranks): other thread counts
    sum a CPU's matrix products in another order."""
    base = dict(train_steps=8, dev_every_steps=0, log_every_steps=1, checkpoint_steps=4)
    status, output = finish(train_cli(data, settings(cpu_ranks=2, **base), tmp_path / "one"))
    assert status == 0, output
    run = settings(nodes=2, rendezvous=f"127.0.0.1:{free_port()}", **base)
    agents = [train_cli(data, run, tmp_path / "two", threads=1) for _ in range(2)]
    results = [finish(agent) for agent in agents]
    assert [status for status, _ in results] == [0, 0], results
    assert all("--nnodes=2 --rdzv-backend=c10d" in output for _, output in results)
    assert json.loads((tmp_path / "two" / "summary.json").read_text())["world_size"] == 2
    assert [(r["step"], r["loss"], r["grad_norm"]) for r in log_rows(tmp_path / "two")] == [
        (r["step"], r["loss"], r["grad_norm"]) for r in log_rows(tmp_path / "one")
    ]
    one, two = (last_weights(out) for out in (tmp_path / "one", tmp_path / "two"))
    assert all(torch.equal(value, two[name]) for name, value in one.items())
