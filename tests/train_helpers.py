"""Tiny shards and settings shared by the training and perplexity tests."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np

from aiayn.data.shards import ShardWriter

VOCAB = 40

SETTINGS = {
    "experiment": "tiny",
    "task": "toy",
    "model": {
        "n_layers": 1,
        "d_model": 16,
        "d_ff": 32,
        "n_heads": 2,
        "d_k": 8,
        "d_v": 8,
        "dropout": 0.1,
        "attention_dropout": 0.0,
        "relu_dropout": 0.0,
        "positional": "sinusoid",
        "max_positions": 64,
        "norm": "post",
        "layer_norm_eps": 1e-6,
        "share_embeddings": True,
    },
    "train": {
        "train_steps": 6,
        "label_smoothing": 0.1,
        "tokens_per_step": 128,
        "tokens_per_pass": 64,
        "adam_betas": [0.9, 0.98],
        "adam_eps": 1e-9,
        "warmup_steps": 2,
        "lr_scale": 1.0,
        "clip_norm": 0.0,
        "weight_decay": 0.0,
        "seed": 1,
        "precision": "auto",
        "compile": False,
        "gpus": 0,
        "checkpoint_minutes": 0,
        "checkpoint_steps": 2,
        "keep_checkpoints": 2,
        "log_every_steps": 2,
        "dev_every_steps": 3,
        "nan_policy": "skip",
    },
}


def settings(**train) -> dict:
    result = copy.deepcopy(SETTINGS)
    result["train"].update(train)
    return result


def make_task(root: Path, n_train: int = 64, n_dev: int = 8, seed: int = 0) -> Path:
    """A reversal task: target = reversed source, ids 4..VOCAB-1, lengths 2..9."""
    rng = np.random.default_rng(seed)
    for split, n in (("train", n_train), ("dev", n_dev)):
        with ShardWriter(root / split, vocab_size=VOCAB) as writer:
            for _ in range(n):
                src = rng.integers(4, VOCAB, rng.integers(2, 10))
                writer.add(src, src[::-1])
    return root
