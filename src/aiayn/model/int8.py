"""int8 products for decoding on a CPU (``decode.cpu_matmul: int8``).

Each product's weight (M, K) is quantized once, per output row: w ~ s_m q_mk with q in [-127, 127],
s_m = max_k |w_mk| / 127. Its input is quantized at every call, the whole tensor with one scale and
zero point (asymmetric, unsigned: x ~ s_x (u - z), u in [0, 255], the range widened to hold 0 so that
padding rows stay 0). oneDNN multiplies u by q in int32 and writes s_x s_m (acc - z sum_k q_mk) + b,
a ReLU fused where the FFN has one, in float32: the dequantization costs no pass of its own.

Why oneDNN's ``onednn::qlinear_pointwise`` (torch 2.13's x86 int8 product, the one its inductor
lowers quantized linears to) and not ``torch.ao.quantization.quantize_dynamic``: torch 2.13 warns that
quantized tensors, which that path packs its weights into, are deprecated and will be removed
(``torch.quantize_per_channel``'s warning, pytorch/pytorch issue 184982); this op takes plain int8
and float tensors. ``torch._int_mm`` with a separate dequantization was measured slower than float32
at the output layer's shape (256 x 256 x 8,000, one thread: 12.3 ms against 10.6 ms): the dequantization
pass over the (N, V) result cost more than the int8 product saved; oneDNN's fused one took 4.1 ms
against 9.4 ms in float32 (each timed once on the 2-core VM with a training beside it: a direction,
not a figure; the side-by-side decoding figures are in ``benchmarks/RESULTS.md``, "Decoding speed").

The embedding lookups stay in float32 (a shared embedding is quantized for the output layer only);
attention's products, layer norms and the softmax are float32 as before. Only products without
gradients use int8: the model trains as before.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from aiayn.model.functional import bucket_rows

QMAX = 127  # signed int8 weights, symmetric: -127..127 (no -128, so that -q is representable)


def int8_available() -> bool:
    """Whether this torch build has oneDNN's int8 product (x86 CPU builds do)."""
    try:
        return torch.ops.onednn.qlinear_pointwise is not None and torch.backends.mkldnn.is_available()
    except (AttributeError, RuntimeError):
        return False


class Int8Product:
    """x W^T + b in int8 (the module docstring): W (M, K) float, b (M,) or None."""

    def __init__(self, weight: Tensor, bias: Tensor | None = None):
        weight = weight.detach().float()
        self.scale = (weight.abs().amax(1) / QMAX).clamp_min(torch.finfo(torch.float32).tiny)  # (M,)
        q = torch.round(weight / self.scale[:, None]).clamp_(-QMAX, QMAX).to(torch.int8)
        self.packed = torch.ops.onednn.qlinear_prepack(q, None)
        self.zero = torch.zeros(weight.shape[0], dtype=torch.long)
        self.bias = None if bias is None else bias.detach().float()
        self.out_features, self.in_features = weight.shape

    def __call__(self, x: Tensor, relu: bool = False) -> Tensor:
        """x (..., K) float32 -> (..., M) float32, max(0, .) if ``relu``."""
        x2 = x.reshape(-1, self.in_features)
        n = x2.shape[0]
        rows = bucket_rows(n)  # oneDNN keeps a primitive per shape: a few row counts per octave
        if rows != n:
            x2 = F.pad(x2, (0, 0, 0, rows - n))
        low, high = x2.aminmax()
        low, high = low.clamp(max=0.0), high.clamp(min=0.0)
        scale = ((high - low) / 255).clamp_(min=torch.finfo(torch.float32).tiny)
        zero = torch.round(-low / scale).long()
        u = torch.round(x2 / scale).add_(zero).clamp_(0, 255).to(torch.uint8)
        y = torch.ops.onednn.qlinear_pointwise.tensor(
            u,
            scale,
            zero,
            self.packed,
            self.scale,
            self.zero,
            self.bias,
            1.0,
            0,
            torch.float32,
            "relu" if relu else "none",
            [],
            "",
        )
        return y[:n].view(*x.shape[:-1], self.out_features)
