import json
import logging
import math

import pandas as pd
import pytest
from report_fixtures import write_config, written_results

from aiayn.report import layout, paper, table2
from aiayn.report.metrics import MetricFileError
from aiayn.report.tables import build_tables, main, provenance

TABLE3_MD = """\
## Table 3: variations on the Transformer (EN-DE dev)

| Row | N | d_model | d_ff | h | d_k | d_v | P_drop | ε_ls | train steps | positional encoding | Paper PPL (dev) \
| Ours: PPL (dev) | Δ PPL | Paper BLEU (dev) | Ours: BLEU (paper method: tokenized, ##AT## compound split) \
| Δ BLEU | Ours: sacreBLEU (detokenized) | Paper params ×10^6 | Ours: params ×10^6 |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: \
| ---: | ---: | ---: | ---: |
| base | 6 | 512 | 2048 | 8 | 64 | 64 | 0.1 | 0.1 | 100000 | sinusoid | 4.92 | 5.00 | +0.08 | 25.8 | 25.50 \
| -0.30 | 24.75 | 65 | 63.1 |
| C1 | 2 | 512 | 2048 | 8 | 64 | 64 | 0.1 | 0.1 | 100000 | sinusoid | 6.11 | 6.25 | +0.14 | 23.7 | 23.20 \
| -0.50 | 22.50 | 36 | 36.2 |

- Dev set (newstest2013), last checkpoint, no averaging, as in the paper; PPL per word-piece, in the precision \
each run trained in (train.precision). Δ = ours - paper.
- Architecture columns: the settings each run trained with. Paper params left blank by the paper are the \
base model's (its caption: unlisted values are identical to those of the base model).
- BLEU (paper method: tokenized, ##AT## compound split): double quotes „“”«» straightened to " in hypothesis \
and reference (tensor2tensor issue #317), Moses tokenizer.perl (escaped), a-b split as a ##AT##-##AT## b, \
multi-bleu.perl (tensor2tensor get_ende_bleu.sh)
- sacreBLEU (detokenized) on the untouched reference, signature: nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|\
version:2.4.3

_FOOTER_
"""

TABLE3_CSV = """\
row,n_layers,d_model,d_ff,n_heads,d_k,d_v,dropout,label_smoothing,train_steps,positional,ppl_paper,ppl_ours,\
ppl_delta,bleu_paper,bleu_ours,bleu_delta,sacrebleu_ours,params_paper,params_ours
base,6,512,2048,8,64,64,0.1,0.1,100000,sinusoid,4.92,5.0,0.08,25.8,25.5,-0.3,24.75,65,63.08
C1,2,512,2048,8,64,64,0.1,0.1,100000,sinusoid,6.11,6.25,0.14,23.7,23.2,-0.5,22.5,36,36.25
"""

TABLE2_CSV = """\
model,task,bleu_paper,bleu_ours,bleu_delta,sacrebleu_ours,cost_paper,cost_ours_paper_method,cost_ours_measured,\
params_m
ByteNet,EN-DE,23.75,,,,,,,
GNMT + RL,EN-DE,24.6,,,,2.3e19,,,
ConvS2S,EN-DE,25.16,,,,9.6e18,,,
MoE,EN-DE,26.03,,,,2.0e19,,,
GNMT + RL Ensemble,EN-DE,26.30,,,,1.8e20,,,
ConvS2S Ensemble,EN-DE,26.36,,,,7.7e19,,,
Transformer (base model),EN-DE,27.3,26.85,-0.45,25.9,3.3e18,3.2832e+18,3e+17,63.08
Transformer (big),EN-DE,28.4,,,,2.3e19,,,
Copy the source (baseline),EN-DE,,2.5,,2.25,,,,
"""


@pytest.fixture
def results(tmp_path):
    return written_results(tmp_path)


def _by_name(config, results):
    return {t.name: t for t in build_tables(config, results, "FOOTER")}


def test_table3_golden_markdown_and_csv(results):
    tables = _by_name(*results)
    assert layout.render_markdown(tables["table3"]) == TABLE3_MD
    assert layout.render_csv(tables["table3"]) == TABLE3_CSV


def test_table2_golden_csv_and_paper_method_cost(results):
    """Base: 12 h x 8 P100 x 9.5 TFLOPS = 3.2832e18 FLOPs, the paper's 3.3e18."""
    tables = _by_name(*results)
    assert layout.render_csv(tables["table2"]) == TABLE2_CSV
    md = layout.render_markdown(tables["table2"])
    assert "| Transformer (base model) | EN-DE | 27.3 | 26.85 | -0.45 | 25.90 | 3.3e18 | 3.3e18 | 3.0e17 | 63.1 |" in md
    assert "BLEU (paper method: tokenized, ##AT## compound split)" in md and "sacreBLEU (detokenized)" in md


