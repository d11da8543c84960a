"""Token-budget batches of a binarized corpus (:class:`~aiayn.data.shards.ShardedCorpus`, paper section 5.1),
padded into tensors: what training and scoring feed a network.

Sentence pairs are sorted by length and packed greedily so that a batch of n pairs, padded, holds at
most ``tokens_per_batch`` source and at most ``tokens_per_batch`` target tokens:
``n * max(src_len + 1) <= tokens_per_batch`` and ``n * max(tgt_len + 1) <= tokens_per_batch`` (the + 1 is the
eos / bos the collate adds). Training shuffles the batches (its ``batching`` module); scoring
(:mod:`aiayn.evaluate.perplexity`) reads them in order.

Deviation from paper: the paper's batches held "approximately 25000 source tokens and 25000 target
tokens"; the budget here caps padded positions (as fairseq's ``--max-tokens``: sentences x the
longest, ``batch_by_size_vec`` in facebookresearch/fairseq ``fairseq/data/data_utils_fast.pyx`` at
5856cd1f), so a step holds a few percent fewer real tokens (``log.csv`` and ``summary.json`` count
real ones). A step's passes
share ``train.tokens_per_step`` evenly (:meth:`aiayn.options.TrainConfig.plan`), so to restore the
paper's real-token count raise ``train.tokens_per_step`` by f = 25000 / (real target tokens per step:
``tokens_tgt / steps`` of ``summary.json``).

The special ids (:data:`PAD`, :data:`UNK`, :data:`BOS`, :data:`EOS`) live here, beside the collate that
adds them. This module is in the runtime layer, not in :mod:`aiayn.data`: the data stages write
files without torch, and this is where ids become tensors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from aiayn.data.shards import ShardedCorpus

PAD, UNK, BOS, EOS = 0, 1, 2, 3


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

        return Batch(move(self.src), move(self.tgt_in), move(self.tgt_out), self.src_tokens, self.tgt_tokens,
                     self.src_padded, move(self.gold_rows))


def _empty(rows: int, width: int, pin: bool) -> tuple[torch.Tensor, np.ndarray]:
    """A (rows, width) int64 tensor (in page-locked memory if ``pin``) and its numpy view."""
    tensor = torch.empty((rows, width), dtype=torch.int64, pin_memory=pin)
    return tensor, tensor.numpy()


def collate(corpus: ShardedCorpus, indices, pin: bool = False) -> Batch:
    """Read pairs ``indices`` from ``corpus`` and pad them into a :class:`Batch` (vectorised).

    ``pin``: allocate the tensors in page-locked memory, for asynchronous copies to a GPU.
    """
    src_ids, src_len = corpus.padded("src", indices, PAD)  # (n, S - 1)
    tgt_ids, tgt_len = corpus.padded("tgt", indices, PAD)  # (n, T - 1)
    (n, s), t = src_ids.shape, tgt_ids.shape[1]
    rows = np.arange(n)
    src, src_np = _empty(n, s + 1, pin)
    tgt_in, tgt_in_np = _empty(n, t + 1, pin)
    tgt_out, tgt_out_np = _empty(n, t + 1, pin)
    src_np[:, :s], src_np[:, s] = src_ids, PAD
    src_np[rows, src_len] = EOS
    tgt_in_np[:, 0], tgt_in_np[:, 1:] = BOS, tgt_ids
    tgt_out_np[:, :t], tgt_out_np[:, t] = tgt_ids, PAD
    tgt_out_np[rows, tgt_len] = EOS
    padded = bool(n and src_len.min() != src_len.max())
    gold = np.flatnonzero(np.arange(t + 1) <= tgt_len[:, None])  # (tokens,) row-major positions of ids + eos
    gold_rows = torch.from_numpy(gold).pin_memory() if pin else torch.from_numpy(gold)
    return Batch(src, tgt_in, tgt_out, int(src_len.sum()) + n, int(tgt_len.sum()) + n, padded, gold_rows)


def make_batches(src_lengths: np.ndarray, tgt_lengths: np.ndarray, tokens_per_batch: int, max_len: int | None = None,
                 drop_oversize: bool = True, drop_overlong: bool = True) -> tuple[list[np.ndarray], int]:
    """Pack sentence indices into token-budget batches; returns (batches, number of dropped pairs).

    Pairs are ordered by source length, then target length, then index (deterministic), and packed
    greedily: a pair joins the current batch unless (n + 1) * max(longest source, longest target)
    would exceed ``tokens_per_batch``. A pair whose side (plus eos / bos) exceeds ``tokens_per_batch`` is dropped
    and counted when ``drop_oversize``, else (evaluation) it gets a batch of its own. One longer than
    ``max_len`` (the model's positions) is dropped and counted when ``drop_overlong``, else it is an error.
    """
    src_need, tgt_need = np.asarray(src_lengths) + 1, np.asarray(tgt_lengths) + 1
    longest = np.maximum(src_need, tgt_need)
    too_long = longest > max_len if max_len else np.zeros(len(longest), dtype=bool)
    if not drop_overlong and too_long.any():
        first = int(np.flatnonzero(too_long)[0])
        raise ValueError(f"sentence pair {first} has {longest[first]} tokens with eos/bos, over the model's "
                         f"max_positions={max_len}")
    oversize = longest > tokens_per_batch
    drop = too_long | (oversize if drop_oversize else False)
    order = np.lexsort((np.arange(len(src_need)), tgt_need, src_need))
    order = order[~drop[order]]
    return _pack(order, src_need[order], tgt_need[order], tokens_per_batch), int(drop.sum())


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
        batches.append(order[start:start + size].astype(np.int64))
        start += size
    return batches
