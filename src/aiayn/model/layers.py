"""Encoder and decoder layers, position-wise FFN and positional encodings (paper sections 3.1, 3.3, 3.5)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from aiayn.model.attention import MultiHeadAttention
from aiayn.model.cache import DecoderCache
from aiayn.model.config import ModelConfig


def sinusoid_table(n_positions: int, d_model: int) -> Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)).

    Returns (n_positions, d_model) float32, sines and cosines interleaved as in the paper (section 3.5).
    """
    pos = torch.arange(n_positions, dtype=torch.float64).unsqueeze(1)  # (P, 1)
    inv = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    table = torch.zeros(n_positions, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(pos * inv)
    table[:, 1::2] = torch.cos(pos * inv)
    return table.float()


class PositionalEncoding(nn.Module):
    """Positions 0.. added to the scaled embeddings: fixed sinusoids, or learned (Table 3 row E).

    Learned positions are an embedding of ``max_positions`` rows (initialised by :mod:`aiayn.model.init`);
    sinusoids have no limit (the table grows on demand and is not saved in checkpoints).
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.kind, self.d_model, self.max_positions = cfg.positional, cfg.d_model, cfg.max_positions
        if self.kind == "learned":
            self.table = nn.Embedding(cfg.max_positions, cfg.d_model)
        else:
            self.register_buffer("sinusoids", sinusoid_table(cfg.max_positions, cfg.d_model), persistent=False)

    def forward(self, start: int, length: int) -> Tensor:
        """Encodings of positions start .. start+length-1: (length, d_model)."""
        end = start + length
        if self.kind == "learned":
            if end > self.max_positions:
                raise ValueError(f"position {end - 1} exceeds model.max_positions={self.max_positions}")
            return self.table.weight[start:end]
        if end > self.sinusoids.shape[0] and self.sinusoids.device.type != "meta":
            size = max(end, 2 * self.sinusoids.shape[0])
            self.sinusoids = sinusoid_table(size, self.d_model).to(self.sinusoids.device)
        return self.sinusoids[start:end]


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W1 + b1) W2 + b2 (section 3.3); ``relu_dropout`` on the hidden layer (t2t knob).

    Initialisation: :mod:`aiayn.model.init`.
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.w1, self.w2 = nn.Linear(cfg.d_model, cfg.d_ff), nn.Linear(cfg.d_ff, cfg.d_model)
        self.relu_dropout = cfg.relu_dropout

    def forward(self, x: Tensor) -> Tensor:  # (B, T, d_model) -> (B, T, d_model)
        h = F.dropout(F.relu(self.w1(x)), self.relu_dropout, self.training)  # (B, T, d_ff)
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
        out = x + F.dropout(y, self.dropout, self.training)
        return out if self.pre else self.norm(out)


class EncoderLayer(nn.Module):
    """Self-attention then FFN, each wrapped in :class:`Residual` (section 3.1)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.d_k, cfg.d_v, cfg.attention_dropout, True,
                                       cfg.attention_bias)
        self.ffn = FeedForward(cfg)
        self.res_attn, self.res_ffn = Residual(cfg), Residual(cfg)

    def forward(self, x: Tensor, mask: Tensor | None) -> Tensor:
        """x (B, S, d_model); mask (B, 1, 1, S) bool, True at real (non-pad) keys, or None."""
        q, k, v = self.attn.project_self(self.res_attn.inner(x))
        x = self.res_attn.outer(x, self.attn.attend(q, k, v, mask))
        return self.res_ffn.outer(x, self.ffn(self.res_ffn.inner(x)))


class DecoderLayer(nn.Module):
    """Masked self-attention, encoder-decoder attention, FFN, each wrapped in :class:`Residual` (3.1)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.d_k, cfg.d_v, cfg.attention_dropout, True,
                                            cfg.attention_bias)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.d_k, cfg.d_v, cfg.attention_dropout, False,
                                             cfg.attention_bias)
        self.ffn = FeedForward(cfg)
        self.res_self, self.res_cross, self.res_ffn = Residual(cfg), Residual(cfg), Residual(cfg)

    def forward(self, x: Tensor, memory_kv: tuple[Tensor, Tensor], mask: Tensor | None,
                cache: DecoderCache | None = None, layer: int = 0) -> Tensor:
        """x (B, T, d_model); memory_kv: keys (B, h, S, d_k), values (B, h, S, d_v); mask (B, 1, 1, S).

        Without a cache, self-attention is causal over the T positions of x. With a cache, x holds
        the newest position only (T = 1) and attends to every cached position plus itself.
        """
        q, k, v = self.self_attn.project_self(self.res_self.inner(x))
        if cache is not None:
            k, v = cache.append(layer, k, v)  # (B, h, t+1, d_k), (B, h, t+1, d_v)
        y = self.self_attn.attend(q, k, v, causal=cache is None and x.shape[1] > 1)
        x = self.res_self.outer(x, y)
        q = self.cross_attn.cross_query(self.res_cross.inner(x))
        x = self.res_cross.outer(x, self.cross_attn.attend(q, *memory_kv, mask))
        return self.res_ffn.outer(x, self.ffn(self.res_ffn.inner(x)))
