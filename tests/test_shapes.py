"""The ladder of batch shapes (aiayn.runtime.shapes): few shapes, every pair once, each side within budget."""

import numpy as np
import pytest

from aiayn.data.shards import ShardedCorpus, ShardWriter
from aiayn.runtime.batches import collate, ladder_batches, make_batches
from aiayn.runtime.shapes import assign, choose_shapes, pack, padding_share


def wmt_like(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Lengths in subwords shaped as WMT's: log-normal sources around 25, targets about 1.1 times as
    long with a spread, a long tail to 250."""
    rng = np.random.default_rng(seed)
    src = np.clip(np.round(rng.lognormal(3.2, 0.6, n)), 1, 250).astype(np.int64)
    tgt = np.clip(np.round(src * rng.lognormal(0.1, 0.2, n)), 1, 250).astype(np.int64)
    return src, tgt


def test_the_greedy_ladder_of_a_small_histogram():
    """100 pairs (4, 4), 100 (8, 8), one (20, 3): the bounding shape (20, 8) first; then (8, 8) saves
    200 x (28 - 16) = 2,400 positions, (4, 4) then saves 100 x (16 - 8) = 800, and (20, 3) would save 5."""
    src = np.array([4] * 100 + [8] * 100 + [20])
    tgt = np.array([4] * 100 + [8] * 100 + [3])
    assert choose_shapes(src, tgt, 10, min_saving=10) == [(4, 4), (8, 8), (20, 8)]
    assert choose_shapes(src, tgt, 10, min_saving=1) == [(4, 4), (8, 8), (20, 3), (20, 8)]
    assert choose_shapes(src, tgt, 2, min_saving=1) == [(8, 8), (20, 8)]
    assert assign(src, tgt, [(4, 4), (8, 8), (20, 8)]).tolist() == [0] * 100 + [1] * 100 + [2]
    batches, shapes = pack(np.arange(201), src, tgt, [(4, 4), (8, 8), (20, 8)], tokens_per_batch=32)
    # (4, 4): 8 rows, 12 batches and 4 pairs left, which join (8, 8): 104 pairs in 26 batches of 4 rows
    assert shapes == [(8, 4, 4)] * 12 + [(4, 8, 8)] * 26 + [(1, 20, 8)]
    assert sorted(np.concatenate(batches).tolist()) == list(range(201))
    assert all(i < 100 for i in np.concatenate(batches[12:38][:1]))  # leftovers sort first: shorter pairs


@pytest.mark.parametrize("n, budget, k", [(20000, 3125, 64), (20000, 12500, 64), (5000, 25000, 16), (300, 500, 64)])
def test_an_epoch_meets_no_more_shapes_than_the_ladder_and_every_pair_once(n, budget, k):
    src, tgt = wmt_like(n)
    batches, shapes, dropped = ladder_batches(src, tgt, budget, k, max_len=256)
    assert dropped == 0 and len(set(shapes)) <= k
    assert sorted(np.concatenate(batches).tolist()) == list(range(n))
    short = 0
    for batch, (rows, S, T) in zip(batches, shapes):
        assert rows * S <= budget and rows * T <= budget  # both sides within the budget, padded
        assert (src[batch] + 1 <= S).all() and (tgt[batch] + 1 <= T).all() and len(batch) <= rows
        short += len(batch) < rows
    assert short <= 1  # only the last shape's remainder leaves rows empty


def test_a_ladder_pads_about_as_much_as_greedy_packing_on_a_small_corpus():
    """Padding shares (source, target) against greedy packing: on a sample this small greedy batches
    span many lengths, and the ladder pads less; ``benchmarks/step_overhead.py`` measures real sizes."""
    src, tgt = wmt_like(20000)
    ladder, shapes, _ = ladder_batches(src, tgt, 12500, 64, 256)
    greedy, _ = make_batches(src, tgt, 12500, 256)
    ours = padding_share(ladder, shapes, src + 1, tgt + 1)
    theirs = padding_share(greedy, None, src + 1, tgt + 1)
    assert sum(ours) < sum(theirs)


def test_padding_share_counts_positions_that_hold_no_token():
    src, tgt = np.array([2, 4]), np.array([3, 3])
    assert padding_share([np.array([0, 1])], None, src, tgt) == (0.25, 0.0)
    assert padding_share([np.array([0, 1])], [(4, 4, 3)], src, tgt) == (0.625, 0.5)


def test_dropped_pairs_are_counted_as_greedy_packing_counts_them():
    src, tgt = np.array([3, 70, 5, 9]), np.array([4, 2, 5, 12])
    batches, shapes, dropped = ladder_batches(src, tgt, 64, 8, max_len=12)
    assert dropped == 2 and sorted(np.concatenate(batches).tolist()) == [0, 2]


def test_collate_pads_to_the_shape_and_fills_missing_rows_with_empty_pairs(tmp_path):
    with ShardWriter(tmp_path / "t", vocab_size=50) as writer:
        writer.add([7, 8, 9], [10, 11])
        writer.add([12], [13, 14, 15])
    batch = collate(ShardedCorpus(tmp_path / "t"), [0, 1], shape=(3, 5, 6))
    assert batch.src.tolist() == [[7, 8, 9, 3, 0], [12, 3, 0, 0, 0], [3, 0, 0, 0, 0]]
    assert batch.tgt_in.tolist() == [[2, 10, 11, 0, 0, 0], [2, 13, 14, 15, 0, 0], [2, 0, 0, 0, 0, 0]]
    assert batch.tgt_out.tolist() == [[10, 11, 3, 0, 0, 0], [13, 14, 15, 3, 0, 0], [0] * 6]
    assert (batch.src_tokens, batch.tgt_tokens) == (6, 7) and batch.src_padded
    assert batch.gold_rows.tolist() == [0, 1, 2, 6, 7, 8, 9]
    assert batch.gold().tolist() == [10, 11, 3, 13, 14, 15, 3]
    with pytest.raises(ValueError, match=r"do not fit the shape \(3, 5, 3\)"):
        collate(ShardedCorpus(tmp_path / "t"), [0, 1], shape=(3, 5, 3))
