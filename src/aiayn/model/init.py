"""Parameter initialisation: ``model.init`` names a scheme and the code it comes from.

The paper states no initialisation. The schemes differ only in the attention projections W^Q, W^K,
W^V and the position-wise FFN (W1, b1, W2, b2); every scheme starts the rest the same way:

- embeddings (shared, or source, target and pre-softmax): normal, std d_model^-0.5, padding row 0;
- learned positions (Table 3 row E): normal, std d_model^-0.5;
- attention output projection W^O: Xavier-uniform, U(-a, a) with a = sqrt(6 / (fan_in + fan_out));
  its bias (``model.attention_bias``) zero;
- LayerNorm: gain 1, bias 0.

Schemes (``SCHEMES``):

``t2t``
    tensor2tensor as released with the paper (tensorflow/tensor2tensor 2017): ``transformer_base``
    sets ``initializer = "uniform_unit_scaling"``, ``initializer_gain = 1.0``
    (``models/transformer.py`` at 3d9c62f2), which ``utils/trainer_utils.py`` (at 414cee3e) makes
    ``variance_scaling_initializer(1.0, mode="fan_avg", distribution="uniform")`` for every variable,
    i.e. Xavier-uniform; ``models/common_attention.py`` (at 3b133d05) computes self-attention's q, k
    and v with one fused ``qkv_transform`` (d_model ->
    h (2 d_k + d_v)) and encoder-decoder attention k and v with one ``kv_transform``, so their
    bound comes from the fused matrix: for d_k = d_v = d_model / h it is 1/sqrt(2) (self) and
    sqrt(2/3) (encoder-decoder k, v) of a per-matrix Xavier bound. FFN weights Xavier, biases 0.
    Its projections also had biases, initialised to 0 (``model.attention_bias: true``).
``xavier``
    Xavier-uniform for each of W^Q, W^K, W^V separately, FFN weights Xavier, FFN biases 0.
``fairseq``
    fairseq 0.12 ``transformer`` (``fairseq/modules/multihead_attention.py``, ``reset_parameters``):
    W^Q, W^K, W^V Xavier-uniform per matrix with gain 1/sqrt(2) (which
    reproduces its earlier fused ``in_proj_weight``), their biases (when present) and the FFN as
    PyTorch's default ``nn.Linear``: weight and bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)).

The default is ``t2t``, the paper's code's scheme (the paper states none); ``configs/own-corpus.yaml``
sets ``fairseq``, which a small model learns from faster. How the schemes learn, over seeds:
``docs/studies/initialisation.md`` (measured by ``benchmarks/learning_parity.py``).

Initialisation draws from torch's global generator: seed it (``torch.manual_seed``) first.
"""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import Tensor, nn

from aiayn.model.attention import MultiHeadAttention
from aiayn.model.layers import FeedForward


@dataclasses.dataclass(frozen=True)
class InitScheme:
    """How the attention projections and the FFN start (the rest is the same in every scheme).

    qkv:            "separate": Xavier bound of each q, k, v matrix; "fused": of each fused
                    projection (self-attention q|k|v, encoder-decoder k|v; q alone).
    qkv_gain:       multiplies that bound.
    ffn_weight:     "xavier" or "linear" (nn.Linear's default, U(+-1/sqrt(fan_in))).
    ffn_bias:       "zero" or "linear" (U(+-1/sqrt(fan_in))).
    attention_bias: q, k, v biases (when the model has them): "zero" or "linear".
    out_weight:     W^O: "xavier" (every scheme) or "linear".
    """

    qkv: str = "separate"
    qkv_gain: float = 1.0
    ffn_weight: str = "xavier"
    ffn_bias: str = "zero"
    attention_bias: str = "zero"
    out_weight: str = "xavier"

    def __post_init__(self) -> None:
        choices = {
            "qkv": ("separate", "fused"),
            "ffn_weight": ("xavier", "linear"),
            "ffn_bias": ("zero", "linear"),
            "attention_bias": ("zero", "linear"),
            "out_weight": ("xavier", "linear"),
        }
        for key, allowed in choices.items():
            if getattr(self, key) not in allowed:
                raise ValueError(f"InitScheme.{key} must be one of {allowed}, got {getattr(self, key)!r}")

    def replace(self, **changes) -> "InitScheme":
        return dataclasses.replace(self, **changes)


