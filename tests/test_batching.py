import logging

import numpy as np
import pytest

from aiayn.data.shards import ShardedCorpus, ShardWriter
from aiayn.options import TrainConfig
from aiayn.runtime.batches import collate, make_batches, plan_step
from aiayn.train.order import BatchSampler, BatchStream


def lengths(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 30, n), rng.integers(1, 30, n)


def test_budget_and_exact_cover():
    src, tgt = lengths(500)
    batches, dropped = make_batches(src, tgt, tokens_per_batch=64)
    assert dropped == 0
    seen = np.concatenate(batches)
    assert sorted(seen.tolist()) == list(range(500))
    for b in batches:
        assert len(b) * (src[b].max() + 1) <= 64 and len(b) * (tgt[b].max() + 1) <= 64


def test_oversize_and_overlong_pairs_are_dropped_and_counted():
    src, tgt = np.array([3, 70, 5, 9]), np.array([4, 2, 5, 12])
    batches, dropped = make_batches(src, tgt, tokens_per_batch=64, max_len=12)
    assert dropped == 2  # pair 1 over the budget, pair 3 over max_len with its eos/bos
    assert sorted(np.concatenate(batches).tolist()) == [0, 2]
    alone, _ = make_batches(src[:2], tgt[:2], tokens_per_batch=64, drop_oversize=False)
    assert sorted(b.tolist() for b in alone) == [[0], [1]]
    with pytest.raises(ValueError, match="max_positions=12"):
        make_batches(src, tgt, tokens_per_batch=64, max_len=12, drop_overlong=False)


def test_epochs_cover_every_batch_once_and_are_deterministic():
    batches, _ = make_batches(*lengths(400), tokens_per_batch=64)
    a, b = BatchSampler(batches, seed=3), BatchSampler(batches, seed=3)
    assert a.order(1).tolist() == b.order(1).tolist()
    assert a.order(1).tolist() != a.order(2).tolist()
    assert sorted(a.order(2).tolist()) == list(range(len(batches)))
    assert BatchSampler(batches, seed=4).order(1).tolist() != a.order(1).tolist()


def test_ranks_get_equal_disjoint_shares(caplog):
    batches = [np.array([i]) for i in range(7)]
    with caplog.at_level(logging.INFO):
        ranks = [BatchSampler(batches, seed=1, rank=r, world_size=3) for r in range(3)]
    assert "1 of 7 batches sit out" in caplog.text
    orders = [r.order(5).tolist() for r in ranks]
    assert all(len(o) == 2 for o in orders)
    assert len(set(sum(orders, []))) == 6
    single = BatchSampler(batches, seed=1).order(5).tolist()
    assert [x for pair in zip(*orders) for x in pair] == single[:6]


def test_stream_resumes_mid_epoch_and_crosses_epochs():
    batches, _ = make_batches(*lengths(200), tokens_per_batch=64)
    sampler = BatchSampler(batches, seed=2)
    stream = BatchStream(sampler)
    taken = [stream.next()[0].tolist() for _ in range(len(batches) + 3)]
    assert stream.state_dict() == {"epoch": 2, "position": 3}
    again = BatchStream(sampler)
    for _ in range(5):
        again.next()
    resumed = BatchStream(sampler)
    resumed.load_state_dict(again.state_dict())
    assert [resumed.next()[0].tolist() for _ in range(len(batches) - 2)] == taken[5:]


def test_collate_adds_eos_and_bos(tmp_path):
    with ShardWriter(tmp_path / "t", vocab_size=50) as writer:
        writer.add([7, 8, 9], [10, 11])
        writer.add([12], [13, 14, 15])
    batch = collate(ShardedCorpus(tmp_path / "t"), [0, 1])
    assert batch.src.tolist() == [[7, 8, 9, 3], [12, 3, 0, 0]]
    assert batch.tgt_in.tolist() == [[2, 10, 11, 0], [2, 13, 14, 15]]
    assert batch.tgt_out.tolist() == [[10, 11, 3, 0], [13, 14, 15, 3]]
    assert (batch.src_tokens, batch.tgt_tokens) == (6, 7)
    assert batch.gold_rows.tolist() == [0, 1, 2, 4, 5, 6, 7]  # the non-pad positions of tgt_out.view(-1)
    assert batch.gold().tolist() == [10, 11, 3, 13, 14, 15, 3]


