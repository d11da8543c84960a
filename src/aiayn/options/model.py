"""Model hyperparameters: the keys of ``config.yaml`` ``defaults.model`` (paper section 3, Table 3)."""

from __future__ import annotations

from dataclasses import dataclass

from aiayn.options.core import Section, option

POSITIVE = {"minimum": 1}
PROBABILITY = {"minimum": 0.0, "exclusive_maximum": 1.0}


@dataclass(frozen=True)
class ModelConfig(Section):
    """Transformer hyperparameters; defaults are the paper's base model (Table 3, row "base").

    ``share_embeddings``: source and target embeddings are one matrix; ``share_softmax``: the
    pre-softmax projection is the target embedding matrix (both: the paper, section 3.4).
    ``d_k`` and ``d_v`` are per-head sizes independent of ``d_model / n_heads`` (Table 3 rows A, B vary
    them), so the projections are ``d_model -> n_heads * d_k`` and ``n_heads * d_v -> d_model``.
    ``init`` names how parameters start (:mod:`aiayn.model.init`; the paper states none);
    ``attention_bias`` adds biases to the attention projections, which the paper's equations lack.
    """

    SECTION = "model"

    n_layers: int = option(6, help="encoder and decoder layers, N", source="paper 3.1", **POSITIVE)
    d_model: int = option(
        512, help="width of every sublayer's output and of the embeddings", source="paper 3.1", **POSITIVE
    )
    d_ff: int = option(
        2048, help="inner width of the position-wise feed-forward network", source="paper 3.3", **POSITIVE
    )
    n_heads: int = option(8, help="attention heads, h", source="paper 3.2.2", **POSITIVE)
    d_k: int = option(64, help="query and key width per head", source="paper 3.2.2", **POSITIVE)
    d_v: int = option(64, help="value width per head", source="paper 3.2.2", **POSITIVE)
    dropout: float = option(
        0.1, help="P_drop on sublayer outputs and embedding sums", source="paper 5.4", **PROBABILITY
    )
    attention_dropout: float = option(0.0, help="dropout on attention weights (the paper has none)", **PROBABILITY)
    relu_dropout: float = option(0.0, help="dropout after the FFN's ReLU (the paper has none)", **PROBABILITY)
    positional: str = option(
        "sinusoid",
        help="positional encodings: sinusoid or learned (Table 3 row E)",
        choices=("sinusoid", "learned"),
        source="paper 3.5",
    )
    max_positions: int = option(1024, help="longest sequence a learned positional table holds", **POSITIVE)
    norm: str = option(
        "post",
        help="layer norm after (post, the paper) or before (pre) each residual sum",
        choices=("post", "pre"),
        source="paper 3.1",
    )
    layer_norm_eps: float = option(
        1e-6, help="epsilon of layer normalization", source="tensor2tensor layers/common_layers.py", exclusive_minimum=0
    )
    share_embeddings: bool = option(True, help="source and target embeddings are one matrix", source="paper 3.4")
    share_softmax: bool = option(
        True, help="the pre-softmax projection is the target embedding matrix", source="paper 3.4"
    )
    init: str = option(
        "t2t",
        help="how parameters start (aiayn.model.init); the paper states none",
        choices=("t2t", "xavier", "fairseq"),
        source="tensor2tensor 1.0 transformer_base",
    )
    attention_bias: bool = option(
        False, help="biases on the attention projections (the paper's equations have none)", source="paper 3.2.2"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.positional == "sinusoid" and self.d_model % 2:
            raise ValueError(f"model.d_model must be even for sinusoidal positions, got {self.d_model}")

    @property
    def position_limit(self) -> int | None:
        """The most positions a sequence (with its eos or bos) may have: ``max_positions`` with learned
        positions, None (no limit) with sinusoids, which extend as far as needed."""
        return self.max_positions if self.positional == "learned" else None
