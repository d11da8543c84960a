"""Devices of every stage that runs a network: GPU claims on shared workstations, CUDA checks, a job's device.

Snakemake does not set CUDA_VISIBLE_DEVICES for local jobs, so two trainings on one workstation would
both pick GPU 0. When the variable is unset, a training (and a decoding) claims the GPUs it needs
through exclusive ``flock`` locks on ``<lock_dir>/gpu<i>.lock``, exports CUDA_VISIBLE_DEVICES before
CUDA is touched, and holds the locks until it exits (the kernel releases them even when the process
is killed). The lock directory is per user (:func:`default_lock_dir`), so that one user's directory
never blocks another's jobs. A job that asks for GPUs never falls back to the CPU: it fails, naming why.

Data parallelism (process groups, torchrun, DDP) is training's alone and lives with the trainer.
"""

from __future__ import annotations

import fcntl
import logging
import os
import tempfile
import time
from pathlib import Path

import torch

from aiayn.runtime.gpus import card_of
from aiayn.runtime.host import physical_gpu_count

log = logging.getLogger(__name__)


class GpuUnavailableError(ValueError):
    """GPUs were asked for but cannot be used; the message names the cause and the setting to change
    (a ValueError: a CLI ends with that one line, as for any bad input, :mod:`aiayn.io`)."""


def default_lock_dir() -> Path:
    """``<tmp>/aiayn-gpu-locks-<uid>``: GPU claim locks of this user's jobs."""
    return Path(tempfile.gettempdir()) / f"aiayn-gpu-locks-{os.getuid()}"


class GpuClaim:
    """Exclusive locks on ``n`` of ``count`` GPUs; the lowest free indices win."""

    def __init__(self, lock_dir: Path | None = None):
        self.lock_dir = Path(lock_dir) if lock_dir is not None else default_lock_dir()
        self.handles: dict[int, object] = {}

    def try_claim(self, n: int, count: int) -> list[int] | None:
        """Claim ``n`` GPUs without waiting; returns their indices, or None (holding nothing) if too few are free."""
        self.lock_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
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
            raise GpuUnavailableError(f"train.gpus={n} but this machine has {count} GPU(s)")
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


def claim_gpus_if_shared(n: int, lock_dir: Path | None = None) -> GpuClaim | None:
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


def check_cuda(gpus: int, index: int = 0, what: str | None = None) -> None:
    """Raise :class:`GpuUnavailableError` unless ``gpus`` GPUs, and GPU ``index``, can be used.

    ``what`` names the request in the message (default ``train.gpus=<gpus>``).
    """
    if gpus < 1:
        return
    what = what or f"train.gpus={gpus}"
    if not torch.cuda.is_available():
        if torch.version.cuda is None:
            cause = f"this torch ({torch.__version__}) was built without CUDA"
        else:
            visible = os.environ.get("CUDA_VISIBLE_DEVICES")
            cause = (
                "CUDA is not usable (no driver, or no GPU visible"
                + ("" if visible is None else f": CUDA_VISIBLE_DEVICES={visible!r}")
                + ")"
            )
        raise GpuUnavailableError(f"{what} but {cause}; set train.gpus: 0 (or --device cpu) to use the CPU")
    count = torch.cuda.device_count()
    if gpus > count:
        raise GpuUnavailableError(f"{what} but {count} GPU(s) are visible")
    if index >= count:
        raise GpuUnavailableError(f"{what} but GPU index {index} does not exist: {count} GPU(s) are visible")


def resolve_device(requested: str, lock_dir: Path | None = None) -> tuple[torch.device, GpuClaim | None]:
    """The device of a decoding or scoring job, and the GPU claim it holds (release it at the end).

    ``auto``: one GPU when the machine has one and CUDA works, claimed as training claims them
    (CUDA_VISIBLE_DEVICES unset: the lowest free index), else the CPU. ``cpu``. ``cuda`` or
    ``cuda:N``: that GPU, or an error naming why it cannot be used.
    """
    if requested == "cpu":
        return torch.device("cpu"), None
    if requested == "auto":
        if physical_gpu_count() == 0 and not torch.cuda.is_available():
            return torch.device("cpu"), None
        claim = claim_gpus_if_shared(1, lock_dir)
        try:
            check_cuda(1, what="--device auto found a GPU")
        except GpuUnavailableError:
            if claim is not None:
                claim.release()
            raise
        return torch.device("cuda", 0), claim
    try:
        device = torch.device(requested)
    except RuntimeError:  # torch's own list of every device type it knows
        device = None
    if device is None or device.type != "cuda":
        raise ValueError(f"--device {requested}: use auto, cpu, cuda or cuda:N")
    check_cuda(1, device.index or 0, what=f"--device {requested}")
    return torch.device("cuda", device.index or 0), None


def device_name(device: torch.device) -> str:
    """``cpu``, or the GPU model's name in :data:`aiayn.runtime.gpus.CARDS` (``H100 SXM``, ``L40``, ...; the
    full name if the table does not have it, which then has no peak FLOP/s)."""
    if device.type != "cuda":
        return "cpu"
    full = torch.cuda.get_device_name(device)
    return card_of(full) or full
