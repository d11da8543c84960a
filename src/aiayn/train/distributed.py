"""Data parallelism of training: torchrun relaunch, process groups, DDP wrapping, workers that die with their parent.

Which devices a job may use (GPU claims, CUDA checks) is the runtime's: :mod:`aiayn.runtime.devices`.
"""

from __future__ import annotations

import ctypes
import datetime
import logging
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from aiayn.io import first_line
from aiayn.runtime.devices import check_cuda
from aiayn.train.compiled import CompiledStep

log = logging.getLogger(__name__)


# How long a rank waits in a collective before the group fails. Rank 0 alone runs the dev evaluation
# and writes checkpoints while the other ranks wait in the next step's all-reduce; torch's defaults
# (30 minutes for gloo, 10 for NCCL: torch 2.13, torch/distributed/constants.py, which takes NCCL's
# from CUDA builds) are short for an evaluation plus a multi-GB checkpoint on a shared file system,
# so the group waits an hour before it gives up.
PROCESS_GROUP_TIMEOUT = datetime.timedelta(minutes=60)

# Signals the relaunch parent passes on to torchrun (which passes them on to its workers:
# torch 2.13, torch/distributed/run.py, --signals-to-handle "SIGTERM,SIGINT,SIGHUP,SIGQUIT").
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT)

# Seconds torchrun waits for its workers after it passed them a signal before it kills them (its
# default is 30 s: torch 2.13, torch/distributed/launcher/api.py reads TORCH_ELASTIC_SHUTDOWN_TIMEOUT;
# older torch ignores the variable). Rank 0 writes the stop checkpoint in that time.
SHUTDOWN_SECONDS = 600


# torchrun's c10d rendezvous port when an endpoint names none (torch 2.13,
# torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py DEFAULT_PORT).
RENDEZVOUS_PORT = 29400


def should_relaunch(ranks: int, nodes: int = 1) -> bool:
    """True in the first process of a training with ``ranks`` ranks on each of ``nodes`` nodes: it
    restarts itself under torchrun. A torchrun worker (LOCAL_RANK set) never relaunches."""
    return (ranks > 1 or nodes > 1) and "LOCAL_RANK" not in os.environ


def first_host(nodelist: str) -> str:
    """The first host name of a SLURM host list: ``gpu-a[07-09,12],cpu1`` -> ``gpu-a07``."""
    head = re.match(r"[^,\[]*(\[[^\]]*\])?", nodelist.strip()).group(0)
    if "[" not in head:
        return head
    prefix, ranges = head[:-1].split("[", 1)
    return prefix + ranges.split(",")[0].split("-")[0]


def rendezvous_endpoint(configured: str, environ: dict | None = None) -> str:
    """``host:port`` where the torchrun agents of a training on several nodes meet: ``train.rendezvous``
    when set, else the first host of the SLURM allocation (``SLURM_JOB_NODELIST``) on port
    :data:`RENDEZVOUS_PORT`; an error naming the key elsewhere."""
    environ = os.environ if environ is None else environ
    if configured:
        return configured
    if environ.get("SLURM_JOB_NODELIST"):
        return f"{first_host(environ['SLURM_JOB_NODELIST'])}:{RENDEZVOUS_PORT}"
    raise ValueError(
        "train.nodes > 1 outside a SLURM allocation needs train.rendezvous: HOST:PORT "
        "(a machine and free port every node reaches; the same on every node)"
    )


def torchrun_command(
    argv: list[str], nproc: int, nodes: int = 1, endpoint: str = "", run_id: str = "aiayn"
) -> list[str]:
    """``python -m torch.distributed.run ... -m aiayn.train -- ARGV``: ``--standalone`` on one node,
    else one agent of ``nodes`` meeting at the c10d rendezvous ``endpoint`` under ``run_id``.

    The ``--`` ends torchrun's own options: without it torchrun's parser (argparse with abbreviations
    allowed: torch 2.13, torch/distributed/argparse_util.py and run.py ``get_args_parser``) reads the
    worker's ``--log`` as an ambiguous abbreviation of ``--log-dir``/``--logs-specs`` and exits 2, and
    a worker flag that abbreviates exactly one torchrun option would be taken silently.
    """
    where = (
        ["--standalone"]
        if nodes == 1
        else [f"--nnodes={nodes}", "--rdzv-backend=c10d", f"--rdzv-endpoint={endpoint}", f"--rdzv-id={run_id}"]
    )
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        *where,
        f"--nproc-per-node={nproc}",
        "-m",
        "aiayn.train",
        "--",
        *argv,
    ]


