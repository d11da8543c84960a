"""Decoded linearizations -> trees ready for EVALB (paper section 6.3).

``python -m aiayn.parsing.postprocess --hyp F --words F --gold F --output F [--log F]``

Each line of ``--hyp`` is one decoded linearization, the same line of ``--words`` its input sentence
and of ``--gold`` its gold tree. Every hypothesis is repaired into a valid tree over exactly the
input words (:func:`aiayn.parsing.repair.repair`; repairs are counted by kind in the log), then
the gold POS tags go back on its leaves: the model predicts structure, not tags, and EVALB deletes
punctuation by its tag, so scoring with ``XX`` tags would turn most sentences into length errors
(PAPER.md section 5). ``--output`` gets one ``TOP``-rooted tree per line.
"""

from __future__ import annotations

import argparse
import logging
from collections import Counter
from pathlib import Path

from aiayn.cli import add_log
from aiayn.data.lines import read_lines
from aiayn.io import atomic_output, setup_logging
from aiayn.parsing.repair import repair
from aiayn.parsing.trees import Tree, parse_tree

log = logging.getLogger(__name__)


def with_gold_tags(tree: Tree, gold: Tree) -> Tree:
    """``tree`` with the tags of ``gold`` on its leaves (the words are the same by construction)."""
    for leaf, tag in zip(tree.preterminals(), gold.tags(), strict=True):
        leaf.label = tag
    return tree


def postprocess_line(hyp: str, words: list[str], gold: Tree) -> tuple[Tree, Counter]:
    """Repair one hypothesis over ``words`` and put ``gold``'s tags on it; return it with its repairs."""
    tree, repairs = repair(hyp.split(), words)
    return with_gold_tags(tree, gold), repairs


def postprocess(hyp_path: Path, words_path: Path, gold_path: Path, output: Path) -> tuple[int, Counter, int]:
    """Write the repaired, re-tagged trees; return (sentences, repairs by kind, sentences repaired)."""
    hyps, sentences, golds = read_lines(hyp_path), read_lines(words_path), read_lines(gold_path)
    if not len(hyps) == len(sentences) == len(golds):
        raise ValueError(
            f"line counts differ: {hyp_path} {len(hyps)}, {words_path} {len(sentences)}, {gold_path} {len(golds)}"
        )
    total: Counter = Counter()
    repaired = 0
    with atomic_output(output) as handle:
        for number, (hyp, sentence, gold_line) in enumerate(zip(hyps, sentences, golds), start=1):
            gold, words = parse_tree(gold_line, str(gold_path), number), sentence.split()
            if gold.words() != words:
                raise ValueError(f"{gold_path}:{number}: gold tree's words differ from {words_path}:{number}")
            tree, repairs = postprocess_line(hyp, words, gold)
            total.update(repairs)
            repaired += bool(repairs)
            handle.write(f"{tree}\n")
    return len(hyps), total, repaired


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aiayn.parsing.postprocess", description=__doc__.split("\n\n")[0])
    parser.add_argument("--hyp", required=True, type=Path, help="decoded linearized trees, one per line")
    parser.add_argument("--words", required=True, type=Path, help="input sentences, one per line")
    parser.add_argument("--gold", required=True, type=Path, help="gold trees, one per line (for the POS tags)")
    parser.add_argument("--output", required=True, type=Path, help="trees for EVALB, one per line")
    add_log(parser)
    args = parser.parse_args(argv)
    setup_logging(args.log)
    try:
        count, repairs, repaired = postprocess(args.hyp, args.words, args.gold, args.output)
    except (OSError, ValueError) as error:
        log.error("%s", error)
        return 1
    log.info(
        "%d sentences, %d needed a repair; repairs by kind: %s",
        count,
        repaired,
        ", ".join(f"{kind} {n}" for kind, n in sorted(repairs.items())) or "none",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
