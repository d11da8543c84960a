"""Training metrics: the run's counters (:class:`Progress`), the sums of a log window (:class:`Window`),
``log.csv`` rows and TensorBoard scalars (when TensorBoard is installed)."""

from __future__ import annotations

import csv
import dataclasses
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import torch

from aiayn.io import atomic_output
from aiayn.paths import TrainPaths

COLUMNS = (
    "step",
    "lr",
    "loss",
    "nll",
    "grad_norm",
    "tokens_per_s",
    "mfu",
    "elapsed",
    "dev_ppl",
    "rss_mb",
    "gpu_peak_mb",
)
log = logging.getLogger(__name__)


@dataclass
class Progress:
    """Counters that travel in checkpoints: steps, wall time and tokens over all runs."""

    step: int = 0
    wall_seconds: float = 0.0
    tokens_src: int = 0
    tokens_tgt: int = 0
    skipped_steps: int = 0
    train_loss: float | None = None
    dev_ppl: float | None = None

    def summary(self, flops_per_token: float) -> dict:
        """The counters as ``summary.json`` names them, with the training FLOPs they imply."""
        return {
            "steps": self.step,
            "wall_seconds": self.wall_seconds,
            "tokens_src": self.tokens_src,
            "tokens_tgt": self.tokens_tgt,
            "flops_per_token": flops_per_token,
            "train_flops": flops_per_token * self.tokens_tgt,
            "skipped_steps": self.skipped_steps,
            "final_train_loss": self.train_loss,
            "final_dev_ppl": self.dev_ppl,
        }


@dataclass
class Window:
    """Sums over the steps since the last ``log.csv`` row."""

    loss: float = 0.0
    nll: float = 0.0
    tokens: float = 0.0
    steps: int = 0
    timed_tokens: float = 0.0  # tokens since ``start`` in this process (throughput), not checkpointed
    start: float = dataclasses.field(default_factory=time.perf_counter)  # when the window's first step began

    def add(self, result) -> "Window":
        """Add one step's :class:`aiayn.train.step.StepResult`; returns the window."""
        self.loss, self.nll = self.loss + result.loss, self.nll + result.nll
        self.tokens, self.steps = self.tokens + result.tgt_tokens, self.steps + 1
        self.timed_tokens += result.tgt_tokens
        return self

    def sums(self) -> dict:
        """What a checkpoint keeps, so that a resumed run logs the same rows."""
        return {"loss": self.loss, "nll": self.nll, "tokens": self.tokens, "steps": self.steps}


class MetricsLog:
    """Append rows to ``<out_dir>/log.csv``; on resume, rows after the resumed step are dropped first
    (a killed run may have logged steps that the resumed run repeats)."""

    def __init__(self, out_dir: Path, resume_step: int = 0):
        self.path = Path(TrainPaths(str(out_dir)).log_csv)
        rows = []
        if self.path.exists() and resume_step > 0:
            with open(self.path, encoding="utf-8", newline="") as handle:
                rows = [
                    r for r in csv.DictReader(handle) if r.get("step", "").isdigit() and int(r["step"]) <= resume_step
                ]
        with atomic_output(self.path) as handle:
            writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n", extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
        self.tensorboard = _tensorboard_writer(Path(out_dir) / "tensorboard")

    def write_window(self, window: Window, result, train_steps: int, elapsed: float, mfu, device) -> float:
        """The row of the log window ending at ``result`` (a :class:`aiayn.train.step.StepResult`) and its
        progress line; returns the window's train loss. Throughput is over the time the window's steps took
        to queue (the host runs at most one step ahead of the device, so over a window this is the device's
        pace); ``mfu(tokens_per_s)`` gives its model FLOPs utilization."""
        seconds = result.queued_at - window.start
        tokens_per_s = window.timed_tokens / seconds if seconds > 0 else 0.0
        loss = window.loss / max(window.tokens, 1.0)
        self.write(
            {
                "step": result.step,
                "lr": result.lr,
                "loss": loss,
                "nll": window.nll / max(window.tokens, 1.0),
                "grad_norm": result.grad_norm,
                "tokens_per_s": tokens_per_s,
                "mfu": mfu(tokens_per_s),
                "elapsed": elapsed,
                **memory_mb(device),
            }
        )
        log.info(
            "%s", progress_line(result.step, train_steps, tokens_per_s, loss, result.lr, seconds / max(window.steps, 1))
        )
        return loss

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
                {key: "" for key in COLUMNS} | {"step": str(step), "dev_ppl": _format(ppl)}
            )
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
    return (
        f"step {step}/{total} ({100.0 * step / total:.1f}%) | {tokens_per_s:.0f} tokens/s | loss {loss:.4f} | "
        f"lr {lr:.2e} | ETA {eta}"
    )
