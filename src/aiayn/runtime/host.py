"""What this machine's GPUs are, told without importing torch or starting CUDA: what the workflow checks
when it starts, before any job, and what a job's GPU claim counts.

A run that trains on more GPUs than a machine has fails in its training job, after every data job
before it; where the workflow itself runs the jobs (a workstation), that is known at the start, so
:func:`training_gpus_problem` is checked then (``onstart`` in ``workflow/rules/common.smk``). On a
cluster the submitting host may have no GPU at all: there it is a warning, and each training job
checks its own node (:func:`aiayn.runtime.devices.check_cuda`).
"""

from __future__ import annotations

import importlib.metadata
import subprocess
from pathlib import Path


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


def usable_gpus() -> tuple[int, str]:
    """(GPUs a job's torch can use here, what says so): none with a CPU build of torch (a version
    ending in ``+cpu``, what ``pip install torch`` gives where PyTorch's index serves one), else the
    NVIDIA GPUs the driver shows."""
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return 0, "torch is not installed"
    if version.endswith("+cpu"):
        return 0, f"torch {version} is a CPU build"
    count = physical_gpu_count()
    return count, f"torch {version}, {count} NVIDIA GPU(s) on this machine" if count else "no NVIDIA GPU or driver"


def training_gpus_problem(gpus_of_runs: dict[str, int], usable: tuple[int, str] | None = None) -> str | None:
    """What is wrong when a run (``{"task/experiment": train.gpus}``) needs more GPUs on one machine than
    :func:`usable_gpus` finds here; None when every run fits."""
    have, why = usable if usable is not None else usable_gpus()
    short = {run: gpus for run, gpus in gpus_of_runs.items() if gpus > have}
    if not short:
        return None
    most = max(short.values())
    named = ", ".join(sorted(short)[:5]) + (f" and {len(short) - 5} more" if len(short) > 5 else "")
    return (
        f"train.gpus asks for up to {most} GPU(s) a training ({named}), and this machine has {have} that "
        f"torch can use ({why}): set train.gpus: 0 to train on the CPU (an overlay's defaults.train), "
        "or install a CUDA build of torch on a machine with the GPUs"
    )
