"""Collate the next batches on a background thread, into pinned memory, while the step computes."""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor

import torch

from aiayn.data.shards import ShardedCorpus
from aiayn.runtime.batches import Batch, collate
from aiayn.train.order import BatchStream


class Prefetcher:
    """The batches of a :class:`BatchStream`, ``depth`` of them collated ahead on one worker thread.

    The stream's order is drawn on the calling thread; the worker only reads and pads (numpy, which
    releases the GIL for its copies). On CUDA the tensors are pinned and copied asynchronously.
    :meth:`state_dict` is the position of the next batch :meth:`next` returns, not of the batches
    collated ahead, so a checkpoint resumes exactly where training was.
    """

    def __init__(self, stream: BatchStream, corpus: ShardedCorpus, device: torch.device, depth: int = 2):
        self.stream, self.corpus, self.device, self.depth = stream, corpus, device, max(1, depth)
        self.pin = device.type == "cuda"
        self.pool: ThreadPoolExecutor | None = None
        self.pending: deque[tuple[dict, Future]] = deque()

    def _fill(self) -> None:
        if self.pool is None:
            self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="collate")
        while len(self.pending) < self.depth:
            state = self.stream.state_dict()
            indices, shape = self.stream.next()
            self.pending.append((state, self.pool.submit(collate, self.corpus, indices, self.pin, shape)))

    def next(self) -> Batch:
        """The next batch, on the device (its copy may still be in flight on CUDA)."""
        self._fill()
        _, future = self.pending.popleft()
        batch = future.result()
        self._fill()
        return batch.to(self.device)

    def state_dict(self) -> dict:
        return dict(self.pending[0][0]) if self.pending else self.stream.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self._drop()
        self.stream.load_state_dict(state)

    def _drop(self) -> None:
        for _, future in self.pending:
            future.cancel()
        for _, future in self.pending:
            if not future.cancelled():
                future.exception()  # wait for it; its batch is not wanted
        self.pending.clear()

    def close(self) -> None:
        """Stop the worker (the stream keeps its position: :meth:`state_dict` still holds)."""
        if self.pending:
            self.stream.load_state_dict(self.state_dict())
        self._drop()
        if self.pool is not None:
            self.pool.shutdown(wait=True)
            self.pool = None
