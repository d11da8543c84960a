"""Reading the workflow's metric files for the tables, with the paths of docs/ARCHITECTURE.md.

Every file a table needs is listed first (:func:`require`), so a missing one is reported by name before
anything is rendered. A value that is NaN or null stays in the table as ``n/a`` and is logged as a warning
naming the file and the key.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

BLEU_KEYS = ("sacrebleu", "sacrebleu_signature", "paper_bleu")
PPL_KEYS = ("ppl",)
EVALB_KEYS = ("f1", "sentences", "error_sentences", "skip_sentences")
SUMMARY_KEYS = ("params", "wall_seconds", "train_flops", "gpu_model", "world_size", "settings")


TABLES = ("table2", "table3", "table4")


def report_parser(prog: str, description: str, out_help: str, tables_help: str) -> argparse.ArgumentParser:
    """The arguments both report CLIs take: ``--config --results-dir --out-dir [--tables ...] [--log]``."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--config", required=True, type=Path, help="the workflow's config YAML")
    parser.add_argument("--results-dir", required=True, type=Path, help="R: the results directory")
    parser.add_argument("--out-dir", required=True, type=Path, help=out_help)
    parser.add_argument("--tables", nargs="+", choices=TABLES, default=list(TABLES), help=tables_help)
    parser.add_argument("--log", help="also log to this file")
    return parser


def record_signature(signatures: dict[str, list[str]], metrics: dict[str, Any], run: str) -> None:
    """Note that ``run`` was scored with ``metrics``'s sacreBLEU signature (``n/a`` when it has none)."""
    signature = metrics["sacrebleu_signature"]
    signatures.setdefault(signature if isinstance(signature, str) else "n/a", []).append(run)


class MetricFileError(ValueError):
    """A metric file is missing, unreadable, or lacks a key; the message names the file."""


def run_dir(results_dir: Path, task: str, experiment: str) -> Path:
    """``R/<task>/<exp>``: where one run's decodes and scores live."""
    return Path(results_dir) / task / experiment


def summary_path(results_dir: Path, task: str, experiment: str) -> Path:
    return run_dir(results_dir, task, experiment) / "train" / "summary.json"


def require(paths: list[Path]) -> None:
    """Raise :class:`MetricFileError` listing every path of ``paths`` that does not exist."""
    missing = [str(p) for p in paths if not Path(p).is_file()]
    if missing:
        raise MetricFileError("missing metric file(s), produced by earlier workflow steps:\n  " + "\n  ".join(missing))


def read_metrics(path: Path, keys: tuple[str, ...]) -> dict[str, Any]:
    """Read a JSON metric file and check that it has ``keys``; NaN or null numbers become NaN (warned)."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise MetricFileError(f"{path}: missing metric file") from None
    except json.JSONDecodeError as err:
        raise MetricFileError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(data, dict):
        raise MetricFileError(f"{path}: expected a JSON object, found {type(data).__name__}")
    absent = [k for k in keys if k not in data]
    if absent:
        raise MetricFileError(f"{path}: missing key(s) {absent}")
    for key in keys:
        value = data[key]
        if value is None or (isinstance(value, float) and math.isnan(value)):
            log.warning("%s: %s is %s; the table shows n/a", path, key, "null" if value is None else "NaN")
            data[key] = math.nan
    return data


def number(data: dict[str, Any], key: str) -> float:
    """``data[key]`` as a float (NaN when it is not a finite-or-infinite number)."""
    value = data.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


# The two BLEU kinds every translation table reports, labelled as the reader needs them.
PAPER_BLEU_LABEL = "BLEU (paper method: tokenized, ##AT## compound split)"
SACREBLEU_LABEL = "sacreBLEU (detokenized)"


def signature_notes(signatures: dict[str, list[str]]) -> list[str]:
    """Notes naming every sacreBLEU signature and, when there is more than one, the runs it scored."""
    if len(signatures) == 1:
        return [f"sacreBLEU signature: {next(iter(signatures))}"]
    return [f"sacreBLEU signature ({', '.join(runs)}): {sig}" for sig, runs in signatures.items()]
