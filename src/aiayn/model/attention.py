"""Multi-head scaled dot-product attention (paper section 3.2).

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V
    MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O,  head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

with W_i^Q, W_i^K in R^{d_model x d_k}, W_i^V in R^{d_model x d_v}, W^O in R^{h d_v x d_model}. The
attention itself runs through ``torch.nn.functional.scaled_dot_product_attention`` (fused flash or
memory-efficient kernels on GPU; not cuDNN's, :func:`aiayn.runtime.precision.avoid_cudnn_attention`),
except on a CPU without gradients for more than one query per (row, head): there it is two batched
products. In ``benchmarks/decode_speed.py`` (beam 4) these took 35-42% less time than the CPU flash
kernel for the decoder's encoder-decoder attention, where a sentence's 4 beams are 4 queries (0.37-0.49
s against 0.64-0.69 s per 500 sentences), and the same for the encoder; the decoder's self-attention,
one query per row, took 30% more time through them (0.80 s against 0.61 s) and stays with the flash
kernel.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from aiayn.model.functional import Linear


class MultiHeadAttention(nn.Module):
    """Multi-head attention with per-head sizes ``d_k`` (queries, keys) and ``d_v`` (values).

    Self-attention uses one fused projection ``qkv: d_model -> h (2 d_k + d_v)``; encoder-decoder
    attention projects queries with ``q`` and the encoder memory with ``kv`` (computed once per
    sentence when decoding incrementally). As in the paper's equations the projections have no
    biases; ``bias=True`` (``model.attention_bias``) adds them to all four, as fairseq 0.12
    (``nn.Linear`` projections in ``fairseq/modules/multihead_attention.py``) and the 2017 tensor2tensor
    code do (``models/common_attention.py`` at 3b133d05 projects with ``common_layers.conv1d``, a
    ``tf.layers.conv2d`` with its default bias, ``models/common_layers.py`` at 3d9c62f2).
    Initialisation: :mod:`aiayn.model.init`.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_k: int,
        d_v: int,
        attention_dropout: float,
        self_attention: bool,
        bias: bool = False,
    ):
        super().__init__()
        self.n_heads, self.d_k, self.d_v = n_heads, d_k, d_v
        self.self_attention = self_attention
        self.attention_dropout = attention_dropout
        qk, vv = n_heads * d_k, n_heads * d_v
        if self_attention:
            self.qkv = Linear(d_model, 2 * qk + vv, bias=bias)
        else:
            self.q = Linear(d_model, qk, bias=bias)
            self.kv = Linear(d_model, qk + vv, bias=bias)
        self.out = Linear(vv, d_model, bias=bias)

    def _heads(self, x: Tensor, size: int) -> Tensor:
        """(B, T, h * size) -> (B, h, T, size)."""
        b, t, _ = x.shape
        return x.view(b, t, self.n_heads, size).transpose(1, 2)

    def project_self(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Queries (B, h, T, d_k), keys (B, h, T, d_k), values (B, h, T, d_v) of x (B, T, d_model)."""
        qk = self.n_heads * self.d_k
        q, k, v = self.qkv(x).split([qk, qk, self.n_heads * self.d_v], dim=-1)
        return self._heads(q, self.d_k), self._heads(k, self.d_k), self._heads(v, self.d_v)

    def project_memory(self, memory: Tensor) -> tuple[Tensor, Tensor]:
        """Encoder-decoder keys (B, h, S, d_k) and values (B, h, S, d_v) of memory (B, S, d_model)."""
        k, v = self.kv(memory).split([self.n_heads * self.d_k, self.n_heads * self.d_v], dim=-1)
        return self._heads(k, self.d_k), self._heads(v, self.d_v)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, causal: bool = False) -> Tensor:
        """softmax(q k^T / sqrt(d_k)) v, heads merged and projected: (B, h, T, d_k) ... -> (B, T, d_model).

        mask: bool, broadcastable to (B, h, T, S), True where a query may attend. ``causal`` masks
        key positions after the query position (queries and keys aligned at position 0).
        """
        scale = 1.0 / math.sqrt(self.d_k)
        p = self.attention_dropout if self.training else 0.0
        if q.device.type == "cpu" and q.size(2) > 1 and not causal and not torch.is_grad_enabled():
            y = _products_attention(q, k, v, mask, scale)
        elif causal and q.is_cuda and torch.compiler.is_compiling():
            y = aligned_causal_attention(q, k, v, p, scale)
        else:
            y = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=p, is_causal=causal, scale=scale
            )  # (B, h, T, d_v)
        b, _, t, _ = y.shape
        return self.out(y.transpose(1, 2).reshape(b, t, self.n_heads * self.d_v))  # (B, T, d_model)

    def probabilities(self, q: Tensor, k: Tensor, mask: Tensor | None = None) -> Tensor:
        """softmax(q k^T / sqrt(d_k)): q (B, h, T, d_k), k (B, h, S, d_k) -> (B, h, T, S), 0 at masked keys.

        The weights :meth:`attend` gives the values, which its fused kernels never form: recomputed
        from the same projections for one layer when they are wanted (the attention figures), so that
        training and decoding pay nothing for them. ``mask`` as in :meth:`attend`.
        """
        scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(self.d_k))  # (B, h, T, S)
        if mask is not None:
            scores = scores.masked_fill(~mask, -math.inf)
        return scores.softmax(-1)

    def cross_query(self, x: Tensor) -> Tensor:
        """Encoder-decoder queries (B, h, T, d_k) of decoder states x (B, T, d_model)."""
        return self._heads(self.q(x), self.d_k)


# Positions the compiled causal attention rounds its length up to (:func:`aligned_causal_attention`): the
# alignment inductor's lowering asks of an attention kernel's inputs (``ALIGNMENT = 8`` in
# ``sdpa_constraint``, torch 2.13 ``torch/_inductor/lowering.py``).
CAUSAL_ALIGNMENT = 8


def aligned_causal_attention(q: Tensor, k: Tensor, v: Tensor, dropout_p: float, scale: float) -> Tensor:
    """Causal softmax(scale q k^T) v over T positions computed over T rounded up to
    :data:`CAUSAL_ALIGNMENT` (zero rows appended to q, k and v, their outputs cut off): (B, h, T, d) -> (B, h, T, d_v).

    The same values: under the causal mask no real position attends to a later one, and the appended
    ones come after every real one. Why: the flash kernel saves a (B, h, T) logsumexp for its
    backward, whose stride T inductor's lowering checks for alignment (``is_aligned_realized_tensor``
    in torch 2.13 ``torch/_inductor/ir.py``), guarding ``T % 8 == 0`` on the first batch, so a
    compiled step made a second graph at the first batch of the other kind (seen on an H200, torch
    2.11: ``benchmarks/gpu/2026-12-04-h200-1-a.json``). A length of 8 * ((T + 7) // 8) is a multiple of 8
    to the compiler itself: no guard, one graph. The memory-efficient kernel pads its logsumexp to 32
    positions itself, which is why the encoder's and the encoder-decoder attention made none.
    """
    t = q.shape[2]
    extra = (t + CAUSAL_ALIGNMENT - 1) // CAUSAL_ALIGNMENT * CAUSAL_ALIGNMENT - t
    q, k, v = (F.pad(x, (0, 0, 0, extra)) for x in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True, scale=scale)
    return y[:, :, :t]


def _products_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, scale: float) -> Tensor:
    """softmax(scale q k^T, masked) v as two batched products: q (B, h, T, d_k), k (B, h, S, d_k),
    v (B, h, S, d_v), mask bool broadcastable to (B, h, T, S), True where a query may attend -> (B, h, T, d_v).
    No dropout (used without gradients only)."""
    b, h, t, d = q.shape
    s = k.size(2)
    scores = torch.bmm(q.reshape(b * h, t, d), k.reshape(b * h, s, d).transpose(1, 2)).mul_(scale)
    if mask is not None:
        scores.view(b, h, t, s).masked_fill_(~mask, -math.inf)
    out = torch.bmm(scores.softmax(-1), v.reshape(b * h, s, v.size(-1)))
    return out.view(b, h, t, -1)
