"""Teacher-forced NLL and perplexity of a binarized corpus: the trainer's dev check and Table 3's "PPL (dev)".

PPL = exp(-(1/N) sum_i log p(y_i | y_<i, x)) over every target word-piece and every eos (N of them),
without label smoothing; padding is not counted. The CLI is :mod:`aiayn.evaluate.perplexity`.
"""

from __future__ import annotations

import contextlib
import logging
import math

import torch
from torch import nn

from aiayn.data.shards import ShardedCorpus
from aiayn.train.batching import collate, make_batches
from aiayn.train.loss import label_smoothed_loss

log = logging.getLogger(__name__)


@torch.no_grad()
def corpus_nll(model: nn.Module, corpus: ShardedCorpus, tokens_per_batch: int, device: torch.device,
               max_len: int | None = None, autocast: contextlib.AbstractContextManager | None = None,
               drop_overlong: bool = False) -> dict:
    """Summed NLL over ``corpus`` in token-budget batches.

    Every pair counts; a pair longer than ``max_len`` (learned positions) is an error, or with
    ``drop_overlong`` is left out and counted in the log. Returns ``{"nll": sum of -log p,
    "tokens": N, "sentences": n scored}``. ``model`` maps (src, tgt_in) to logits; its training
    mode is restored afterwards.
    """
    was_training = model.training
    model.eval()
    batches, dropped = make_batches(corpus.src_lengths, corpus.tgt_lengths, tokens_per_batch, max_len,
                                    drop_oversize=False, drop_overlong=drop_overlong)
    if dropped:
        log.warning("%s: %d sentence pair(s) longer than max_positions=%s left out of the perplexity",
                    corpus.dir, dropped, max_len)
    nll, tokens = 0.0, 0
    for indices in batches:
        batch = collate(corpus, indices).to(device)
        with autocast or contextlib.nullcontext():
            logits = model(batch.src, batch.tgt_in, batch.src_padded, batch.gold_rows)  # (R, V)
        _, batch_nll, n = label_smoothed_loss(logits, batch.gold(), 0.0)
        nll += float(batch_nll)
        tokens += int(n)
    model.train(was_training)
    return {"nll": nll, "tokens": tokens, "sentences": len(corpus) - dropped}


def perplexity_report(totals: dict) -> dict:
    """The ``*.ppl.json`` fields from :func:`corpus_nll` totals."""
    if totals["tokens"] == 0:
        raise ValueError("no target tokens to score (empty split)")
    per_token = totals["nll"] / totals["tokens"]
    return {"ppl": math.exp(per_token), "nll_per_token": per_token, "tokens": totals["tokens"],
            "sentences": totals["sentences"]}
