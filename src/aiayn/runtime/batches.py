"""Token-budget batches of a binarized corpus (:class:`~aiayn.data.shards.ShardedCorpus`, paper section 5.1),
padded into tensors: what training and scoring feed a network.

Sentence pairs are sorted by length and packed greedily so that a batch of n pairs, padded, holds at
most ``tokens_per_batch`` source and at most ``tokens_per_batch`` target tokens:
``n * max(src_len + 1) <= tokens_per_batch`` and ``n * max(tgt_len + 1) <= tokens_per_batch`` (the + 1 is the
eos / bos the collate adds). Or (``train.batch_shapes``, on a GPU by default) packed into a ladder
of a few shapes, each batch padded to its shape (:func:`ladder_batches`, :mod:`aiayn.runtime.shapes`).
Training shuffles the batches (its ``batching`` module); scoring (:mod:`aiayn.evaluate.perplexity`)
reads them in order.

Deviation from paper: the paper's batches held "approximately 25000 source tokens and 25000 target
tokens"; the budget here caps padded positions (as fairseq's ``--max-tokens``: sentences x the
longest, ``batch_by_size_vec`` in facebookresearch/fairseq ``fairseq/data/data_utils_fast.pyx`` at
v0.12.2), so a step holds fewer real tokens: a few percent with greedy packing, about 6% more on a
GPU's ladder of 64 shapes at WMT's size (``benchmarks/RESULTS.md``, "Step overhead"; ``log.csv`` and
``summary.json`` count real ones). A step's passes share ``train.tokens_per_step`` evenly
(:func:`plan_step`), so to restore the paper's real-token count raise
``train.tokens_per_step`` by f = 25000 / (real target tokens per step: ``tokens_tgt / steps`` of
``summary.json``).

The special ids (:data:`PAD`, :data:`UNK`, :data:`BOS`, :data:`EOS`) live here, beside the collate that
adds them. This module is in the runtime layer, not in :mod:`aiayn.data`: the data stages write
files without torch, and this is where ids become tensors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from aiayn.data.shards import ShardedCorpus
from aiayn.options import TrainConfig
from aiayn.options.train import CPU_TOKENS_PER_PASS
from aiayn.runtime.shapes import Shape, choose_shapes, pack

PAD, UNK, BOS, EOS = 0, 1, 2, 3


@dataclass(frozen=True)
class StepPlan:
    """One optimizer step: ``passes`` forward passes per rank of ``tokens_per_pass`` tokens per side."""

    world_size: int
    passes: int
    tokens_per_pass: int

    @property
    def tokens_per_step(self) -> int:
        """Padded tokens per side of the whole step: world_size * passes * tokens_per_pass."""
        return self.world_size * self.passes * self.tokens_per_pass


def plan_step(train: TrainConfig, world_size: int, fits: int | None = None) -> StepPlan:
    """How one optimizer step of ``train.tokens_per_step`` is shared by ``world_size`` data-parallel ranks.

    passes = ceil(tokens_per_step / (W * tokens_per_pass)) forward passes per rank, each of a
    batch budget of round(tokens_per_step / (W * passes)) tokens per side, so a step holds the same
    number of tokens (to within one pass) on 1 GPU or 16: the paper's 25,000 on its 8 GPUs were
    8 batches of about 3,125. ``fits``: the tokens a pass may hold on this device where
    ``train.tokens_per_pass`` is null (what a GPU's memory holds, :func:`aiayn.train.memory.tokens_that_fit`;
    None: :data:`aiayn.options.train.CPU_TOKENS_PER_PASS`).
    """
    if world_size < 1:
        raise ValueError(f"world size must be at least 1, got {world_size}")
    per_pass = train.tokens_per_pass or fits or CPU_TOKENS_PER_PASS
    passes = max(1, math.ceil(train.tokens_per_step / (world_size * per_pass)))
    per_pass = round(train.tokens_per_step / (world_size * passes))
    if per_pass < 1:
        raise ValueError(f"train.tokens_per_step={train.tokens_per_step} cannot be shared by {world_size} ranks")
    return StepPlan(world_size, passes, per_pass)


@dataclass
class Batch:
    """Padded tensors of one batch. src (B, S) = ids + [eos]; tgt_in (B, T) = [bos] + ids;
    tgt_out (B, T) = ids + [eos]; padding 0. ``src_tokens`` / ``tgt_tokens`` count non-pad tokens;
    ``src_padded`` is False when every source has the same length (no attention mask is needed).
    ``gold_rows`` (tgt_tokens,): the positions of tgt_out.view(-1) that hold a token, in order."""

    src: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    src_tokens: int
    tgt_tokens: int
    src_padded: bool
    gold_rows: torch.Tensor

    def gold(self) -> torch.Tensor:
        """The target ids at ``gold_rows``: (tgt_tokens,), no padding."""
        return self.tgt_out.view(-1).index_select(0, self.gold_rows)

    def to(self, device: torch.device) -> "Batch":
        """The tensors on ``device``; from pinned memory the copies are asynchronous."""

        def move(t: torch.Tensor) -> torch.Tensor:
            return t.to(device, non_blocking=device.type == "cuda" and t.is_pinned())

        return Batch(
            move(self.src),
            move(self.tgt_in),
            move(self.tgt_out),
            self.src_tokens,
            self.tgt_tokens,
            self.src_padded,
            move(self.gold_rows),
        )


def _empty(rows: int, width: int, pin: bool) -> tuple[torch.Tensor, np.ndarray]:
    """A (rows, width) int64 tensor (in page-locked memory if ``pin``) and its numpy view."""
    tensor = torch.empty((rows, width), dtype=torch.int64, pin_memory=pin)
    return tensor, tensor.numpy()


def collate(corpus: ShardedCorpus, indices, pin: bool = False, shape: Shape | None = None) -> Batch:
    """Read pairs ``indices`` from ``corpus`` and pad them into a :class:`Batch` (vectorised).

    ``pin``: allocate the tensors in page-locked memory, for asynchronous copies to a GPU. ``shape``
    (rows, S, T) of a ladder (:mod:`aiayn.runtime.shapes`): src is (rows, S), the targets (rows, T),
    and rows past the pairs are empty pairs (src = [eos], tgt_in = [bos], no target token) that the
    loss does not see; without it, as long as the longest pair.
    """
    src_ids, src_len = corpus.padded("src", indices, PAD)  # (n, longest source)
    tgt_ids, tgt_len = corpus.padded("tgt", indices, PAD)  # (n, longest target)
    (n, s), t = src_ids.shape, tgt_ids.shape[1]
    rows, width_src, width_tgt = shape or (n, s + 1, t + 1)
    if rows < n or width_src <= s or width_tgt <= t:
        raise ValueError(f"{n} pairs of up to {s} + 1 and {t} + 1 tokens do not fit the shape {shape}")
    real = np.arange(n)
    src, src_np = _empty(rows, width_src, pin)
    tgt_in, tgt_in_np = _empty(rows, width_tgt, pin)
    tgt_out, tgt_out_np = _empty(rows, width_tgt, pin)
    src_np[:n, :s], src_np[:n, s:], src_np[n:] = src_ids, PAD, PAD
    src_np[real, src_len] = EOS
    src_np[n:, 0] = EOS
    tgt_in_np[:, 0], tgt_in_np[:n, 1 : t + 1], tgt_in_np[:n, t + 1 :], tgt_in_np[n:, 1:] = BOS, tgt_ids, PAD, PAD
    tgt_out_np[:n, :t], tgt_out_np[:n, t:], tgt_out_np[n:] = tgt_ids, PAD, PAD
    tgt_out_np[real, tgt_len] = EOS
    padded = bool(rows > n or (n and (src_len.min() != src_len.max() or s + 1 < width_src)))
    gold = np.flatnonzero(np.arange(width_tgt) <= tgt_len[:, None])  # (tokens,) row-major positions of ids + eos
    gold_rows = torch.from_numpy(gold).pin_memory() if pin else torch.from_numpy(gold)
    return Batch(src, tgt_in, tgt_out, int(src_len.sum()) + n, int(tgt_len.sum()) + n, padded, gold_rows)


def _kept(
    src_lengths: np.ndarray,
    tgt_lengths: np.ndarray,
    tokens_per_batch: int,
    max_len: int | None,
    drop_oversize: bool,
    drop_overlong: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(pairs kept, ordered by source length, target length, index; source and target lengths with eos /
    bos; pairs dropped): the dropping rules of :func:`make_batches`."""
    src_need, tgt_need = np.add(src_lengths, 1, dtype=np.int64), np.add(tgt_lengths, 1, dtype=np.int64)
    longest = np.maximum(src_need, tgt_need)
    too_long = longest > max_len if max_len else np.zeros(len(longest), dtype=bool)
    if not drop_overlong and too_long.any():
        first = int(np.flatnonzero(too_long)[0])
        raise ValueError(
            f"sentence pair {first} has {longest[first]} tokens with eos/bos, over the model's max_positions={max_len}"
        )
    drop = too_long | (longest > tokens_per_batch if drop_oversize else False)
    del longest, too_long
    order = np.lexsort((tgt_need, src_need))  # a stable sort: ties stay in index order
    return order[~drop[order]], src_need, tgt_need, int(drop.sum())


