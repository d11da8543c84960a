"""The experiments table: every run of the config, whatever the paper's tables, with what it changed.

One row per run (task and experiment, in the config's order, limited by ``run:``): the settings that
differ from ``defaults`` (the base model), steps, parameters, training time and target tokens per second
(its ``summary.json``), dev perplexity from the last checkpoint (``dev-last.ppl.json``), dev BLEU from the
last checkpoint (translation), and test BLEU or F1 from the averaged checkpoints for the runs decoded on
the test set (:func:`aiayn.config.decodes_test`: Table 2 and 4 runs and experiments in no paper table;
Table 3 rows are scored on dev only, as in the paper). A parsing task without a treebank runs nothing
and is left out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiayn import config as cfg
from aiayn.report.layout import Column, Table
from aiayn.report.metrics import (BLEU_KEYS, EVALB_KEYS, PAPER_BLEU_LABEL, PPL_KEYS, SACREBLEU_LABEL,
                                  SUMMARY_KEYS, BleuNotes, number, read_metrics, run_dir, summary_path)

COLUMNS = [
    Column("task", "Task"),
    Column("experiment", "Experiment"),
    Column("changes", "Settings that differ from defaults"),
    Column("steps", "Steps", "int"),
    Column("params_m", "Params (M)", "millions"),
    Column("dev_ppl", "Dev PPL", "score"),
    Column("dev_bleu", f"Dev {PAPER_BLEU_LABEL}", "score"),
    Column("dev_sacrebleu", f"Dev {SACREBLEU_LABEL}", "score"),
    Column("test_bleu", f"Test {PAPER_BLEU_LABEL}", "score"),
    Column("test_sacrebleu", f"Test {SACREBLEU_LABEL}", "score"),
    Column("test_f1", "Test F1 (EVALB)", "score"),
    Column("train_seconds", "Training time", "duration"),
    Column("tokens_per_second", "Target tokens/s", "int"),
    Column("hardware", "Hardware"),
]
SUMMARY_EXTRA = ("steps", "tokens_tgt")


def table_runs(config: dict) -> list[tuple[str, str]]:
    """``[(task, experiment)]`` of the table: every run, but parsing without a treebank (nothing runs)."""
    tasks = config["tasks"]
    return [(t, e) for t, e in cfg.runs(config) if tasks[t]["kind"] != "parsing" or tasks[t].get("treebank")]


def _paths(config: dict, results_dir: Path, task: str, exp: str) -> dict[str, Path]:
    directory, translation = run_dir(results_dir, task, exp), config["tasks"][task]["kind"] == "translation"
    paths = {"summary": summary_path(results_dir, task, exp), "ppl": directory / "dev-last.ppl.json"}
    if translation:
        paths["dev_bleu"] = directory / "dev-last.bleu.json"
    if cfg.decodes_test(config, exp):
        paths["test"] = directory / ("test-avg.bleu.json" if translation else "test-avg.evalb.json")
    return paths


def inputs(config: dict, results_dir: Path) -> list[Path]:
    """Every metric file the experiments table reads."""
    return [path for task, exp in table_runs(config) for path in _paths(config, results_dir, task, exp).values()]


def build(config: dict, results_dir: Path) -> Table:
    """The experiments table from the metric files under ``results_dir`` (see :func:`inputs`)."""
    notes = BleuNotes()
    rows = [_row(config, results_dir, task, exp, notes) for task, exp in table_runs(config)]
    return Table("experiments", "Every run: its settings, scores and cost", COLUMNS, rows, [
        "Settings: the keys of model, train, average and decode whose values differ from the config's "
        "defaults (the base model), as the run trained (its summary) and decoded.",
        "Dev: the last checkpoint, no averaging. Test: the average of the last checkpoints (average.last); "
        "left blank for runs reported only in Table 3, which the paper scored on dev alone.",
        "Training time: wall clock of the training job(s), resumed runs summed; tokens/s: target tokens "
        "per second over that time, all GPUs together.",
        *notes.lines(),
    ])


def _row(config: dict, results_dir: Path, task: str, exp: str, notes: BleuNotes) -> dict[str, Any]:
    paths = _paths(config, results_dir, task, exp)
    summary = read_metrics(paths["summary"], SUMMARY_KEYS + SUMMARY_EXTRA)
    seconds = number(summary, "wall_seconds")
    row: dict[str, Any] = {
        "task": task, "experiment": exp, "changes": changes(config, task, exp, summary["settings"]),
        "steps": summary["steps"], "params_m": number(summary, "params") / 1e6,
        "dev_ppl": number(read_metrics(paths["ppl"], PPL_KEYS), "ppl"), "train_seconds": seconds,
        "tokens_per_second": number(summary, "tokens_tgt") / seconds if seconds > 0 else float("nan"),
        "hardware": f"{summary['world_size']} x {summary['gpu_model']}",
    }
    scores = [("dev", paths.get("dev_bleu")), ("test", paths.get("test"))]
    for split, path in [(split, path) for split, path in scores if path and path.name.endswith(".bleu.json")]:
        bleu = read_metrics(path, BLEU_KEYS)
        notes.record(bleu, f"{task}/{exp} {split}")
        row[f"{split}_bleu"], row[f"{split}_sacrebleu"] = number(bleu, "paper_bleu"), number(bleu, "sacrebleu")
    if paths.get("test") and paths["test"].name.endswith(".evalb.json"):
        row["test_f1"] = number(read_metrics(paths["test"], EVALB_KEYS), "f1")
    return row


def changes(config: dict, task: str, exp: str, trained: dict) -> str:
    """``model.d_ff=1024, train.label_smoothing=0.0``: the run's settings that differ from ``defaults``.

    ``model`` and ``train`` are the ones the run trained with (``trained``, its summary's settings),
    ``average`` and ``decode`` the config's for the run.
    """
    resolved = cfg.resolve(config, exp, task)
    sections = {"model": trained.get("model", {}), "train": trained.get("train", {}),
                "average": resolved["average"], "decode": resolved["decode"]}
    differ = [f"{section}.{key}={_text(value)}" for section, values in sections.items()
              for key, value in values.items() if config["defaults"][section].get(key) != value]
    return ", ".join(differ) or "(defaults)"


def _text(value: Any) -> str:
    return json.dumps(value) if isinstance(value, (list, dict, bool)) or value is None else str(value)
