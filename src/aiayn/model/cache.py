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
    padded:  False when no row has padding: attention then needs no mask (and GPUs can use their
             fastest kernels). True is always correct.
    """

    memory: Tensor
    src_pad: Tensor
    padded: bool = True

    def key_mask(self) -> Tensor | None:
        """(B, 1, 1, S) bool, True where attention may look; None when nothing is padded."""
        return ~self.src_pad[:, None, None, :] if self.padded else None

    def index_select(self, index: Tensor) -> "EncoderOut":
        return EncoderOut(self.memory.index_select(0, index), self.src_pad.index_select(0, index), self.padded)


@dataclass
class DecoderCache:
    """Keys and values a decoder keeps between incremental steps, for N = B * beam_size rows.

    enc:       the encoder output of the B sentences, once per sentence (not once per beam).
    cross_kv:  per layer, encoder-decoder keys (B, h, S, d_k) and values (B, h, S, d_v), computed
               once by :meth:`aiayn.model.Transformer.new_cache`; the K beams of a sentence (rows
               b K .. b K + K - 1) attend to them together, as K queries.
    beam_size: K, the rows per sentence (set by :meth:`reorder`).
    capacity:  target positions preallocated for the self-attention keys and values (doubled when
               a step goes past it).
    length:    t, the number of target positions already decoded (the next position's index).

    Self-attention keys and values live in preallocated (N, capacity, h, d) buffers, seen as (N, h, t,
    d): a step writes one position, and a reorder copies the t filled positions of the surviving rows
    into a second buffer (no concatenation, no copy of the unfilled capacity), one contiguous block
    per row. (In ``benchmarks/decode_speed.py`` the reorders and the self-attention took 0.50 s and
    0.72 s per 500 sentences with this layout, 0.70 s and 0.79 s with (N, h, capacity, d).)
    """

    enc: EncoderOut
    cross_kv: list[tuple[Tensor, Tensor]]
    beam_size: int = 1
    capacity: int = 16
    length: int = 0
    rows: int = field(init=False)
    _buffers: list[list[Tensor]] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        self.rows = self.enc.memory.size(0) * self.beam_size

    @property
    def self_kv(self) -> list[tuple[Tensor, Tensor]]:
        """Per layer, the keys (N, h, t, d_k) and values (N, h, t, d_v) of the t decoded positions."""
        n, t = self.rows, self.length
        return [(k[:n, :t].transpose(1, 2), v[:n, :t].transpose(1, 2)) for k, v, _, _ in self._buffers]

    def append(self, layer: int, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """Store position t's self-attention key (N, h, 1, d_k) and value (N, h, 1, d_v) of ``layer``.

        Returns the keys (N, h, t+1, d_k) and values (N, h, t+1, d_v) to attend over.
        """
        if layer == len(self._buffers):
            self._buffers.append([self._new(key), self._new(value), self._new(key), self._new(value)])
        if self.length >= self._buffers[layer][0].size(1):
            self._grow(layer)
        k, v = self._buffers[layer][:2]
        n, t = self.rows, self.length
        k[:n, t] = key[:, :, 0]
        v[:n, t] = value[:, :, 0]
        return k[:n, : t + 1].transpose(1, 2), v[:n, : t + 1].transpose(1, 2)

    def reorder(self, rows: Tensor, sentences: Tensor | None = None) -> "DecoderCache":
        """Continue row ``rows[r]`` in row r (LongTensor (N',)); rows may repeat. Returns self.

        ``sentences`` (B',): the sentences that stay, in their new order, when the batch shrinks or is
        permuted (each new sentence's rows must come from that sentence); None: they stay as they are.
        Each sentence then has N' / B' rows (``beam_size``): beam search starts with one row per
        sentence and goes on with K.
        """
        device = self.enc.memory.device
        rows = rows.to(device)
        t = self.length
        for buffers in self._buffers:
            if rows.numel() > buffers[2].size(0):
                buffers[2:] = [
                    torch.empty(rows.numel(), *b.shape[1:], dtype=b.dtype, device=b.device) for b in buffers[2:]
                ]
            for i in (0, 1):
                torch.index_select(buffers[i][:, :t], 0, rows, out=buffers[i + 2][: rows.numel(), :t])
            buffers[:] = [buffers[2], buffers[3], buffers[0], buffers[1]]
        self.rows = rows.numel()
        if sentences is not None:
            sentences = sentences.to(device)
            self.enc = self.enc.index_select(sentences)
            self.cross_kv = [(k.index_select(0, sentences), v.index_select(0, sentences)) for k, v in self.cross_kv]
        n_sentences = self.enc.memory.size(0)
        if n_sentences:
            if self.rows % n_sentences:
                raise ValueError(f"reorder to {self.rows} rows for {n_sentences} sentences: each needs as many rows")
            self.beam_size = self.rows // n_sentences
        return self

    def _new(self, like: Tensor) -> Tensor:
        """An empty (N, capacity, h, d) buffer for one step's (N, h, 1, d) keys or values."""
        n, h, _, d = like.shape
        return torch.empty(n, self.capacity, h, d, dtype=like.dtype, device=like.device)

    def _grow(self, layer: int) -> None:
        """Double ``layer``'s capacity, keeping the filled positions."""
        old = self._buffers[layer]
        cap = old[0].size(1)
        grown = [torch.empty(b.size(0), 2 * cap, *b.shape[2:], dtype=b.dtype, device=b.device) for b in old]
        for new, b in zip(grown, old):
            new[:, :cap] = b
        self._buffers[layer] = grown
