"""Hand-made metric files and a small config for the report tests (tables and plots)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import yaml
from paths import ROOT

from aiayn import config as aiayn_config

SIGNATURE = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.4.3"


def small_config(results_dir: Path) -> dict:
    """The project's config cut down to base (Tables 2 and 3), C1 (Table 3) and parser (Table 4)."""
    config = copy.deepcopy(aiayn_config.load(ROOT / "config.yaml"))
    config["results_dir"] = str(results_dir)
    del config["tasks"]["en-fr"]
    experiments = config["experiments"]
    config["experiments"] = {
        "base": {"tasks": ["en-de"], "tables": ["table2", "table3"]},
        "C1": experiments["C1"],
        "parser": experiments["parser"],
    }
    return config


def write_config(path: Path, config: dict) -> Path:
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def _json(path: Path, obj: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # allow_nan: the tests write NaN the way json.dump does (a bare NaN token)
    path.write_text(json.dumps(obj, allow_nan=True), encoding="utf-8")


def bleu(paper_bleu: float, sacrebleu: float) -> dict:
    from aiayn.evaluate.bleu import paper_method

    return {
        "sacrebleu": sacrebleu,
        "sacrebleu_signature": SIGNATURE,
        "paper_bleu": paper_bleu,
        "paper_bleu_method": paper_method("both"),
        "quotes_straightened": {"hypothesis": 0, "reference": 9},
        "sys_len": 1000,
        "ref_len_13a": 1010,
        "ref_len_paper": 1030,
        "lines": 50,
        "hyp": "h",
        "ref": "r",
    }


def summary(config: dict, task: str, exp: str, params: int, wall_seconds: float) -> dict:
    """A summary of a run on 8 P100s in fp32, as the paper trained."""
    from aiayn.runs import resolve

    settings = resolve(config, exp, task)
    settings["train"]["precision"] = "fp32"
    return {
        "experiment": exp,
        "task": task,
        "params": params,
        "steps": 100000,
        "wall_seconds": wall_seconds,
        "tokens_src": 10**9,
        "tokens_tgt": 10**9,
        "flops_per_token": 3.0e8,
        "train_flops": 3.0e17,
        "device": "cuda",
        "precision": "fp32",
        "gpu_model": "P100",
        "world_size": 8,
        "final_train_loss": 2.0,
        "final_dev_ppl": 5.0,
        "settings": settings,
    }


def write_results(results: Path, config: dict) -> None:
    """Metric files for every table of :func:`small_config`, with round numbers for golden values."""
    _json(results / "en-de/base/train/summary.json", summary(config, "en-de", "base", 63_080_000, 43200.0))
    _json(results / "en-de/base/test-avg.bleu.json", bleu(26.85, 25.9))
    _json(results / "en-de/baseline/test-copy.bleu.json", bleu(2.5, 2.25))
    _json(results / "en-de/base/dev-last.bleu.json", bleu(25.5, 24.75))
    _json(results / "en-de/base/dev-last.ppl.json", {"ppl": 5.0, "nll_per_token": 1.6, "tokens": 9, "sentences": 3})
    _json(results / "en-de/C1/train/summary.json", summary(config, "en-de", "C1", 36_250_000, 20000.0))
    _json(results / "en-de/C1/dev-last.bleu.json", bleu(23.2, 22.5))
    _json(results / "en-de/C1/dev-last.ppl.json", {"ppl": 6.25, "nll_per_token": 1.8, "tokens": 9, "sentences": 3})
    evalb = {
        "f1": 90.8,
        "recall": 90.5,
        "precision": 91.1,
        "complete_match": 40.0,
        "sentences": 2416,
        "error_sentences": 0,
        "skip_sentences": 0,
        "f1_len40": 91.5,
    }
    _json(results / "wsj/parser/test-avg.evalb.json", evalb)
    _json(results / "wsj/baseline/test-flat.evalb.json", {**evalb, "f1": 20.5, "f1_len40": 21.0})


def written_results(tmp_path: Path) -> tuple[dict, Path]:
    """The small config and a results folder under ``tmp_path`` holding every metric file it reads."""
    results = tmp_path / "results"
    config = small_config(results)
    write_results(results, config)
    return config, results


def write_train_log(path: Path, steps: int = 30, dev_every: int = 10) -> None:
    """A ``log.csv`` as the trainer writes it: ``dev_ppl`` empty except on dev evaluations."""
    lines = ["step,loss,lr,dev_ppl"]
    for step in range(1, steps + 1):
        dev = f"{20.0 / step**0.5:.3f}" if step % dev_every == 0 else ""
        lines.append(f"{step},{8.0 / step**0.3:.4f},{step * 1e-5:.6f},{dev}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
