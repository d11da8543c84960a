"""Gather the parts of a chunked data stage (``data.chunks``): the stage's output is its parts' outputs
one after the other, written atomically.

A stage that runs in parts (tokenize, clean, encode, binarize) reads the I-th of N consecutive ranges
of its input's lines in each part (``--part I-N``, :func:`aiayn.data.lines.part_range`); since each of
these stages maps a line (or a pair of lines) on its own, the concatenated parts are byte for byte the
output of one job over the whole input. Text outputs are gathered here; clean's statistics and
binarize's shards by their own modules' ``--gather``.

    python -m aiayn.data.parts --inputs PART... --output FILE
"""

from __future__ import annotations

import argparse
import logging
import shutil

from aiayn.cli import add_log
from aiayn.io import atomic_output, log_resources, setup_logging

log = logging.getLogger(__name__)


def gather(parts: list[str], output: str) -> int:
    """Concatenate ``parts`` in order into ``output`` (atomically); returns the bytes written."""
    written = 0
    with atomic_output(output, "wb") as out:
        for part in parts:
            with open(part, "rb") as handle:
                shutil.copyfileobj(handle, out, 1 << 22)
                written += handle.tell()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aiayn.data.parts", description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", nargs="+", required=True, help="the parts' outputs, in order")
    parser.add_argument("--output", required=True)
    add_log(parser)
    args = parser.parse_args(argv)
    setup_logging(args.log)
    written = gather(args.inputs, args.output)
    log.info("%s: %d parts, %d bytes", args.output, len(args.inputs), written)
    log_resources()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
