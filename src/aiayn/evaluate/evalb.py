"""EVALB, the standard constituency-parsing scorer, reproduced output for output (paper Table 4).

``aiayn-evalb [-p PARAM] GOLD TEST [--json-out F]`` reads one bracketed tree per line from both files
and prints what EVALB prints, in its exact format: a header, one row per sentence, the totals line,
then the ``-- All --`` and ``-- len<=40 --`` summary blocks (precision to two decimals). Errors go to
stderr as ``<line> : <message>``. Any EVALB parameter file works (``-p``); without one the packaged
``COLLINS.prm`` (the standard setting) is used. The reported F1 is the "All" block's
``Bracketing FMeasure``::

    F1 = 2 P R / (P + R),  R = matched / gold brackets,  P = matched / test brackets

Limits of the C program (5000 bytes a line, 200 words or brackets a sentence) do not apply here;
on input within them the output is EVALB's, byte for byte.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from aiayn.cli import add_log
from aiayn.evaluate.evalb_params import EvalbConfig, default_param_file, read_params
from aiayn.evaluate.evalb_score import Outcome, Row, evaluate_lines
from aiayn.io import atomic_output, setup_logging, write_json

HEADER = (
    "  Sent.                        Matched  Bracket   Cross        Correct Tag\n"
    " ID  Len.  Stat. Recal  Prec.  Bracket gold test Bracket Words  Tags Accracy\n"
)
RULE = "=" * 76 + "\n"


@dataclass
class Totals:
    """EVALB's running totals over the sentences of one summary block."""

    sentences: int = 0
    errors: int = 0
    skipped: int = 0
    gold: int = 0
    test: int = 0
    match: int = 0
    complete: int = 0
    words: int = 0
    crossing: int = 0
    no_crossing: int = 0
    two_or_less: int = 0
    correct_tags: int = 0

    def add(self, row: Row) -> None:
        self.sentences += 1
        if row.status in (1, 2):
            self.errors += row.status == 1
            self.skipped += row.status == 2
            return
        self.gold, self.test, self.match = self.gold + row.gold, self.test + row.test, self.match + row.match
        self.complete += row.gold == row.test == row.match
        self.words += row.words
        self.crossing += row.crossing
        self.no_crossing += row.crossing == 0
        self.two_or_less += row.crossing <= 2
        self.correct_tags += row.correct_tags

    @property
    def valid(self) -> int:
        return self.sentences - self.errors - self.skipped

    @property
    def recall(self) -> float:
        return 100.0 * self.match / self.gold if self.gold > 0 else 0.0

    @property
    def precision(self) -> float:
        return 100.0 * self.match / self.test if self.test > 0 else 0.0

    @property
    def f1(self) -> float:
        """2PR / (P + R); NaN when both are 0, as EVALB computes it."""
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else math.nan

    def ratio(self, count: int, scale: float = 100.0) -> float:
        return scale * count / self.valid if self.valid > 0 else 0.0


def _f(value: float) -> str:
    """C's ``%6.2f``; glibc prints the NaN of 0/0 as ``-nan``."""
    return "  -nan" if math.isnan(value) else f"{value:6.2f}"


def format_row(row: Row) -> str:
    """One sentence's line of the table, in EVALB's column widths."""
    recall = 100.0 * row.match / row.gold if row.gold else 0.0
    precision = 100.0 * row.match / row.test if row.test else 0.0
    accuracy = 100.0 * row.correct_tags / row.words if row.words else 0.0
    return (
        f"{row.line:4d}  {row.length:3d}    {row.status:d}  {_f(recall)} {_f(precision)}   {row.match:3d}"
        f"    {row.gold:3d}  {row.test:3d}    {row.crossing:3d}   {row.words:4d}  {row.correct_tags:4d}"
        f"   {_f(accuracy)}\n"
    )


def format_block(title: str, t: Totals) -> str:
    """One summary block (``-- All --`` or ``-- len<=40 --``)."""
    accuracy = 100.0 * t.correct_tags / t.words if t.words > 0 else 0.0
    return (
        f"\n-- {title} --\n"
        f"Number of sentence        = {t.sentences:6d}\nNumber of Error sentence  = {t.errors:6d}\n"
        f"Number of Skip  sentence  = {t.skipped:6d}\nNumber of Valid sentence  = {t.valid:6d}\n"
        f"Bracketing Recall         = {_f(t.recall)}\nBracketing Precision      = {_f(t.precision)}\n"
        f"Bracketing FMeasure       = {_f(t.f1)}\nComplete match            = {_f(t.ratio(t.complete))}\n"
        f"Average crossing          = {_f(t.ratio(t.crossing, 1.0))}\n"
        f"No crossing               = {_f(t.ratio(t.no_crossing))}\n"
        f"2 or less crossing        = {_f(t.ratio(t.two_or_less))}\n"
        f"Tagging accuracy          = {_f(accuracy)}\n"
    )


