"""Positional encodings (paper section 3.5): fixed sinusoids, or learned positions (Table 3 row E)."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from aiayn.options import ModelConfig


def sinusoid_table(n_positions: int, d_model: int) -> Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)).

    Returns (n_positions, d_model) float32, sines and cosines interleaved as in the paper (section 3.5).
    """
    pos = torch.arange(n_positions, dtype=torch.float64).unsqueeze(1)  # (P, 1)
    inv = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    table = torch.zeros(n_positions, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(pos * inv)
    table[:, 1::2] = torch.cos(pos * inv)
    return table.float()


class PositionalEncoding(nn.Module):
    """Positions 0.. added to the scaled embeddings: fixed sinusoids, or learned (Table 3 row E).

    Learned positions are an embedding of ``max_positions`` rows (initialised by :mod:`aiayn.model.init`);
    sinusoids have no limit (the table grows on demand and is not saved in checkpoints).
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.kind, self.d_model, self.max_positions = cfg.positional, cfg.d_model, cfg.max_positions
        if self.kind == "learned":
            self.table = nn.Embedding(cfg.max_positions, cfg.d_model)
        else:
            self.register_buffer("sinusoids", sinusoid_table(cfg.max_positions, cfg.d_model), persistent=False)

    def forward(self, start: int, length: int) -> Tensor:
        """Encodings of positions start .. start+length-1: (length, d_model)."""
        end = start + length
        if self.kind == "learned":
            if end > self.max_positions:
                raise ValueError(f"position {end - 1} exceeds model.max_positions={self.max_positions}")
            return self.table.weight[start:end]
        if end > self.sinusoids.shape[0] and self.sinusoids.device.type != "meta":
            size = max(end, 2 * self.sinusoids.shape[0])
            self.sinusoids = sinusoid_table(size, self.d_model).to(self.sinusoids.device)
        return self.sinusoids[start:end]
