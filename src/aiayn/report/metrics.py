"""Reading the workflow's metric files for the tables (their paths: :class:`aiayn.runs.Records`).

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

from aiayn.cli import add_log

log = logging.getLogger(__name__)

BLEU_KEYS = ("sacrebleu", "sacrebleu_signature", "paper_bleu")
PPL_KEYS = ("ppl",)
EVALB_KEYS = ("f1", "sentences", "error_sentences", "skip_sentences")
SUMMARY_KEYS = ("params", "wall_seconds", "train_flops", "gpu_model", "world_size", "settings")


TABLES = ("table2", "table3", "table4", "experiments")


def report_parser(prog: str, description: str, out_help: str, tables_help: str) -> argparse.ArgumentParser:
    """The arguments both report CLIs take: ``--config --results-dir --out-dir [--tables ...] [--log]``."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--config", required=True, type=Path, help="the workflow's config YAML")
    parser.add_argument("--results-dir", required=True, type=Path, help="R: the results directory")
    parser.add_argument("--out-dir", required=True, type=Path, help=out_help)
    parser.add_argument("--tables", nargs="+", choices=TABLES, default=list(TABLES), help=tables_help)
    add_log(parser)
    return parser


class MetricFileError(ValueError):
    """A metric file is missing, unreadable, or lacks a key; the message names the file."""


def require(paths: list[Path] | list[str]) -> None:
    """Raise :class:`MetricFileError` listing every path of ``paths`` that does not exist."""
    missing = [str(p) for p in paths if not Path(p).is_file()]
    if missing:
        raise MetricFileError("missing metric file(s), produced by earlier workflow steps:\n  " + "\n  ".join(missing))


def read_metrics(path: Path | str, keys: tuple[str, ...]) -> dict[str, Any]:
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
NO_METHOD = (
    "not recorded (scored before the method was written into the BLEU file; rerun the bleu step): "
    "quotes as they are, Moses tokenizer.perl, ##AT## split, multi-bleu.perl"
)


class BleuNotes:
    """The footnotes under every BLEU column: how the paper-method score was computed (each BLEU
    file's ``paper_bleu_method``) and sacreBLEU's signature, naming the runs when they differ."""

    def __init__(self) -> None:
        self.methods: dict[str, list[str]] = {}
        self.signatures: dict[str, list[str]] = {}

    def record(self, metrics: dict[str, Any], run: str) -> None:
        """Note how ``run``'s BLEU file (already read with :data:`BLEU_KEYS`) was scored."""
        method, signature = metrics.get("paper_bleu_method"), metrics["sacrebleu_signature"]
        self.methods.setdefault(method if isinstance(method, str) else NO_METHOD, []).append(run)
        self.signatures.setdefault(signature if isinstance(signature, str) else "n/a", []).append(run)

    def lines(self) -> list[str]:
        return [
            *_grouped(PAPER_BLEU_LABEL, self.methods),
            *_grouped(f"{SACREBLEU_LABEL} on the untouched reference, signature", self.signatures),
        ]


def _grouped(label: str, groups: dict[str, list[str]]) -> list[str]:
    if len(groups) == 1:
        return [f"{label}: {next(iter(groups))}"]
    return [f"{label} ({', '.join(runs)}): {value}" for value, runs in groups.items()]
