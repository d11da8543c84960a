"""The two CPU kernels a float32 training step spends most of its time in, and another way to run them.

- ``linear``: y = x W^T + b (optionally max(0, y)). On a CPU in float32 with ``onednn`` (the setting
  ``train.cpu_matmul: onednn``; its default is ``mkl``, torch's own products), the forward product
  and the input gradient run through oneDNN's matrix product, which measured 11-19% faster than MKL's
  sgemm per product at the CPU benchmark's shapes on an AMD EPYC (``benchmarks/cpu_kernels.py``), yet
  whole training steps ran faster through MKL on the next CPU measured, where the default was set
  (``docs/studies/cpu-training.md``, "CPU training against fairseq-train again"); the weight
  gradient stays with MKL (faster there). Decoding's products take ``decode.cpu_matmul``. Products that
  need no gradient (decoding, validation) call oneDNN's operator directly, with the ReLU fused into
  it: 10-30% faster than MKL at the decoding benchmark's shapes (256 rows, 256-1024 wide). Same
  arithmetic up to float32 rounding. Elsewhere, and for small products, ``F.linear``.
  Row counts are rounded up to a few values per octave before they reach oneDNN (:func:`bucket_rows`):
  each new shape costs memory that oneDNN never gives back.
- ``dropout``: on a CPU the mask is ``uniform >= p`` (a bool mask, like ``F.dropout``'s), which is
  about twice as fast as ``F.dropout``'s Bernoulli draw; the same distribution, other random numbers.
  On a GPU ``F.dropout`` (one fused kernel).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def onednn_available() -> bool:
    """Whether this torch build has oneDNN's fused linear operator (x86 CPU builds do)."""
    try:
        return torch.backends.mkldnn.is_available() and torch.ops.mkldnn._linear_pointwise is not None
    except (AttributeError, RuntimeError):
        return False


# Row counts reaching oneDNN are rounded up to one of ROW_BUCKETS_PER_OCTAVE values per power of two.
# oneDNN creates a primitive for each distinct (rows, K, M) and part of what a creation allocates is
# never given back, whatever its primitive cache holds (ONEDNN_PRIMITIVE_CACHE_CAPACITY=8 grew as fast as
# the default 1024); token-budget batches bring new row counts every step, so a CPU training grew by
# about 2.5 MB a step without end (benchmarks/train_memory.py). Rounded, a training sees a few dozen row
# counts per product, all created in its first steps; the zero rows cost at most 1/16 more arithmetic.
ROW_BUCKETS_PER_OCTAVE = 16


def _bucket_shift(n: int) -> int:
    """log2 of the spacing of the row buckets in n's octave: 1/16 of the power of two at or below n."""
    return max(n.bit_length() - 1 - (ROW_BUCKETS_PER_OCTAVE.bit_length() - 1), 0)


def bucket_rows(n: int) -> int:
    """The smallest multiple of 2^s that is >= n, where 2^s is 1/16 of the power of two at or below n
    (``ROW_BUCKETS_PER_OCTAVE`` values per octave; n itself below 32): 100 -> 100, 1000 -> 1024,
    3001 -> 3072, 4100 -> 4352."""
    shift = _bucket_shift(n)
    return -(-n >> shift) << shift


def _product(a2: Tensor, b_t: Tensor, bias: Tensor | None, relu: bool) -> Tensor:
    """a2 (R, K) @ b_t^T + bias, ReLU fused if ``relu``, by oneDNN on zero-padded rows: (R, M)."""
    n, rows = a2.shape[0], bucket_rows(a2.shape[0])
    if rows != n:
        a2 = F.pad(a2, (0, 0, 0, rows - n))  # (rows, K)
    return torch.ops.mkldnn._linear_pointwise(a2, b_t, bias, "relu" if relu else "none", [], "")[:n]


def _onednn_product(a: Tensor, b_t: Tensor, bias: Tensor | None = None, relu: bool = False) -> Tensor:
    """a (..., K) @ b_t^T (K, M) + bias through oneDNN, then max(0, .) if ``relu`` (fused): (..., M).

    oneDNN sees only row counts of :func:`bucket_rows`. Padding copies a side of the product, so the
    narrower side is copied: when K <= M the N rows of ``a`` are padded with zeros to bucket_rows(N)
    and the padded rows of the result dropped (a view); when K > M (an input gradient such as the
    output projection's, K = the vocabulary) the first floor-to-bucket rows of ``a`` go as they are (a
    view) and only the rest, fewer than N/16 rows, is padded, and the two results are joined (a copy of
    the N x M result, not of the N x K input)."""
    a2 = a.reshape(-1, a.shape[-1])  # (N, K)
    n, width = a2.shape
    head = n >> _bucket_shift(n) << _bucket_shift(n)  # the largest row bucket <= n
    if head == n or width <= b_t.shape[0]:
        y = _product(a2, b_t, bias, relu)
    else:
        y = torch.cat([_product(a2[:head], b_t, bias, relu), _product(a2[head:], b_t, bias, relu)])
    return y.view(*a.shape[:-1], b_t.shape[0])


