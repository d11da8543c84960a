"""A ladder of batch shapes: at most K (source length, target length) pairs per corpus, to which every
training batch is padded, so that an epoch meets at most K tensor shapes.

A GPU step pays for each tensor shape it has not met before: a compiled graph or CUDA graph per
shape, a cuBLAS heuristic and an allocator pattern per shape, and on cuDNN's attention an execution
plan. Greedy packing (:func:`aiayn.runtime.batches.make_batches`) pads each batch to its own longest
pair, which gives almost every batch a shape of its own (``benchmarks/step_overhead.py`` counts them).

Here a pair of lengths (s, t), eos and bos included, is padded to the cheapest shape (S, T) of the
ladder with S >= s and T >= t, cheapest meaning fewest padded positions S + T. The ladder is chosen
for the corpus from its histogram of (s, t): it starts from the bounding shape (the longest source,
the longest target) and adds, one at a time, the shape that saves the most padded positions over the
epoch (a greedy facility location, evaluated lazily: a shape's saving only shrinks as shapes are
added). It stops at K shapes, or when the best shape saves less than one batch's budget of positions
an epoch, about what its partly filled last batch costs. A shape (S, T) gets tokens_per_batch //
max(S, T) rows, so both sides of every batch stay within the budget as in greedy packing.

tensorflow/tensor2tensor batched the same way in one dimension: ``utils/data_reader.py`` at 3d9c62f2
(``bucket_boundaries``, ``hparams_to_batching_scheme``) put a pair in a bucket by its longer side,
boundaries 8, 12, 16, 24, 32, ... for ``transformer_base`` (two per octave: ``batching_mantissa_bits
= 1``, ``models/common_hparams.py``) and 8, 10, 12, 14, 16, 20, 24, ... for the big presets (four per
octave: ``batching_mantissa_bits = 2`` in ``transformer_big_dr1``, ``models/transformer.py``), and gave
each bucket batch_size // boundary rows; ``bucket_by_sequence_length(..., dynamic_pad=True)`` then
padded each batch to its own longest pair, not to the boundary. Ours fixes the lengths as well (the
shapes), per side (``docs/deviations.md``, "Batch budget" and "Big's length buckets").
"""

from __future__ import annotations

import heapq

import numpy as np

# (rows, source positions, target positions) of one padded batch
Shape = tuple[int, int, int]


