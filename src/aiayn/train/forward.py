"""One forward pass of training as one module: the model's teacher-forced output and its label-smoothed
loss (paper section 5.4), which DDP wraps and ``torch.compile`` compiles whole.

Four ways to the same sums (equal up to float rounding; ``tests/test_compiled_step.py``):

- ``blocked`` (a CPU in float32, eager): the decoder's states at the gold positions only; the loss
  forms their logits a block of rows at a time (:func:`aiayn.runtime.loss.projected_label_smoothed_loss`).
- ``rows`` (eager elsewhere): the logits of the gold positions only, then the blocked loss over them
  (:func:`aiayn.runtime.loss.label_smoothed_loss`), which keeps no float32 copy of the logits.
- ``fused`` (compiled): the logits of the gold positions only (packed: no padding position reaches
  the output projection), the loss in plain operations that the compiler fuses
  (:func:`aiayn.runtime.loss.fused_label_smoothed_loss`). The count of gold positions is one more
  symbolic size of the one graph every batch shape shares (:mod:`aiayn.train.distributed`).
- ``everywhere`` (compiled with CUDA graphs, ``train.compile_mode: reduce-overhead``): the logits
  of every target position, padding included, where padding weighs nothing: a CUDA graph is
  recorded per distinct set of sizes, and the gold count changes almost every batch (even rounded
  up to 16 steps an octave, an epoch at WMT14's size, 6,141 batches in 64 shapes at 25,000 tokens,
  has 438 distinct pairs of shape and count: real EN-DE lengths, ``benchmarks/step_overhead.py``),
  so here a batch's tensors have its shape alone.

The compiled ways always mask the source (``src_padded`` is not read): a Python bool that took
two values would make a second graph, and batches padded to a ladder of shapes are nearly all
padded anyway.
"""

from __future__ import annotations

import contextlib

import torch
from torch import Tensor, nn

from aiayn.model import Transformer
from aiayn.runtime.batches import PAD
from aiayn.runtime.loss import fused_label_smoothed_loss, label_smoothed_loss, projected_label_smoothed_loss

WAYS = ("blocked", "rows", "fused", "everywhere")
COMPILED_WAYS = ("fused", "everywhere")


def way_for(device: torch.device, precision: str, compiled: bool, cuda_graphs: bool = False) -> str:
    """Which of :data:`WAYS` a training on ``device`` in the resolved ``precision`` takes; ``cuda_graphs``:
    compiled with CUDA graphs (``train.compile_mode: reduce-overhead``)."""
    if compiled:
        return "everywhere" if cuda_graphs else "fused"
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
        arithmetic = (
            torch.autocast(src.device.type, dtype=self.autocast_dtype)
            if self.autocast_dtype
            else contextlib.nullcontext()
        )
        if self.way in COMPILED_WAYS:
            rows = None if self.way == "everywhere" else gold_rows  # (R,) positions of tgt_out.view(-1)
            with arithmetic:
                logits = self.model(src, tgt_in, True, rows)  # (R, V), or (B, T, V) everywhere
            gold = tgt_out if rows is None else tgt_out.reshape(-1).index_select(0, rows)
            return fused_label_smoothed_loss(logits, gold, self.smoothing, PAD)
        gold = tgt_out.reshape(-1).index_select(0, gold_rows)  # (R,)
        with arithmetic:  # the blocked loss forms the logits itself, from the states
            run = self.model.states if self.way == "blocked" else self.model
            out = run(src, tgt_in, src_padded, gold_rows)  # (R, d_model) or (R, V)
        if self.way == "blocked":
            return projected_label_smoothed_loss(out, self.model.output_matrix(), gold, self.smoothing, PAD)
        return label_smoothed_loss(out, gold, self.smoothing, PAD)
