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
    cpu_matmul: str = "onednn"
    gpus: int = 1
    cpu_ranks: int = 1
    nodes: int = 1
    rendezvous: str = ""
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
        if self.cpu_matmul not in ("onednn", "mkl"):
            raise ValueError(f"train.cpu_matmul must be 'onednn' or 'mkl', got {self.cpu_matmul!r}")
        if self.nan_policy not in ("skip", "stop"):
            raise ValueError(f"train.nan_policy must be 'skip' or 'stop', got {self.nan_policy!r}")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"train.label_smoothing must be in [0, 1), got {self.label_smoothing}")
        for key in ("train_steps", "max_tokens", "max_tokens_per_batch", "warmup_steps", "keep_checkpoints",
                    "log_every_steps", "cpu_ranks", "nodes"):
            if getattr(self, key) < 1:
                raise ValueError(f"train.{key} must be at least 1, got {getattr(self, key)}")

        if self.gpus < 0:
            raise ValueError(f"train.gpus must be at least 0, got {self.gpus}")
        if self.gpus and self.cpu_ranks != 1:
            raise ValueError(f"train.cpu_ranks={self.cpu_ranks} needs train.gpus: 0 (with GPUs there is one "
                             f"rank per GPU), got train.gpus={self.gpus}")
        host, _, port = self.rendezvous.rpartition(":")
        if self.rendezvous and not (host and port.isdigit()):
            raise ValueError(f"train.rendezvous must be HOST:PORT (or empty), got {self.rendezvous!r}")

    @property
    def local_ranks(self) -> int:
        """Data-parallel ranks on one machine: one per GPU, or ``cpu_ranks`` gloo ranks on the CPU."""
        return self.gpus if self.gpus else self.cpu_ranks

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "TrainConfig":
        """Build from a settings ``train`` section; an unknown key is an error naming it."""
        check_known_keys(cls, values, "train")
        values = dict(values)
        if "adam_betas" in values:
            values["adam_betas"] = tuple(values["adam_betas"])
        return cls(**values)

    def plan(self, world_size: int) -> "StepPlan":
        """How one optimizer step of ``max_tokens`` is shared by ``world_size`` data-parallel ranks.

        passes = ceil(max_tokens / (W * max_tokens_per_batch)) forward passes per rank, each of a
        batch budget of round(max_tokens / (W * passes)) tokens per side, so a step holds the same
        number of tokens (to within one pass) on 1 GPU or 16: the paper's 25,000 on its 8 GPUs were
        8 batches of about 3,125.
        """
        if world_size < 1:
            raise ValueError(f"world size must be at least 1, got {world_size}")
        passes = max(1, math.ceil(self.max_tokens / (world_size * self.max_tokens_per_batch)))
        per_pass = round(self.max_tokens / (world_size * passes))
        if per_pass < 1:
            raise ValueError(f"train.max_tokens={self.max_tokens} cannot be shared by {world_size} ranks")
        return StepPlan(world_size, passes, per_pass)


@dataclass(frozen=True)
class StepPlan:
    """One optimizer step: ``passes`` forward passes per rank of ``tokens_per_pass`` tokens per side."""

    world_size: int
    passes: int
    tokens_per_pass: int

    @property
    def tokens_per_step(self) -> int:
        """Padded tokens per side of the whole step: world_size * passes * tokens_per_pass."""
        return self.world_size * self.passes * self.tokens_per_pass