def make_batches(
    src_lengths: np.ndarray,
    tgt_lengths: np.ndarray,
    tokens_per_batch: int,
    max_len: int | None = None,
    drop_oversize: bool = True,
    drop_overlong: bool = True,
) -> tuple[list[np.ndarray], int]:
    """Pack sentence indices into token-budget batches; returns (batches, number of dropped pairs).

    Pairs are ordered by source length, then target length, then index (deterministic), and packed
    greedily: a pair joins the current batch unless (n + 1) * max(longest source, longest target)
    would exceed ``tokens_per_batch``. A pair whose side (plus eos / bos) exceeds ``tokens_per_batch`` is dropped
    and counted when ``drop_oversize``, else (evaluation) it gets a batch of its own. One longer than
    ``max_len`` (the model's positions) is dropped and counted when ``drop_overlong``, else it is an error.
    """
    order, src_need, tgt_need, dropped = _kept(
        src_lengths, tgt_lengths, tokens_per_batch, max_len, drop_oversize, drop_overlong
    )
    src_need, tgt_need = src_need[order], tgt_need[order]  # the unsorted ones freed: 16 bytes a pair
    return _pack(order, src_need, tgt_need, tokens_per_batch), dropped


def ladder_batches(
    src_lengths: np.ndarray, tgt_lengths: np.ndarray, tokens_per_batch: int, max_shapes: int, max_len: int | None = None
) -> tuple[list[np.ndarray], list[Shape], int]:
    """Token-budget batches padded to at most ``max_shapes`` shapes chosen for these lengths
    (:mod:`aiayn.runtime.shapes`); returns (batches, each batch's (rows, S, T), dropped pairs). Pairs
    are dropped and counted as by :func:`make_batches` in training."""
    order, src_need, tgt_need, dropped = _kept(src_lengths, tgt_lengths, tokens_per_batch, max_len, True, True)
    if not len(order):
        return [], [], dropped
    ladder = choose_shapes(src_need[order], tgt_need[order], max_shapes, tokens_per_batch)
    batches, shapes = pack(order, src_need, tgt_need, ladder, tokens_per_batch)
    return batches, shapes, dropped


def _pack(order: np.ndarray, src_need: np.ndarray, tgt_need: np.ndarray, tokens_per_batch: int) -> list[np.ndarray]:
    """Greedy packing of pairs sorted by source length, one batch (not one pair) per Python step.

    From a batch's first pair, the n-th candidate fits when n * max(src_need[n], running max of
    tgt_need) <= tokens_per_batch: the left side never decreases, so the pairs that fit are a prefix,
    found with one vectorised test over at most tokens_per_batch // src_need[first] candidates.
    """
    batches, start, total = [], 0, len(order)
    while start < total:
        window = min(total - start, max(1, tokens_per_batch // int(src_need[start])))
        stop = start + window
        width = np.maximum(src_need[start:stop], np.maximum.accumulate(tgt_need[start:stop]))
        fits = np.arange(1, window + 1) * width <= tokens_per_batch
        size = max(1, int(np.argmin(fits)) if not fits.all() else window)
        batches.append(order[start : start + size].astype(np.int64))
        start += size
    return batches
