"""The experiments table: every run of the config, whatever the paper's tables, with what it changed.

One row per run (task and experiment, in the config's order, limited by ``run:``): the settings that
differ from ``defaults`` (the base model), steps, parameters, training time and target tokens per second
(its ``summary.json``), dev perplexity from the last checkpoint (``dev-last.ppl.json``), dev BLEU from the
last checkpoint (translation), and test BLEU or F1 from the averaged checkpoints for the runs decoded on
the test set (:func:`aiayn.runs.decodes_test`: Table 2 and 4 runs and experiments in no paper table;
Table 3 rows are scored on dev only, as in the paper). A parsing task without a treebank runs nothing
and is left out. A run trained with several seeds (``seeds``) shows the mean ± sample sd of its scores,
training time and speed over them, and their number in a Seeds column (:mod:`aiayn.report.seeds`);
settings, steps and parameters are its first seed's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiayn import runs as aiayn_runs
from aiayn.report import seeds
from aiayn.report.layout import Column, Table
from aiayn.report.metrics import (
    BLEU_KEYS,
    EVALB_KEYS,
    PAPER_BLEU_LABEL,
    PPL_KEYS,
    SACREBLEU_LABEL,
    SUMMARY_KEYS,
    BleuNotes,
    number,
    read_metrics,
)

COLUMNS = [
    Column("task", "Task"),
    Column("experiment", "Experiment"),
    Column("changes", "Settings that differ from defaults"),
    Column("steps", "Steps", "int"),
    Column("params_m", "Params (M)", "millions"),
    Column("dev_ppl", "Dev PPL", "score", spread=True),
    Column("dev_bleu", f"Dev {PAPER_BLEU_LABEL}", "score", spread=True),
    Column("dev_sacrebleu", f"Dev {SACREBLEU_LABEL}", "score", spread=True),
    Column("test_bleu", f"Test {PAPER_BLEU_LABEL}", "score", spread=True),
    Column("test_sacrebleu", f"Test {SACREBLEU_LABEL}", "score", spread=True),
    Column("test_f1", "Test F1 (EVALB)", "score", spread=True),
    Column("train_seconds", "Training time", "duration", spread=True),
    Column("tokens_per_second", "Target tokens/s", "int", spread=True),
    Column("hardware", "Hardware"),
]
SEEDS_COLUMN = Column("seeds", "Seeds", "int")  # after "changes", in a seeded table
SUMMARY_EXTRA = ("steps", "tokens_tgt")
SPREAD_KEYS = (
    "dev_ppl",
    "dev_bleu",
    "dev_sacrebleu",
    "test_bleu",
    "test_sacrebleu",
    "test_f1",
    "train_seconds",
    "tokens_per_second",
)


def build(config: dict, results_dir: Path) -> Table:
    """The experiments table from the metric files under ``results_dir``
    (:meth:`aiayn.runs.Records.experiment_files`)."""
    notes, records = BleuNotes(), aiayn_runs.Records(config, results_dir)
    rows = [_row(records, records.seeds(task, exp), notes) for task, exp in aiayn_runs.table_runs(config)]
    seeded = any(row["seeds"] > 1 for row in rows)
    at = [c.key for c in COLUMNS].index("changes") + 1
    columns = [*COLUMNS[:at], SEEDS_COLUMN, *COLUMNS[at:]] if seeded else COLUMNS
    return Table(
        "experiments",
        "Every run: its settings, scores and cost",
        columns,
        rows,
        [
            "Settings: the keys of model, train, average and decode whose values differ from the config's "
            "defaults (the base model), as the run trained (its summary) and decoded.",
            "Dev: the last checkpoint, no averaging. Test: the average of the last checkpoints (average.last); "
            "left blank for runs reported only in Table 3, which the paper scored on dev alone.",
            "Training time: wall clock of the training job(s), resumed runs summed; tokens/s: target tokens "
            "per second over that time, all GPUs together.",
            *([SEED_NOTE] if seeded else []),
            *notes.lines(),
        ],
        seeded=seeded,
    )


SEED_NOTE = (
    "Scores, training time and tokens/s: mean ± sample standard deviation (n - 1 in the "
    "denominator) over the Seeds column's n models, seed i = train.seed + i (a run of one seed: "
    "its value); settings, steps, params and hardware: the first seed's, whose train.seed is the one listed."
)


def _row(records: aiayn_runs.Records, runs: list[aiayn_runs.RunRecord], notes: BleuNotes) -> dict[str, Any]:
    """One run's row: its first seed's settings and cost, every seed's scores as mean and sd."""
    per_seed = [_seed_values(records, run, notes) for run in runs]
    summary = per_seed[0].pop("summary")
    row: dict[str, Any] = {
        "task": runs[0].task,
        "experiment": runs[0].experiment,
        "changes": changes(records.config, runs[0], summary["settings"]),
        "seeds": len(per_seed),
        "steps": summary["steps"],
        "params_m": number(summary, "params") / 1e6,
        "hardware": f"{summary['world_size']} x {summary['gpu_model']}",
    }
    for key in SPREAD_KEYS:
        if key in per_seed[0]:
            row.update(seeds.cells(key, [values[key] for values in per_seed]))
    return row


def _seed_values(records: aiayn_runs.Records, run: aiayn_runs.RunRecord, notes: BleuNotes) -> dict[str, Any]:
    """The numbers of one seed's run: ``summary`` and every key of :data:`SPREAD_KEYS` it has."""
    paths = records.experiment_files(run)
    summary = read_metrics(paths["summary"], SUMMARY_KEYS + SUMMARY_EXTRA)
    seconds = number(summary, "wall_seconds")
    values: dict[str, Any] = {
        "summary": summary,
        "dev_ppl": number(read_metrics(paths["ppl"], PPL_KEYS), "ppl"),
        "train_seconds": seconds,
        "tokens_per_second": number(summary, "tokens_tgt") / seconds if seconds > 0 else float("nan"),
    }
    scores = [("dev", paths.get("dev_bleu")), ("test", paths.get("test"))]
    for split, path in [(split, path) for split, path in scores if path and run.translation]:
        bleu = read_metrics(path, BLEU_KEYS)
        notes.record(bleu, f"{run.task}/{run.name} {split}")
        values[f"{split}_bleu"], values[f"{split}_sacrebleu"] = number(bleu, "paper_bleu"), number(bleu, "sacrebleu")
    if paths.get("test") and not run.translation:
        values["test_f1"] = number(read_metrics(paths["test"], EVALB_KEYS), "f1")
    return values


def changes(config: dict, run: aiayn_runs.RunRecord, trained: dict) -> str:
    """``model.d_ff=1024, train.label_smoothing=0.0``: the run's settings that differ from ``defaults``.

    ``model`` and ``train`` are the ones the run trained with (``trained``, its summary's settings),
    ``average`` and ``decode`` the config's for the run.
    """
    sections = {
        "model": trained.get("model", {}),
        "train": trained.get("train", {}),
        "average": run.sections["average"],
        "decode": run.sections["decode"],
    }
    differ = [
        f"{section}.{key}={_text(value)}"
        for section, values in sections.items()
        for key, value in values.items()
        if config["defaults"][section].get(key) != value
    ]
    return ", ".join(differ) or "(defaults)"


def _text(value: Any) -> str:
    return json.dumps(value) if isinstance(value, (list, dict, bool)) or value is None else str(value)
