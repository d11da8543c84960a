"""The optimizer step without host synchronisation, and its statistics read back one step late.

A step leaves everything on the device: the summed loss, NLL and token counts of its forward
passes, the flags that ranks must agree on (a stop signal, a checkpoint request) all-reduced in the
same collective, the gradient scaled by the step's target-token count, its norm, and whether the
step was finite. Adam is told through ``found_inf`` (fused Adam skips the whole update, its step
count included, when it is 1), so nothing is read on the host to decide. The host copies each step's
statistics into pinned memory asynchronously and reads them one step later, when the GPU is long
done with them: the host never waits for the GPU, and every rank reads the same values at the same
loop iteration, so all ranks take the same decisions (stop, save, give up) at the same step.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass

import torch
from torch import Tensor

log = logging.getLogger(__name__)
MAX_CONSECUTIVE_SKIPS = 100

# The statistics one step all-reduces, in this order, and where each sits in the step's tensor.
STATS = ("loss", "nll", "tgt_tokens", "src_tokens", "stop", "save")
LOSS, NLL, TGT_TOKENS, SRC_TOKENS, STOP, SAVE = range(len(STATS))


@dataclass(frozen=True)
class StepResult:
    """One step's statistics on the host (summed over ranks)."""

    step: int
    lr: float
    loss: float
    nll: float
    tgt_tokens: float
    src_tokens: float
    stop: bool
    save: bool
    grad_norm: float
    skipped: bool
    queued_at: float  # time.perf_counter() when the host had queued the step


def step_seed(seed: int, step: int, rank: int) -> int:
    """The torch seed of one (step, rank): dropout masks depend on nothing else, so resuming is exact."""
    return (seed * 1_000_003 + step) * 4099 + rank


def flags(stop: bool, save: bool, device: torch.device) -> Tensor:
    """This rank's (stop, save) requests as a float64 (2,) tensor, made on the device (no copy from the host)."""
    out = torch.zeros(2, dtype=torch.float64, device=device)
    if stop:
        out[0].fill_(1.0)
    if save:
        out[1].fill_(1.0)
    return out


def apply_update(
    params: list[Tensor],
    optimizer: torch.optim.Optimizer,
    stats: Tensor,
    world_size: int,
    clip_norm: float,
    lr: float,
    keep_grads: bool = False,
) -> tuple[Tensor, Tensor]:
    """Scale, clip and apply the gradients of one step; returns (gradient norm, skipped) as device scalars.

    stats: the all-reduced :data:`STATS`. DDP averaged the gradients of summed losses over ranks, so
    multiplying by world_size / (target tokens of the step) gives the gradient of the per-token mean.
    A step whose loss or gradient norm is not finite applies nothing (``optimizer.found_inf``).
    ``keep_grads``: the gradients are zeroed in place for the next step rather than freed: DDP's
    gradients that are views into its buckets stay views only so (``gradient_as_bucket_view``, whose
    saving "set_to_none=True" undoes every iteration: torch 2.13 ``torch/nn/parallel/distributed.py``).
    """
    grads = [p.grad for p in params]
    scale = (world_size / stats[TGT_TOKENS].clamp(min=1.0)).to(grads[0].dtype)
    torch._foreach_mul_(grads, scale)
    grad_norm = torch.nn.utils.get_total_norm(grads)
    skipped = ~(torch.isfinite(stats[LOSS]) & torch.isfinite(grad_norm))
    if clip_norm > 0:
        torch.nn.utils.clip_grads_with_norm_(params, clip_norm, grad_norm)
    for group in optimizer.param_groups:
        group["lr"] = lr
    optimizer.found_inf = skipped.float()
    optimizer.step()
    optimizer.zero_grad(set_to_none=not keep_grads)
    return grad_norm, skipped


class PendingResults:
    """Steps whose statistics are on their way to the host; read once the next step is queued."""

    def __init__(self, device: torch.device):
        self.device = device
        self.queue: deque[tuple[int, float, Tensor, object, float]] = deque()

    def push(self, step: int, lr: float, stats: Tensor, grad_norm: Tensor, skipped: Tensor) -> None:
        """Start copying one step's statistics to the host (asynchronous on CUDA)."""
        values = torch.cat([stats, grad_norm.double().view(1), skipped.double().view(1)])
        event = None
        if self.device.type == "cuda":
            host = torch.empty(values.shape, dtype=values.dtype, pin_memory=True)
            host.copy_(values, non_blocking=True)
            event = torch.cuda.Event()
            event.record()
            values = host
        self.queue.append((step, lr, values, event, time.perf_counter()))

    def ready(self, lag: int = 1) -> list[StepResult]:
        """The results of all but the newest ``lag`` steps, oldest first (waiting for their copies)."""
        out = []
        while len(self.queue) > lag:
            step, lr, values, event, queued_at = self.queue.popleft()
            if event is not None:
                event.synchronize()
            loss, nll, tgt, src, stop, save, grad_norm, skipped = values.tolist()
            out.append(StepResult(step, lr, loss, nll, tgt, src, stop > 0, save > 0, grad_norm, skipped > 0, queued_at))
        return out


class NonFiniteError(ValueError):
    """A step's loss or gradient norm was not finite under ``nan_policy: stop``, or too many in a row (a
    ValueError: the message names the settings to change, and the job ends with it as with bad input)."""


class Skips:
    """``train.nan_policy`` applied to each step's result: a non-finite step (no update applied) is
    counted in ``skipped_steps``, or stops the run under ``stop`` or after ``limit`` in a row."""

    def __init__(self, nan_policy: str, limit: int = MAX_CONSECUTIVE_SKIPS):
        self.nan_policy, self.limit, self.in_a_row = nan_policy, limit, 0

    def count(self, result: StepResult, progress) -> bool:
        """Whether ``result`` was skipped (counted in ``progress.skipped_steps``); raises
        :class:`NonFiniteError` when the policy stops the run."""
        if not result.skipped:
            self.in_a_row = 0
            return False
        message = f"step {result.step}: loss {result.loss} or gradient norm {result.grad_norm} is not finite"
        if self.nan_policy == "stop":
            raise NonFiniteError(message + " (train.nan_policy: stop)")
        progress.skipped_steps += 1
        self.in_a_row += 1
        if self.in_a_row > self.limit:
            raise NonFiniteError(
                f"{message}; {self.in_a_row} steps in a row were not finite, "
                "the model has diverged (lower train.lr_scale or set train.clip_norm)"
            )
        log.warning("%s; no update applied (%d so far, train.nan_policy: skip)", message, progress.skipped_steps)
        return True
