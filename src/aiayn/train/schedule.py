"""Learning-rate schedule of paper section 5.3, equation 3."""

from __future__ import annotations


def learning_rate(step: int, d_model: int, warmup_steps: int, lr_scale: float = 1.0) -> float:
    """lrate = lr_scale * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5).

    Steps count from 1 (the first update uses step 1). Linear warm-up for ``warmup_steps`` steps, then
    inverse square root decay; the peak, at step = warmup_steps, is lr_scale * (d_model * warmup_steps)^-0.5.
    ``lr_scale`` is 1 in the paper.
    """
    if step < 1:
        raise ValueError(f"learning-rate steps count from 1, got {step}")
    return lr_scale * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)
