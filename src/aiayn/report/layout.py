"""A small table model and its four renderings: Markdown, CSV, LaTeX (booktabs) and HTML (the report).

A :class:`Table` is a list of columns and a list of rows (``{column key: value}``). Cell values are:

- ``None``: nothing to report (a paper row we did not train, an empty "ours"): an empty cell;
- a ``float`` NaN: a metric that exists but is not a number: the explicit text ``n/a``;
- a ``str``: shown as it is (the paper's numbers keep the digits the paper printed);
- an ``int`` or ``float``: formatted by the column's ``kind``.

Markdown and LaTeX are for reading; the CSV is for machines: column keys as its header, numbers at full
precision, ``n/a`` for NaN (pandas reads it as NaN), an empty field for nothing.

A table of runs trained with several seeds (``Table.seeded``) shows a ``spread`` column's mean with the
sample standard deviation held in the row under ``<key>_sd``: ``25.80 ± 0.20`` for readers, two
numeric columns ``<key>`` and ``<key>_sd`` in the CSV (:mod:`aiayn.report.seeds`).
"""

from __future__ import annotations

import csv
import html
import io
import math
from dataclasses import dataclass, field
from typing import Any

NA = "n/a"

# kind -> how a number is shown in Markdown and LaTeX
_FORMATS = {
    "text": "{}",
    "paper": "{}",  # the paper's own digits, kept as text, right-aligned
    "int": "{:d}",
    "score": "{:.2f}",  # BLEU, F1, perplexity
    "delta": "{:+.2f}",  # ours - paper
    "millions": "{:.3g}",  # parameters in millions: 63.1, 213, 0.412 (tiny test models)
    "dropout": "{:g}",
}


@dataclass(frozen=True)
class Column:
    """One column: ``key`` names it in rows and in the CSV header; ``header`` titles it for readers."""

    key: str
    header: str
    kind: str = "text"  # one of _FORMATS, "flops" or "duration" (seconds); only "text" is left-aligned
    tex: str | None = None  # LaTeX header; default: ``header`` escaped
    spread: bool = False  # a mean over seeds: ``<key>_sd`` in the row is its sample sd


@dataclass
class Table:
    """A rendered paper table: title, columns, rows, notes printed under it, and a provenance footer."""

    name: str
    title: str
    columns: list[Column]
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    footer: str = ""
    seeded: bool = False  # some run has several seeds: spread columns show ± sd, the CSV a _sd column


def is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def format_flops(value: float, tex: bool = False) -> str:
    """``3.3e18`` (Markdown) or ``$3.3 \\cdot 10^{18}$`` (LaTeX), two significant digits as in the paper."""
    mantissa, exponent = f"{value:.1e}".split("e")
    if tex:
        return f"${mantissa} \\cdot 10^{{{int(exponent)}}}$"
    return f"{mantissa}e{int(exponent)}"


def format_duration(seconds: float) -> str:
    """``42.5 s``, ``12 min 5 s``, ``3 h 20 min`` (the CSV keeps the seconds)."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes} min {int(seconds % 60)} s"
    return f"{minutes // 60} h {minutes % 60} min"


def format_cell(value: Any, kind: str, tex: bool = False) -> str:
    """The text of one cell for a reader (Markdown or LaTeX)."""
    if value is None:
        return ""
    if is_nan(value):
        return NA
    if isinstance(value, str):
        if kind == "flops" and value:
            return format_flops(float(value), tex)
        return tex_escape(value) if tex else value
    if kind == "flops":
        return format_flops(float(value), tex)
    if kind == "int":
        return _FORMATS["int"].format(round(value))
    if kind == "duration":
        return format_duration(float(value))
    return _FORMATS.get(kind, "{}").format(value)


def reader_cell(table: Table, row: dict[str, Any], column: Column, tex: bool = False) -> str:
    """One cell for a reader: :func:`format_cell`, with `` ± sd`` after a spread column's mean."""
    text = format_cell(row.get(column.key), column.kind, tex)
    sd = row.get(f"{column.key}_sd") if column.spread and table.seeded else None
    if sd is None or text in ("", NA):
        return text
    sign = r"$\pm$" if tex else "±"
    return f"{text} {sign} {format_cell(sd, column.kind, tex)}"


def csv_keys(table: Table) -> list[str]:
    """The CSV header: every column's key, each spread column followed by ``<key>_sd`` when seeded."""
    return [key for c in table.columns for key in ([c.key, f"{c.key}_sd"] if c.spread and table.seeded else [c.key])]


