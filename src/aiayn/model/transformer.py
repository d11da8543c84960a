"""The Transformer encoder-decoder (paper section 3, Figure 1); loading one from a checkpoint is
:func:`aiayn.runtime.session.load_model`."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from aiayn.model.cache import DecoderCache, EncoderOut
from aiayn.model.functional import Linear, dropout, linear
from aiayn.model.init import SCHEMES, initialize
from aiayn.model.int8 import Int8Product
from aiayn.model.layers import DecoderLayer, EncoderLayer
from aiayn.model.positional import PositionalEncoding
from aiayn.options import ModelConfig


class Transformer(nn.Module):
    """Encoder-decoder Transformer over one shared vocabulary.

    With ``share_embeddings`` and ``share_softmax`` (the paper, section 3.4) one matrix E (V, d_model)
    embeds source and target tokens, scaled by sqrt(d_model), and is the pre-softmax projection
    (unscaled): logits = h E^T. ``share_embeddings: false`` gives the target its own embedding;
    ``share_softmax: false`` gives the projection its own matrix W (V, d_model), logits = h W^T
    (tensor2tensor's parsing preset).
    Parameters start as ``model.init`` says (:mod:`aiayn.model.init`), drawn from torch's global
    generator. Pre-norm stacks end with a final LayerNorm; post-norm stacks (the paper) do not.
    The decoder's first input is the bos embedding, and the encoder's input has no target-space
    vector: two places where tensor2tensor's model differed (docs/deviations.md, "Where the paper's
    code did otherwise").
    """

    def __init__(self, cfg: ModelConfig, vocab_size: int, pad_id: int = 0):
        super().__init__()
        self.cfg, self.vocab_size, self.pad_id = cfg, vocab_size, pad_id
        self.embed = nn.Embedding(vocab_size, cfg.d_model)
        if not cfg.share_embeddings:
            self.tgt_embed = nn.Embedding(vocab_size, cfg.d_model)
        if not cfg.share_softmax:
            self.out_proj = nn.Embedding(vocab_size, cfg.d_model)
        self.src_pos, self.tgt_pos = PositionalEncoding(cfg), PositionalEncoding(cfg)
        self.encoder = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_layers))
        self.decoder = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_layers))
        pre = cfg.norm == "pre"
        self.enc_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps) if pre else nn.Identity()
        self.dec_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps) if pre else nn.Identity()
        initialize(self, SCHEMES[cfg.init])

    onednn = False

    def use_onednn(self, on: bool) -> None:
        """Route this model's float32 CPU training products through oneDNN (:func:`aiayn.model.functional.linear`)."""
        self.onednn = on
        for module in self.modules():
            if isinstance(module, Linear):
                module.onednn = on

    int8: Int8Product | None = None  # the output layer's, set by use_int8

    def use_int8(self) -> None:
        """Run this model's products without gradients in int8 from now on (:mod:`aiayn.model.int8`,
        ``decode.cpu_matmul: int8``): every linear layer's and the output layer's weights quantized as
        they are now. Products with gradients (training) stay in float32."""
        for module in self.modules():
            if isinstance(module, Linear):
                module.int8 = Int8Product(module.weight, module.bias)
        self.int8 = Int8Product(self.output_matrix())

    def token_tables(self) -> list[nn.Embedding]:
        """The (V, d_model) token matrices: the source embedding, the target's unless shared
        (``share_embeddings``), the pre-softmax projection unless shared (``share_softmax``)."""
        extra = [] if self.cfg.share_embeddings else [self.tgt_embed]
        return [self.embed, *extra, *([] if self.cfg.share_softmax else [self.out_proj])]

    def _embed(self, tokens: Tensor, table: nn.Embedding, pos: PositionalEncoding, start: int = 0) -> Tensor:
        """Dropout(E[tokens] * sqrt(d_model) + PE): (B, T) -> (B, T, d_model) (section 3.4, 5.4)."""
        x = table(tokens) * math.sqrt(self.cfg.d_model) + pos(start, tokens.shape[1]).to(table.weight.dtype)
        return dropout(x, self.cfg.dropout, self.training)

    def encode(self, src: Tensor, padded: bool | None = None) -> EncoderOut:
        """src (B, S) ids -> EncoderOut(memory (B, S, d_model), src_pad (B, S) bool, True at pad).

        ``padded``: whether any row of src has padding, if the caller knows (no mask at all when
        not); None looks (one device-to-host read).
        """
        src_pad = src.eq(self.pad_id)
        enc = EncoderOut(src, src_pad, bool(src_pad.any()) if padded is None else padded)
        mask = enc.key_mask()  # (B, 1, 1, S), True where attention may look, or None
        x = self._embed(src, self.embed, self.src_pos)
        for layer in self.encoder:
            x = layer(x, mask)
        enc.memory = self.enc_norm(x)
        return enc

    def encoder_attention(self, src: Tensor, layer: int) -> Tensor:
        """Self-attention weights of encoder layer ``layer`` (0-based) for src (B, S): (B, h, S, S), each
        row summing to one over the real keys (0 at padding). Runs the layers below it and recomputes
        that layer's softmax(Q K^T / sqrt(d_k)) from its own projections
        (:meth:`aiayn.model.attention.MultiHeadAttention.probabilities`)."""
        if not 0 <= layer < len(self.encoder):
            raise ValueError(f"encoder layer {layer} does not exist: the model has {len(self.encoder)} (0-based)")
        mask = EncoderOut(src, src.eq(self.pad_id)).key_mask()  # (B, 1, 1, S)
        x = self._embed(src, self.embed, self.src_pos)
        for below in self.encoder[:layer]:
            x = below(x, mask)
        return self.encoder[layer].attention_probabilities(x, mask)

    def new_cache(self, enc: EncoderOut, beam_size: int = 1, max_len: int | None = None) -> DecoderCache:
        """A decoding cache for ``beam_size`` rows per sentence of ``enc`` (each sentence's rows adjacent),
        holding every decoder layer's encoder-decoder keys and values, computed once per sentence;
        ``max_len`` target positions are preallocated (more are added when needed)."""
        # contiguous (B, h, S, d): read at every step, by rows of (sentence, head)
        cross = [tuple(t.contiguous() for t in layer.cross_attn.project_memory(enc.memory)) for layer in self.decoder]
        return DecoderCache(enc, cross, beam_size, capacity=max(1, max_len or 16))

    def decode(self, tgt_in: Tensor, enc: EncoderOut, cache: DecoderCache | None = None) -> Tensor:
        """Next-token logits (B, T, V) for target prefix tgt_in (B, T): :meth:`decoder_states`, projected."""
        return self.project(self.decoder_states(tgt_in, enc, cache))

    def decoder_states(self, tgt_in: Tensor, enc: EncoderOut, cache: DecoderCache | None = None) -> Tensor:
        """The decoder's final states (B, T, d_model) for target prefix tgt_in (B, T), before the projection.

        Without a cache, all T positions at once (causal self-attention). With a cache, tgt_in is the
        newest token (B, 1): its position is ``cache.length``, its self-attention keys/values are
        appended, and the cache's (possibly reordered) encoder output is used.
        """
        if cache is not None:
            if tgt_in.shape[1] != 1:
                raise ValueError(
                    f"incremental decoding takes one token per step, got tgt_in of shape {tuple(tgt_in.shape)}"
                )
            enc, memory_kv, start = cache.enc, cache.cross_kv, cache.length
        else:
            memory_kv, start = [layer.cross_attn.project_memory(enc.memory) for layer in self.decoder], 0
        mask = enc.key_mask()  # (B, 1, 1, S) or None
        x = self._embed(tgt_in, self.target_table(), self.tgt_pos, start)
        for i, layer in enumerate(self.decoder):
            x = layer(x, memory_kv[i], mask, cache, i)
        if cache is not None:
            cache.length += 1
        return self.dec_norm(x)

    def target_table(self) -> nn.Embedding:
        """The target embedding: the source's under ``share_embeddings``, else its own."""
        return self.embed if self.cfg.share_embeddings else self.tgt_embed

    def output_matrix(self) -> Tensor:
        """The pre-softmax projection's matrix (V, d_model): the target embedding matrix unscaled
        (section 3.4), or its own matrix without ``share_softmax``."""
        return self.target_table().weight if self.cfg.share_softmax else self.out_proj.weight

    def project(self, x: Tensor) -> Tensor:
        """Pre-softmax linear: (..., d_model) -> (..., V), logits = x :meth:`output_matrix`^T."""
        if self.int8 is not None and not torch.is_grad_enabled():
            return self.int8(x)
        return linear(x, self.output_matrix(), onednn=self.onednn)

    def states(self, src: Tensor, tgt_in: Tensor, src_padded: bool | None = None, rows: Tensor | None = None) -> Tensor:
        """Teacher-forced final decoder states: src (B, S), tgt_in (B, T) -> (B, T, d_model), or (R, d_model)
        at ``rows`` (R,) of the B * T positions (row-major): training and scoring take the positions with
        a gold target and spend nothing on padding. ``src_padded`` as in :meth:`encode`."""
        x = self.decoder_states(tgt_in, self.encode(src, src_padded))
        return x if rows is None else x.reshape(-1, x.shape[-1]).index_select(0, rows)

    def forward(
        self, src: Tensor, tgt_in: Tensor, src_padded: bool | None = None, rows: Tensor | None = None
    ) -> Tensor:
        """Teacher-forced logits: :meth:`states` projected, (B, T, V) or (R, V) at ``rows``."""
        return self.project(self.states(src, tgt_in, src_padded, rows))
