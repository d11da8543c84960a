"""Figures a researcher looks at before reading the tables: learning curves and Table 3.

``python -m aiayn.report.plots --config CONFIG_YAML --results-dir R --out-dir R/plots
[--tables table2 table3 table4 experiments] [--log F]`` writes, each atomically, PNGs rendered with
matplotlib's Agg canvas (no display, no pyplot state), for the runs reported in the tables asked for
(default: all; ``experiments`` reports every run):

- ``curves_<task>_<exp>.png`` for every run: training loss and dev perplexity against the step, from
  ``R/<task>/<exp>/train/log.csv`` (columns ``step, loss, lr, dev_ppl``; ``dev_ppl`` is empty except on
  dev evaluations);
- ``table3.png`` (when Table 3 is asked for and has rows): dev BLEU (paper method) and dev perplexity
  of every Table 3 row, ours (the mean over seeds, with the sample sd as an error bar) beside the paper's.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from aiayn import config as aiayn_config
from aiayn import runs as aiayn_runs
from aiayn.io import atomic_path, setup_logging
from aiayn.report import paper, table3
from aiayn.report.metrics import TABLES, MetricFileError, report_parser, require

log = logging.getLogger(__name__)

LOG_COLUMNS = ("step", "loss")


def save(figure: Figure, path: Path) -> Path:
    """Write ``figure`` as a PNG at ``path``, atomically."""
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    return path


def read_train_log(path: Path) -> pd.DataFrame:
    """The trainer's ``log.csv``; raises :class:`MetricFileError` naming the file if ``step``, ``loss`` or every
    row is missing. Without a ``dev_ppl`` column (no dev evaluation logged) the dev panel stays empty, with a
    warning."""
    frame = pd.read_csv(path)
    absent = [c for c in LOG_COLUMNS if c not in frame.columns]
    if absent:
        raise MetricFileError(f"{path}: missing column(s) {absent} (has {list(frame.columns)})")
    if frame.empty:
        raise MetricFileError(f"{path}: no rows")
    if "dev_ppl" not in frame.columns:
        log.warning("%s: no dev_ppl column; the dev perplexity panel is empty", path)
        frame["dev_ppl"] = np.nan
    return frame


def learning_curves(frame: pd.DataFrame, title: str) -> Figure:
    """Two panels against the step: training loss (label-smoothed cross entropy) and dev perplexity."""
    figure = Figure(figsize=(10, 3.6))
    loss_ax, ppl_ax = figure.subplots(1, 2)
    loss_ax.plot(frame["step"], frame["loss"], lw=1)
    loss_ax.set(xlabel="step", ylabel="training loss", title="training loss")
    dev = frame.dropna(subset=["dev_ppl"])
    ppl_ax.plot(dev["step"], dev["dev_ppl"], marker="o", ms=3)
    ppl_ax.set(xlabel="step", ylabel="dev perplexity", title="dev perplexity (per word-piece)")
    if len(dev) and dev["dev_ppl"].max() > 10 * dev["dev_ppl"].min():
        ppl_ax.set_yscale("log")
    for ax in (loss_ax, ppl_ax):
        ax.grid(alpha=0.3)
    figure.suptitle(title)
    return figure


def table3_chart(rows: list[dict]) -> Figure:
    """Grouped bars per Table 3 row: dev BLEU (paper method) and dev PPL, ours beside the paper's."""
    names = [row["row"] for row in rows]
    x = np.arange(len(names))
    figure = Figure(figsize=(max(6.0, 0.6 * len(names) + 2), 6))
    bleu_ax, ppl_ax = figure.subplots(2, 1, sharex=True)
    for ax, metric, label in ((bleu_ax, "bleu", "dev BLEU"), (ppl_ax, "ppl", "dev PPL")):
        ours = [np.nan if row.get(f"{metric}_ours") is None else row[f"{metric}_ours"] for row in rows]
        spread = [row.get(f"{metric}_ours_sd") or 0.0 for row in rows]  # sample sd over seeds; 0 for one
        theirs = [paper.as_float(row.get(f"{metric}_paper")) for row in rows]
        ax.bar(x - 0.2, [np.nan if v is None else v for v in theirs], 0.4, label="paper", color="0.6")
        ax.bar(x + 0.2, ours, 0.4, yerr=spread if any(spread) else None, capsize=2, label="ours", color="tab:blue")
        ax.set_ylabel(label)
        ax.grid(axis="y", alpha=0.3)
    bleu_ax.legend()
    bleu_ax.set_title("Table 3: EN-DE dev (newstest2013), last checkpoint")
    ppl_ax.set_xticks(x, names)
    return figure


def _runs(config: dict, table: str) -> list[tuple[str, str]]:
    """The runs a table reports: the experiments table every run, a paper table those listing it."""
    return aiayn_runs.table_runs(config) if table == "experiments" else aiayn_runs.runs(config, table)


def make_plots(config: dict, results_dir: Path, out_dir: Path, tables: tuple[str, ...] = TABLES) -> list[Path]:
    """Every figure of the module docstring for the runs of ``tables``; returns the paths written."""
    runs = list(dict.fromkeys(run for table in tables for run in _runs(config, table)))
    with_table3 = "table3" in tables and bool(table3.rows_in_order(config))
    records = aiayn_runs.Records(config, results_dir)
    logs = {(t, e): records.get(t, e).paths.train.log_csv for t, e in runs}
    require([*logs.values(), *(records.table_inputs("table3") if with_table3 else [])])
    written = []
    for (task, exp), path in logs.items():
        figure = learning_curves(read_train_log(path), f"{exp} ({task})")
        written.append(save(figure, out_dir / f"curves_{task}_{exp}.png"))
    if with_table3:
        written.append(save(table3_chart(table3.build(config, results_dir).rows), out_dir / "table3.png"))
    else:
        log.info("Table 3 not asked for or without rows: no table3.png")
    return written


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    return report_parser(
        "python -m aiayn.report.plots",
        __doc__.splitlines()[0],
        "where the PNGs go",
        "plot the runs reported in these tables (default: all)",
    ).parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_logging(args.log)
    config = aiayn_config.load(args.config)
    try:
        written = make_plots(config, args.results_dir, args.out_dir, tuple(args.tables))
    except MetricFileError as err:
        log.error("%s", err)
        return 1
    for path in written:
        log.info("wrote %s", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