def relaunch_under_torchrun(argv: list[str], nproc: int, nodes: int = 1, rendezvous: str = "") -> int:
    """Run ``python -m aiayn.train ARGV`` as ``nproc`` torchrun workers on this node (one of ``nodes``,
    meeting at :func:`rendezvous_endpoint`); returns their exit status.

    While torchrun runs, SIGTERM and SIGINT sent to this process are passed on to torchrun, and this
    process waits for it: a scheduler that signals only the job's first process still gets every
    rank's stop checkpoint, and no worker outlives its parent; torchrun gives its workers
    :data:`SHUTDOWN_SECONDS` to finish after a signal. After a forwarded signal the status
    is 143 (128 + SIGTERM: the status a stopped single-process training returns), whatever torchrun
    reports for workers that stopped with a checkpoint.
    """
    endpoint = rendezvous_endpoint(rendezvous) if nodes > 1 else ""
    command = torchrun_command(argv, nproc, nodes, endpoint, os.environ.get("SLURM_JOB_ID", "aiayn"))
    log.info("relaunching under torchrun: %s", " ".join(command))
    forwarded: list[int] = []
    children: list[subprocess.Popen] = []

    def forward(signum, frame):
        forwarded.append(signum)
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED_SIGNALS}
    try:
        env = {"TORCH_ELASTIC_SHUTDOWN_TIMEOUT": str(SHUTDOWN_SECONDS), **os.environ}
        children.append(subprocess.Popen(command, env=env))
        for signum in forwarded:  # arrived while torchrun was being started
            children[0].send_signal(signum)
        status = children[0].wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 143 if forwarded else status


# prctl(2) option: the signal this process gets when the thread that started it dies (<linux/prctl.h>).
PR_SET_PDEATHSIG = 1


def die_with_parent() -> bool:
    """Have the kernel SIGKILL this process when the process that started it dies (Linux; returns
    whether it could be arranged). Called by each torchrun worker: torchrun starts its workers in
    sessions of their own (torch 2.13, torch/distributed/elastic/multiprocessing/subprocess_handler/
    subprocess_handler.py, ``start_new_session=True``), so a SIGKILL to the job's process group (the
    OOM killer, a killed Snakemake, ``kill -9`` of the group) ended torchrun and the relaunch parent
    but left every rank training on, without a parent, in a folder the rerun trains in. A torchrun
    that dies without passing a signal on leaves nothing to stop cleanly (its peers may be gone too):
    the newest checkpoint on disk is whole, and the rerun resumes from it."""
    if not sys.platform.startswith("linux"):
        return False
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        log.warning(
            "prctl(PR_SET_PDEATHSIG) failed (errno %d): this rank outlives a killed torchrun", ctypes.get_errno()
        )
        return False
    if os.getppid() != parent:  # the parent died before the request was made
        os.kill(os.getpid(), signal.SIGKILL)
    return True