SCHEMES = {
    "t2t": InitScheme(qkv="fused"),
    "xavier": InitScheme(),
    "fairseq": InitScheme(qkv_gain=2**-0.5, ffn_weight="linear", ffn_bias="linear", attention_bias="linear"),
}


def xavier_bound(fan_in: int, fan_out: int, gain: float = 1.0) -> float:
    """Xavier-uniform (Glorot) bound a = gain sqrt(6 / (fan_in + fan_out)); std = a / sqrt(3)."""
    return gain * math.sqrt(6.0 / (fan_in + fan_out))


def linear_bound(fan_in: int) -> float:
    """nn.Linear's default bound for weight and bias: 1 / sqrt(fan_in)."""
    return 1.0 / math.sqrt(fan_in)


@torch.no_grad()
def _uniform(tensor: Tensor, bound: float) -> None:
    """U(-bound, bound) in place; zeros when bound is 0."""
    if bound == 0.0:
        tensor.zero_()
    else:
        tensor.uniform_(-bound, bound)


def _projection(linear: nn.Linear, sizes: list[int], scheme: InitScheme) -> None:
    """A q/k/v projection whose weight stacks blocks of ``sizes`` rows (fused when several), bias if any.

    "separate": block i gets the Xavier bound of a (sizes[i] x d_model) matrix; "fused": the whole
    weight gets the bound of its (sum(sizes) x d_model) shape. Both times ``scheme.qkv_gain``.
    """
    fan_in = linear.in_features
    blocks = sizes if scheme.qkv == "separate" else [sum(sizes)]
    start = 0
    for rows in blocks:
        _uniform(linear.weight[start : start + rows], xavier_bound(fan_in, rows, scheme.qkv_gain))
        start += rows
    if linear.bias is not None:
        _uniform(linear.bias, linear_bound(fan_in) if scheme.attention_bias == "linear" else 0.0)


def init_attention(attn: MultiHeadAttention, scheme: InitScheme) -> None:
    """W^Q, W^K, W^V (and their biases) and W^O by ``scheme``; the bias of W^O 0."""
    qk, vv = attn.n_heads * attn.d_k, attn.n_heads * attn.d_v
    if attn.self_attention:
        _projection(attn.qkv, [qk, qk, vv], scheme)
    else:
        _projection(attn.q, [qk], scheme)
        _projection(attn.kv, [qk, vv], scheme)
    fan_in, fan_out = attn.out.in_features, attn.out.out_features
    _uniform(attn.out.weight, xavier_bound(fan_in, fan_out) if scheme.out_weight == "xavier" else linear_bound(fan_in))
    if attn.out.bias is not None:
        _uniform(attn.out.bias, 0.0)


def init_ffn(ffn: FeedForward, scheme: InitScheme) -> None:
    """W1 (d_ff x d_model), W2 (d_model x d_ff) and b1, b2 by ``scheme``."""
    for linear in (ffn.w1, ffn.w2):
        fan_in, fan_out = linear.in_features, linear.out_features
        weight = xavier_bound(fan_in, fan_out) if scheme.ffn_weight == "xavier" else linear_bound(fan_in)
        _uniform(linear.weight, weight)
        _uniform(linear.bias, linear_bound(fan_in) if scheme.ffn_bias == "linear" else 0.0)


@torch.no_grad()
def init_embedding(table: nn.Embedding, d_model: int, pad_id: int | None) -> None:
    """Normal with std d_model^-0.5; the padding row (if any) zero."""
    nn.init.normal_(table.weight, std=d_model**-0.5)
    if pad_id is not None:
        table.weight[pad_id].zero_()


def initialize(model: nn.Module, scheme: InitScheme) -> None:
    """(Re-)initialise every parameter of a :class:`aiayn.model.Transformer` in place.

    Order (it fixes which random numbers each tensor gets): embedding tables, learned positions,
    then the attention, FFN and LayerNorm modules in the order of ``model.modules()``.
    """
    d_model = model.cfg.d_model
    for table in model.token_tables():
        init_embedding(table, d_model, model.pad_id)
    for pos in (model.src_pos, model.tgt_pos):
        if pos.kind == "learned":
            init_embedding(pos.table, d_model, None)
    for module in model.modules():
        if isinstance(module, MultiHeadAttention):
            init_attention(module, scheme)
        elif isinstance(module, FeedForward):
            init_ffn(module, scheme)
        elif isinstance(module, nn.LayerNorm):
            module.reset_parameters()
