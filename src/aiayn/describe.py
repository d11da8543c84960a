"""Describe every run of a config: its Table 3 columns and its parameter count, as CSV on stdout.

    aiayn-describe config.yaml [overlay.yaml ...] [--vocab-size 37000] [--gpus N] [--nodes M]

One row per experiment that runs (all, or those ``run:`` chooses), described on its first task that
runs (EN-DE for every Table 3 row; big's EN-FR dropout override is not shown). Overlays merge onto the
config in order, as ``--configfile`` does. Parameters are counted on a model built on the meta device
(no memory, instant), with that task's ``vocab_size`` unless ``--vocab-size`` is given. The last
columns are the plan of one optimizer step on ``nodes`` machines of ``gpus`` GPUs each (``--nodes M``
and ``--gpus N``, else the run's ``train.nodes`` and ``train.gpus``, or ``train.cpu_ranks`` with
``gpus: 0``): padded tokens per step and side, forward passes per GPU, and tokens per pass.
"""

from __future__ import annotations

import argparse
import csv
import sys
from typing import IO

import torch

from aiayn import config as configlib
from aiayn.model import Transformer, count_parameters
from aiayn.options import ModelConfig, TrainConfig

MODEL_COLUMNS = ("n_layers", "d_model", "d_ff", "n_heads", "d_k", "d_v", "dropout")
TRAIN_COLUMNS = ("label_smoothing", "train_steps")
PLAN_COLUMNS = ("nodes", "gpus", "tokens_per_step", "passes", "tokens_per_pass")
COLUMNS = ("experiment", *MODEL_COLUMNS, *TRAIN_COLUMNS, "positional", "params", *PLAN_COLUMNS)


def model_parameters(model_settings: dict, vocab_size: int) -> int:
    """Parameter count of the model a settings ``model`` section describes, built on the meta device."""
    with torch.device("meta"):
        model = Transformer(ModelConfig.from_dict(model_settings), vocab_size)
    return count_parameters(model)


def step_plan(train: TrainConfig, gpus: int, nodes: int = 1) -> dict:
    """The :data:`PLAN_COLUMNS` of one run's optimizer step on ``nodes`` x ``gpus`` data-parallel ranks."""
    plan = train.plan(nodes * gpus)
    return {"nodes": nodes, "gpus": gpus, "tokens_per_step": plan.tokens_per_step, "passes": plan.passes,
            "tokens_per_pass": plan.tokens_per_pass}


def describe(config: dict, vocab_size: int | None = None, gpus: int | None = None,
             nodes: int | None = None) -> list[dict]:
    """One dict per experiment that runs (on its first task) with the columns of :data:`COLUMNS`."""
    rows, first = [], {}
    for task, experiment in configlib.runs(config):
        first.setdefault(experiment, task)
    for experiment, task in first.items():
        settings = configlib.resolve(config, experiment, task)
        model, train = settings["model"], settings["train"]
        vocab = vocab_size or configlib.vocab_size(config["tasks"][task])
        row = {"experiment": experiment}
        row.update({key: model[key] for key in MODEL_COLUMNS})
        row.update({key: train[key] for key in TRAIN_COLUMNS})
        row["positional"] = model["positional"]
        row["params"] = model_parameters(model, vocab)
        cfg = TrainConfig.from_dict(train)
        row.update(step_plan(cfg, gpus or cfg.local_ranks, nodes or cfg.nodes))
        rows.append(row)
    return rows


def write_csv(rows: list[dict], out: IO[str]) -> None:
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="aiayn-describe", description=__doc__.splitlines()[0])
    parser.add_argument("config", nargs="+", help="workflow config file (config.yaml), then any overlays")
    parser.add_argument("--vocab-size", type=int, default=None, help="count parameters with this vocabulary size")
    parser.add_argument("--gpus", type=int, default=None,
                        help="plan each step for N GPUs per node (default: train.gpus)")
    parser.add_argument("--nodes", type=int, default=None, help="plan each step for M nodes (default: train.nodes)")
    args = parser.parse_args(argv)
    if args.vocab_size is not None and args.vocab_size < 4:
        parser.error("--vocab-size must be at least 4 (pad, unk, bos, eos)")
    if args.gpus is not None and args.gpus < 1:
        parser.error("--gpus must be at least 1")
    if args.nodes is not None and args.nodes < 1:
        parser.error("--nodes must be at least 1")
    write_csv(describe(configlib.load(*args.config), args.vocab_size, args.gpus, args.nodes), sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
