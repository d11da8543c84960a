"""The experiments table: every run with the settings it changed, its scores and its cost; and tables
built from the runs a `run:` choice keeps, the others left blank."""

import pytest
from report_fixtures import written_results

from aiayn.report import experiments, layout, plots, table3
from aiayn.report.metrics import MetricFileError
from aiayn.report.tables import build_tables
from aiayn.runs import Records, table_runs

EXPERIMENTS_CSV = """\
task,experiment,changes,steps,params_m,dev_ppl,dev_bleu,dev_sacrebleu,test_bleu,test_sacrebleu,test_f1,\
train_seconds,tokens_per_second,hardware
en-de,base,train.precision=fp32,100000,63.08,5.0,25.5,24.75,26.85,25.9,,43200.0,23148.14814814815,8 x P100
en-de,C1,"model.n_layers=2, train.precision=fp32",100000,36.25,6.25,23.2,22.5,,,,20000.0,50000.0,8 x P100
"""


@pytest.fixture
def results(tmp_path):
    return written_results(tmp_path)


def test_golden_csv_and_markdown(results):
    config, results_dir = results
    table = experiments.build(config, results_dir)
    assert layout.render_csv(table) == EXPERIMENTS_CSV
    markdown = layout.render_markdown(table)
    assert "| en-de | C1 | model.n_layers=2, train.precision=fp32 | 100000 | 36.2 | 6.25 | 23.20 |" in markdown
    assert "| 12 h 0 min | 23148 | 8 x P100 |" in markdown and "5 h 33 min" in markdown


def test_own_experiment_is_a_row_and_its_test_scores_are_read(results):
    """An experiment in no paper table gets the full protocol: test BLEU from the averaged checkpoints."""
    from report_fixtures import _json, bleu, summary

    config, results_dir = results
    config["experiments"]["mine"] = {
        "tasks": ["en-de"],
        "tables": [],
        "model": {"d_ff": 1024},
        "decode": {"beam_size": 8},
    }
    reads = Records(config, results_dir).table_inputs("experiments")
    assert str(results_dir / "en-de/mine/test-avg.bleu.json") in reads
    with pytest.raises(MetricFileError, match="en-de/mine/train/summary.json"):
        build_tables(config, results_dir, "F", ["experiments"])
    _json(results_dir / "en-de/mine/train/summary.json", summary(config, "en-de", "mine", 50_000_000, 100.0))
    _json(results_dir / "en-de/mine/dev-last.ppl.json", {"ppl": 7.5})
    _json(results_dir / "en-de/mine/dev-last.bleu.json", bleu(20.0, 19.0))
    _json(results_dir / "en-de/mine/test-avg.bleu.json", bleu(21.0, 20.0))
    row = experiments.build(config, results_dir).rows[-1]
    assert row["changes"] == "model.d_ff=1024, train.precision=fp32, decode.beam_size=8"
    assert (row["dev_ppl"], row["test_bleu"], row["test_sacrebleu"], row["tokens_per_second"]) == (7.5, 21.0, 20.0, 1e7)


def test_parsing_runs_report_f1_and_need_a_treebank(results):
    from report_fixtures import _json, summary

    config, results_dir = results
    assert ("wsj", "parser") not in table_runs(config)  # no treebank: nothing runs
    config["tasks"]["wsj"]["treebank"] = "treebank"
    _json(results_dir / "wsj/parser/train/summary.json", summary(config, "wsj", "parser", 200_000_000, 60.0))
    _json(results_dir / "wsj/parser/dev-last.ppl.json", {"ppl": 1.5})
    row = experiments.build(config, results_dir).rows[-1]
    assert (row["experiment"], row["test_f1"], row.get("dev_bleu")) == ("parser", 90.8, None)
    assert "model.n_layers=4" in row["changes"] and "decode.beam_size=21" in row["changes"]


def test_a_run_choice_limits_every_table_and_leaves_other_rows_blank(results, tmp_path):
    config, results_dir = results
    config["run"] = {"experiments": ["C1"]}
    assert table3.rows_in_order(config) == [("en-de", "C1")]
    assert Records(config, results_dir).table_inputs("table3") == [
        str(results_dir / "en-de/C1/dev-last.bleu.json"),
        str(results_dir / "en-de/C1/dev-last.ppl.json"),
        str(results_dir / "en-de/C1/train/summary.json"),
    ]
    rows = {row["row"]: row for row in table3.build(config, results_dir).rows}
    assert rows["base"]["ppl_paper"] == "4.92" and rows["base"].get("ppl_ours") is None
    assert rows["base"]["n_layers"] == 6 and rows["C1"]["ppl_ours"] == 6.25
    assert [row["experiment"] for row in experiments.build(config, results_dir).rows] == ["C1"]
    from report_fixtures import write_train_log

    write_train_log(results_dir / "en-de/C1/train/log.csv")
    written = plots.make_plots(config, results_dir, tmp_path / "plots", ("table3", "experiments"))
    assert sorted(p.name for p in written) == ["curves_en-de_C1.png", "table3.png"]
    assert all(p.read_bytes().startswith(b"\x89PNG\r\n\x1a\n") for p in written), written  # PNG signature
