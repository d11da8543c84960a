"""Table 3: variations on the base model, dev perplexity and dev BLEU on newstest2013 (paper section 6.2).

One row per experiment reported in ``table3``, in the paper's order (base, A1..A4, B1, B2, C1..C7,
D1..D4, E, big), then any other experiment in the config's order. Each row is scored on the first task
of its experiment (``en-de`` in the paper) that runs, from the last checkpoint, without averaging, as the
paper. A row that does not run (``run:`` chose others) keeps the paper's numbers and the settings it
would train with, and leaves ours blank, as Table 2 does for the paper's other systems.
The architecture columns are the paper's (N, d_model, d_ff, h, d_k, d_v, P_drop, eps_ls, train steps,
positional encoding) and are read from the settings each run trained with (its ``summary.json``).

When some row trained several seeds (``seeds``), our scores are the mean ± sample sd over them, with
their number in a Seeds column, and each row says whether the paper's difference to its base row is
larger than what our seeds can resolve (:mod:`aiayn.report.seeds`); with one seed everywhere the table
is as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiayn import runs as aiayn_runs
from aiayn.paths import LAST
from aiayn.report import paper, seeds
from aiayn.report.layout import Column, Table
from aiayn.report.metrics import (
    BLEU_KEYS,
    PAPER_BLEU_LABEL,
    PPL_KEYS,
    SACREBLEU_LABEL,
    SUMMARY_KEYS,
    BleuNotes,
    MetricFileError,
    number,
    read_metrics,
)

COLUMNS = [
    Column("row", "Row"),
    Column("n_layers", "N", "int", "$N$"),
    Column("d_model", "d_model", "int", "$d_{\\text{model}}$"),
    Column("d_ff", "d_ff", "int", "$d_{\\text{ff}}$"),
    Column("n_heads", "h", "int", "$h$"),
    Column("d_k", "d_k", "int", "$d_k$"),
    Column("d_v", "d_v", "int", "$d_v$"),
    Column("dropout", "P_drop", "dropout", "$P_{drop}$"),
    Column("label_smoothing", "ε_ls", "dropout", "$\\epsilon_{ls}$"),
    Column("train_steps", "train steps", "int"),
    Column("positional", "positional encoding"),
    Column("ppl_paper", "Paper PPL (dev)", "paper"),
    Column("ppl_ours", "Ours: PPL (dev)", "score", spread=True),
    Column("ppl_delta", "Δ PPL", "delta"),
    Column("bleu_paper", "Paper BLEU (dev)", "paper"),
    Column("bleu_ours", f"Ours: {PAPER_BLEU_LABEL}", "score", spread=True),
    Column("bleu_delta", "Δ BLEU", "delta"),
    Column("sacrebleu_ours", f"Ours: {SACREBLEU_LABEL}", "score", spread=True),
    Column("params_paper", "Paper params ×10^6", "paper", "Paper params $\\times 10^6$"),
    Column("params_ours", "Ours: params ×10^6", "millions", "Ours: params $\\times 10^6$"),
]
SEEDS_COLUMN = Column("seeds", "Seeds", "int")  # after "positional", in a seeded table
RESOLVE_COLUMNS = [
    Column(f"{metric}_{key}", header.format(name), kind)
    for metric, name in (("ppl", "PPL"), ("bleu", "BLEU"))
    for key, header, kind in (
        ("paper_diff", "Paper Δ {} vs base", "delta"),
        ("resolvable_at", "Smallest Δ {} our seeds resolve (95%)", "score"),
        ("resolved", "Paper Δ {} resolved", "text"),
    )
]
PAPER_METRICS = {"ppl": "ppl_dev", "bleu": "bleu_dev"}
MODEL_KEYS = ("n_layers", "d_model", "d_ff", "n_heads", "d_k", "d_v", "dropout", "positional")


def rows_in_order(config: dict) -> list[tuple[str, str]]:
    """``[(task, experiment)]`` of the Table 3 rows that run: the paper's order first, then the config's;
    the first task of each that runs."""
    chosen = aiayn_runs.runs(config, "table3")
    return [row for row in all_rows(config) if row in chosen]


def all_rows(config: dict) -> list[tuple[str, str]]:
    """``[(task, experiment)]`` of every Table 3 row of the config, run or not, in the table's order."""
    names = [exp for exp, spec in config["experiments"].items() if "table3" in spec["tables"]]
    known = [row for row in paper.TABLE3_ORDER if row in names]
    ordered = known + [exp for exp in names if exp not in paper.TABLE3_ORDER]
    first = aiayn_runs.table3_runs(config)
    return [(first.get(exp, config["experiments"][exp]["tasks"][0]), exp) for exp in ordered]


def build(config: dict, results_dir: Path) -> Table:
    """Table 3 from the metric files under ``results_dir`` (:meth:`aiayn.runs.Records.table_inputs`)."""
    by_name = {row["row"]: row for row in paper.load("table3")}
    bleu_notes, records = BleuNotes(), aiayn_runs.Records(config, results_dir)
    values = {exp: _values(records.seeds(task, exp), bleu_notes) for task, exp in rows_in_order(config)}
    rows = [
        _row(records.get(task, exp), values[exp], by_name) if exp in values else _not_run(config, task, exp, by_name)
        for task, exp in all_rows(config)
    ]
    seeded = any(len(v["ppl"]) > 1 for v in values.values())
    if seeded:
        mark_resolution(rows, values, by_name)
    notes = [
        "Dev set (newstest2013), last checkpoint, no averaging, as in the paper; PPL per word-piece, in the "
        "precision each run trained in (train.precision). "
        "Δ = ours - paper.",
        "Architecture columns: the settings each run trained with. Paper params left blank by the paper "
        "are the base model's (its caption: unlisted values are identical to those of the base model).",
        *(SEED_NOTES if seeded else []),
        *bleu_notes.lines(),
    ]
    return Table(
        "table3", "Table 3: variations on the Transformer (EN-DE dev)", columns(seeded), rows, notes, seeded=seeded
    )


