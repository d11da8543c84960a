"""Model hyperparameters: the keys of ``config.yaml`` ``defaults.model`` (paper section 3, Table 3)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

from aiayn.settings import check_known_keys

INIT_SCHEMES = ("t2t", "xavier", "fairseq")  # aiayn.model.init.SCHEMES


@dataclass(frozen=True)
class ModelConfig:
    """Transformer hyperparameters; defaults are the paper's base model (Table 3, row "base").

    ``share_embeddings``: source and target embeddings are one matrix; ``share_softmax``: the
    pre-softmax projection is the target embedding matrix (both: the paper, section 3.4).
    ``d_k`` and ``d_v`` are per-head sizes independent of ``d_model / n_heads`` (Table 3 rows A, B vary
    them), so the projections are ``d_model -> n_heads * d_k`` and ``n_heads * d_v -> d_model``.
    ``init`` names how parameters start (:mod:`aiayn.model.init`; the paper states none);
    ``attention_bias`` adds biases to the attention projections, which the paper's equations lack.
    """

    n_layers: int = 6
    d_model: int = 512
    d_ff: int = 2048
    n_heads: int = 8
    d_k: int = 64
    d_v: int = 64
    dropout: float = 0.1
    attention_dropout: float = 0.0
    relu_dropout: float = 0.0
    positional: str = "sinusoid"
    max_positions: int = 1024
    norm: str = "post"
    layer_norm_eps: float = 1e-6
    share_embeddings: bool = True
    share_softmax: bool = True
    init: str = "t2t"  # aiayn.model.init: the paper states none; its code's scheme
    attention_bias: bool = False

    def __post_init__(self) -> None:
        for key in ("n_layers", "d_model", "d_ff", "n_heads", "d_k", "d_v", "max_positions"):
            if int(getattr(self, key)) < 1:
                raise ValueError(f"model.{key} must be a positive integer, got {getattr(self, key)!r}")
        for key in ("dropout", "attention_dropout", "relu_dropout"):
            if not 0.0 <= float(getattr(self, key)) < 1.0:
                raise ValueError(f"model.{key} must be in [0, 1), got {getattr(self, key)!r}")
        if self.positional not in ("sinusoid", "learned"):
            raise ValueError(f"model.positional must be 'sinusoid' or 'learned', got {self.positional!r}")
        if self.norm not in ("post", "pre"):
            raise ValueError(f"model.norm must be 'post' or 'pre', got {self.norm!r}")
        if self.init not in INIT_SCHEMES:
            raise ValueError(f"model.init must be one of {', '.join(INIT_SCHEMES)}, got {self.init!r}")
        if self.positional == "sinusoid" and self.d_model % 2:
            raise ValueError(f"model.d_model must be even for sinusoidal positions, got {self.d_model}")

    @property
    def position_limit(self) -> int | None:
        """The most positions a sequence (with its eos or bos) may have: ``max_positions`` with learned
        positions, None (no limit) with sinusoids, which extend as far as needed."""
        return self.max_positions if self.positional == "learned" else None

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "ModelConfig":
        """Build from a settings ``model`` section; an unknown key is an error naming it."""
        check_known_keys(cls, values, "model")
        return cls(**dict(values))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