def csv_cell(value: Any) -> str:
    """The text of one CSV field: full precision, ``n/a`` for NaN, empty for nothing."""
    if value is None:
        return ""
    if is_nan(value):
        return NA
    return str(value) if not isinstance(value, float) else repr(value)


def render_markdown(table: Table) -> str:
    """GitHub-flavoured Markdown: a title, the table, its notes as a list, the footer in italics."""
    headers = [c.header for c in table.columns]
    aligns = ["---" if c.kind == "text" else "---:" for c in table.columns]
    lines = [f"## {table.title}", "", _md_row(headers), _md_row(aligns)]
    for row in table.rows:
        lines.append(_md_row([reader_cell(table, row, c) for c in table.columns]))
    lines.append("")
    lines.extend(f"- {note}" for note in table.notes)
    if table.notes:
        lines.append("")
    if table.footer:
        lines.extend([f"_{table.footer}_", ""])
    return "\n".join(lines)


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def render_csv(table: Table) -> str:
    """One header line of column keys, then one line per row."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    keys = csv_keys(table)
    writer.writerow(keys)
    for row in table.rows:
        writer.writerow([csv_cell(row.get(key)) for key in keys])
    return buffer.getvalue()


_TEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "Δ": r"$\Delta$",
    "×": r"$\times$",
    "≤": r"$\leq$",
    # the quotes the BLEU notes name (T1 font encoding)
    '"': r"\textquotedbl{}",
    "„": r"\quotedblbase{}",
    "“": r"\textquotedblleft{}",
    "”": r"\textquotedblright{}",
    "«": r"\guillemotleft{}",
    "»": r"\guillemotright{}",
}


def tex_escape(text: str) -> str:
    """Escape LaTeX's special characters (and the few symbols our headers use)."""
    return "".join(_TEX_SPECIALS.get(char, char) for char in text)


def render_latex(table: Table) -> str:
    """A ``table`` float with a booktabs ``tabular`` scaled to the text width; notes and footer go in a
    small paragraph under it."""
    spec = "".join("l" if c.kind == "text" else "r" for c in table.columns)
    headers = [c.tex if c.tex is not None else tex_escape(c.header) for c in table.columns]
    lines = [
        "% needs \\usepackage{booktabs,graphicx}",
        "\\begin{table}[t]",
        "\\centering",
        f"\\caption{{{tex_escape(table.title)}}}",
        f"\\label{{tab:{table.name}}}",
        "\\resizebox{\\textwidth}{!}{%",
        f"\\begin{{tabular}}{{{spec}}}",
        "\\toprule",
        " & ".join(headers) + " \\\\",
        "\\midrule",
    ]
    for row in table.rows:
        cells = [reader_cell(table, row, c, tex=True) for c in table.columns]
        lines.append(" & ".join(cells) + " \\\\")
    lines.extend(["\\bottomrule", "\\end{tabular}}"])
    extra = [tex_escape(note) for note in table.notes] + ([tex_escape(table.footer)] if table.footer else [])
    if extra:
        lines.append("\\par\\footnotesize " + " \\\\\n".join(extra))
    lines.extend(["\\end{table}", ""])
    return "\n".join(lines)


_CSS = (
    "body{font-family:sans-serif;font-size:14px;margin:1em}table{border-collapse:collapse}"
    "th,td{border:1px solid #bbb;padding:3px 6px}th{background:#eee}td.num{text-align:right}"
    "li,p{color:#333;font-size:12px}"
)


def render_html(table: Table) -> str:
    """A standalone HTML page (what the Snakemake report shows): the title, the table, its notes, the footer."""
    header = "".join(f"<th>{html.escape(c.header)}</th>" for c in table.columns)
    body = "".join(
        "<tr>"
        + "".join(
            f"<td{'' if c.kind == 'text' else ' class=num'}>{html.escape(reader_cell(table, row, c))}</td>"
            for c in table.columns
        )
        + "</tr>\n"
        for row in table.rows
    )
    notes = "".join(f"<li>{html.escape(note)}</li>" for note in table.notes)
    footer = f"<p><i>{html.escape(table.footer)}</i></p>" if table.footer else ""
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(table.title)}</title>'
        f"<style>{_CSS}</style></head><body>\n<h2>{html.escape(table.title)}</h2>\n"
        f"<table><thead><tr>{header}</tr></thead><tbody>\n{body}</tbody></table>\n"
        f"<ul>{notes}</ul>{footer}\n</body></html>\n"
    )


RENDERERS = {"md": render_markdown, "csv": render_csv, "tex": render_latex, "html": render_html}
