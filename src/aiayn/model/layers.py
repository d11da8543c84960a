"""Encoder and decoder layers and the position-wise FFN (paper sections 3.1, 3.3)."""

from __future__ import annotations

from torch import Tensor, nn

from aiayn.model.attention import MultiHeadAttention
from aiayn.model.cache import DecoderCache
from aiayn.model.functional import Linear, dropout
from aiayn.options import ModelConfig


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W1 + b1) W2 + b2 (section 3.3); ``relu_dropout`` on the hidden layer
    (tensor2tensor's ``relu_dropout``, 0.0 in ``transformer_base``: ``models/transformer.py`` at 3d9c62f2).

    Initialisation: :mod:`aiayn.model.init`.
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.w1, self.w2 = Linear(cfg.d_model, cfg.d_ff), Linear(cfg.d_ff, cfg.d_model)
        self.relu_dropout = cfg.relu_dropout

    def forward(self, x: Tensor) -> Tensor:  # (B, T, d_model) -> (B, T, d_model)
        h = dropout(self.w1(x, relu=True), self.relu_dropout, self.training)  # (B, T, d_ff)
        return self.w2(h)


class Residual(nn.Module):
    """One sub-layer's residual connection and layer normalization.

    post (paper, section 5.4): LayerNorm(x + Dropout(Sublayer(x)));
    pre  (later variant):      x + Dropout(Sublayer(LayerNorm(x))).
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.pre = cfg.norm == "pre"
        self.dropout = cfg.dropout

    def inner(self, x: Tensor) -> Tensor:
        """The sub-layer's input: LayerNorm(x) in pre-norm, x in post-norm."""
        return self.norm(x) if self.pre else x

    def outer(self, x: Tensor, y: Tensor) -> Tensor:
        """Combine the residual x with the sub-layer output y (both (B, T, d_model))."""
        out = x + dropout(y, self.dropout, self.training)
        return out if self.pre else self.norm(out)


class EncoderLayer(nn.Module):
    """Self-attention then FFN, each wrapped in :class:`Residual` (section 3.1)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.attn = MultiHeadAttention(
            cfg.d_model, cfg.n_heads, cfg.d_k, cfg.d_v, cfg.attention_dropout, True, cfg.attention_bias
        )
        self.ffn = FeedForward(cfg)
        self.res_attn, self.res_ffn = Residual(cfg), Residual(cfg)

    def forward(self, x: Tensor, mask: Tensor | None) -> Tensor:
        """x (B, S, d_model); mask (B, 1, 1, S) bool, True at real (non-pad) keys, or None."""
        q, k, v = self.attn.project_self(self.res_attn.inner(x))
        x = self.res_attn.outer(x, self.attn.attend(q, k, v, mask))
        return self.res_ffn.outer(x, self.ffn(self.res_ffn.inner(x)))

    def attention_probabilities(self, x: Tensor, mask: Tensor | None) -> Tensor:
        """The self-attention weights this layer gives its input x (B, S, d_model): (B, h, S, S)."""
        q, k, _ = self.attn.project_self(self.res_attn.inner(x))
        return self.attn.probabilities(q, k, mask)


class DecoderLayer(nn.Module):
    """Masked self-attention, encoder-decoder attention, FFN, each wrapped in :class:`Residual` (3.1)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(
            cfg.d_model, cfg.n_heads, cfg.d_k, cfg.d_v, cfg.attention_dropout, True, cfg.attention_bias
        )
        self.cross_attn = MultiHeadAttention(
            cfg.d_model, cfg.n_heads, cfg.d_k, cfg.d_v, cfg.attention_dropout, False, cfg.attention_bias
        )
        self.ffn = FeedForward(cfg)
        self.res_self, self.res_cross, self.res_ffn = Residual(cfg), Residual(cfg), Residual(cfg)

    def forward(
        self,
        x: Tensor,
        memory_kv: tuple[Tensor, Tensor],
        mask: Tensor | None,
        cache: DecoderCache | None = None,
        layer: int = 0,
    ) -> Tensor:
        """x (N, T, d_model); memory_kv: keys (B, h, S, d_k), values (B, h, S, d_v); mask (B, 1, 1, S) or None.

        Without a cache, N = B and self-attention is causal over the T positions of x. With a cache,
        x holds the newest position only (T = 1) of N = B K rows (K = ``cache.beam_size``): each row
        attends to its cached positions plus itself, and the K rows of a sentence query the
        sentence's one memory together, as K query positions.
        """
        q, k, v = self.self_attn.project_self(self.res_self.inner(x))
        if cache is not None:
            k, v = cache.append(layer, k, v)  # (N, h, t+1, d_k), (N, h, t+1, d_v)
        y = self.self_attn.attend(q, k, v, causal=cache is None)  # a Python bool, also under torch.compile
        x = self.res_self.outer(x, y)
        h = self.res_cross.inner(x)
        if cache is not None and cache.beam_size > 1:
            h = h.reshape(-1, cache.beam_size, h.shape[-1])  # (B, K, d_model): T = 1
        y = self.cross_attn.attend(self.cross_attn.cross_query(h), *memory_kv, mask)
        x = self.res_cross.outer(x, y.reshape(x.shape))
        return self.res_ffn.outer(x, self.ffn(self.res_ffn.inner(x)))
