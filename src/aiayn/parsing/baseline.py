"""The flat-tree baseline: the F1 a parser must beat (Table 4's floor).

``python -m aiayn.parsing.baseline --gold F --output F [--log F]``

Every sentence becomes ``(TOP (S (TAG w1) ... (TAG wn)))`` with the gold tags: one bracket per
sentence, so recall is low and precision high (the root ``S`` usually matches).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from aiayn.cli import add_log
from aiayn.io import atomic_output, open_text, setup_logging
from aiayn.parsing.clean import ROOT
from aiayn.parsing.trees import Tree, parse_tree

log = logging.getLogger(__name__)


def flat_tree(gold: Tree) -> Tree:
    """``(TOP (S (TAG w1) ... (TAG wn)))`` over the words and gold tags of ``gold``."""
    return Tree(ROOT, [Tree("S", [Tree(p.label, [p.children[0]]) for p in gold.preterminals()])])


def write_baseline(gold_path: Path, output: Path) -> int:
    """Write the flat tree of every gold tree (one per line); return how many."""
    count = 0
    with open_text(gold_path) as source, atomic_output(output) as handle:
        for number, line in enumerate(source, start=1):
            handle.write(f"{flat_tree(parse_tree(line, str(gold_path), number))}\n")
            count += 1
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aiayn.parsing.baseline", description=__doc__.split("\n\n")[0])
    parser.add_argument("--gold", required=True, type=Path, help="gold trees, one per line")
    parser.add_argument("--output", required=True, type=Path, help="flat trees, one per line")
    add_log(parser)
    args = parser.parse_args(argv)
    setup_logging(args.log)
    try:
        count = write_baseline(args.gold, args.output)
    except (OSError, ValueError) as error:
        log.error("%s", error)
        return 1
    log.info("%d flat trees written to %s", count, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
