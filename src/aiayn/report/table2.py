"""Table 2: test BLEU on newstest2014 and training cost, the paper's rows beside ours (paper section 6.1).

One block of rows per translation task (EN-DE, then EN-FR, in the config's order). The paper's other
systems (ByteNet, GNMT, ...) keep their paper values with an empty "ours"; our ``base`` and ``big`` fill
the paper's Transformer rows; any other experiment reported in ``table2`` gets a row of its own; the
copy-the-source baseline closes each block.

Training cost, two ways, both from the run's ``summary.json``:
- the paper's method: ``wall_seconds x world_size x peak_tflops(gpu_model, precision) x 1e12``
  (training time x GPUs x the GPU's dense peak FLOP/s in the precision the run trained in, which is
  the ``precision`` its summary records (``train.precision`` resolved on its device); the peaks are
  :data:`aiayn.runtime.gpus.CARDS`, fp32 without TF32);
- measured: the summary's ``train_flops`` (model FLOPs per target token x target tokens seen),
  whatever the precision.

Deviation from paper: the paper multiplied by "an estimate of the sustained single-precision
floating-point capacity of each GPU" (K80 2.8, K40 3.7, M40 6.0, P100 9.5 TFLOPS), all fp32. Runs here
train in bf16 on tensor cores by default, where an fp32 figure would understate the hardware by 15x
(H100: 67 against 989 TFLOPS), so the column takes the peak in the precision each run used; for the
paper's GPUs and fp32 runs that is the paper's own figure. ``train.precision: fp32`` trains, and is
costed, in single precision as the paper.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

from aiayn import runs as aiayn_runs
from aiayn.paths import AVERAGED
from aiayn.paths import BASELINE as BASELINE_RUN
from aiayn.report import paper
from aiayn.report.layout import Column, Table
from aiayn.report.metrics import (
    BLEU_KEYS,
    PAPER_BLEU_LABEL,
    SACREBLEU_LABEL,
    SUMMARY_KEYS,
    BleuNotes,
    MetricFileError,
    number,
    read_metrics,
)
from aiayn.runtime.gpus import peak_tflops

log = logging.getLogger(__name__)

# Not a peak: a nominal figure for a few CPU cores, so that the embedded demo's cost column is filled.
NOMINAL_CPU_TFLOPS = 0.1

COLUMNS = [
    Column("model", "Model"),
    Column("task", "Task"),
    Column("bleu_paper", "Paper BLEU", "paper"),
    Column("bleu_ours", f"Ours: {PAPER_BLEU_LABEL}", "score"),
    Column("bleu_delta", "Δ BLEU", "delta"),
    Column("sacrebleu_ours", f"Ours: {SACREBLEU_LABEL}", "score"),
    Column("cost_paper", "Paper training cost (FLOPs)", "flops"),
    Column("cost_ours_paper_method", "Ours: training cost, paper's method (time × GPUs × peak FLOP/s)", "flops"),
    Column("cost_ours_measured", "Ours: training cost, measured (model FLOPs × tokens)", "flops"),
    Column("params_m", "Ours: params (M)", "millions"),
]
BASELINE = "Copy the source (baseline)"


def tasks_and_experiments(config: dict) -> dict[str, list[str]]:
    """``{task: [experiment, ...]}`` for every run reported in Table 2, in the config's order."""
    grouped: dict[str, list[str]] = {}
    for task, exp in aiayn_runs.runs(config, "table2"):
        grouped.setdefault(task, []).append(exp)
    return dict(sorted(grouped.items(), key=lambda item: list(config["tasks"]).index(item[0])))


def build(config: dict, results_dir: Path) -> Table:
    """Table 2 from the metric files under ``results_dir`` (:meth:`aiayn.runs.Records.table_inputs`)."""
    bleu_notes, costs, records = BleuNotes(), [], aiayn_runs.Records(config, results_dir)
    rows: list[dict[str, Any]] = []
    for task, experiments in tasks_and_experiments(config).items():
        rows += _task_rows(records, task, experiments, bleu_notes, costs)
    notes = [
        *bleu_notes.lines(),
        "Ours: newstest2014 (full), the average of the last checkpoints (settings average.last). Δ = ours - paper.",
        "Training cost, paper's method: training time × GPUs × the GPU's dense peak FLOP/s in the "
        "precision the run trained in (the GPU's data sheet, as listed in src/aiayn/runtime/gpus.py; for fp32 on "
        "the paper's GPUs, the paper's own 2.8/3.7/6.0/9.5 TFLOPS for K80/K40/M40/P100): "
        + "; ".join(costs)
        + ". Measured: model "
        "FLOPs per target token × target tokens seen (summary train_flops), in any precision.",
    ]
    if "en-fr" in tasks_and_experiments(config):
        notes.append(
            "Paper EN-FR big: 41.8 as in the paper's Table 2; its text (section 6.1) says 41.0 in some "
            "versions of the paper."
        )
    return Table("table2", "Table 2: BLEU on newstest2014 and training cost", COLUMNS, rows, notes)


