"""Reference implementations the tests compare the project's code against: plain, slow, obviously right."""

from __future__ import annotations

import torch
from torch import Tensor


def smoothed_targets(target: Tensor, vocab_size: int, smoothing: float, pad_id: int = 0) -> Tensor:
    """The smoothed target distribution q: (N,) ids -> (N, V).

    q(gold) = 1 - eps; every other class except padding gets eps / (V - 2); padding gets 0. Each row
    sums to one. Rows whose target is padding are all zero (they take no part in the loss).
    """
    q = torch.full((target.numel(), vocab_size), smoothing / (vocab_size - 2), dtype=torch.float32)
    q[:, pad_id] = 0.0
    q.scatter_(1, target.reshape(-1, 1), 1.0 - smoothing)
    q[target.reshape(-1) == pad_id] = 0.0
    return q
