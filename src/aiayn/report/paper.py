"""The paper's numbers (Vaswani et al., 2017, Tables 2, 3 and 4), shipped as package data.

Values stay text, exactly as the paper printed them (``27.3``, ``5.00``), so a reader sees the paper's own
digits; :func:`as_float` turns one into a number for the difference column. An empty field is a value the
paper does not report.
"""

from __future__ import annotations

import csv
import io
import math
from importlib import resources

# Our experiment names -> the paper's row they reproduce.
TABLE2_ROWS = {"base": "Transformer (base model)", "big": "Transformer (big)"}
TABLE4_ROWS = {"parser": "Transformer (4 layers)"}
# Table 3 rows, in the paper's order.
TABLE3_ORDER = (
    "base",
    "A1",
    "A2",
    "A3",
    "A4",
    "B1",
    "B2",
    "C1",
    "C2",
    "C3",
    "C4",
    "C5",
    "C6",
    "C7",
    "D1",
    "D2",
    "D3",
    "D4",
    "E",
    "big",
)
# Table 4's "Training" for a parser trained on the treebank alone or with silver trees (config tasks.<t>.silver).
WSJ_ONLY = "WSJ only, discriminative"
SEMI_SUPERVISED = "semi-supervised"


def load(table: str) -> list[dict[str, str]]:
    """The rows of ``paper_<table>.csv`` (``table2``, ``table3``, ``table4``) as dicts of text."""
    text = resources.files("aiayn.resources").joinpath(f"paper_{table}.csv").read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def column(task: str, metric: str) -> str:
    """Table 2's column for a task: ``bleu_en_de``, ``train_flops_en_fr``."""
    return f"{metric}_{task.replace('-', '_')}"


def as_float(text: str | None) -> float | None:
    """The paper's text as a number, or ``None`` where the paper reports nothing."""
    if text is None or text == "":
        return None
    return float(text)


def or_none(text: str | None) -> str | None:
    """The paper's text, with an empty field as ``None`` (an empty cell)."""
    return text if text else None


def delta(ours: float | None, paper: str | None) -> float | None:
    """``ours - paper`` rounded to 1e-4 (no float noise in the CSV); ``None`` if either is absent, NaN if ours is."""
    reference = as_float(paper)
    if ours is None or reference is None:
        return None
    return math.nan if math.isnan(ours) else round(ours - reference, 4)
