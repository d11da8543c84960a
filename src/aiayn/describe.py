"""Describe every run of a config: its Table 3 columns and its parameter count, as CSV on stdout; or,
with ``--full``, the whole config as the workflow reads it.

    aiayn-describe config.yaml [overlay.yaml ...] [--vocab-size 37000] [--gpus N] [--nodes M]
    aiayn-describe config.yaml [overlay.yaml ...] --full

``--full`` prints the merged config with every default filled in (``config.yaml`` writes only what
differs from the definitions, :mod:`aiayn.options`), each key commented with its help, its range, whether a
training resumes across a change of it (``resumable``) and where the paper or its code sets it: the paper's
whole setup in one file.

One row per experiment that runs (all, or those ``run:`` chooses), described on its first task that
runs (EN-DE for every Table 3 row; big's EN-FR dropout override is not shown). Overlays merge onto the
config in order, as ``--configfile`` does. Parameters are counted on a model built on the meta device
(no memory, instant), with that task's ``vocab_size`` unless ``--vocab-size`` is given. The last
columns are the plan of one optimizer step on ``nodes`` machines of ``gpus`` GPUs each (``--nodes M``
and ``--gpus N``, else the run's ``train.nodes`` and ``train.gpus``): its GPUs per machine (0 for a
CPU run), its data-parallel ranks per machine (the GPUs, or ``train.cpu_ranks`` with ``gpus: 0``),
padded tokens per step and side, forward passes per rank, and tokens per pass. Where
``train.tokens_per_pass`` is null a GPU run measures what its memory holds (:mod:`aiayn.train.memory`);
the plan shown is then one pass a step, which a GPU runs where its memory holds that pass.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import functools
import sys
import typing
from typing import IO

import torch
import yaml

from aiayn import config as aiayn_config
from aiayn import runs as aiayn_runs
from aiayn.io import setup_logging
from aiayn.model import Transformer, count_parameters
from aiayn.options import Config, ModelConfig, TrainConfig
from aiayn.options.core import BOUNDS, Option, hints, members, spec
from aiayn.runtime.batches import plan_step

MODEL_COLUMNS = ("n_layers", "d_model", "d_ff", "n_heads", "d_k", "d_v", "dropout")
TRAIN_COLUMNS = ("label_smoothing", "train_steps")
PLAN_COLUMNS = ("nodes", "gpus", "ranks", "tokens_per_step", "passes", "tokens_per_pass")
COLUMNS = ("experiment", *MODEL_COLUMNS, *TRAIN_COLUMNS, "positional", "params", *PLAN_COLUMNS)


def model_parameters(model_settings: dict, vocab_size: int) -> int:
    """Parameter count of the model a settings ``model`` section describes, built on the meta device."""
    return _parameters(ModelConfig.from_dict(model_settings), vocab_size)


@functools.cache
def _parameters(model: ModelConfig, vocab_size: int) -> int:
    """Once per model in a process (the first build on the meta device imports torch's compiler, 3 s)."""
    with torch.device("meta"):
        return count_parameters(Transformer(model, vocab_size))


def step_plan(train: TrainConfig, ranks: int, nodes: int = 1, on_gpus: bool = True) -> dict:
    """The :data:`PLAN_COLUMNS` of one run's optimizer step on ``nodes`` x ``ranks`` data-parallel ranks
    (GPUs, or CPU ranks when not ``on_gpus``: then ``gpus`` is 0); a null ``tokens_per_pass`` on GPUs as
    one pass a step."""
    plan = plan_step(train, nodes * ranks, train.tokens_per_step if on_gpus else None)
    return {
        "nodes": nodes,
        "gpus": ranks if on_gpus else 0,
        "ranks": ranks,
        "tokens_per_step": plan.tokens_per_step,
        "passes": plan.passes,
        "tokens_per_pass": plan.tokens_per_pass,
    }


def describe(
    config: dict, vocab_size: int | None = None, gpus: int | None = None, nodes: int | None = None
) -> list[dict]:
    """One dict per experiment that runs (on its first task) with the columns of :data:`COLUMNS`."""
    rows, first, records = [], {}, aiayn_runs.Records(config)
    for task, experiment in aiayn_runs.runs(config):
        first.setdefault(experiment, task)
    for experiment, task in first.items():
        run = records.get(task, experiment)
        model, train = run.sections["model"], run.sections["train"]
        vocab = vocab_size or aiayn_runs.vocab_size(config["tasks"][task])
        row = {"experiment": experiment}
        row.update({key: model[key] for key in MODEL_COLUMNS})
        row.update({key: train[key] for key in TRAIN_COLUMNS})
        row["positional"] = model["positional"]
        row["params"] = model_parameters(model, vocab)
        cfg = run.train
        row.update(step_plan(cfg, gpus or cfg.local_ranks, nodes or cfg.nodes, bool(gpus or cfg.gpus)))
        rows.append(row)
    return rows


def annotated(values: dict, cls: type = Config, indent: int = 0) -> list[str]:
    """``values`` (a section of the validated config of type ``cls``) as YAML lines, each key that
    ``cls`` defines commented with its help, range and source; sections of sections recurse."""
    fields, lines = {f.name: f for f in dataclasses.fields(cls)} if cls else {}, []
    for name, value in values.items():
        field, pad = fields.get(name), " " * indent
        kind = _section_type(cls, field, value)
        opt = spec(field) if field else None
        note = f"  # {opt.help}{_marks(opt)}" + (f" [{opt.source}]" if opt.source else "") if opt and opt.help else ""
        if isinstance(value, dict) and value:
            lines.append(f"{pad}{name}:{note}")
            if kind is dict:
                for entry, item in value.items():
                    inner = _entry_type(hints(cls)[name], item)
                    lines += (
                        [f"{pad}  {entry}:"] + annotated(item, inner, indent + 4)
                        if isinstance(item, dict)
                        else [f"{pad}  {entry}: {_scalar(item)}"]
                    )
            else:
                lines += annotated(value, kind, indent + 2)
        else:
            lines.append(f"{pad}{name}: {_scalar(value)}{note}")
    return lines


def _marks(opt: Option) -> str:
    """An option's range, and whether a training resumes across a change of it (``resumable``, as
    :func:`aiayn.train.resume.trajectory_changes` reads it), as a note: `` (>= 1, resumable)``."""
    shown = [f"{sign} {getattr(opt, name)}" for name, sign, _, _ in BOUNDS if getattr(opt, name) is not None]
    shown += ["resumable"] if opt.resumable else []
    return f" ({', '.join(shown)})" if shown else ""


def _section_type(cls: type | None, field: dataclasses.Field | None, value: object) -> type | None:
    """The dataclass a mapping value is (``dict`` for a mapping of named entries), else None."""
    if field is None or not isinstance(value, dict):
        return None
    kind = hints(cls)[field.name]
    if typing.get_origin(kind) is dict:
        return dict
    return _entry_type(kind, value)


def _entry_type(kind: object, value: object) -> type | None:
    """The dataclass of ``kind`` (or of its union's members, chosen by ``kind`` or keys) ``value`` is."""
    if typing.get_origin(kind) is dict:
        kind = typing.get_args(kind)[1]
    options = [m for m in (members(kind) or (kind,)) if dataclasses.is_dataclass(m)]
    for member in options:
        names = {f.name for f in dataclasses.fields(member)}
        if isinstance(value, dict) and set(value) <= names and value.get("kind", None) in (None, *_kinds(member)):
            return member
    return options[0] if options else None


def _kinds(cls: type) -> tuple:
    field = {f.name: f for f in dataclasses.fields(cls)}.get("kind")
    return spec(field).choices or () if field else ()


def _scalar(value: object) -> str:
    return yaml.safe_dump(value, default_flow_style=True, width=10**6).strip().removesuffix("...").strip()


def write_csv(rows: list[dict], out: IO[str]) -> None:
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="aiayn-describe", description=__doc__.splitlines()[0])
    parser.add_argument("config", nargs="+", help="workflow config file (config.yaml), then any overlays")
    parser.add_argument("--vocab-size", type=int, default=None, help="count parameters with this vocabulary size")
    parser.add_argument(
        "--gpus", type=int, default=None, help="plan each step for N GPUs per node (default: train.gpus)"
    )
    parser.add_argument("--nodes", type=int, default=None, help="plan each step for M nodes (default: train.nodes)")
    parser.add_argument(
        "--full",
        action="store_true",
        help="print the whole config, defaults filled in, "
        "each key with its help, range, resumability and source (YAML)",
    )
    args = parser.parse_args(argv)
    setup_logging()  # a bad config file or key ends with one line naming it
    if args.full:
        print("\n".join(annotated(aiayn_config.load(*args.config))))
        return 0
    if args.vocab_size is not None and args.vocab_size < 4:
        parser.error("--vocab-size must be at least 4 (pad, unk, bos, eos)")
    if args.gpus is not None and args.gpus < 1:
        parser.error("--gpus must be at least 1")
    if args.nodes is not None and args.nodes < 1:
        parser.error("--nodes must be at least 1")
    write_csv(describe(aiayn_config.load(*args.config), args.vocab_size, args.gpus, args.nodes), sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