def reference_batches(src_lengths, tgt_lengths, tokens_per_batch, max_len=None, drop_oversize=True):
    """The packing rule pair by pair: add a pair unless (n + 1) * max(longest src, longest tgt) > budget."""
    src_need, tgt_need = np.asarray(src_lengths) + 1, np.asarray(tgt_lengths) + 1
    longest = np.maximum(src_need, tgt_need)
    drop = (longest > max_len if max_len else np.zeros(len(longest), bool)) | (
        (longest > tokens_per_batch) if drop_oversize else False
    )
    order = np.lexsort((np.arange(len(src_need)), tgt_need, src_need))
    batches, current, s_max, t_max = [], [], 0, 0
    for i in order[~drop[order]].tolist():
        s, t = max(s_max, src_need[i]), max(t_max, tgt_need[i])
        if current and (len(current) + 1) * max(s, t) > tokens_per_batch:
            batches.append(current)
            current, s, t = [], src_need[i], tgt_need[i]
        current.append(i)
        s_max, t_max = s, t
    return batches + ([current] if current else []), int(drop.sum())


@pytest.mark.parametrize(
    "seed, tokens_per_batch, max_len, drop_oversize",
    [(0, 64, None, True), (1, 64, 20, True), (2, 40, None, False), (3, 1000, None, True), (4, 7, 25, False)],
)
def test_vectorised_packing_equals_the_pair_by_pair_rule(seed, tokens_per_batch, max_len, drop_oversize):
    rng = np.random.default_rng(seed)
    src, tgt = rng.integers(0, 60, 3000), rng.integers(0, 60, 3000)
    got, dropped = make_batches(src, tgt, tokens_per_batch, max_len, drop_oversize=drop_oversize)
    want, want_dropped = reference_batches(src, tgt, tokens_per_batch, max_len, drop_oversize)
    assert [b.tolist() for b in got] == want and dropped == want_dropped


def test_collate_across_shards_equals_pair_by_pair(tmp_path):
    rng = np.random.default_rng(5)
    pairs = [(rng.integers(4, 50, rng.integers(1, 30)), rng.integers(4, 50, rng.integers(1, 30))) for _ in range(300)]
    with ShardWriter(tmp_path / "t", vocab_size=50, max_shard_mb=0.002) as writer:
        for a, b in pairs:
            writer.add(a, b)
    corpus = ShardedCorpus(tmp_path / "t")
    assert len(corpus.manifest["shards"]) >= 3
    indices = rng.permutation(300)[:57]
    batch = collate(corpus, indices)
    for row, i in enumerate(indices):
        a, b = pairs[i]
        assert batch.src[row, : len(a) + 1].tolist() == [*a, 3] and not batch.src[row, len(a) + 1 :].any()
        assert batch.tgt_in[row, : len(b) + 1].tolist() == [2, *b] and not batch.tgt_in[row, len(b) + 1 :].any()
        assert batch.tgt_out[row, : len(b) + 1].tolist() == [*b, 3] and not batch.tgt_out[row, len(b) + 1 :].any()
    assert batch.src_tokens == sum(len(pairs[i][0]) + 1 for i in indices) and batch.src_padded
    same = [i for i in range(300) if len(pairs[i][0]) == len(pairs[indices[0]][0])]
    assert not collate(corpus, same).src_padded
    with pytest.raises(IndexError, match=r"/t: sentence index out of range 0\.\.299$"):
        collate(corpus, [0, 300])


def test_step_plan_keeps_the_step_size_on_any_number_of_ranks():
    cfg = TrainConfig(tokens_per_step=25000, tokens_per_pass=12500)
    assert [(plan_step(cfg, w).passes, plan_step(cfg, w).tokens_per_pass) for w in (1, 2, 8)] == [
        (2, 12500),
        (1, 12500),
        (1, 3125),
    ]
    assert plan_step(TrainConfig(tokens_per_step=25000, tokens_per_pass=4096), 1).passes == 7
    for step_tokens, per_batch in ((25000, 12500), (25000, 4096), (128, 64), (400000, 12500)):
        cfg = TrainConfig(tokens_per_step=step_tokens, tokens_per_pass=per_batch)
        for world in range(1, 17):
            plan = plan_step(cfg, world)
            assert plan.world_size == world and plan.tokens_per_pass <= per_batch, (step_tokens, per_batch, world)
            assert plan.tokens_per_step == world * plan.passes * plan.tokens_per_pass
            assert abs(plan.tokens_per_step - step_tokens) <= plan.tokens_per_pass, (step_tokens, per_batch, world)
