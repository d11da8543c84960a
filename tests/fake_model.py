"""A model with a hand-written probability table, speaking the beam-search protocol of aiayn.model."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

PAD, UNK, BOS, EOS = 0, 1, 2, 3
VOCAB = 8


@dataclass
class FakeEncoderOut:
    memory: torch.Tensor  # (B, S, 1): the source ids as floats
    src_pad: torch.Tensor  # (B, S)

    def index_select(self, index: torch.Tensor) -> "FakeEncoderOut":
        return FakeEncoderOut(self.memory.index_select(0, index), self.src_pad.index_select(0, index))


class FakeCache:
    """Per row (sentence b's beams at rows b K .. b K + K - 1): its source key and its prefix."""

    def __init__(self, enc: FakeEncoderOut, beam_size: int):
        self.enc, self.beam_size = enc, beam_size
        self.keys = [k for k in enc.memory[:, 0, 0].long().tolist() for _ in range(beam_size)]
        self.prefixes: list[tuple[int, ...]] = [() for _ in self.keys]

    def reorder(self, rows: torch.Tensor, sentences: torch.Tensor | None = None) -> None:
        if sentences is not None:
            self.enc = self.enc.index_select(sentences)
        rows = rows.tolist()
        self.keys = [self.keys[i] for i in rows]
        self.prefixes = [self.prefixes[i] for i in rows]
        if self.enc.memory.size(0):
            self.beam_size = len(rows) // self.enc.memory.size(0)  # rows per sentence may change


class FakeModel:
    """P(y_t | y_<t, x) = table[(x[0], y_<t)] (a {token: probability} dict; absent tokens have P = 0).

    Prefixes missing from the table end the sentence: P(eos) = 1. ``calls`` counts decoder calls.
    """

    def __init__(self, table: dict[tuple[int, tuple[int, ...]], dict[int, float]]):
        self.table = table
        self.calls = 0

    def log_probs(self, key: int, prefix: tuple[int, ...]) -> torch.Tensor:
        row = torch.full((VOCAB,), -math.inf)
        for token, prob in self.table.get((key, prefix), {EOS: 1.0}).items():
            row[token] = math.log(prob)
        return row

    def encode(self, src: torch.Tensor, padded: bool | None = None) -> FakeEncoderOut:
        return FakeEncoderOut(src.float().unsqueeze(-1), src.eq(PAD))

    def new_cache(self, enc: FakeEncoderOut, beam_size: int = 1, max_len: int | None = None) -> FakeCache:
        return FakeCache(enc, beam_size)

    def decode(self, tgt_in: torch.Tensor, enc: FakeEncoderOut, cache: FakeCache | None = None) -> torch.Tensor:
        self.calls += 1
        keys = enc.memory[:, 0, 0].long().tolist()
        if cache is None:
            rows = [
                [self.log_probs(k, tuple(seq[1 : t + 1])) for t in range(len(seq))]
                for k, seq in zip(keys, tgt_in.tolist())
            ]
            return torch.stack([torch.stack(r) for r in rows])
        keys = [k for k in keys for _ in range(cache.beam_size)]
        assert keys == cache.keys, "encoder output and cache rows out of step"
        cache.prefixes = [p + (t,) for p, t in zip(cache.prefixes, tgt_in[:, 0].tolist())]
        return torch.stack([self.log_probs(k, p[1:]) for k, p in zip(keys, cache.prefixes)]).unsqueeze(1)
