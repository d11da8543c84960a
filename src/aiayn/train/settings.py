"""Training hyperparameters: the keys of ``config.yaml`` ``defaults.train`` (paper section 5)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from aiayn.settings import check_known_keys


@dataclass(frozen=True)
class TrainConfig:
    """Defaults are the paper's base setting (sections 5.1 to 5.4)."""

    train_steps: int = 100000
    label_smoothing: float = 0.1
    max_tokens: int = 25000
    max_tokens_per_batch: int = 12500
    adam_betas: tuple[float, float] = (0.9, 0.98)
    adam_eps: float = 1e-9
    warmup_steps: int = 4000
    lr_scale: float = 1.0
    clip_norm: float = 0.0
    weight_decay: float = 0.0
    seed: int = 1
    precision: str = "auto"
    compile: bool = False
    gpus: int = 1
    checkpoint_minutes: float = 10.0
    checkpoint_steps: int = 1400
    keep_checkpoints: int = 20
    log_every_steps: int = 100
    dev_every_steps: int = 1000
    nan_policy: str = "skip"
    threads: int | None = None

    def __post_init__(self) -> None:
        if self.precision not in ("auto", "fp32", "bf16"):
            raise ValueError(f"train.precision {self.precision!r} is not supported: use auto, fp32 or bf16 "
                             "(fp16 would need loss scaling; bf16 has fp32's range)")
        if self.nan_policy not in ("skip", "stop"):
            raise ValueError(f"train.nan_policy must be 'skip' or 'stop', got {self.nan_policy!r}")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"train.label_smoothing must be in [0, 1), got {self.label_smoothing}")
        for key in ("train_steps", "max_tokens", "max_tokens_per_batch", "warmup_steps", "keep_checkpoints",
                    "log_every_steps"):
            if getattr(self, key) < 1:
                raise ValueError(f"train.{key} must be at least 1, got {getattr(self, key)}")

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "TrainConfig":
        """Build from a settings ``train`` section; an unknown key is an error naming it."""
        check_known_keys(cls, values, "train")
        values = dict(values)
        if "adam_betas" in values:
            values["adam_betas"] = tuple(values["adam_betas"])
        return cls(**values)

    def accumulation(self, world_size: int) -> int:
        """Forward passes per rank and optimizer step: ceil(max_tokens / (world_size * max_tokens_per_batch))."""
        return max(1, math.ceil(self.max_tokens / (world_size * self.max_tokens_per_batch)))


def resolve_precision(precision: str, device_type: str) -> str:
    """What ``train.precision`` means on a device: ``auto`` is ``bf16`` on CUDA and ``fp32`` elsewhere.

    Training, dev perplexity (Table 3) and the training-cost convention (Table 2) all read it here.

    Deviation from paper: the paper trained in fp32 (tensor2tensor's default on P100s); ``auto``
    trains with bf16 autocast on GPUs (matmuls in bf16, weights, optimizer and loss in fp32), and
    Table 3's perplexity is computed in the same precision as its run trained in.
    ``train.precision: fp32`` restores the paper's arithmetic for both.
    """
    if precision == "auto":
        return "bf16" if device_type == "cuda" else "fp32"
    return precision
