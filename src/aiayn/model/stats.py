"""Model size and compute: parameter count and training FLOPs per target token."""

from __future__ import annotations

from torch import nn

from aiayn.options import ModelConfig


def count_parameters(model: nn.Module) -> int:
    """Number of distinct parameters (a shared matrix counts once)."""
    return sum(p.numel() for p in model.parameters())


def flops_per_token(cfg: ModelConfig, src_len: float, tgt_len: float, vocab: int) -> float:
    """Model FLOPs per target token of one training step (forward + backward), matmuls only.

    With d = d_model, h = n_heads, N = n_layers, S = source length, T = target length (both counting
    the added eos/bos), multiply-accumulates (MACs) of one forward pass over one sentence pair:

        encoder, per source token and layer:  d h (2 d_k + d_v)  [q, k, v]  + h d_v d  [output]
                                            + 2 d d_ff  [FFN]  + S h (d_k + d_v)  [scores, weighted sum]
        decoder, per target token and layer:  the same with T for S in the self-attention scores,
                                            + d h d_k + h d_v d  [cross q, output] + S h (d_k + d_v)  [cross scores]
        decoder, per source token and layer:  d h (d_k + d_v)  [cross keys, values of the memory]
        output projection, per target token:  d V

    Attention scores count the full T x T square (no halving for the causal mask), as the kernels
    compute it. Embedding lookups, softmax, LayerNorm and biases are not counted. FLOPs = 2 MACs,
    and training = 3 x forward (backward = 2 x forward), so the result is 6 MACs / T.
    """
    d, h, n = cfg.d_model, cfg.n_heads, cfg.n_layers
    proj = d * h * (2 * cfg.d_k + cfg.d_v) + h * cfg.d_v * d + 2 * d * cfg.d_ff
    enc = src_len * n * (proj + src_len * h * (cfg.d_k + cfg.d_v))
    cross = d * h * cfg.d_k + h * cfg.d_v * d + src_len * h * (cfg.d_k + cfg.d_v)
    dec = tgt_len * n * (proj + tgt_len * h * (cfg.d_k + cfg.d_v) + cross)
    memory_kv = src_len * n * d * h * (cfg.d_k + cfg.d_v)
    out = tgt_len * d * vocab
    return 6.0 * (enc + dec + memory_kv + out) / tgt_len
