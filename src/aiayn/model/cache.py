"""Encoder output and the incremental-decoding cache (paper section 3.2.3, used by beam search)."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor


@dataclass
class EncoderOut:
    """What the decoder needs from the encoder.

    memory:  (B, S, d_model) encoder output.
    src_pad: (B, S) bool, True at source padding.
    """

    memory: Tensor
    src_pad: Tensor

    def index_select(self, index: Tensor) -> "EncoderOut":
        return EncoderOut(self.memory.index_select(0, index), self.src_pad.index_select(0, index))


@dataclass
class DecoderCache:
    """Keys and values a decoder keeps between incremental steps.

    enc:      the encoder output the cache belongs to (reordered with it).
    cross_kv: per layer, encoder-decoder keys (B, h, S, d_k) and values (B, h, S, d_v), computed once
              by :meth:`aiayn.model.Transformer.new_cache`.
    self_kv:  per layer, self-attention keys (B, h, t, d_k) and values (B, h, t, d_v) of the t target
              positions decoded so far; empty before the first step.
    length:   t, the number of target positions already decoded (the next position's index).
    """

    enc: EncoderOut
    cross_kv: list[tuple[Tensor, Tensor]]
    self_kv: list[tuple[Tensor, Tensor]] = field(default_factory=list)
    length: int = 0

    def reorder(self, index: Tensor) -> "DecoderCache":
        """Keep batch rows ``index`` (LongTensor (B',)) of every cached tensor, in place; returns self.

        Beam search calls it after each step with the beams' parent rows; rows may repeat.
        """
        index = index.to(self.enc.memory.device)
        self.enc = self.enc.index_select(index)
        self.cross_kv = [(k.index_select(0, index), v.index_select(0, index)) for k, v in self.cross_kv]
        self.self_kv = [(k.index_select(0, index), v.index_select(0, index)) for k, v in self.self_kv]
        return self

    def append(self, layer: int, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """Append one step's self-attention key (B, h, 1, d_k) and value (B, h, 1, d_v) of ``layer``.

        Returns the keys (B, h, t+1, d_k) and values (B, h, t+1, d_v) to attend over.
        """
        if layer < len(self.self_kv):
            old_k, old_v = self.self_kv[layer]
            key, value = torch.cat([old_k, key], dim=2), torch.cat([old_v, value], dim=2)
            self.self_kv[layer] = (key, value)
        else:
            self.self_kv.append((key, value))
        return key, value
