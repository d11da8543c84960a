import pytest
from report_fixtures import small_config, write_config, write_results, write_train_log

from aiayn.report.metrics import MetricFileError
from aiayn.report.plots import main, make_plots, read_train_log

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def results(tmp_path):
    results = tmp_path / "results"
    config = small_config(results)
    write_results(results, config)
    for task, exp in [("en-de", "base"), ("en-de", "C1"), ("wsj", "parser")]:
        write_train_log(results / task / exp / "train" / "log.csv")
    return config, results


def test_plots_written_as_png(results, tmp_path):
    config, results_dir = results
    config_path = write_config(tmp_path / "config.yaml", config)
    out = results_dir / "plots"
    log = tmp_path / "plots.log"
    assert (
        main(
            ["--config", str(config_path), "--results-dir", str(results_dir), "--out-dir", str(out), "--log", str(log)]
        )
        == 0
    )
    names = sorted(p.name for p in out.iterdir())
    assert names == ["curves_en-de_C1.png", "curves_en-de_base.png", "curves_wsj_parser.png", "table3.png"]
    for path in out.iterdir():
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5000


def test_train_log_dev_ppl_only_on_evaluations(tmp_path):
    path = tmp_path / "log.csv"
    write_train_log(path, steps=30, dev_every=10)
    frame = read_train_log(path)
    assert len(frame) == 30 and frame["dev_ppl"].notna().sum() == 3


def test_missing_log_is_named(results, tmp_path):
    config, results_dir = results
    missing = results_dir / "wsj/parser/train/log.csv"
    missing.unlink()
    with pytest.raises(MetricFileError, match=str(missing)):
        make_plots(config, results_dir, tmp_path / "plots")
    assert not (tmp_path / "plots").exists()


def test_bad_log_is_named(tmp_path):
    bad = tmp_path / "log.csv"
    bad.write_text("step,lr\n1,0.1\n")
    with pytest.raises(MetricFileError, match=r"log\.csv: missing column\(s\) \['loss'\]"):
        read_train_log(bad)
    no_dev = tmp_path / "no_dev.csv"
    no_dev.write_text("step,lr,loss\n1,0.1,9.5\n2,0.2,9.0\n")
    assert read_train_log(no_dev)["dev_ppl"].isna().all()


def test_plots_only_for_the_tables_asked_for(results, tmp_path):
    config, results_dir = results
    (results_dir / "wsj/parser/train/log.csv").unlink()
    written = make_plots(config, results_dir, tmp_path / "plots", ("table2",))
    assert [p.name for p in written] == ["curves_en-de_base.png"]


def test_table3_chart_draws_the_seed_spread_as_error_bars():
    from aiayn.report.plots import table3_chart

    rows = [
        {
            "row": "base",
            "bleu_ours": 25.5,
            "bleu_ours_sd": 0.4,
            "bleu_paper": "25.8",
            "ppl_ours": 5.0,
            "ppl_ours_sd": 0.2,
            "ppl_paper": "4.92",
        },
        {
            "row": "C1",
            "bleu_ours": 23.4,
            "bleu_ours_sd": None,
            "bleu_paper": "23.7",
            "ppl_ours": 6.5,
            "ppl_ours_sd": None,
            "ppl_paper": "6.11",
        },
    ]
    from matplotlib.container import ErrorbarContainer

    [bars] = [c for c in table3_chart(rows).axes[0].containers if isinstance(c, ErrorbarContainer)]
    [segments] = bars.lines[2]
    assert [list(s[:, 1]) for s in segments.get_segments()] == [[25.1, 25.9], [23.4, 23.4]]
    rows = [{**row, "bleu_ours_sd": None, "ppl_ours_sd": None} for row in rows]
    containers = table3_chart(rows).axes[0].containers  # one seed: no bars
    assert not [c for c in containers if isinstance(c, ErrorbarContainer)]
