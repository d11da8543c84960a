"""The fault-injection benchmark's comparison: what two runs' tables must agree on."""

import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "fault_injection.py"
sys.path.insert(0, str(SCRIPT.parent))
import fault_injection  # noqa: E402  (a script beside its sibling benchmarks, not a package)

from aiayn.report import experiments, table2  # noqa: E402
from aiayn.report.layout import Table  # noqa: E402
from aiayn.report.tables import write_tables  # noqa: E402


def experiments_table(seconds, bleu, changes="n_layers=2, d_model=16"):
    """The experiments table with one row: the columns the real table has, the values given."""
    row = {
        "task": "en-de",
        "experiment": "base",
        "changes": changes,
        "steps": 96,
        "params_m": 1.5,
        "dev_ppl": 40.0,
        "dev_bleu": bleu,
        "train_seconds": seconds,
        "tokens_per_second": 9600 / seconds,
        "hardware": "2 x cpu",
    }
    return Table("experiments", "Every run", experiments.COLUMNS, [row], ["Training time: wall clock."])


def table2_table(seconds, bleu):
    row = {key.key: None for key in table2.COLUMNS}
    row.update({table2.COLUMNS[0].key: "ours", "cost_ours_paper_method": seconds * 1e12, "cost_ours_measured": 5e15})
    bleu_key = next(c.key for c in table2.COLUMNS if "bleu" in c.key)
    row[bleu_key] = bleu
    return Table("table2", "Table 2", table2.COLUMNS, [row], ["Training cost, paper's method: time."])


def fingerprints(tmp_path, name, table):
    table.footer = f"Produced by aiayn.report.tables at {name}"
    written = write_tables([table], tmp_path / name)
    return {path.suffix: fault_injection.fingerprint(path) for path in written if path.suffix != ".html"}


@pytest.mark.parametrize("make", [experiments_table, table2_table])
def test_tables_agree_when_only_the_wall_clock_differs(tmp_path, make):
    """A resumed run trains longer by the clock; its scores are the same, so its tables compare equal."""
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    assert fingerprints(tmp_path, "a", make(12.5, 25.1)) == fingerprints(tmp_path, "b", make(31.0, 25.1))


@pytest.mark.parametrize("make", [experiments_table, table2_table])
def test_tables_differ_when_a_score_differs(tmp_path, make):
    """Leaving the clock out must not leave out the scores: every format still sees a changed BLEU."""
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    a, b = fingerprints(tmp_path, "a", make(12.5, 25.1)), fingerprints(tmp_path, "b", make(12.5, 25.4))
    assert set(a) == {".md", ".csv", ".tex"}
    assert all(a[suffix] != b[suffix] for suffix in a)


def test_only_the_clock_columns_are_blanked(tmp_path):
    """The experiments CSV keeps every column but training time and tokens/s, commas inside cells too."""
    (tmp_path / "a").mkdir()
    rows = fingerprints(tmp_path, "a", experiments_table(12.5, 25.1))[".csv"]
    header, values = rows[0], rows[1]
    blank = {header[i] for i, cell in enumerate(values) if cell == ""}
    assert {"train_seconds", "tokens_per_second"} <= blank
    assert values[header.index("changes")] == "n_layers=2, d_model=16"
    assert values[header.index("dev_bleu")] != ""


def test_cpu_ranks_overlay_reaches_every_training():
    """``--cpu-ranks 2`` sets train.cpu_ranks in the defaults and over an experiment's own value;
    the config it gives still validates."""
    from aiayn import config as aiayn_config

    config = fault_injection.with_cpu_ranks(fault_injection.merged_config(["base", "big", "A1", "parser"], 12), 3)
    assert config["defaults"]["train"]["cpu_ranks"] == 3
    assert config["experiments"]["big"]["train"]["cpu_ranks"] == 3  # configs/test.yaml gives big 2
    assert all(config["experiments"][e].get("train", {}).get("cpu_ranks", 3) == 3 for e in config["experiments"])
    aiayn_config.validate(config)
