"""Devices and data parallelism: GPU claims on shared workstations, torchrun relaunch, process groups.

Snakemake does not set CUDA_VISIBLE_DEVICES for local jobs, so two trainings on one workstation would
both pick GPU 0. When the variable is unset, a training claims the GPUs it needs through exclusive
``flock`` locks on ``<lock_dir>/gpu<i>.lock``, exports CUDA_VISIBLE_DEVICES before CUDA is touched,
and holds the locks until it exits (the kernel releases them even when the process is killed).
"""

from __future__ import annotations

import fcntl
import logging
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist

DEFAULT_LOCK_DIR = Path("/tmp/aiayn-gpu-locks")
log = logging.getLogger(__name__)


def physical_gpu_count() -> int:
    """NVIDIA GPUs on this machine, counted without initialising CUDA (0 where there is no driver)."""
    proc = Path("/proc/driver/nvidia/gpus")
    if proc.is_dir():
        return len(list(proc.iterdir()))
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


class GpuClaim:
    """Exclusive locks on ``n`` of ``count`` GPUs; the lowest free indices win."""

    def __init__(self, lock_dir: Path = DEFAULT_LOCK_DIR):
        self.lock_dir = Path(lock_dir)
        self.handles: dict[int, object] = {}

    def try_claim(self, n: int, count: int) -> list[int] | None:
        """Claim ``n`` GPUs without waiting; returns their indices, or None (holding nothing) if too few are free."""
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        for i in range(count):
            if len(self.handles) == n:
                break
            handle = open(self.lock_dir / f"gpu{i}.lock", "a")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            self.handles[i] = handle
        if len(self.handles) < n:
            self.release()
            return None
        return sorted(self.handles)

    def claim(self, n: int, count: int, poll_seconds: float = 10.0) -> list[int]:
        """Claim ``n`` GPUs, waiting (and logging) while other trainings hold them."""
        if n > count:
            raise RuntimeError(f"train.gpus={n} but this machine has {count} GPU(s)")
        waited = 0.0
        while (ids := self.try_claim(n, count)) is None:
            if waited % 600 == 0:
                log.info("waiting for %d free GPU(s) of %d (locks under %s)", n, count, self.lock_dir)
            time.sleep(poll_seconds)
            waited += poll_seconds
        return ids

    def release(self) -> None:
        for handle in self.handles.values():
            handle.close()
        self.handles = {}


def claim_gpus_if_shared(n: int, lock_dir: Path = DEFAULT_LOCK_DIR) -> GpuClaim | None:
    """Claim ``n`` GPUs and export CUDA_VISIBLE_DEVICES when it is unset and there are GPUs; else None."""
    if n < 1 or "CUDA_VISIBLE_DEVICES" in os.environ or "LOCAL_RANK" in os.environ:
        return None
    count = physical_gpu_count()
    if count == 0:
        return None
    claim = GpuClaim(lock_dir)
    ids = claim.claim(n, count)
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, ids))
    log.info("claimed GPU(s) %s (CUDA_VISIBLE_DEVICES)", os.environ["CUDA_VISIBLE_DEVICES"])
    return claim


def should_relaunch(gpus: int) -> bool:
    """True in the first process of a multi-GPU training: it restarts itself under torchrun."""
    return gpus > 1 and "LOCAL_RANK" not in os.environ and torch.cuda.is_available()


def relaunch_under_torchrun(argv: list[str], nproc: int) -> int:
    """Run ``python -m aiayn.train ARGV`` as ``nproc`` torchrun workers; returns their exit status."""
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
               "-m", "aiayn.train", *argv]
    log.info("relaunching under torchrun: %s", " ".join(command))
    return subprocess.call(command)


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

    Alone: ``cuda`` when ``gpus >= 1`` and CUDA is available, else the CPU.
    """
    if "LOCAL_RANK" in os.environ and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        local = int(os.environ["LOCAL_RANK"])
        cuda = torch.cuda.is_available() and gpus >= 1
        if cuda:
            torch.cuda.set_device(local)
        dist.init_process_group("nccl" if cuda else "gloo")
        device = torch.device("cuda", local) if cuda else torch.device("cpu")
        return DistEnv(dist.get_rank(), dist.get_world_size(), device)
    if dist.is_available() and dist.is_initialized():
        return DistEnv(dist.get_rank(), dist.get_world_size(), torch.device("cpu"))
    device = torch.device("cuda") if gpus >= 1 and torch.cuda.is_available() else torch.device("cpu")
    return DistEnv(0, 1, device)


def device_name(device: torch.device) -> str:
    """``cpu``, or the GPU model as a short name (``H100``, ``A100``, ...; the full name if unknown)."""
    if device.type != "cuda":
        return "cpu"
    full = torch.cuda.get_device_name(device)
    for short in ("GH200", "H200", "H100", "A100", "A10G", "A40", "L40S", "L4", "V100", "P100", "T4", "K80", "K40", "M40"):
        if short in full:
            return short
    return full


# Dense bf16 tensor-core peak FLOP/s per GPU (vendor data sheets), for the MFU column.
PEAK_BF16_FLOPS = {"H200": 989e12, "H100": 989e12, "GH200": 989e12, "A100": 312e12, "L40S": 362e12,
                   "A40": 150e12, "A10G": 70e12, "L4": 121e12}
