"""A model as a CTranslate2 ``TransformerSpec``, built through CTranslate2's public specification API.

Every weight maps one to one: q|k|v of self-attention are already one fused projection here, as
CTranslate2 keeps them (``linear[0]``); encoder-decoder attention keeps q (``linear[0]``) and the fused
k|v (``linear[1]``); the output projection is the last linear. Embeddings are scaled by
sqrt(d_model) (``scale_embeddings``), the decoder starts from the ``<s>`` embedding, the source ends
with ``</s>`` (``add_source_eos``), layer norms use the model's epsilon, and the positional table is
the model's own (:func:`aiayn.model.positional.sinusoid_table`, sines and cosines interleaved as the
paper writes them; CTranslate2's default table puts them in two halves), ``max_positions`` rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from aiayn.model import Transformer
from aiayn.model.positional import sinusoid_table


def _array(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().float().cpu().numpy()


def _linear(spec, module) -> None:
    spec.weight = _array(module.weight)
    if module.bias is not None:
        spec.bias = _array(module.bias)


def _norm(spec, module) -> None:
    spec.gamma, spec.beta = _array(module.weight), _array(module.bias)


def _positions(model: Transformer, pos) -> np.ndarray:
    if model.cfg.positional == "learned":
        return _array(pos.table.weight)
    return _array(sinusoid_table(model.cfg.max_positions, model.cfg.d_model))


def _attention(spec, attention, residual, self_attention: bool) -> None:
    _norm(spec.layer_norm, residual.norm)
    projections = [attention.qkv] if self_attention else [attention.q, attention.kv]
    for linear_spec, module in zip(spec.linear, [*projections, attention.out]):
        _linear(linear_spec, module)


def _ffn(spec, layer) -> None:
    _norm(spec.layer_norm, layer.res_ffn.norm)
    _linear(spec.linear_0, layer.ffn.w1)
    _linear(spec.linear_1, layer.ffn.w2)


def transformer_spec(model: Transformer):
    """The ``ctranslate2.specs.TransformerSpec`` of ``model`` (post- or pre-norm)."""
    from ctranslate2.specs import transformer_spec as ts

    cfg = model.cfg
    spec = ts.TransformerSpec.from_config(cfg.n_layers, cfg.n_heads, pre_norm=cfg.norm == "pre")
    spec.config.layer_norm_epsilon = cfg.layer_norm_eps
    spec.config.add_source_eos = True
    encoder, decoder = spec.encoder, spec.decoder
    encoder.embeddings[0].weight = _array(model.embed.weight)
    decoder.embeddings.weight = _array(model.target_table().weight)
    decoder.projection.weight = _array((model.target_table() if cfg.share_softmax else model.out_proj).weight)
    for side, pos in ((encoder, model.src_pos), (decoder, model.tgt_pos)):
        side.scale_embeddings = True
        side.position_encodings.encodings = _positions(model, pos)
    if cfg.norm == "pre":
        _norm(encoder.layer_norm, model.enc_norm)
        _norm(decoder.layer_norm, model.dec_norm)
    for layer_spec, layer in zip(encoder.layer, model.encoder):
        _attention(layer_spec.self_attention, layer.attn, layer.res_attn, True)
        _ffn(layer_spec.ffn, layer)
    for layer_spec, layer in zip(decoder.layer, model.decoder):
        _attention(layer_spec.self_attention, layer.self_attn, layer.res_self, True)
        _attention(layer_spec.attention, layer.cross_attn, layer.res_cross, False)
        _ffn(layer_spec.ffn, layer)
    return spec


def write(model: Transformer, vocab: list[str], out: Path) -> None:
    """Save ``model`` with its pieces ``vocab`` (shared by source and target) as a CTranslate2 model in ``out``."""
    spec = transformer_spec(model)
    spec.register_source_vocabulary(vocab)
    spec.register_target_vocabulary(vocab)
    spec.validate()
    Path(out).mkdir(parents=True, exist_ok=True)
    spec.save(str(out))
