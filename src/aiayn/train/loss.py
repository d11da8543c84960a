"""Label-smoothed cross entropy (paper section 5.4, as tensor2tensor)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
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


def label_smoothed_loss(logits: Tensor, target: Tensor, smoothing: float, pad_id: int = 0) -> tuple[Tensor, Tensor, Tensor]:
    """Summed label-smoothed cross entropy, summed NLL and the number of non-pad targets.

    logits (B, T, V) (any float dtype; the softmax runs in float32), target (B, T) ids.
    loss = -sum_tokens sum_c q(c) log p(c), with q of :func:`smoothed_targets`, computed without
    materialising q: -(1 - eps) log p(gold) - eps / (V - 2) (sum_c log p(c) - log p(gold) - log p(pad)).
    nll = -sum_tokens log p(gold). Padding targets are ignored. Returns float32 scalars (loss, nll, n).
    """
    vocab = logits.shape[-1]
    lprobs = F.log_softmax(logits.float(), dim=-1).view(-1, vocab)  # (N, V)
    target = target.reshape(-1)
    keep = target.ne(pad_id)
    gold = lprobs.gather(1, target.unsqueeze(1)).squeeze(1)  # (N,)
    nll = -(gold * keep).sum()
    if smoothing > 0.0:
        others = lprobs.sum(dim=1) - gold - lprobs[:, pad_id]  # (N,)
        smooth = -(others * keep).sum()
        loss = (1.0 - smoothing) * nll + smoothing / (vocab - 2) * smooth
    else:
        loss = nll
    return loss, nll, keep.sum()
