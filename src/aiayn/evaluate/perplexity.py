"""Per word-piece perplexity of a checkpoint on a binarized split (paper Table 3, "PPL (dev)").

    python -m aiayn.evaluate.perplexity --checkpoint C --data D/bin/<task>/dev --output F.json
        [--settings F] [--tokens-per-batch N] [--device D] [--gpu-lock-dir D] [--threads N] [--log F]

PPL = exp(-(1/N) sum_i log p(y_i | y_<i, x)) over every target word-piece and every eos (N of them),
teacher-forced, without label smoothing; padding is not counted. The
arithmetic follows the checkpoint's ``train.precision`` on this device (bf16 autocast where its run
trained in bf16, :func:`aiayn.runtime.precision.resolve_precision`; the JSON records it as
``precision``) and its ``train.cpu_matmul`` (a CPU's products through oneDNN, as the run's own
validation computed them). Only the checkpoint's weights are read (onto the CPU, then the device);
``--device auto`` claims a free GPU as training does (:func:`aiayn.runtime.session.inference_session`).

The scoring itself (:func:`corpus_nll`, :func:`perplexity_report`) is also the trainer's dev check:
it lives here, in the evaluation layer, and the trainer imports it (training sits above
evaluation; evaluation imports nothing of training). Batches and the loss come from the runtime
layer (:mod:`aiayn.runtime.batches`, :mod:`aiayn.runtime.loss`): the NLL is the training loss's, at
smoothing 0, summed in the same order.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
from pathlib import Path

import torch
from torch import nn

from aiayn import settings
from aiayn.cli import add_log, add_option, add_settings, check_options, overridden
from aiayn.data.shards import ShardedCorpus
from aiayn.io import write_json
from aiayn.options import PerplexityConfig
from aiayn.runtime.batches import collate, make_batches
from aiayn.runtime.loss import label_smoothed_loss
from aiayn.runtime.session import inference_session

log = logging.getLogger(__name__)


@torch.no_grad()
def corpus_nll(
    model: nn.Module,
    corpus: ShardedCorpus,
    tokens_per_batch: int,
    device: torch.device,
    max_len: int | None = None,
    autocast: contextlib.AbstractContextManager | None = None,
    drop_overlong: bool = False,
) -> dict:
    """Summed NLL over ``corpus`` in token-budget batches.

    Every pair counts; a pair longer than ``max_len`` (learned positions) is an error, or with
    ``drop_overlong`` is left out and counted in the log. Returns ``{"nll": sum of -log p,
    "tokens": N, "sentences": n scored}``. ``model`` maps (src, tgt_in) to logits; its training
    mode is restored afterwards.
    """
    was_training = model.training
    model.eval()
    batches, dropped = make_batches(
        corpus.src_lengths,
        corpus.tgt_lengths,
        tokens_per_batch,
        max_len,
        drop_oversize=False,
        drop_overlong=drop_overlong,
    )
    if dropped:
        log.warning(
            "%s: %d sentence pair(s) longer than max_positions=%s left out of the perplexity",
            corpus.dir,
            dropped,
            max_len,
        )
    pin = device.type == "cuda"  # pinned batches copy asynchronously
    nll = torch.zeros((), dtype=torch.float64, device=device)  # summed on the device: read once, at the end
    tokens = 0
    for indices in batches:
        batch = collate(corpus, indices, pin).to(device)
        with autocast or contextlib.nullcontext():
            logits = model(batch.src, batch.tgt_in, batch.src_padded, batch.gold_rows)  # (R, V)
        nll += label_smoothed_loss(logits, batch.gold(), 0.0)[1].double()
        tokens += batch.tgt_tokens
    model.train(was_training)
    return {"nll": nll.item(), "tokens": tokens, "sentences": len(corpus) - dropped}


def perplexity_report(totals: dict) -> dict:
    """The ``*.ppl.json`` fields from :func:`corpus_nll` totals."""
    if totals["tokens"] == 0:
        raise ValueError("no target tokens to score (empty split)")
    per_token = totals["nll"] / totals["tokens"]
    return {
        "ppl": math.exp(per_token),
        "nll_per_token": per_token,
        "tokens": totals["tokens"],
        "sentences": totals["sentences"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aiayn.evaluate.perplexity", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--checkpoint", required=True, help="checkpoint (.pt) written by training or by aiayn.decode.average"
    )
    parser.add_argument("--data", required=True, help="binarized split directory, e.g. data/bin/en-de/dev")
    parser.add_argument("--output", required=True, help="JSON file to write (ppl, nll_per_token, tokens, sentences)")
    add_settings(parser, "the perplexity section (default: the definitions')")
    add_option(parser, "--tokens-per-batch", PerplexityConfig, "tokens_per_batch")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads for torch")
    parser.add_argument("--device", default="auto", help="auto (a free GPU if there is one), cpu, cuda, cuda:1 ...")
    parser.add_argument("--gpu-lock-dir", default=None, help="where GPU claim locks live (as for training)")
    add_log(parser)
    args = parser.parse_args(argv)
    check_options(parser, args, PerplexityConfig)
    opts = overridden(settings.start(args, PerplexityConfig, "perplexity"), args)
    corpus = ShardedCorpus(args.data)
    # precision and cpu_matmul None: the checkpoint's train.precision and train.cpu_matmul
    with inference_session(
        args.checkpoint,
        device=args.device,
        precision=None,
        threads=args.threads,
        cpu_matmul=None,
        lock_dir=args.gpu_lock_dir,
        matmul_key="train.cpu_matmul",
    ) as session:
        vocab_size = session.checkpoint.vocab["size"]
        if corpus.vocab_size != vocab_size:
            raise ValueError(
                f"{Path(args.data) / 'manifest.json'}: vocabulary of {corpus.vocab_size} ids, but "
                f"{args.checkpoint} was trained with {vocab_size}"
            )
        model = session.model
        report = perplexity_report(
            corpus_nll(
                model, corpus, opts.tokens_per_batch, session.device, model.cfg.position_limit, session.autocast()
            )
        )
        report["precision"] = session.precision
    write_json(args.output, report)
    log.info(
        "%s on %s: ppl %.3f over %d tokens, %d sentences, %s",
        args.checkpoint,
        args.data,
        report["ppl"],
        report["tokens"],
        report["sentences"],
        report["precision"],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
