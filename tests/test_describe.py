import csv
import io
from pathlib import Path

import pytest

from aiayn import config as configlib
from aiayn.describe import COLUMNS, describe, main

CONFIG = Path(__file__).resolve().parents[1] / "config.yaml"

# Table 3 of the paper, "params x 10^6" column (EN-DE, 37000 shared BPE vocabulary).
PAPER_PARAMS_MILLIONS = {
    "base": 65, "B1": 58, "B2": 60, "C1": 36, "C2": 50, "C3": 80, "C4": 28,
    "C5": 168, "C6": 53, "C7": 90, "big": 213,
}


def test_table3_parameter_counts_match_the_paper():
    rows = {(r["experiment"], r["task"]): r for r in describe(configlib.load(CONFIG), vocab_size=37000)}
    for experiment, millions in PAPER_PARAMS_MILLIONS.items():
        params = rows[(experiment, "en-de")]["params"]
        paper = millions * 1e6
        assert abs(params - paper) <= max(3e6, 0.05 * paper), (experiment, params, paper)
    assert rows[("base", "en-de")]["params"] == 63_045_632
    assert rows[("big", "en-de")]["params"] == 214_171_648
    assert rows[("A1", "en-de")]["params"] == rows[("base", "en-de")]["params"]


def test_cli_writes_one_csv_row_per_run(capsys):
    assert main([str(CONFIG)]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert tuple(rows[0]) == COLUMNS
    assert len(rows) == len(configlib.runs(configlib.load(CONFIG)))
    by_run = {(r["experiment"], r["task"]): r for r in rows}
    assert by_run[("E", "en-de")]["positional"] == "learned"
    assert by_run[("D3", "en-de")]["label_smoothing"] == "0.0"
    # per-task vocabulary: en-fr's 32000 is smaller than en-de's 37000
    assert int(by_run[("base", "en-fr")]["params"]) == int(by_run[("base", "en-de")]["params"]) - 5000 * 512


def test_cli_rejects_tiny_vocabulary():
    with pytest.raises(SystemExit):
        main([str(CONFIG), "--vocab-size", "2"])