def threads_per_rank(cpus: int | None, local_ranks: int) -> int | None:
    """Torch threads for each of ``local_ranks`` ranks sharing ``cpus`` CPUs (None: the CPUs this
    process may run on, ``os.sched_getaffinity``); at least 1. Alone with ``cpus`` None: None
    (torch's own default)."""
    if local_ranks <= 1:
        return cpus
    total = cpus if cpus else len(os.sched_getaffinity(0))
    return max(1, total // local_ranks)


# What a collective raises in a rank whose peer's process ended (killed, out of memory, its node gone):
# gloo's TCP pairs fail with "Read error <peer>: Connection reset by peer", "Connection closed by peer
# <peer>", "writev <peer>: Broken pipe" or "Socket closed <peer>" (facebookincubator/gloo at 01e2c266,
# gloo/transport/tcp/pair.cc), which torch raises as RuntimeError.
PEER_GONE = re.compile(r"Connection reset by peer|Connection closed by peer|Broken pipe|Socket (unexpectedly )?closed")


class RankLost(ConnectionError):
    """Another rank of the run went away mid-training: not a bug of this rank, and resumable."""


def rank_lost(error: BaseException, world_size: int, checkpoints: list[tuple[int, object]]) -> RankLost | None:
    """The user's error for ``error`` when it says a peer rank's process is gone (:data:`PEER_GONE`) in a
    run of ``world_size`` ranks, naming the newest of ``checkpoints`` ((step, path), oldest first) to
    resume from; None for any other error."""
    if world_size < 2 or not isinstance(error, RuntimeError) or not PEER_GONE.search(str(error)):
        return None
    cause = first_line(error, limit=None)
    resume = (
        f"run the same command again to resume from {checkpoints[-1][1]} (step {checkpoints[-1][0]})"
        if checkpoints
        else "run the same command again to start over (no checkpoint was written yet)"
    )
    return RankLost(
        f"lost another rank of this {world_size}-rank training ({cause}): a rank's process, its "
        f"node or the network between them went away; where that rank's own error (in this log or "
        f"its node's) names a cause, mend that, then {resume}"
    )


@dataclass(frozen=True)
class DistEnv:
    """Where this process trains: its rank among ``world_size`` and its device."""

    rank: int
    world_size: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def init_from_environment(gpus: int) -> DistEnv:
    """Join the torchrun process group (NCCL on GPU, gloo on CPU) or train alone.

    Alone: ``cuda`` when ``gpus >= 1``, else the CPU. With ``gpus >= 1`` and no usable GPU this is an
    error (:func:`check_cuda`), never a silent run on the CPU.
    """
    if "LOCAL_RANK" in os.environ and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        local = int(os.environ["LOCAL_RANK"])
        check_cuda(gpus, local)
        if gpus >= 1:
            torch.cuda.set_device(local)
        dist.init_process_group("nccl" if gpus >= 1 else "gloo", timeout=PROCESS_GROUP_TIMEOUT)
        device = torch.device("cuda", local) if gpus >= 1 else torch.device("cpu")
        return DistEnv(dist.get_rank(), dist.get_world_size(), device)
    if dist.is_available() and dist.is_initialized():
        return DistEnv(dist.get_rank(), dist.get_world_size(), torch.device("cpu"))
    check_cuda(gpus)
    return DistEnv(0, 1, torch.device("cuda", 0) if gpus >= 1 else torch.device("cpu"))


def wrap_model(
    model: nn.Module, env: DistEnv, compile: bool, mode: str = "default"
) -> tuple[nn.Module | CompiledStep, nn.Module | None]:
    """(the module to call, the DDP wrapper or None): DDP first, then compiled
    (:class:`aiayn.train.compiled.CompiledStep`: one graph for every batch shape, in ``mode``).

    Compiling the DDP module lets the compiler split graphs at gradient buckets (the order PyTorch
    documents); ``broadcast_buffers=False`` because the only buffers are sinusoid tables, which each
    rank grows on its own when a longer batch comes (broadcasting them would also cost a collective
    per forward pass). ``gradient_as_bucket_view``: the gradients are views into DDP's all-reduce
    buckets, not a second copy of them (a copy fewer per step, the model's gradient size less memory;
    ``optimizer.zero_grad(set_to_none=True)`` and the in-place scaling of :mod:`aiayn.train.step`
    keep working on views, torch 2.13 ``torch/nn/parallel/distributed.py``).
    """
    wrapped, ddp = model, None
    if env.world_size > 1:
        device_ids = [env.device.index] if env.device.type == "cuda" else None
        wrapped = ddp = nn.parallel.DistributedDataParallel(
            model, device_ids=device_ids, broadcast_buffers=False, gradient_as_bucket_view=True
        )
    if compile:
        wrapped = CompiledStep(wrapped, mode)
    return wrapped, ddp
