"""A model as a Hugging Face ``transformers`` MarianMT model, with a MarianTokenizer over its pieces.

MarianMT is the same architecture family: post-norm layers, sinusoidal positions, embeddings scaled
by sqrt(d_model), one matrix shared by the source and target embeddings and the output layer. Three
things differ, and the export takes care of each:

- **positions**: MarianMT's sinusoid table puts the sines in the first half of the d_model columns and
  the cosines in the second (``MarianSinusoidalPositionalEmbedding``), the paper interleaves them. The
  export permutes the model's d_model axis once, everywhere (embeddings, layer norms, the inputs of
  every projection out of d_model and the outputs of every projection into it): the permuted model
  computes the same function with MarianMT's table, up to float32 rounding;
- **biases**: MarianMT's attention projections have biases; without ``model.attention_bias`` they
  are zeros. Its ``final_logits_bias`` is zero;
- **layer-norm epsilon**: MarianMT's ``nn.LayerNorm`` keeps torch's 1e-5, this model's is
  ``model.layer_norm_eps`` (1e-6); the config has no key for it. The log-probabilities move by about
  1e-5 (``tests/test_export.py`` states the bound it checks).

Generation starts from ``<s>`` (``decoder_start_token_id``) as here, and ``<pad>`` and ``<s>`` are
never generated (``suppress_tokens``), as in :func:`aiayn.decode.beam.beam_search`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch

from aiayn.model import Transformer

PAD, BOS, EOS, UNK = 0, 2, 3, 1  # aiayn.runtime.batches


def marian_order(d_model: int) -> torch.Tensor:
    """Index of MarianMT's d_model columns into the paper's: sines (even columns here) first, then cosines."""
    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)])


def marian_config(model: Transformer):
    from transformers import MarianConfig

    cfg = model.cfg
    return MarianConfig(
        vocab_size=model.vocab_size,
        d_model=cfg.d_model,
        encoder_layers=cfg.n_layers,
        decoder_layers=cfg.n_layers,
        encoder_attention_heads=cfg.n_heads,
        decoder_attention_heads=cfg.n_heads,
        encoder_ffn_dim=cfg.d_ff,
        decoder_ffn_dim=cfg.d_ff,
        activation_function="relu",
        max_position_embeddings=cfg.max_positions,
        scale_embedding=True,
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        pad_token_id=PAD,
        eos_token_id=EOS,
        bos_token_id=BOS,
        decoder_start_token_id=BOS,
        forced_eos_token_id=EOS,
        share_encoder_decoder_embeddings=True,
        tie_word_embeddings=True,
    )


def marian_state(model: Transformer) -> dict[str, torch.Tensor]:
    """MarianMT's state dict of ``model``, its d_model axis in MarianMT's order (module docstring)."""
    d = model.cfg.d_model
    order = marian_order(d)
    n = model.cfg.n_heads * model.cfg.d_k
    state: dict[str, torch.Tensor] = {}

    def linear(name: str, weight: torch.Tensor, bias: torch.Tensor | None, into_model: bool, from_model: bool):
        weight = weight.detach().float()
        weight = weight[:, order] if from_model else weight
        weight = weight[order] if into_model else weight
        bias = torch.zeros(weight.shape[0]) if bias is None else bias.detach().float()
        state[f"{name}.weight"], state[f"{name}.bias"] = weight, bias[order] if into_model else bias

    def norm(name: str, module: torch.nn.LayerNorm):
        state[f"{name}.weight"], state[f"{name}.bias"] = module.weight.detach()[order], module.bias.detach()[order]

    def attention(prefix: str, attn, residual, norm_name: str, fused: bool):
        weights = attn.qkv.weight.split(n) if fused else (attn.q.weight, *attn.kv.weight.split(n))
        biases = (
            (attn.qkv.bias.split(n) if fused else (attn.q.bias, *attn.kv.bias.split(n)))
            if attn.out.bias is not None
            else (None, None, None)
        )
        for name, weight, bias in zip(("q_proj", "k_proj", "v_proj"), weights, biases):
            linear(f"{prefix}.{name}", weight, bias, into_model=False, from_model=True)
        linear(f"{prefix}.out_proj", attn.out.weight, attn.out.bias, into_model=True, from_model=False)
        norm(norm_name, residual.norm)

    def ffn(prefix: str, layer):
        linear(f"{prefix}.fc1", layer.ffn.w1.weight, layer.ffn.w1.bias, into_model=False, from_model=True)
        linear(f"{prefix}.fc2", layer.ffn.w2.weight, layer.ffn.w2.bias, into_model=True, from_model=False)
        norm(f"{prefix}.final_layer_norm", layer.res_ffn.norm)

    embedding = model.embed.weight.detach().float()[:, order]
    from aiayn.model.positional import sinusoid_table

    positions = sinusoid_table(model.cfg.max_positions, d)[:, order]
    for key in ("model.shared", "model.encoder.embed_tokens", "model.decoder.embed_tokens", "lm_head"):
        state[f"{key}.weight"] = embedding
    for side in ("encoder", "decoder"):
        state[f"model.{side}.embed_positions.weight"] = positions
    for i, layer in enumerate(model.encoder):
        prefix = f"model.encoder.layers.{i}"
        attention(f"{prefix}.self_attn", layer.attn, layer.res_attn, f"{prefix}.self_attn_layer_norm", True)
        ffn(prefix, layer)
    for i, layer in enumerate(model.decoder):
        prefix = f"model.decoder.layers.{i}"
        attention(f"{prefix}.self_attn", layer.self_attn, layer.res_self, f"{prefix}.self_attn_layer_norm", True)
        attention(
            f"{prefix}.encoder_attn", layer.cross_attn, layer.res_cross, f"{prefix}.encoder_attn_layer_norm", False
        )
        ffn(prefix, layer)
    state["final_logits_bias"] = torch.zeros(1, model.vocab_size)
    return state


def marian_model(model: Transformer):
    """A ``MarianMTModel`` computing what ``model`` computes (module docstring), in eval mode."""
    from transformers import MarianMTModel

    marian = MarianMTModel(marian_config(model))
    missing, unexpected = marian.load_state_dict(marian_state(model), strict=False)
    if missing or unexpected:
        raise RuntimeError(f"MarianMT's parameters do not match: missing {missing}, unexpected {unexpected}")
    marian.generation_config.suppress_tokens = [PAD, BOS]
    marian.generation_config.bad_words_ids = None
    return marian.eval()


def write(model: Transformer, vocab: list[str], out: Path, spm: Path | None = None) -> None:
    """Save ``model`` as a MarianMT model in ``out``; with ``spm``, a MarianTokenizer over it (its
    ``vocab.json`` maps the pieces ``vocab`` to the model's ids)."""
    out = Path(out)
    marian_model(model).save_pretrained(out)
    (out / "vocab.json").write_text(
        json.dumps({piece: i for i, piece in enumerate(vocab)}, ensure_ascii=False), encoding="utf-8"
    )
    if spm is not None:
        for name in ("source.spm", "target.spm"):
            shutil.copyfile(spm, out / name)
        (out / "tokenizer_config.json").write_text(
            json.dumps(
                {
                    "tokenizer_class": "MarianTokenizer",
                    "separate_vocabs": False,
                    "model_max_length": model.cfg.max_positions,
                    "eos_token": vocab[EOS],
                    "unk_token": vocab[UNK],
                    "pad_token": vocab[PAD],
                }
            ),
            encoding="utf-8",
        )