def _task_rows(
    records: aiayn_runs.Records, task: str, experiments: list[str], bleu_notes: BleuNotes, costs: list[str]
) -> list[dict[str, Any]]:
    """The paper's rows for ``task`` with ours filled in, then our other experiments, then the baseline."""
    label = task.upper()
    matched = {paper.TABLE2_ROWS[e]: e for e in experiments if e in paper.TABLE2_ROWS}
    rows = []
    for prow in paper.load("table2"):
        bleu_paper = paper.or_none(prow.get(paper.column(task, "bleu")))
        cost_paper = paper.or_none(prow.get(paper.column(task, "train_flops")))
        exp = matched.get(prow["model"])
        if bleu_paper is None and cost_paper is None and exp is None:
            continue
        row = {"model": prow["model"], "task": label, "bleu_paper": bleu_paper, "cost_paper": cost_paper}
        if exp is not None:
            row.update(_ours(records.get(task, exp), bleu_notes, costs))
            row["bleu_delta"] = paper.delta(row["bleu_ours"], bleu_paper)
        rows.append(row)
    for exp in experiments:
        if exp not in paper.TABLE2_ROWS:
            rows.append({"model": exp, "task": label, **_ours(records.get(task, exp), bleu_notes, costs)})
    rows.append(
        {
            "model": BASELINE,
            "task": label,
            **_bleu(records.baseline(task).bleu("test", "copy"), f"{task}/{BASELINE_RUN}", bleu_notes),
        }
    )
    return rows


def _bleu(path: str, run: str, bleu_notes: BleuNotes) -> dict[str, float]:
    metrics = read_metrics(path, BLEU_KEYS)
    bleu_notes.record(metrics, run)
    return {"bleu_ours": number(metrics, "paper_bleu"), "sacrebleu_ours": number(metrics, "sacrebleu")}


def _ours(run: aiayn_runs.RunRecord, bleu_notes: BleuNotes, costs: list[str]) -> dict[str, float]:
    """Our BLEU (both kinds), training cost (both ways) and parameters for one run."""
    row = _bleu(run.paths.bleu("test", AVERAGED), f"{run.task}/{run.name}", bleu_notes)
    path = run.paths.train.summary
    summary = read_metrics(path, SUMMARY_KEYS)
    row["cost_ours_paper_method"], used = paper_method_cost(summary, path)
    costs.append(f"{run.task}/{run.name} {used}")
    row["cost_ours_measured"] = number(summary, "train_flops")
    row["params_m"] = number(summary, "params") / 1e6
    return row


def run_precision(summary: dict[str, Any], source: Path | str) -> str:
    """``bf16`` or ``fp32``: the precision a run trained in, as its summary records it."""
    if summary.get("precision") not in ("bf16", "fp32"):
        raise MetricFileError(f"{source}: no precision (bf16 or fp32) in the training summary")
    return summary["precision"]


def paper_method_cost(summary: dict[str, Any], source: Path | str) -> tuple[float, str]:
    """Training cost as the paper computed it, at the run's precision, and what was used, in words.

    ``wall_seconds x world_size x peak_tflops(gpu_model, precision) x 1e12`` (:mod:`aiayn.runtime.gpus`;
    ``cpu``: :data:`NOMINAL_CPU_TFLOPS`). A GPU model with no peak for its precision gives NaN
    (``n/a``) and a warning.
    """
    model, precision = summary["gpu_model"], run_precision(summary, source)
    world = number(summary, "world_size")
    tflops = NOMINAL_CPU_TFLOPS if model == "cpu" else peak_tflops(model, precision)
    if tflops is None:
        log.warning(
            "%s: no %s peak for gpu_model %r in aiayn.runtime.gpus.CARDS; training cost (paper's method) is n/a",
            source,
            precision,
            model,
        )
        return math.nan, f"{world:g} × {model} {precision}, no peak FLOP/s"
    cost = number(summary, "wall_seconds") * world * tflops * 1e12
    return cost, f"{world:g} × {model} {precision} at {tflops:g} TFLOPS"
