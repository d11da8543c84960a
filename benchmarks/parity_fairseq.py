"""fairseq-train on the prepared data with our recipe, and its learning curve (``learning_parity.py``).

What is matched, and how (fairseq-fixed 0.12.3.1; see ``benchmarks/peers.md``):

- architecture ``transformer`` (post-norm, sinusoidal positions, embeddings scaled by sqrt(d_model),
  ``--share-all-embeddings``), sizes per side, dropout ``--dropout`` (attention and ReLU dropout 0);
- Adam with our betas and eps, no weight decay, no clipping;
- schedule: fairseq's ``inverse_sqrt`` sets the rate of update k (from 1) to
  ``init + (k - 1) * (peak - init) / warmup`` during warm-up and ``peak * sqrt(warmup / (k - 1))``
  after; ours is ``peak * min(k / warmup, sqrt(warmup / k))`` with peak = d_model^-0.5 warmup^-0.5
  lr_scale. ``--warmup-init-lr peak / warmup`` makes the two agree within 1 / warmup during warm-up and
  within 1 / (2k) after (the log prints both at every reported step);
- label-smoothed cross entropy with the same epsilon; the gradient is normalized by target tokens;
- ``--max-tokens`` caps padded tokens per batch as ``train.tokens_per_step`` does, and
  ``--required-batch-size-multiple 1`` stops fairseq from rounding batch sizes down to multiples of 8.

fairseq logs losses in base 2: ``nll_loss`` is -log2 p(gold) per target token (end-of-sentence
included), averaged over the ``--log-interval`` updates with token weights, the same window mean as
our ``log.csv`` ``nll``; multiplied by ln 2 it is in nats. ``valid_nll_loss`` is the dev NLL without
dropout or smoothing, per target token with end-of-sentence: dev perplexity = 2^valid_nll_loss.
"""

from __future__ import annotations

import json
import logging
import math
import os
import subprocess
from pathlib import Path

log = logging.getLogger("learning_parity")


def fairseq_args(
    data: Path,
    model: dict,
    train: dict,
    steps: int,
    window: int,
    dev_every: int,
    seed: int,
    save_dir: Path | None = None,
) -> list[str]:
    """Command-line arguments of fairseq-train equivalent to our ``model`` and ``train`` settings; with
    ``save_dir``, a checkpoint every ``train.checkpoint_steps`` updates there, the last
    ``train.keep_checkpoints`` kept (else none saved)."""
    d, warmup = model["d_model"], train["warmup_steps"]
    peak = train.get("lr_scale", 1.0) * d**-0.5 * warmup**-0.5
    sizes = []
    for side in ("encoder", "decoder"):
        sizes += [
            f"--{side}-layers",
            str(model["n_layers"]),
            f"--{side}-embed-dim",
            str(d),
            f"--{side}-ffn-embed-dim",
            str(model["d_ff"]),
            f"--{side}-attention-heads",
            str(model["n_heads"]),
        ]
    betas = "({}, {})".format(*train["adam_betas"])
    return [
        str(data),
        "--arch",
        "transformer",
        "--share-all-embeddings",
        *sizes,
        "--dropout",
        str(model["dropout"]),
        "--attention-dropout",
        "0",
        "--activation-dropout",
        "0",
        "--optimizer",
        "adam",
        "--adam-betas",
        betas,
        "--adam-eps",
        str(train["adam_eps"]),
        "--weight-decay",
        "0",
        "--clip-norm",
        "0",
        "--lr-scheduler",
        "inverse_sqrt",
        "--warmup-updates",
        str(warmup),
        "--warmup-init-lr",
        repr(peak / warmup),
        "--lr",
        repr(peak),
        "--criterion",
        "label_smoothed_cross_entropy",
        "--label-smoothing",
        str(train["label_smoothing"]),
        "--max-tokens",
        str(train["tokens_per_step"]),
        "--required-batch-size-multiple",
        "1",
        "--max-update",
        str(steps),
        "--seed",
        str(seed),
        "--cpu",
        "--num-workers",
        "0",
        *(
            [
                "--save-dir",
                str(save_dir),
                "--save-interval-updates",
                str(train["checkpoint_steps"]),
                "--keep-interval-updates",
                str(train["keep_checkpoints"]),
                "--no-epoch-checkpoints",
                "--no-last-checkpoints",
            ]
            if save_dir
            else ["--no-save"]
        ),
        "--log-format",
        "json",
        "--log-interval",
        str(window),
        "--validate-interval-updates",
        str(dev_every),
        "--validate-interval",
        "1000000",
        "--no-progress-bar",
    ]


def parse_log(text: str) -> dict:
    """train NLL (nats, window means), lr and dev perplexity per update, and the mean target tokens per
    update, from fairseq's JSON log lines."""
    curve: dict = {"train_nll": {}, "lr": {}, "dev_ppl": {}}
    tokens = []
    for line in text.splitlines():
        start = line.find("{")
        if start < 0:
            continue
        try:
            entry = json.loads(line[start:])
        except json.JSONDecodeError:
            continue
        if "nll_loss" in entry and "num_updates" in entry:
            step = int(entry["num_updates"])
            curve["train_nll"][step] = float(entry["nll_loss"]) * math.log(2)
            curve["lr"][step] = float(entry["lr"])
            tokens.append(float(entry["wpb"]))
        elif "valid_nll_loss" in entry:
            curve["dev_ppl"][int(entry["valid_num_updates"])] = 2.0 ** float(entry["valid_nll_loss"])
    curve["tokens_per_step"] = sum(tokens) / max(len(tokens), 1)
    return curve


def run_fairseq(
    python: str,
    data: Path,
    model: dict,
    train: dict,
    steps: int,
    window: int,
    dev_every: int,
    seed: int,
    threads: int,
    log_path: Path,
    save_dir: Path | None = None,
) -> dict:
    """Train with fairseq-train and return its curve (see :func:`parse_log`)."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    args = fairseq_args(data, model, train, steps, window, dev_every, seed, save_dir)
    log.info("fairseq-train %s", " ".join(args))
    with open(log_path, "w", encoding="utf-8") as handle:
        done = subprocess.run(
            [python, "-m", "fairseq_cli.train", *args], stdout=handle, stderr=subprocess.STDOUT, env=env, check=False
        )
    text = log_path.read_text(encoding="utf-8")
    if done.returncode:
        raise RuntimeError(f"fairseq-train failed ({done.returncode}), see {log_path}:\n{text[-3000:]}")
    return parse_log(text)
