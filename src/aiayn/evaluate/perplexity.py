"""Per word-piece perplexity of a checkpoint on a binarized split (paper Table 3, "PPL (dev)").

    python -m aiayn.evaluate.perplexity --checkpoint C --data D/bin/<task>/dev --output F.json
        [--settings F] [--tokens-per-batch N] [--device D] [--gpu-lock-dir D] [--threads N] [--log F]

PPL = exp(-(1/N) sum_i log p(y_i | y_<i, x)) over every target word-piece and every eos (N of them),
teacher-forced, without label smoothing; padding is not counted (:mod:`aiayn.train.evaluation`). The
arithmetic follows the checkpoint's ``train.precision`` on this device (bf16 autocast where its run
trained in bf16, :func:`aiayn.train.precision.resolve_precision`; the JSON records it as
``precision``) and its ``train.cpu_matmul`` (a CPU's products through oneDNN, as the run's own
validation computed them). Only the checkpoint's weights are read (onto the CPU, then the device);
``--device auto`` claims a free GPU as training does.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import torch

from aiayn import settings
from aiayn.cli import add_log, add_option, add_settings, check_options, overridden
from aiayn.data.shards import ShardedCorpus
from aiayn.io import setup_logging, write_json
from aiayn.model import load_model
from aiayn.train.distributed import resolve_device
from aiayn.train.evaluation import corpus_nll, perplexity_report
from aiayn.train.precision import autocast_for, enable_tf32, resolve_precision, use_onednn
from aiayn.options import PerplexityConfig, TrainConfig

log = logging.getLogger(__name__)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aiayn.evaluate.perplexity", description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True, help="checkpoint (.pt) written by aiayn.train or aiayn.decode.average")
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
    setup_logging(args.log)
    opts = overridden(settings.read(args.settings, PerplexityConfig, "perplexity"), args)
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
        train = TrainConfig.from_dict(checkpoint["settings"]["train"])
        precision = resolve_precision(train.precision, device)
        enable_tf32(device, train.precision)
        model.use_onednn(use_onednn(train.cpu_matmul, False, device))
        report = perplexity_report(corpus_nll(model, corpus, opts.tokens_per_batch, device, max_len,
                                              autocast_for(precision, device)))
        report["precision"] = precision
    finally:
        if claim is not None:
            claim.release()
    write_json(args.output, report)
    log.info("%s on %s: ppl %.3f over %d tokens, %d sentences, %s", args.checkpoint, args.data,
             report["ppl"], report["tokens"], report["sentences"], precision)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
