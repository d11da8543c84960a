"""Describe every run of a config: its Table 3 columns and its parameter count, as CSV on stdout.

    aiayn-describe config.yaml [--vocab-size 37000] [--gpus N]

One row per experiment, described on its first task (EN-DE for every Table 3 row; big's EN-FR
dropout override is not shown). Parameters are counted on a model built on the meta device (no
memory, instant), with that task's ``vocab_size`` unless ``--vocab-size`` is given. The last columns
are the plan of one optimizer step on ``gpus`` GPUs (``--gpus N``, else the run's ``train.gpus``, at
least 1): padded tokens per step and side, forward passes per GPU, and tokens per pass.
"""

from __future__ import annotations

import argparse
import csv
import sys
from typing import IO

import torch

from aiayn import config as configlib
from aiayn.model import ModelConfig, Transformer, count_parameters
from aiayn.train.settings import TrainConfig

MODEL_COLUMNS = ("n_layers", "d_model", "d_ff", "n_heads", "d_k", "d_v", "dropout")
TRAIN_COLUMNS = ("label_smoothing", "train_steps")
PLAN_COLUMNS = ("gpus", "tokens_per_step", "passes", "tokens_per_pass")
COLUMNS = ("experiment", *MODEL_COLUMNS, *TRAIN_COLUMNS, "positional", "params", *PLAN_COLUMNS)


def model_parameters(model_settings: dict, vocab_size: int) -> int:
    """Parameter count of the model a settings ``model`` section describes, built on the meta device."""
    with torch.device("meta"):
        model = Transformer(ModelConfig.from_dict(model_settings), vocab_size)
    return count_parameters(model)


def step_plan(train_settings: dict, gpus: int) -> dict:
    """The :data:`PLAN_COLUMNS` of one run's optimizer step on ``gpus`` data-parallel GPUs."""
    plan = TrainConfig.from_dict(train_settings).plan(gpus)
    return {"gpus": gpus, "tokens_per_step": plan.tokens_per_step, "passes": plan.passes,
            "tokens_per_pass": plan.tokens_per_pass}


def describe(config: dict, vocab_size: int | None = None, gpus: int | None = None) -> list[dict]:
    """One dict per experiment (on its first task) with the columns of :data:`COLUMNS`."""
    rows = []
    for experiment, spec in config["experiments"].items():
        task = spec["tasks"][0]
        settings = configlib.resolve(config, experiment, task)
        model, train = settings["model"], settings["train"]
        vocab = vocab_size or configlib.vocab_size(config["tasks"][task])
        row = {"experiment": experiment}
        row.update({key: model[key] for key in MODEL_COLUMNS})
        row.update({key: train[key] for key in TRAIN_COLUMNS})
        row["positional"] = model["positional"]
        row["params"] = model_parameters(model, vocab)
        row.update(step_plan(train, gpus or max(1, train["gpus"])))
        rows.append(row)
    return rows


def write_csv(rows: list[dict], out: IO[str]) -> None:
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="aiayn-describe", description=__doc__.splitlines()[0])
    parser.add_argument("config", help="workflow config file (config.yaml)")
    parser.add_argument("--vocab-size", type=int, default=None, help="count parameters with this vocabulary size")
    parser.add_argument("--gpus", type=int, default=None, help="plan each step for N GPUs (default: train.gpus)")
    args = parser.parse_args(argv)
    if args.vocab_size is not None and args.vocab_size < 4:
        parser.error("--vocab-size must be at least 4 (pad, unk, bos, eos)")
    if args.gpus is not None and args.gpus < 1:
        parser.error("--gpus must be at least 1")
    write_csv(describe(configlib.load(args.config), args.vocab_size, args.gpus), sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
