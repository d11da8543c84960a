"""Training metrics: ``log.csv`` rows and TensorBoard scalars (when TensorBoard is installed)."""

from __future__ import annotations

import csv
import logging
from pathlib import Path

import psutil
import torch

from aiayn.io import atomic_output

COLUMNS = ("step", "lr", "loss", "nll", "grad_norm", "tokens_per_s", "mfu", "elapsed", "dev_ppl", "rss_mb",
           "gpu_peak_mb")
log = logging.getLogger(__name__)


class MetricsLog:
    """Append rows to ``<out_dir>/log.csv``; on resume, rows after the resumed step are dropped first
    (a killed run may have logged steps that the resumed run repeats)."""

    def __init__(self, out_dir: Path, resume_step: int = 0):
        self.path = Path(out_dir) / "log.csv"
        rows = []
        if self.path.exists() and resume_step > 0:
            with open(self.path, encoding="utf-8", newline="") as handle:
                rows = [r for r in csv.DictReader(handle)
                        if r.get("step", "").isdigit() and int(r["step"]) <= resume_step]
        with atomic_output(self.path) as handle:
            writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n", extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
        self.tensorboard = _tensorboard_writer(Path(out_dir) / "tensorboard")

    def write(self, row: dict) -> None:
        """Append one row (keys of :data:`COLUMNS`; None leaves a cell empty) and its TensorBoard scalars."""
        cells = {key: "" if row.get(key) is None else _format(row[key]) for key in COLUMNS}
        with open(self.path, "a", encoding="utf-8", newline="") as handle:
            csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n").writerow(cells)
        self.scalars(row["step"], {k: v for k, v in row.items() if k != "step" and v is not None}, "train")

    def dev(self, step: int, ppl: float) -> None:
        """A row holding only the step and its dev perplexity (the other cells stay empty)."""
        with open(self.path, "a", encoding="utf-8", newline="") as handle:
            csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n").writerow(
                {key: "" for key in COLUMNS} | {"step": str(step), "dev_ppl": _format(ppl)})
        self.scalars(step, {"ppl": ppl}, "dev")

    def scalars(self, step: int, values: dict, prefix: str) -> None:
        if self.tensorboard is None:
            return
        for key, value in values.items():
            self.tensorboard.add_scalar(f"{prefix}/{key}", value, step)
        self.tensorboard.flush()

    def close(self) -> None:
        if self.tensorboard is not None:
            self.tensorboard.close()


def memory_mb(device: torch.device) -> dict:
    """``rss_mb``: this process's resident memory now; ``gpu_peak_mb``: on a GPU, the most memory torch
    held allocated on it since the previous call (its peak statistic is reset), else None. MiB."""
    gpu_peak = None
    if device.type == "cuda":
        gpu_peak = torch.cuda.max_memory_allocated(device) / 2**20
        torch.cuda.reset_peak_memory_stats(device)
    return {"rss_mb": psutil.Process().memory_info().rss / 2**20, "gpu_peak_mb": gpu_peak}


def _format(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _tensorboard_writer(folder: Path):
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return None
    return SummaryWriter(str(folder))


def progress_line(step: int, total: int, tokens_per_s: float, loss: float, lr: float, seconds_per_step: float) -> str:
    """The progress line logged every ``train.log_every_steps`` steps (the rule's log and the console):
    ``step 200/1000 (20.0%) | 5210 tokens/s | loss 6.1234 | lr 3.50e-04 | ETA 0:12:40``, where the ETA is
    ``(total - step) x seconds_per_step`` (the mean over the steps since the last line)."""
    remaining = max(total - step, 0) * seconds_per_step
    eta = f"{int(remaining // 3600)}:{int(remaining % 3600 // 60):02d}:{int(remaining % 60):02d}"
    return (f"step {step}/{total} ({100.0 * step / total:.1f}%) | {tokens_per_s:.0f} tokens/s | loss {loss:.4f} | "
            f"lr {lr:.2e} | ETA {eta}")

