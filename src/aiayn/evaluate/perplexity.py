"""Per word-piece perplexity of a checkpoint on a binarized split (paper Table 3, "PPL (dev)").

    python -m aiayn.evaluate.perplexity --checkpoint C --data D/bin/<task>/dev --output F.json
        [--max-tokens N] [--precision P] [--device D] [--gpu-lock-dir D] [--threads N] [--log F]

PPL = exp(-(1/N) sum_i log p(y_i | y_<i, x)) over every target word-piece and every eos (N of them),
teacher-forced, without label smoothing; padding is not counted. Only the checkpoint's weights are
read (onto the CPU, then the device); ``--device auto`` claims a free GPU as training does, and
``--precision auto`` scores in bf16 autocast where the GPU has bf16 tensor cores (fp32 elsewhere).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
from pathlib import Path

import torch
from torch import nn

from aiayn.data.shards import ShardedCorpus
from aiayn.io import setup_logging, write_json
from aiayn.train.batching import collate, make_batches
from aiayn.train.distributed import resolve_device
from aiayn.train.loss import label_smoothed_loss
from aiayn.train.precision import PRECISIONS, autocast_for, enable_tf32, resolve_precision

log = logging.getLogger(__name__)


@torch.no_grad()
def corpus_nll(model: nn.Module, corpus: ShardedCorpus, max_tokens: int, device: torch.device,
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
    batches, dropped = make_batches(corpus.src_lengths, corpus.tgt_lengths, max_tokens, max_len,
                                    drop_oversize=False, drop_overlong=drop_overlong)
    if dropped:
        log.warning("%s: %d sentence pair(s) longer than max_positions=%s left out of the perplexity",
                    corpus.dir, dropped, max_len)
    nll, tokens = 0.0, 0
    for indices in batches:
        batch = collate(corpus, indices).to(device)
        with autocast or contextlib.nullcontext():
            logits = model(batch.src, batch.tgt_in, batch.src_padded)
        _, batch_nll, n = label_smoothed_loss(logits, batch.tgt_out, 0.0)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aiayn.evaluate.perplexity", description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True, help="checkpoint (.pt) written by aiayn.train or aiayn.decode.average")
    parser.add_argument("--data", required=True, help="binarized split directory, e.g. data/bin/en-de/dev")
    parser.add_argument("--output", required=True, help="JSON file to write (ppl, nll_per_token, tokens, sentences)")
    parser.add_argument("--max-tokens", type=int, default=8000, help="padded tokens per side per batch")
    parser.add_argument("--precision", default="auto", choices=PRECISIONS, help="auto (bf16 on GPUs that have it), fp32, bf16")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads for torch")
    parser.add_argument("--device", default="auto", help="auto (a free GPU if there is one), cpu, cuda, cuda:1 ...")
    parser.add_argument("--gpu-lock-dir", default=None, help="where GPU claim locks live (as for training)")
    parser.add_argument("--log", default=None, help="also log to this file")
    args = parser.parse_args(argv)
    setup_logging(args.log)
    from aiayn.model import load_model

    if args.threads:
        torch.set_num_threads(args.threads)
    corpus = ShardedCorpus(args.data)
    device, claim = resolve_device(args.device, args.gpu_lock_dir)
    try:
        model, checkpoint = load_model(args.checkpoint, device)
        if corpus.vocab_size != checkpoint["vocab"]["size"]:
            raise ValueError(f"{Path(args.data) / 'manifest.json'}: vocabulary of {corpus.vocab_size} ids, but "
                             f"{args.checkpoint} was trained with {checkpoint['vocab']['size']}")
        max_len = model.cfg.max_positions if model.cfg.positional == "learned" else None
        enable_tf32(device)
        autocast = autocast_for(resolve_precision(args.precision, device), device)
        report = perplexity_report(corpus_nll(model, corpus, args.max_tokens, device, max_len, autocast))
    finally:
        if claim is not None:
            claim.release()
    write_json(args.output, report)
    log.info("%s on %s: ppl %.3f over %d tokens, %d sentences", args.checkpoint, args.data,
             report["ppl"], report["tokens"], report["sentences"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