def _cells(src_need: np.ndarray, tgt_need: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (s, t) of the pairs: (s, t, count) per cell and each pair's cell index."""
    width = int(tgt_need.max()) + 1
    keys, inverse, counts = np.unique(
        src_need.astype(np.int64) * width + tgt_need, return_inverse=True, return_counts=True
    )
    return keys // width, keys % width, counts, inverse


def choose_shapes(
    src_need: np.ndarray, tgt_need: np.ndarray, max_shapes: int, min_saving: int
) -> list[tuple[int, int]]:
    """At most ``max_shapes`` shapes (S, T) that cover every pair (s, t) = (``src_need``, ``tgt_need``)
    and pad them to few positions (module docstring); each shape after the first saves at least
    ``min_saving`` padded positions. Deterministic; sorted by S + T, then S."""
    s, t, count, _ = _cells(np.asarray(src_need), np.asarray(tgt_need))
    bound = (int(s.max()), int(t.max()))
    cost = np.full(len(s), sum(bound), dtype=np.int64)  # each cell's padded positions per pair, now
    # first savings, for every candidate (a, b) at once: pairs covered times (S0 + T0 - a - b)
    a_values, b_values = np.unique(s), np.unique(t)
    grid = np.zeros((len(a_values), len(b_values)), dtype=np.int64)
    np.add.at(grid, (np.searchsorted(a_values, s), np.searchsorted(b_values, t)), count)
    covered = grid.cumsum(0).cumsum(1)  # pairs with s <= a and t <= b
    a, b = np.meshgrid(a_values, b_values, indexing="ij")
    saving = covered * (sum(bound) - a - b)
    heap = [(-int(g), int(x + y), int(x), int(y)) for g, x, y in zip(saving.ravel(), a.ravel(), b.ravel()) if g > 0]
    heapq.heapify(heap)
    shapes = [bound]
    while heap and len(shapes) < max_shapes:
        _, total, x, y = heapq.heappop(heap)
        inside = (s <= x) & (t <= y)
        gain = int((count[inside] * np.maximum(cost[inside] - total, 0)).sum())  # exact, with today's costs
        if heap and gain < -heap[0][0]:
            heapq.heappush(heap, (-gain, total, x, y))  # another candidate may save more now
            continue
        if gain < max(min_saving, 1):
            break
        shapes.append((x, y))
        cost[inside] = np.minimum(cost[inside], total)
    return sorted(shapes, key=lambda shape: (shape[0] + shape[1], shape))


def assign(src_need: np.ndarray, tgt_need: np.ndarray, shapes: list[tuple[int, int]]) -> np.ndarray:
    """Each pair's shape: the index in ``shapes`` of the cheapest (fewest S + T, then first) that covers it;
    -1 for a pair that none covers."""
    s, t, _, inverse = _cells(np.asarray(src_need), np.asarray(tgt_need))
    ladder = np.asarray(shapes, dtype=np.int64).reshape(-1, 2)  # (K, 2)
    fits = (ladder[:, :1] >= s) & (ladder[:, 1:] >= t)  # (K, cells)
    price = np.where(fits, ladder.sum(1, keepdims=True), np.iinfo(np.int64).max)
    best = price.argmin(0)
    return np.where(fits.any(0), best, -1)[inverse]


def pack(
    order: np.ndarray, src_need: np.ndarray, tgt_need: np.ndarray, shapes: list[tuple[int, int]], tokens_per_batch: int
) -> tuple[list[np.ndarray], list[Shape]]:
    """Batches of the pairs ``order`` (indices into the length arrays) padded to ``shapes``, and each
    batch's (rows, S, T): tokens_per_batch // max(S, T) rows.

    Each shape's pairs, sorted by (s, t, index), fill whole batches; the few left over move on to
    the cheapest shape that covers theirs (``shapes`` sorted by S + T, so it comes later), and only the
    last shape's remainder makes a batch with fewer pairs than rows, whose missing rows the collate
    fills with empty pairs (:func:`aiayn.runtime.batches.collate`)."""
    src_need, tgt_need = np.asarray(src_need), np.asarray(tgt_need)
    ladder = [(S, T) for S, T in shapes]
    which = assign(src_need[order], tgt_need[order], ladder)
    if (which < 0).any():
        raise ValueError("a pair is longer than every shape of the ladder")
    parents = [_parent(k, ladder) for k in range(len(ladder))]
    carried: list[list[np.ndarray]] = [[] for _ in ladder]
    batches, batch_shapes = [], []
    for k, (S, T) in enumerate(ladder):
        members = np.concatenate([order[which == k], *carried[k]]).astype(np.int64)
        members = members[np.lexsort((members, tgt_need[members], src_need[members]))]
        rows = max(1, tokens_per_batch // max(S, T))
        full = len(members) - len(members) % rows
        for start in range(0, full, rows):
            batches.append(members[start : start + rows])
            batch_shapes.append((rows, S, T))
        rest = members[full:]
        if len(rest) and parents[k] is not None:
            carried[parents[k]].append(rest)
        elif len(rest):
            batches.append(rest)
            batch_shapes.append((rows, S, T))
    return batches, batch_shapes


def _parent(k: int, ladder: list[tuple[int, int]]) -> int | None:
    """The cheapest shape after ``k`` that covers shape ``k``, or None (the bounding shape)."""
    S, T = ladder[k]
    later = [j for j in range(k + 1, len(ladder)) if ladder[j][0] >= S and ladder[j][1] >= T]
    return min(later, key=lambda j: (sum(ladder[j]), j)) if later else None


def padding_share(
    batches: list[np.ndarray], shapes: list[Shape] | None, src_need: np.ndarray, tgt_need: np.ndarray
) -> tuple[float, float]:
    """The share of the batches' tensor positions that hold padding: (source, target). Without
    ``shapes`` a batch is as long as its longest pair (greedy packing)."""
    real = np.zeros(2)
    positions = np.zeros(2)
    for i, batch in enumerate(batches):
        s, t = src_need[batch], tgt_need[batch]
        rows, S, T = shapes[i] if shapes else (len(batch), int(s.max()), int(t.max()))
        real += (s.sum(), t.sum())
        positions += (rows * S, rows * T)
    share = 1.0 - real / np.maximum(positions, 1)
    return float(share[0]), float(share[1])