def test_table4_rows_and_baseline(results):
    rows = _by_name(*results)["table4"].rows
    assert [r["parser"] for r in rows] == [r["parser"] for r in paper.load("table4")] + ["Flat tree (baseline)"]
    ours = [r for r in rows if r.get("f1_ours") is not None]
    assert [(r["parser"], r["training"], r["f1_ours"], r.get("f1_delta")) for r in ours] == [
        ("Transformer (4 layers)", "WSJ only, discriminative", 90.8, -0.5),
        ("Flat tree (baseline)", "-", 20.5, None),
    ]


def test_semi_supervised_parser_fills_the_semi_supervised_row(results):
    config, results_dir = results
    config["tasks"]["wsj"]["silver"] = {"path": "silver.txt", "ratio": 1.0}
    rows = _by_name(config, results_dir)["table4"].rows
    filled = [(r["training"]) for r in rows if r["parser"] == "Transformer (4 layers)" and "f1_ours" in r]
    assert filled == ["semi-supervised"]


def test_nan_shows_as_na_with_a_warning(results, caplog):
    config, results_dir = results
    path = results_dir / "en-de/C1/dev-last.ppl.json"
    path.write_text(json.dumps({"ppl": math.nan, "nll_per_token": 1.8, "tokens": 9, "sentences": 3}))
    with caplog.at_level(logging.WARNING):
        table = _by_name(config, results_dir)["table3"]
    assert f"{path}: ppl is NaN" in caplog.text
    md = layout.render_markdown(table)
    assert "| sinusoid | 6.11 | n/a | n/a | 23.7 |" in md
    assert "C1,2,512,2048,8,64,64,0.1,0.1,100000,sinusoid,6.11,n/a,n/a," in layout.render_csv(table)


def test_a_summary_without_its_precision_is_refused_naming_it():
    with pytest.raises(table2.MetricFileError, match=r"s\.json: no precision"):
        table2.run_precision({"gpu_model": "H100", "settings": {"train": {"precision": "auto"}}}, "s.json")


@pytest.mark.parametrize("gpu", ["TPU", "H100"])  # "H100": an older summary's name, SXM or PCIe or NVL
def test_unknown_gpu_model_gives_na_cost(gpu, caplog):
    summary = {"gpu_model": gpu, "wall_seconds": 10.0, "world_size": 1, "device": "cuda", "precision": "bf16"}
    with caplog.at_level(logging.WARNING):
        cost, used = table2.paper_method_cost(summary, "s.json")
    assert math.isnan(cost) and used == f"1 × {gpu} bf16, no peak FLOP/s"
    assert f"s.json: no bf16 peak for gpu_model '{gpu}' in aiayn.runtime.gpus.CARDS" in caplog.text


@pytest.mark.parametrize(
    "gpu, device, precision, tflops",
    [
        ("P100", "cuda", "fp32", 9.5),  # the paper's own figure
        ("H100 SXM", "cuda", "bf16", 989.5),  # the dense bf16 tensor-core peak
        ("H100 SXM", "cuda", "fp32", 67.0),  # an fp32 run on the same GPU is costed at its fp32 peak
        ("H100 PCIe", "cuda", "bf16", 756.5),
        ("A100", "cuda", "bf16", 312.0),
        ("cpu", "cpu", "fp32", 0.1),
    ],
)
def test_paper_method_cost_uses_the_peak_of_the_runs_precision(gpu, device, precision, tflops):
    summary = {"gpu_model": gpu, "wall_seconds": 3600.0, "world_size": 2, "device": device, "precision": precision}
    cost, used = table2.paper_method_cost(summary, "s.json")
    assert cost == pytest.approx(3600.0 * 2 * tflops * 1e12)
    assert used.endswith(f"at {tflops:g} TFLOPS")


def test_cost_and_bleu_method_notes_name_what_each_run_used(results):
    config, results_dir = results
    table = _by_name(config, results_dir)["table2"]
    assert any("en-de/base 8 × P100 fp32 at 9.5 TFLOPS" in note for note in table.notes)
    assert sum("straightened" in note for note in table.notes) == 1  # one method for all runs
    path = results_dir / "en-de/baseline/test-copy.bleu.json"  # a file scored before the method was recorded
    path.write_text(json.dumps({k: v for k, v in json.loads(path.read_text()).items() if k != "paper_bleu_method"}))
    notes = _by_name(config, results_dir)["table2"].notes
    assert any(
        note.startswith("BLEU (paper method: tokenized, ##AT## compound split) (en-de/baseline): not recorded")
        for note in notes
    )
    assert any("(en-de/base): double quotes" in note for note in notes)


def test_missing_file_is_named_before_anything_is_written(results, tmp_path):
    config, results_dir = results
    missing = results_dir / "wsj/baseline/test-flat.evalb.json"
    missing.unlink()
    with pytest.raises(MetricFileError, match=str(missing)):
        build_tables(config, results_dir, "FOOTER")
    config_path = write_config(tmp_path / "config.yaml", config)
    out = tmp_path / "tables"
    log = tmp_path / "tables.log"
    assert (
        main(
            ["--config", str(config_path), "--results-dir", str(results_dir), "--out-dir", str(out), "--log", str(log)]
        )
        == 1
    )
    assert str(missing) in log.read_text() and not out.exists()


