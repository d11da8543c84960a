"""One forward pass of training as one module: the model's teacher-forced output and its label-smoothed
loss (paper section 5.4), which DDP wraps and ``torch.compile`` compiles whole.

Three ways to the same sums (equal up to float rounding; ``tests/test_compiled_step.py``):

- ``blocked`` (a CPU in float32, eager): the decoder's states at the gold positions only; the loss
  forms their logits a block of rows at a time (:func:`aiayn.runtime.loss.projected_label_smoothed_loss`).
- ``rows`` (eager elsewhere): the logits of the gold positions only, then the blocked loss over them
  (:func:`aiayn.runtime.loss.label_smoothed_loss`), which keeps no float32 copy of the logits.
- ``fused`` (compiled): the logits of every target position, padding included, so that a batch's
  tensors have its shape alone (the count of gold positions changes every batch, and a compiled graph
  or CUDA graph would change with it); the loss in plain operations that the compiler fuses
  (:func:`aiayn.runtime.loss.fused_label_smoothed_loss`), where padding weighs nothing.
"""

from __future__ import annotations

import contextlib

import torch
from torch import Tensor, nn

from aiayn.model import Transformer
from aiayn.runtime.batches import PAD
from aiayn.runtime.loss import fused_label_smoothed_loss, label_smoothed_loss, projected_label_smoothed_loss

WAYS = ("blocked", "rows", "fused")


def way_for(device: torch.device, precision: str, compiled: bool) -> str:
    """Which of :data:`WAYS` a training on ``device`` in the resolved ``precision`` takes."""
    if compiled:
        return "fused"
    return "blocked" if device.type == "cpu" and precision == "fp32" else "rows"


class TrainingLoss(nn.Module):
    """``forward(src, tgt_in, tgt_out, gold_rows, src_padded) -> (loss sum, nll sum, target tokens)`` of one
    batch (:class:`aiayn.runtime.batches.Batch`'s tensors), float32 scalars; only the loss has a gradient.
    The model runs under bf16 autocast when ``autocast_dtype`` says so, the loss in float32."""

    def __init__(self, model: Transformer, smoothing: float, way: str, autocast_dtype: torch.dtype | None = None):
        super().__init__()
        if way not in WAYS:
            raise ValueError(f"no training loss way {way!r}: one of {WAYS}")
        self.model, self.smoothing, self.way, self.autocast_dtype = model, smoothing, way, autocast_dtype

    def forward(
        self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor, gold_rows: Tensor, src_padded: bool
    ) -> tuple[Tensor, Tensor, Tensor]:
        everywhere = self.way == "fused"
        rows = None if everywhere else gold_rows  # (R,) positions of tgt_out.view(-1) with a target
        arithmetic = (
            torch.autocast(src.device.type, dtype=self.autocast_dtype)
            if self.autocast_dtype
            else contextlib.nullcontext()
        )
        with arithmetic:  # the blocked loss forms the logits itself, from the states
            run = self.model.states if self.way == "blocked" else self.model
            out = run(src, tgt_in, src_padded, rows)
        if everywhere:
            return fused_label_smoothed_loss(out, tgt_out, self.smoothing, PAD)  # out (B, T, V)
        gold = tgt_out.reshape(-1).index_select(0, gold_rows)  # (R,)
        if self.way == "blocked":  # out (R, d_model)
            return projected_label_smoothed_loss(out, self.model.output_matrix(), gold, self.smoothing, PAD)
        return label_smoothed_loss(out, gold, self.smoothing, PAD)  # out (R, V)
