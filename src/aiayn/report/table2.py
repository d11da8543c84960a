"""Table 2: test BLEU on newstest2014 and training cost, the paper's rows beside ours (paper section 6.1).

One block of rows per translation task (EN-DE, then EN-FR, in the config's order). The paper's other
systems (ByteNet, GNMT, ...) keep their paper values with an empty "ours"; our ``base`` and ``big`` fill
the paper's Transformer rows; any other experiment reported in ``table2`` gets a row of its own; the
copy-the-source baseline closes each block.

Training cost, two ways:
- the paper's method: ``wall_seconds x world_size x gpu_tflops[gpu_model] x 1e12`` (training time x
  GPUs x sustained FLOP/s per GPU; ``gpu_tflops`` is ``config["tables"]["gpu_tflops"]``);
- measured: the summary's ``train_flops`` (model FLOPs per target token x tokens seen).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

from aiayn import config as cfg
from aiayn.report import paper
from aiayn.report.layout import Column, Table
from aiayn.report.metrics import (BLEU_KEYS, PAPER_BLEU_LABEL, SACREBLEU_LABEL, SUMMARY_KEYS, number,
                                  read_metrics, record_signature, run_dir, signature_notes, summary_path)

log = logging.getLogger(__name__)

COLUMNS = [
    Column("model", "Model"),
    Column("task", "Task"),
    Column("bleu_paper", "Paper BLEU", "paper"),
    Column("bleu_ours", f"Ours: {PAPER_BLEU_LABEL}", "score"),
    Column("bleu_delta", "Δ BLEU", "delta"),
    Column("sacrebleu_ours", f"Ours: {SACREBLEU_LABEL}", "score"),
    Column("cost_paper", "Paper training cost (FLOPs)", "flops"),
    Column("cost_ours_paper_method", "Ours: training cost, time × GPUs × FLOP/s", "flops"),
    Column("cost_ours_measured", "Ours: training cost, measured FLOPs", "flops"),
    Column("params_m", "Ours: params (M)", "millions"),
]
BASELINE = "Copy the source (baseline)"


def tasks_and_experiments(config: dict) -> dict[str, list[str]]:
    """``{task: [experiment, ...]}`` for every run reported in Table 2, in the config's order."""
    grouped: dict[str, list[str]] = {}
    for task, exp in cfg.runs(config, "table2"):
        grouped.setdefault(task, []).append(exp)
    return dict(sorted(grouped.items(), key=lambda item: list(config["tasks"]).index(item[0])))


def inputs(config: dict, results_dir: Path) -> list[Path]:
    """Every metric file Table 2 reads."""
    paths = []
    for task, experiments in tasks_and_experiments(config).items():
        for exp in experiments:
            paths += [run_dir(results_dir, task, exp) / "test-avg.bleu.json", summary_path(results_dir, task, exp)]
        paths.append(run_dir(results_dir, task, "baseline") / "test-copy.bleu.json")
    return paths


def build(config: dict, results_dir: Path) -> Table:
    """Table 2 from the metric files under ``results_dir`` (see :func:`inputs`)."""
    gpu_tflops = config.get("tables", {}).get("gpu_tflops", {})
    signatures: dict[str, list[str]] = {}
    rows: list[dict[str, Any]] = []
    for task, experiments in tasks_and_experiments(config).items():
        rows += _task_rows(results_dir, task, experiments, gpu_tflops, signatures)
    notes = [
        f"{PAPER_BLEU_LABEL}: Moses-tokenized hypothesis and reference, every a-b split as a ##AT##-##AT## b, "
        "multi-bleu, as the paper; sacreBLEU scores the detokenized output. Δ = ours - paper.",
        "Ours: newstest2014 (full), the average of the last checkpoints (settings average.last).",
        "Training cost, paper's method: training time × GPUs × sustained FLOP/s per GPU (config "
        "tables.gpu_tflops); measured: model FLOPs per token × tokens seen (summary train_flops).",
        *signature_notes(signatures),
    ]
    if "en-fr" in tasks_and_experiments(config):
        notes.append("Paper EN-FR big: 41.8 as in the paper's Table 2; its text (section 6.1) says 41.0 in some "
                     "versions of the paper.")
    return Table("table2", "Table 2: BLEU on newstest2014 and training cost", COLUMNS, rows, notes)


def _task_rows(results_dir: Path, task: str, experiments: list[str], gpu_tflops: dict[str, float],
               signatures: dict[str, list[str]]) -> list[dict[str, Any]]:
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
            row.update(_ours(results_dir, task, exp, gpu_tflops, signatures))
            row["bleu_delta"] = paper.delta(row["bleu_ours"], bleu_paper)
        rows.append(row)
    for exp in experiments:
        if exp not in paper.TABLE2_ROWS:
            rows.append({"model": exp, "task": label, **_ours(results_dir, task, exp, gpu_tflops, signatures)})
    rows.append({"model": BASELINE, "task": label, **_bleu(run_dir(results_dir, task, "baseline") /
                                                         "test-copy.bleu.json", f"{task}/baseline", signatures)})
    return rows


def _bleu(path: Path, run: str, signatures: dict[str, list[str]]) -> dict[str, float]:
    metrics = read_metrics(path, BLEU_KEYS)
    record_signature(signatures, metrics, run)
    return {"bleu_ours": number(metrics, "paper_bleu"), "sacrebleu_ours": number(metrics, "sacrebleu")}


def _ours(results_dir: Path, task: str, exp: str, gpu_tflops: dict[str, float],
          signatures: dict[str, list[str]]) -> dict[str, float]:
    """Our BLEU (both kinds), training cost (both ways) and parameters for one run."""
    row = _bleu(run_dir(results_dir, task, exp) / "test-avg.bleu.json", f"{task}/{exp}", signatures)
    path = summary_path(results_dir, task, exp)
    summary = read_metrics(path, SUMMARY_KEYS)
    row["cost_ours_paper_method"] = paper_method_cost(summary, gpu_tflops, path)
    row["cost_ours_measured"] = number(summary, "train_flops")
    row["params_m"] = number(summary, "params") / 1e6
    return row


def paper_method_cost(summary: dict[str, Any], gpu_tflops: dict[str, float], source: Path | str) -> float:
    """Training cost as the paper computed it: ``wall_seconds x world_size x TFLOPS(gpu_model) x 1e12``.

    A GPU model missing from ``config["tables"]["gpu_tflops"]`` gives NaN (``n/a``) and a warning.
    """
    model = summary["gpu_model"]
    if model not in gpu_tflops:
        log.warning("%s: gpu_model %r has no entry in config tables.gpu_tflops; training cost (paper's "
                    "method) is n/a", source, model)
        return math.nan
    return number(summary, "wall_seconds") * number(summary, "world_size") * gpu_tflops[model] * 1e12