class _OneDNNLinear(torch.autograd.Function):
    """x (..., K) -> x W^T + b (..., M), W (M, K); oneDNN forward and input gradient, MKL weight gradient."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        ctx.save_for_backward(x.reshape(-1, x.shape[-1]), weight)  # (N, K), (M, K)
        ctx.has_bias = bias is not None
        return _onednn_product(x, weight, bias)

    @staticmethod
    def backward(ctx, grad: Tensor):
        x2, weight = ctx.saved_tensors
        g2 = grad.reshape(-1, grad.shape[-1])  # (N, M)
        grad_x = grad_w = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_x = _onednn_product(grad, weight.t())  # g W: (..., K)
        if ctx.needs_input_grad[1]:
            grad_w = g2.t() @ x2  # (M, K)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_b = g2.sum(0)
        return grad_x, grad_w, grad_b


# Training products of fewer multiply-adds than this stay with F.linear: there the fixed cost of a
# Python autograd function outweighs oneDNN's faster product (the demo's models, d_model 64 and 600
# tokens per step on one thread, trained 6% slower through oneDNN; the CPU benchmark's, 4096 x 256 x
# 256 and up, 10% faster). 2^26 lies between the two.
ONEDNN_MIN_MACS = 2**26
# Products without a gradient call the operator directly; it costs about 13 us a call more than
# F.linear (one thread), so small products stay with F.linear: 256 x 256 x 256 (2^24) takes the same
# time either way, 256 x 768 x 256 20% less through oneDNN, 128 x 256 x 256 14% more.
ONEDNN_MIN_MACS_NO_GRAD = 2**24


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None, onednn: bool = False, relu: bool = False) -> Tensor:
    """x (..., K) W^T (K, M) + b, then max(0, .) if ``relu``: ``F.linear``, or oneDNN's product when
    ``onednn`` and x is a float32 CPU tensor (not under autocast) and the product has at least
    :data:`ONEDNN_MIN_MACS` multiply-adds (taking part in a gradient computation) or
    :data:`ONEDNN_MIN_MACS_NO_GRAD` (without gradients; the ReLU then runs inside oneDNN's product)."""
    if onednn and x.device.type == "cpu" and x.dtype == torch.float32 and not torch.is_autocast_enabled("cpu"):
        macs = x.numel() * weight.shape[0]
        if not torch.is_grad_enabled():
            if macs >= ONEDNN_MIN_MACS_NO_GRAD:
                return _onednn_product(x, weight, bias, relu)
        elif macs >= ONEDNN_MIN_MACS:
            y = _OneDNNLinear.apply(x, weight, bias)
            return F.relu(y) if relu else y
    y = F.linear(x, weight, bias)
    return F.relu(y) if relu else y


class Linear(nn.Linear):
    """``nn.Linear`` (same parameters and state-dict keys) whose product is :func:`linear`;
    ``onednn`` is set by :meth:`aiayn.model.transformer.Transformer.use_onednn`."""

    onednn = False
    int8 = None  # an aiayn.model.int8.Int8Product, set by Transformer.use_int8

    def forward(self, x: Tensor, relu: bool = False) -> Tensor:
        """x W^T + b, then max(0, .) if ``relu`` (fused into the product where oneDNN computes it);
        in int8 without gradients once the model's products are quantized."""
        if self.int8 is not None and not torch.is_grad_enabled():
            return self.int8(x, relu)
        if self.onednn:
            return linear(x, self.weight, self.bias, True, relu)
        y = F.linear(x, self.weight, self.bias)
        return F.relu(y) if relu else y


class _UniformDropout(torch.autograd.Function):
    """x * (u >= p) / (1 - p) with u ~ U[0, 1) per element; the bool mask is kept for the backward."""

    @staticmethod
    def forward(ctx, x: Tensor, p: float) -> Tensor:
        keep = torch.rand_like(x) >= p
        ctx.save_for_backward(keep)
        ctx.scale = 1.0 / (1.0 - p)
        return (x * keep).mul_(ctx.scale)

    @staticmethod
    def backward(ctx, grad: Tensor):
        (keep,) = ctx.saved_tensors
        return (grad * keep).mul_(ctx.scale), None


def dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """Dropout (paper section 5.4): each element zeroed with probability p, the rest scaled by 1 / (1 - p)."""
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu" or p >= 1.0:
        return F.dropout(x, p, True)
    return _UniformDropout.apply(x, p)