def test_missing_key_names_file_and_key(results):
    config, results_dir = results
    path = results_dir / "en-de/base/test-avg.bleu.json"
    path.write_text(json.dumps({"sacrebleu": 1.0, "paper_bleu": 1.0}))
    with pytest.raises(MetricFileError, match=r"test-avg\.bleu\.json: missing key\(s\) \['sacrebleu_signature'\]"):
        build_tables(config, results_dir, "FOOTER")


def test_cli_writes_every_table_with_provenance(results, tmp_path):
    config, results_dir = results
    config_path = write_config(tmp_path / "config.yaml", config)
    out = results_dir / "tables"
    assert main(["--config", str(config_path), "--results-dir", str(results_dir), "--out-dir", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(
        f"{n}.{s}" for n in ("table2", "table3", "table4", "experiments") for s in ("md", "csv", "tex", "html")
    )
    for path in out.glob("*.md"):
        assert f"from config {config_path}, git commit " in path.read_text()
    frame = pd.read_csv(out / "table3.csv")
    assert frame["ppl_ours"].tolist() == [5.0, 6.25]
    tex = (out / "table2.tex").read_text()
    assert r"\#\#AT\#\#" in tex and r"$3.3 \cdot 10^{18}$" in tex and tex.count(r"\\") >= 10


def test_provenance_footer():
    import datetime

    when = datetime.datetime(2026, 1, 2, 3, 4, tzinfo=datetime.timezone.utc)
    assert provenance("c.yaml", None, when) == (
        "Produced by aiayn.report.tables from config c.yaml, git commit unknown (not a git checkout), "
        "2026-01-02 03:04 UTC."
    )


def test_flops_and_cells():
    assert layout.format_flops(3.2832e18) == "3.3e18"
    assert layout.format_flops(9.6e18, tex=True) == r"$9.6 \cdot 10^{18}$"
    assert layout.format_cell(None, "score") == "" and layout.format_cell(math.nan, "score") == "n/a"
    assert layout.format_cell(-0.3, "delta") == "-0.30" and layout.format_cell("5.00", "paper") == "5.00"
    assert layout.tex_escape("a_b & 50% #1") == r"a\_b \& 50\% \#1"
    assert layout.tex_escape('„a“ «b» "c"') == (
        r"\quotedblbase{}a\textquotedblleft{} \guillemotleft{}b"
        r"\guillemotright{} "
        r"\textquotedbl{}c\textquotedbl{}"
    )


def test_only_the_tables_asked_for_and_only_their_inputs(results, tmp_path):
    """Without a treebank the workflow asks for Tables 2 and 3 only: no parsing file may be needed."""
    config, results_dir = results
    for path in (results_dir / "wsj").rglob("*.json"):
        path.unlink()
    config_path = write_config(tmp_path / "config.yaml", config)
    out = tmp_path / "tables"
    assert (
        main(
            [
                "--config",
                str(config_path),
                "--results-dir",
                str(results_dir),
                "--out-dir",
                str(out),
                "--tables",
                "table2",
                "table3",
            ]
        )
        == 0
    )
    assert sorted(p.name for p in out.iterdir()) == sorted(
        f"table{n}.{s}" for n in (2, 3) for s in ("md", "csv", "tex", "html")
    )


def test_en_fr_block_follows_en_de_with_its_own_paper_rows(results):
    import yaml
    from report_fixtures import ROOT, bleu, summary

    config, results_dir = results
    full = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))
    config["tasks"]["en-fr"] = full["tasks"]["en-fr"]
    config["experiments"]["base"]["tasks"] = ["en-de", "en-fr"]
    for name, obj in {
        "en-fr/base/test-avg.bleu.json": bleu(38.0, 36.5),
        "en-fr/base/train/summary.json": summary(config, "en-fr", "base", 60_000_000, 43200.0),
        "en-fr/baseline/test-copy.bleu.json": bleu(3.0, 2.5),
    }.items():
        (results_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (results_dir / name).write_text(json.dumps(obj))
    table = build_tables(config, results_dir, "FOOTER", ["table2"])[0]
    fr = [(r["model"], r.get("bleu_paper"), r.get("bleu_delta")) for r in table.rows if r["task"] == "EN-FR"]
    assert fr[0] == ("Deep-Att + PosUnk", "39.2", None)
    assert ("Transformer (base model)", "38.1", -0.1) in fr and ("Transformer (big)", "41.8", None) in fr
    assert [r["task"] for r in table.rows].index("EN-FR") == 9 and "ByteNet" not in [m for m, _, _ in fr]
    assert any("41.0" in note for note in table.notes)


def test_parameter_counts_keep_three_digits():
    assert [layout.format_cell(v, "millions") for v in (63.08, 213.4, 0.4123)] == ["63.1", "213", "0.412"]
