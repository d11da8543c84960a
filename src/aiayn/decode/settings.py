"""Averaging and decoding settings: the keys of ``config.yaml`` ``defaults.average`` and ``defaults.decode``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AverageConfig:
    """How many of the last checkpoints to average (paper section 6.1: 5 for base, 20 for big)."""

    last: int = 5


@dataclass(frozen=True)
class DecodeConfig:
    """Beam search (paper section 6.1): beam 4, length penalty alpha 0.6, max length input + 50.

    The length penalty is GNMT's, score = log P(Y|X) / ((5 + |Y|) / 6)^alpha; at most
    ``max_len_a * |X| + max_len_b`` target tokens; ``early_stop`` ends a sentence once no live hypothesis can
    beat the finished ones; ``max_sentences`` is the batch size of the decoding loop; ``precision``
    is the arithmetic of the forward passes (:mod:`aiayn.runtime.precision`: ``auto`` is bf16 autocast on
    GPUs with bf16 tensor cores, fp32 elsewhere); ``cpu_matmul``: ``onednn`` computes float32 CPU
    products through oneDNN (:mod:`aiayn.model.functional`), ``mkl`` through torch's default.
    """

    beam_size: int = 4
    length_penalty: float = 0.6
    max_len_a: float = 1.0
    max_len_b: int = 50
    early_stop: bool = True
    max_sentences: int = 128
    precision: str = "auto"
    cpu_matmul: str = "onednn"

    def __post_init__(self) -> None:
        if self.cpu_matmul not in ("onednn", "mkl"):
            raise ValueError(f"decode.cpu_matmul must be 'onednn' or 'mkl', got {self.cpu_matmul!r}")

