"""The order of training batches (paper section 5.1): shuffled per epoch, dealt to data-parallel ranks.

The batches themselves (token-budget packing, padding) are the runtime's: :mod:`aiayn.runtime.batches`.
They are built once; each epoch shuffles their order with a generator seeded by (seed, epoch), and
data-parallel ranks take interleaved slices of that order.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from aiayn.data.shards import ShardedCorpus
from aiayn.options import TrainConfig
from aiayn.runtime.batches import StepPlan, ladder_batches, make_batches
from aiayn.runtime.shapes import Shape, padding_share

log = logging.getLogger(__name__)


def check_at_least_one_batch(where: str, tgt_lengths: np.ndarray, batches: list, tokens_per_batch: int) -> None:
    """Refuse a training set that does not fill one batch of ``tokens_per_batch`` target tokens (with their
    end symbols): a near-empty corpus after cleaning, found before any training step."""
    tokens = int(tgt_lengths.sum()) + len(tgt_lengths)
    if not batches or tokens < tokens_per_batch:
        raise ValueError(
            f"{where}: {len(tgt_lengths)} sentence pairs, {tokens} target tokens: less than one "
            f"batch of {tokens_per_batch} (from train.tokens_per_step and train.tokens_per_pass); the "
            "corpus is (nearly) empty: see the cleaning counts (clean/<task>/train.stats.json) and "
            "which data.clean rule dropped the pairs"
        )


class BatchSampler:
    """This rank's batches of each epoch, shuffled deterministically per (seed, epoch).

    Every epoch permutes all batches with ``numpy.random.default_rng([seed, epoch])``. With W ranks,
    the first ``n - n % W`` batches of the permutation are dealt round-robin, so each rank gets the
    same number; the remaining ``n % W`` batches (fewer than W) sit out that epoch, and since the
    permutation changes every epoch, different batches sit out each time (logged once).
    """

    def __init__(
        self,
        batches: list[np.ndarray],
        seed: int,
        rank: int = 0,
        world_size: int = 1,
        shuffle: bool = True,
        shapes: list[Shape] | None = None,
    ):
        """``shapes``: each batch's (rows, S, T) when the batches are padded to a ladder
        (:func:`aiayn.runtime.batches.ladder_batches`), else None."""
        if len(batches) < world_size:
            raise ValueError(f"{len(batches)} batches cannot be shared by {world_size} data-parallel ranks")
        self.batches, self.seed, self.rank, self.world_size, self.shuffle = batches, seed, rank, world_size, shuffle
        self.shapes = shapes
        self.per_rank = len(batches) // world_size
        if len(batches) % world_size:
            log.info(
                "%d of %d batches sit out each epoch so that %d ranks get %d batches each",
                len(batches) % world_size,
                len(batches),
                world_size,
                self.per_rank,
            )

    def order(self, epoch: int) -> np.ndarray:
        """Indices into ``batches`` this rank visits in ``epoch`` (length ``per_rank``)."""
        n = len(self.batches)
        perm = np.random.default_rng([self.seed, epoch]).permutation(n) if self.shuffle else np.arange(n)
        return perm[: n - n % self.world_size][self.rank :: self.world_size]


class BatchStream:
    """An endless stream of this rank's batches across epochs, resumable from (epoch, position).

    ``epoch`` counts from 1; ``position`` is the number of batches of that epoch already taken.
    """

    def __init__(self, sampler: BatchSampler, epoch: int = 1, position: int = 0):
        self.sampler, self.epoch, self.position = sampler, epoch, position
        self._order = sampler.order(epoch)

    def next(self) -> tuple[np.ndarray, Shape | None]:
        """Sentence indices of the next batch, and the (rows, S, T) it is padded to (None: its own longest)."""
        if self.position >= len(self._order):
            self.epoch, self.position = self.epoch + 1, 0
            self._order = self.sampler.order(self.epoch)
        index = self._order[self.position]
        self.position += 1
        return self.sampler.batches[index], None if self.sampler.shapes is None else self.sampler.shapes[index]

    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "position": self.position}

    def load_state_dict(self, state: dict) -> None:
        self.epoch, self.position = int(state["epoch"]), int(state["position"])
        self._order = self.sampler.order(self.epoch)


def load_corpora(data_dir: Path) -> tuple[ShardedCorpus, ShardedCorpus]:
    """``<data_dir>/train`` and ``<data_dir>/dev``; their vocabulary sizes must agree."""
    train, dev = ShardedCorpus(data_dir / "train"), ShardedCorpus(data_dir / "dev")
    if train.vocab_size != dev.vocab_size:
        raise ValueError(f"{data_dir}: train has {train.vocab_size} ids but dev has {dev.vocab_size}")
    if len(train) == 0:
        raise ValueError(f"{data_dir / 'train'}: no sentence pairs")
    return train, dev


def training_batches(
    data: ShardedCorpus, plan: StepPlan, cfg: TrainConfig, max_positions: int | None, shapes: int = 0
) -> tuple[list[np.ndarray], list[Shape] | None]:
    """Token-budget batches of the training pairs, and each batch's (rows, S, T) when they are padded to a
    ladder of at most ``shapes`` shapes (0: none; :mod:`aiayn.runtime.shapes`). Pairs with a side over
    ``train.max_length`` (or the learned positions' limit ``max_positions``) or over the batch budget are
    dropped, and counted in the log, as is the share of padding."""
    limit = cfg.length_limit(max_positions)
    budget = plan.tokens_per_pass
    if shapes:
        batches, batch_shapes, dropped = ladder_batches(data.src_lengths, data.tgt_lengths, budget, shapes, limit)
    else:
        (batches, dropped), batch_shapes = make_batches(data.src_lengths, data.tgt_lengths, budget, limit), None
    check_at_least_one_batch(str(data.dir), data.tgt_lengths, batches, budget)
    too_long = int((np.maximum(data.src_lengths, data.tgt_lengths) + 1 > limit).sum()) if limit else 0
    keys = f"train.max_length={cfg.max_length}" + (f", max_positions={max_positions}" if max_positions else "")
    log.info(
        "%d training batches of at most %d tokens per side; %d of %d sentence pairs dropped: %d with a "
        "side longer than %s, %d longer than the batch budget",
        len(batches),
        budget,
        dropped,
        len(data),
        too_long,
        f"{limit} tokens ({keys})" if limit else "no limit",
        dropped - too_long,
    )
    src, tgt = padding_share(batches, batch_shapes, data.src_lengths + 1, data.tgt_lengths + 1)
    log.info(
        "%s; padding: %.1f%% of source and %.1f%% of target positions",
        f"{len(set(batch_shapes))} batch shapes (train.batch_shapes={shapes})"
        if shapes
        else "each batch as long as its longest pair (train.batch_shapes=0)",
        100 * src,
        100 * tgt,
    )
    return batches, batch_shapes
