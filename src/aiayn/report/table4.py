"""Table 4: English constituency parsing, F1 on WSJ section 23 (paper section 6.3).

The paper's rows in its order; our ``parser`` fills the row "Transformer (4 layers)" whose training matches
its task (WSJ only when ``tasks.<task>.silver`` is null, semi-supervised otherwise); any other
experiment reported in ``table4`` gets a row of its own; the flat-tree baseline closes the table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiayn import runs as aiayn_runs
from aiayn.paths import AVERAGED
from aiayn.paths import BASELINE as BASELINE_RUN
from aiayn.report import paper
from aiayn.report.layout import Column, Table
from aiayn.report.metrics import EVALB_KEYS, number, read_metrics

COLUMNS = [
    Column("parser", "Parser"),
    Column("training", "Training"),
    Column("f1_paper", "Paper WSJ 23 F1", "paper"),
    Column("f1_ours", "Ours: WSJ 23 F1", "score"),
    Column("f1_delta", "Δ F1", "delta"),
]
BASELINE = "Flat tree (baseline)"


def training(config: dict, task: str) -> str:
    """The paper's "Training" label for a parser trained on ``task``."""
    return paper.WSJ_ONLY if config["tasks"][task].get("silver") is None else paper.SEMI_SUPERVISED


def build(config: dict, results_dir: Path) -> Table:
    """Table 4 from the metric files under ``results_dir`` (:meth:`aiayn.runs.Records.table_inputs`)."""
    runs, records = aiayn_runs.runs(config, "table4"), aiayn_runs.Records(config, results_dir)
    matched = {(paper.TABLE4_ROWS[e], training(config, t)): (t, e) for t, e in runs if e in paper.TABLE4_ROWS}
    notes: list[str] = []
    rows, placed = [], set()
    for prow in paper.load("table4"):
        row: dict[str, Any] = {"parser": prow["parser"], "training": prow["training"], "f1_paper": prow["wsj23_f1"]}
        run = matched.pop((prow["parser"], prow["training"]), None)
        if run is not None:
            placed.add(run)
            row["f1_ours"] = _f1(records.get(*run).paths.evalb("test", AVERAGED), f"{run[0]}/{run[1]}", notes)
            row["f1_delta"] = paper.delta(row["f1_ours"], prow["wsj23_f1"])
        rows.append(row)
    for task, exp in runs:
        if (task, exp) not in placed:
            rows.append(
                {
                    "parser": exp,
                    "training": training(config, task),
                    "f1_ours": _f1(records.get(task, exp).paths.evalb("test", AVERAGED), f"{task}/{exp}", notes),
                }
            )
    for task in dict.fromkeys(task for task, _ in runs):
        flat = records.baseline(task).evalb("test", "flat")
        rows.append({"parser": BASELINE, "training": "-", "f1_ours": _f1(flat, f"{task}/{BASELINE_RUN}", notes)})
    notes.insert(
        0,
        'F1: EVALB with COLLINS.prm, all sentence lengths (the "All" block); ours from the '
        "average of the last checkpoints. Δ = ours - paper.",
    )
    return Table("table4", "Table 4: English constituency parsing (WSJ 23 F1)", COLUMNS, rows, notes)


def _f1(path: str, run: str, notes: list[str]) -> float:
    """Our F1 for one run (``task/run``); a note records how many sentences EVALB scored, erred and skipped."""
    metrics = read_metrics(path, EVALB_KEYS)
    counts = ", ".join(f"{metrics[k]} {k.replace('_', ' ')}" for k in EVALB_KEYS[1:])
    notes.append(f"{run}: {counts} ({Path(path).name})")
    return number(metrics, "f1")
