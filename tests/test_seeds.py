"""Seed spread in the tables: mean ± sample sd over a run's seeds, and which of the paper's differences to
the base row our spread resolves (aiayn.report.seeds), on hand-made metric files for 3 + 2 seeds."""

import math
from pathlib import Path

import pandas as pd
import pytest
from report_fixtures import _json, bleu, summary, written_results

from aiayn import runs as aiayn_runs
from aiayn.report import experiments, layout, table3
from aiayn.report.seeds import Spread, resolvable_at, resolved, spread

# dev BLEU (paper method), dev sacreBLEU, dev PPL of each seed; the first seed is report_fixtures' run
SEEDS = {
    "base": [(25.5, 24.75, 5.0), (25.9, 25.25, 5.2), (25.1, 24.5, 4.8)],
    "C1": [(23.2, 22.5, 6.0), (23.6, 22.75, 7.0)],
}


@pytest.fixture
def seeded(tmp_path):
    """The small config with base on 3 seeds and C1 on 2, and every seed's metric files."""
    config, results = written_results(tmp_path)
    config["experiments"]["base"]["seeds"] = 3
    config["experiments"]["C1"]["seeds"] = 2
    for exp, values in SEEDS.items():
        names = [exp] + [f"{exp}.seed{s}" for s in range(2, len(values) + 1)]
        for i, (name, (paper_bleu, sacrebleu, ppl)) in enumerate(zip(names, values)):
            run = results / "en-de" / name
            _json(run / "dev-last.bleu.json", bleu(paper_bleu, sacrebleu))
            _json(run / "dev-last.ppl.json", {"ppl": ppl, "nll_per_token": 1.6, "tokens": 9, "sentences": 3})
            if i:
                _json(run / "train/summary.json", summary(config, "en-de", exp, 63_080_000, 43200.0 + 600 * i))
            if i and exp == "base":
                _json(run / "test-avg.bleu.json", bleu(26.85 + 0.5 * i, 25.9))
    return config, results


def test_spread_is_the_mean_and_sample_sd():
    assert spread([25.5, 25.9, 25.1]) == Spread(pytest.approx(25.5), pytest.approx(0.4), 3)
    assert spread([7.0]) == Spread(7.0, None, 1)
    assert math.isnan(spread([1.0, math.nan]).sd)


def test_resolvable_at_is_the_welch_half_width():
    # equal spreads, 2 seeds each: se = 1, Welch's ν = 2, t(0.975, 2) = 4.302653 (any t table)
    assert resolvable_at(Spread(0.0, 1.0, 2), Spread(5.0, 1.0, 2)) == pytest.approx(4.302653, abs=1e-6)
    # many seeds: the normal quantile 1.96 times the standard error sqrt(2 * 0.5² / n)
    n = 100_000
    assert resolvable_at(Spread(0.0, 0.5, n), Spread(0.0, 0.5, n)) == pytest.approx(1.96 * (0.5 / n) ** 0.5, rel=1e-3)
    assert resolvable_at(Spread(0.0, None, 1), Spread(0.0, 1.0, 3)) is None
    assert resolvable_at(Spread(1.0, 0.0, 2), Spread(1.0, 0.0, 2)) == 0.0
    assert resolved(-2.1, 1.0) == "yes" and resolved(1.19, 5.2) == "no" and resolved(None, 1.0) is None


def test_table3_shows_mean_sd_seeds_and_resolution(seeded):
    config, results = seeded
    table = table3.build(config, results)
    md = layout.render_markdown(table)
    assert (
        "| base | 6 | 512 | 2048 | 8 | 64 | 64 | 0.1 | 0.1 | 100000 | sinusoid | 3 | 4.92 | 5.00 ± 0.20 | +0.08 "
        "| 25.8 | 25.50 ± 0.40 | -0.30 | 24.83 ± 0.38 | 65 | 63.1 |  |  |  |  |  |  |"
    ) in md
    # C1 - base in the paper: PPL 6.11 - 4.92 = +1.19, BLEU 23.7 - 25.8 = -2.10. Our bounds: BLEU
    # t(0.975, ν = 2.88) × sqrt(0.4²/3 + 0.283²/2) = 1.00 < 2.1 resolves; PPL 5.20 > 1.19 does not.
    assert (
        "| C1 | 2 | 512 | 2048 | 8 | 64 | 64 | 0.1 | 0.1 | 100000 | sinusoid | 2 | 6.11 | 6.50 ± 0.71 | +0.39 "
        "| 23.7 | 23.40 ± 0.28 | -0.30 | 22.62 ± 0.18 | 36 | 36.2 | +1.19 | 5.20 | no | -2.10 | 1.00 | yes |"
    ) in md
    assert any("95% Welch t interval" in note for note in table.notes)
    assert "$\\pm$" in layout.render_latex(table) and "25.50 ± 0.40" in layout.render_html(table)


def test_table3_csv_keeps_mean_sd_and_n_numeric(seeded, tmp_path):
    config, results = seeded
    path = tmp_path / "table3.csv"
    path.write_text(layout.render_csv(table3.build(config, results)))
    frame = pd.read_csv(path).set_index("row")
    assert frame.loc["C1", "bleu_ours"] == pytest.approx(23.4) and frame.loc["C1", "bleu_ours_sd"] == pytest.approx(
        0.2828427
    )
    assert frame.loc["base", "ppl_ours_sd"] == pytest.approx(0.2) and list(frame["seeds"]) == [3, 2]
    assert frame.loc["C1", "bleu_resolvable_at"] == pytest.approx(0.99509, abs=1e-5)
    assert frame.loc["C1", "ppl_resolved"] == "no" and frame.loc["C1", "bleu_paper_diff"] == pytest.approx(-2.1)


def test_one_seed_has_no_seed_columns(tmp_path):
    config, results = written_results(tmp_path)
    table = table3.build(config, results)
    assert not table.seeded and "seeds" not in layout.render_csv(table) and "±" not in layout.render_markdown(table)


def test_experiments_table_shows_the_spread_of_every_seeded_score(seeded):
    config, results = seeded
    table = experiments.build(config, results)
    rows = {row["experiment"]: row for row in table.rows}
    assert rows["base"]["seeds"] == 3 and rows["C1"]["seeds"] == 2
    md = layout.render_markdown(table)
    # base test BLEU 26.85, 27.35, 27.85; training 12 h, 12 h 10 min, 12 h 20 min
    assert "| 25.50 ± 0.40 | 24.83 ± 0.38 | 27.35 ± 0.50 | 25.90 ± 0.00 |" in md
    assert "12 h 10 min ± 10 min 0 s" in md
    csv = layout.render_csv(table).splitlines()
    assert "seeds" in csv[0].split(",") and "dev_bleu_sd" in csv[0].split(",")
    assert "train.seed" not in rows["base"]["changes"]


def test_seeded_inputs_name_every_seed(seeded):
    config, results = seeded
    records = aiayn_runs.Records(config, results)
    names = {str(Path(path).relative_to(results)) for path in records.table_inputs("table3")}
    assert {"en-de/base.seed3/dev-last.ppl.json", "en-de/C1.seed2/dev-last.bleu.json"} <= names
    names = {str(Path(path).relative_to(results)) for path in records.table_inputs("experiments")}
    assert "en-de/base.seed2/test-avg.bleu.json" in names and "en-de/C1.seed2/test-avg.bleu.json" not in names
