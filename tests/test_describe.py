import csv
import io
import sys

import pytest
import yaml
from paths import ROOT

from aiayn import config as aiayn_config
from aiayn import io as aiayn_io
from aiayn.describe import COLUMNS, describe, main

CONFIG = ROOT / "config.yaml"

# Table 3 of the paper, "params x 10^6" column (EN-DE, 37000 shared BPE vocabulary).
PAPER_PARAMS_MILLIONS = {
    "base": 65,
    "B1": 58,
    "B2": 60,
    "C1": 36,
    "C2": 50,
    "C3": 80,
    "C4": 28,
    "C5": 168,
    "C6": 53,
    "C7": 90,
    "big": 213,
}


def test_table3_parameter_counts_match_the_paper():
    rows = {r["experiment"]: r for r in describe(aiayn_config.load(CONFIG), vocab_size=37000)}
    for experiment, millions in PAPER_PARAMS_MILLIONS.items():
        params = rows[experiment]["params"]
        paper = millions * 1e6
        assert abs(params - paper) <= max(3e6, 0.05 * paper), (experiment, params, paper)
    assert rows["base"]["params"] == 63_045_632
    assert rows["big"]["params"] == 214_171_648
    assert rows["A1"]["params"] == rows["base"]["params"]


def test_cli_writes_one_csv_row_per_experiment(capsys):
    assert main([str(CONFIG)]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert (
        tuple(rows[0])
        == COLUMNS
        == (
            "experiment",
            "n_layers",
            "d_model",
            "d_ff",
            "n_heads",
            "d_k",
            "d_v",
            "dropout",
            "label_smoothing",
            "train_steps",
            "positional",
            "params",
            "nodes",
            "gpus",
            "ranks",
            "tokens_per_step",
            "passes",
            "tokens_per_pass",
        )
    )
    assert [r["experiment"] for r in rows] == list(aiayn_config.load(CONFIG)["experiments"])
    by_exp = {r["experiment"]: r for r in rows}
    assert by_exp["E"]["positional"] == "learned"
    assert by_exp["D3"]["label_smoothing"] == "0.0"
    assert by_exp["big"]["dropout"] == "0.3" and by_exp["big"]["train_steps"] == "300000"
    # without --vocab-size each row uses its first task's vocabulary (EN-DE: 37000)
    assert int(by_exp["base"]["params"]) == 63_045_632


def test_cli_rejects_tiny_vocabulary(capsys):
    with pytest.raises(SystemExit) as exit:
        main([str(CONFIG), "--vocab-size", "2"])
    assert exit.value.code == 2
    assert "error: --vocab-size must be at least 4 (pad, unk, bos, eos)" in capsys.readouterr().err


@pytest.mark.parametrize("gpus", range(1, 9))
def test_cli_gpus_shows_the_papers_step_on_any_number_of_gpus(capsys, gpus):
    assert main([str(CONFIG), "--gpus", str(gpus)]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    for row in rows:
        assert int(row["gpus"]) == gpus
        per_pass, step = int(row["tokens_per_pass"]), int(row["tokens_per_step"])
        assert abs(step - 25000) <= per_pass and step == gpus * int(row["passes"]) * per_pass
    base = next(r for r in rows if r["experiment"] == "base")
    # train.tokens_per_pass null: one pass a step where the GPU's memory holds it
    assert (base["passes"], base["tokens_per_pass"]) == {1: ("1", "25000"), 8: ("1", "3125")}.get(
        gpus, (base["passes"], base["tokens_per_pass"])
    )


@pytest.mark.parametrize("option", ["--gpus", "--nodes"])
def test_cli_rejects_zero_gpus_or_nodes(option, capsys):
    with pytest.raises(SystemExit) as exit:
        main([str(CONFIG), option, "0"])
    assert exit.value.code == 2
    assert f"error: {option} must be at least 1" in capsys.readouterr().err


def test_cli_nodes_divide_the_step_over_every_gpu_of_every_node(capsys):
    """2 nodes x 8 GPUs: 16 ranks of one pass of round(25000 / 16) tokens, the paper's step size."""
    assert main([str(CONFIG), "--nodes", "2", "--gpus", "8"]) == 0
    base = next(r for r in csv.DictReader(io.StringIO(capsys.readouterr().out)) if r["experiment"] == "base")
    assert (base["nodes"], base["gpus"], base["passes"], base["tokens_per_pass"], base["tokens_per_step"]) == (
        "2",
        "8",
        "1",
        "1562",
        "24992",
    )


def test_a_cpu_run_shows_no_gpus_and_its_cpu_ranks(tmp_path, capsys):
    """``train.gpus: 0``: the gpus column says 0 (it said 1, the rank count), ranks the CPU ranks."""
    overlay = tmp_path / "cpu.yaml"
    overlay.write_text("defaults: {train: {gpus: 0, cpu_ranks: 2}}\nrun: {experiments: [base]}\n")
    assert main([str(CONFIG), str(overlay)]) == 0
    [base] = csv.DictReader(io.StringIO(capsys.readouterr().out))
    assert (base["gpus"], base["ranks"], base["passes"], base["tokens_per_pass"]) == ("0", "2", "1", "12500")


def test_overlays_merge_and_run_limits_the_rows(tmp_path, capsys):
    overlay = tmp_path / "variation.yaml"
    overlay.write_text(
        "experiments: {F1: {tasks: [en-de], tables: [table3], model: {d_ff: 3072}}}\nrun: {experiments: [base, F1]}\n"
    )
    assert main([str(CONFIG), str(overlay), "--vocab-size", "37000"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(",")[0] for line in lines[1:]] == ["base", "F1"]
    assert lines[2].startswith("F1,6,512,3072,8,64,64,0.1,0.1,100000,sinusoid,")


def test_full_prints_the_whole_config_with_every_default_help_range_and_source(capsys):
    """--full: YAML that reads back as the validated config (defaults filled in), each key commented."""
    assert main([str(CONFIG), "--full"]) == 0
    out = capsys.readouterr().out
    assert yaml.safe_load(out) == aiayn_config.load(CONFIG)
    assert "    warmup_steps: 4000  # steps of linear learning-rate warmup (>= 1) [paper 5.3]" in out.splitlines()
    assert "    label_smoothing: 0.1  # epsilon_ls of label smoothing (>= 0.0, < 1.0) [paper 5.4]" in out.splitlines()
    assert "      d_model: 1024  # width of every sublayer's output and of the embeddings (>= 1) [paper 3.1]" in out
    assert (
        "    compile: null  # torch.compile the model and its loss as one step (null: on a GPU, not on a CPU) "
        "(resumable)"
    ) in out.splitlines()


def test_full_marks_resumable_exactly_the_keys_a_training_resumes_across(capsys):
    """The keys --full marks ``resumable`` in defaults.train are those whose change the trainer's resume
    accepts (aiayn.train.resume.RESUMABLE); elsewhere only an experiment's own train overrides of them."""
    from aiayn.train.resume import RESUMABLE

    assert main([str(CONFIG), "--full"]) == 0
    lines = capsys.readouterr().out.splitlines()
    defaults = next(i for i, line in enumerate(lines) if line.startswith("defaults:"))
    first = next(i for i in range(defaults, len(lines)) if lines[i].startswith("  train:")) + 1
    last = next(i for i in range(first, len(lines)) if not lines[i].startswith("    "))
    train = {line.split(":")[0].strip(): line for line in lines[first:last]}
    assert {key for key, line in train.items() if "resumable)" in line} == set(RESUMABLE)
    others = [line for line in lines[:first] + lines[last:] if "resumable)" in line]
    assert others and all(line.startswith("      ") and line.split(":")[0].strip() in RESUMABLE for line in others)


def test_a_bad_config_ends_with_one_line_naming_the_file_and_key(tmp_path, monkeypatch):
    """As every stage does: main sets up aiayn.io's ending (status 1, the error's one line, no traceback)."""
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # restored after the test
    (tmp_path / "bad.yaml").write_text("defaults:\n  model:\n    d_model: 511\n", encoding="utf-8")
    with pytest.raises(aiayn_config.ConfigError, match="bad.yaml: defaults.model.d_model must be even"):
        main([str(CONFIG), str(tmp_path / "bad.yaml")])
    assert sys.excepthook is aiayn_io._log_uncaught