SEED_NOTES = [
    "Ours: mean ± sample standard deviation (n - 1 in the denominator) over the Seeds column's n models, "
    "seed i = train.seed + i; Δ = mean - paper; architecture and params: the first seed's.",
    "Paper Δ vs base: the paper's row minus the paper's base row. Smallest Δ our seeds resolve: the half "
    "width of the 95% Welch t interval of our row's mean minus our base's mean, "
    "t(0.975, ν) × sqrt(s_row²/n_row + s_base²/n_base), ν by Welch-Satterthwaite. Resolved: yes when "
    "|paper Δ| exceeds it, that is a difference of the paper's size would be significant at 5% (two-sided "
    "Welch t test) against our seed noise; no: our seeds could not tell it from noise. Blank where the row "
    "or base has one seed.",
]


def columns(seeded: bool) -> list[Column]:
    """The table's columns: with several seeds, a Seeds column after the positional encoding and the
    resolution columns at the end."""
    if not seeded:
        return COLUMNS
    at = [c.key for c in COLUMNS].index("positional") + 1
    return [*COLUMNS[:at], SEEDS_COLUMN, *COLUMNS[at:], *RESOLVE_COLUMNS]


def _values(runs: list[aiayn_runs.RunRecord], bleu_notes: BleuNotes) -> dict[str, list[float]]:
    """Dev PPL, BLEU (paper method) and sacreBLEU of every seed of a row: ``{metric: [one per seed]}``."""
    values: dict[str, list[float]] = {"ppl": [], "bleu": [], "sacrebleu": []}
    for run in runs:
        bleu = read_metrics(run.paths.bleu("dev", LAST), BLEU_KEYS)
        bleu_notes.record(bleu, f"{run.task}/{run.name}")
        values["ppl"].append(number(read_metrics(run.paths.dev_ppl, PPL_KEYS), "ppl"))
        values["bleu"].append(number(bleu, "paper_bleu"))
        values["sacrebleu"].append(number(bleu, "sacrebleu"))
    return values


def _row(
    run: aiayn_runs.RunRecord, values: dict[str, list[float]], by_name: dict[str, dict[str, str]]
) -> dict[str, Any]:
    exp, summary_path = run.experiment, run.paths.train.summary
    summary = read_metrics(summary_path, SUMMARY_KEYS)
    row: dict[str, Any] = {"row": exp, **settings_columns(summary["settings"], summary_path)}
    prow = by_name.get(exp, {})
    row.update(
        {
            "seeds": len(values["ppl"]),
            **seeds.cells("ppl_ours", values["ppl"]),
            **seeds.cells("bleu_ours", values["bleu"]),
            **seeds.cells("sacrebleu_ours", values["sacrebleu"]),
            "ppl_paper": paper.or_none(prow.get("ppl_dev")),
            "bleu_paper": paper.or_none(prow.get("bleu_dev")),
            "params_paper": paper.or_none(
                prow.get("params_millions") or (by_name["base"]["params_millions"] if prow else None)
            ),
            "params_ours": number(summary, "params") / 1e6,
        }
    )
    row["ppl_delta"] = paper.delta(row["ppl_ours"], row["ppl_paper"])
    row["bleu_delta"] = paper.delta(row["bleu_ours"], row["bleu_paper"])
    return row


def mark_resolution(
    rows: list[dict[str, Any]], values: dict[str, dict[str, list[float]]], by_name: dict[str, dict[str, str]]
) -> None:
    """Fill the resolution columns of every row that ran, but base, against the base row (in place):
    the paper's difference, the smallest difference our seeds resolve, and whether it is resolved."""
    if "base" not in values:
        return
    for row in rows:
        exp = row["row"]
        if exp == "base" or exp not in values:
            continue
        for metric, paper_key in PAPER_METRICS.items():
            difference = paper.delta(paper.as_float(by_name.get(exp, {}).get(paper_key)), by_name["base"][paper_key])
            bound = seeds.resolvable_at(seeds.spread(values[exp][metric]), seeds.spread(values["base"][metric]))
            row.update(
                {
                    f"{metric}_paper_diff": difference,
                    f"{metric}_resolvable_at": bound,
                    f"{metric}_resolved": seeds.resolved(difference, bound),
                }
            )


def _not_run(config: dict, task: str, exp: str, by_name: dict[str, dict[str, str]]) -> dict[str, Any]:
    """A row that did not run: the settings it would train with and the paper's numbers; ours blank."""
    prow = by_name.get(exp, {})
    return {
        "row": exp,
        **settings_columns(aiayn_runs.resolve(config, exp, task), Path("config")),
        "ppl_paper": paper.or_none(prow.get("ppl_dev")),
        "bleu_paper": paper.or_none(prow.get("bleu_dev")),
        "params_paper": paper.or_none(
            prow.get("params_millions") or (by_name["base"]["params_millions"] if prow else None)
        ),
    }


def settings_columns(settings: Any, source: Path | str) -> dict[str, Any]:
    """The paper's architecture columns from a run's settings (``model`` and ``train`` sections)."""
    try:
        model, train = settings["model"], settings["train"]
        values = {key: model[key] for key in MODEL_KEYS}
        values.update(label_smoothing=train["label_smoothing"], train_steps=train["train_steps"])
    except (KeyError, TypeError) as err:
        raise MetricFileError(f"{source}: settings lack the model/train key {err}") from None
    return values
