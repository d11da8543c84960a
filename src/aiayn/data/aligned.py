"""Check that the two sides of an evaluation split (dev, test) have the same number of lines, as soon as
they are extracted: every training waits for its task's checks, so a test set whose files differ in
line count stops the workflow before any training, not at the BLEU job hours later.

    python -m aiayn.data.aligned --inputs SOURCE TARGET --output CHECK.json
"""

from __future__ import annotations

import argparse
import logging

from aiayn.cli import add_log
from aiayn.data.lines import check_aligned
from aiayn.io import setup_logging, write_json

log = logging.getLogger(__name__)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aiayn.data.aligned", description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", nargs=2, required=True, metavar=("SOURCE", "TARGET"), help="the split's sides")
    parser.add_argument("--output", required=True, help="a JSON record of the check: the files and their line count")
    add_log(parser)
    args = parser.parse_args(argv)
    setup_logging(args.log)
    lines = check_aligned(args.inputs)  # a mismatch names both files and their counts
    write_json(args.output, {"files": args.inputs, "lines": lines})
    log.info("%s and %s: %d lines each", *args.inputs, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