def summarize(outcome: Outcome, cutoff_len: int) -> tuple[Totals, Totals]:
    """Totals over all sentences, and over those whose gold length is at most ``cutoff_len``."""
    everything, short = Totals(), Totals()
    for row in outcome.rows:
        everything.add(row)
        if row.length <= cutoff_len:
            short.add(row)
    return everything, short


def format_report(outcome: Outcome, params: EvalbConfig) -> str:
    """EVALB's stdout: header, rows, and (unless it stopped at MAX_ERROR) the totals and summaries."""
    parts = [HEADER, RULE, *(format_row(row) + row.debug for row in outcome.rows)]
    if outcome.stopped:
        return "".join(parts)
    everything, short = summarize(outcome, params.cutoff_len)
    parts.append(RULE)
    if everything.gold > 0 and everything.test > 0:
        parts.append(
            f"                {_f(everything.recall)} {_f(everything.precision)} {everything.match:6d} "
            f"{everything.gold:5d} {everything.test:5d}  {everything.crossing:5d}"
        )
    accuracy = 100.0 * everything.correct_tags / everything.words if everything.words > 0 else 0.0
    parts.append(f"  {everything.words:5d} {everything.correct_tags:5d}   {_f(accuracy)}\n=== Summary ===\n")
    parts.append(format_block("All", everything))
    parts.append(format_block(f"len<={params.cutoff_len}", short))
    return "".join(parts)


def metrics(outcome: Outcome, params: EvalbConfig) -> dict:
    """The ``*.evalb.json`` fields; an undefined F1 (nothing matched, P + R = 0) is written as 0.0."""
    everything, short = summarize(outcome, params.cutoff_len)

    def defined(value: float) -> float:
        return 0.0 if math.isnan(value) else value

    return {
        "f1": defined(everything.f1),
        "recall": everything.recall,
        "precision": everything.precision,
        "complete_match": everything.ratio(everything.complete),
        "sentences": everything.sentences,
        "error_sentences": everything.errors,
        "skip_sentences": everything.skipped,
        "f1_len40": defined(short.f1),
    }


def read_lines(path: str | Path, role: str = "input") -> list[str]:
    """A file's lines with their newlines, bytes kept as they are (latin-1 maps each byte to a character)."""
    try:
        text = Path(path).read_bytes().decode("latin-1")
    except OSError as error:
        raise FileNotFoundError(f"Can't open {role} file ({path}): {error.strerror}") from None
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def _write(stream, text: str) -> None:
    """Write ``text`` byte for byte as read (latin-1 round trip), like the C program's stdio."""
    if hasattr(stream, "buffer"):
        stream.buffer.write(text.encode("latin-1"))
    else:
        stream.write(text)
    stream.flush()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aiayn-evalb", description=__doc__.split("\n\n")[0])
    parser.add_argument("gold", help="gold trees, one per line")
    parser.add_argument("test", help="test trees, one per line (an empty line is a skipped sentence)")
    parser.add_argument("-p", "--param", help="EVALB parameter file (default: the packaged COLLINS.prm)")
    parser.add_argument("-e", type=int, dest="max_error", help="MAX_ERROR, overriding the parameter file")
    parser.add_argument("-c", type=int, dest="cutoff_len", help="CUTOFF_LEN, overriding the parameter file")
    parser.add_argument("-d", action="store_true", dest="debug", help="DEBUG 1: dump each sentence's data")
    parser.add_argument("--json-out", help="write f1, recall, precision, ... (the All block) as JSON")
    parser.add_argument("--out", help="write the report to this file instead of stdout")
    add_log(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args.log)
    try:
        params = read_params(args.param or default_param_file())
        gold, test = read_lines(args.gold, "gold"), read_lines(args.test, "test")
    except (OSError, ValueError) as error:
        _write(sys.stderr, f"{error}\n")
        return 1
    for name in ("max_error", "cutoff_len"):
        if getattr(args, name) is not None:
            setattr(params, name, getattr(args, name))
    if args.debug:
        params.debug = 1
    if params.debug > 1:
        _write(sys.stderr, f"{args.param}: DEBUG {params.debug}: only EVALB's DEBUG 0 and 1 are reproduced\n")
        return 1
    for message in params.messages:
        _write(sys.stderr, message + "\n")
    outcome = evaluate_lines(gold, test, params)
    report = format_report(outcome, params)
    if args.out:
        with atomic_output(args.out, encoding="latin-1") as handle:
            handle.write(report)
    else:
        _write(sys.stdout, report)
    _write(sys.stderr, "".join(message + "\n" for message in outcome.messages))
    if outcome.stopped:
        return 1
    if args.json_out:
        write_json(args.json_out, metrics(outcome, params))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
