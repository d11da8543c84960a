"""How many tokens one forward pass may hold on a GPU, where ``train.tokens_per_pass`` is null: measured.

Two probe passes (forward and backward of the training loss, eager, of synthetic pairs as long as a
training pair may be) of :data:`PROBE_TOKENS` tokens a side give the peak memory's fixed part and
its growth per token; the pass that fits is the one whose predicted peak, with Adam's two moments
(not allocated before the first update) and DDP's gradient buckets, stays within :data:`HEADROOM` of
what the device has for this process. The eager pass keeps more activations than the compiled one,
so on a compiled run the estimate errs on the safe side. A pass that still runs out of memory ends
the job with the line that names ``train.tokens_per_pass`` (``python -m aiayn.train``); a smaller
value resumes it.
"""

from __future__ import annotations

import logging
from typing import Callable

import torch

log = logging.getLogger(__name__)

# Share of the device's memory a pass may plan to use: the caching allocator's fragmentation, cuBLAS
# workspaces, NCCL's buffers and the dev evaluation live in the rest.
HEADROOM = 0.85
PROBE_TOKENS = (2048, 4096)


def tokens_that_fit(
    peak_bytes: Callable[[int], int], available: int, state_bytes: int, probes: tuple[int, int] = PROBE_TOKENS
) -> int:
    """The most tokens a side whose pass fits in ``HEADROOM * available`` bytes, beside ``state_bytes``
    allocated later (optimizer moments, gradient buckets): extrapolated linearly from
    ``peak_bytes(tokens)`` at the two ``probes``. At least the smaller probe."""
    small, large = probes
    low, high = peak_bytes(small), peak_bytes(large)
    per_token = (high - low) / (large - small)
    fixed = low - per_token * small
    room = HEADROOM * available - state_bytes - fixed
    if per_token <= 0:  # no measurable growth (a device without memory statistics)
        return 10**9
    return max(small, int(room / per_token) // 1000 * 1000)


def device_bytes(device: torch.device) -> int:
    """Bytes this process may use on ``device``: what is free there plus what torch's allocator holds."""
    free, _ = torch.cuda.mem_get_info(device)
    return int(free) + int(torch.cuda.memory_reserved(device))


def probe_peak(run_pass: Callable[[int], None], device: torch.device) -> Callable[[int], int]:
    """``peak_bytes(tokens)`` of :func:`tokens_that_fit` for a pass ``run_pass(tokens)`` on a GPU."""

    def peak_bytes(tokens: int) -> int:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        run_pass(tokens)
        torch.cuda.synchronize(device)
        return int(torch.cuda.max_memory_allocated(device))

    return peak_bytes
