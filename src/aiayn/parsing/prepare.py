"""Treebank -> parallel text for the parser: words (source), linearized trees (target), gold trees.

``python -m aiayn.parsing.prepare --treebank PATH --out-dir DIR [--settings FILE] [--seed N] [--log F]``

``--settings`` holds the task's ``splits``, ``linearization`` and ``silver`` (:class:`TreebankConfig`;
default: the paper's WSJ splits, ``xx``, no silver trees). ``PATH`` is an LDC99T42 treebank (splits
by WSJ section ``[A, B]`` inclusive; paper section 6.3: train 02-21, dev 22, test 23) or a directory
with ``train.trees``, ``dev.trees``, ``test.trees`` (one tree per line; the section ranges are then
ignored); see :mod:`aiayn.parsing.treebank`.
Every tree is cleaned (:mod:`aiayn.parsing.clean`) and written as

* ``DIR/{train,dev,test}.words``: the words, space separated (the model's input);
* ``DIR/{train,dev,test}.tree``: the linearization (:mod:`aiayn.parsing.linearize`, the target);
* ``DIR/{dev,test}.gold``: the cleaned ``TOP``-rooted trees, one per line, for EVALB;
* ``DIR/train.symbols``: every bracket token of the training linearizations (``(NP``, ``)NP``; ``t2t``:
  ``/NP``), most frequent first: the shared subword model keeps each one whole (``bpe learn --symbols``,
  :func:`aiayn.parsing.linearize.kept_whole`). Words and trees share that one vocabulary, where
  tensorflow/tensor2tensor had two (``wsj_parsing_tokens(p, 2**14, 2**9)``,
  ``data_generators/problem_hparams.py`` at 006ecb50); docs/parsing.md, "Vocabulary", measures what
  two would change.

``silver: {path: FILE, ratio: R}`` (one tree per line, e.g. parses of unlabeled text by another
parser) adds ``round(R x gold train sentences)`` silver trees, drawn without replacement with ``--seed``, after
the gold training trees (the trainer shuffles batches).
Deviation from paper: the semi-supervised setting used about 17M silver sentences (BerkeleyParser
and the high-confidence corpus of Vinyals et al.) that were never released, so the silver trees are
yours to bring; ``tasks.wsj.silver`` (``{path, ratio}``) with such a corpus restores the setting.
Trees that are nothing but empty elements
are dropped and counted; an empty split or an unreadable tree is an error naming file and line.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

from aiayn import settings
from aiayn.cli import add_log, add_settings
from aiayn.io import atomic_output, open_text, setup_logging
from aiayn.options import TreebankConfig
from aiayn.parsing.clean import clean_tree
from aiayn.parsing.linearize import kept_whole, linearize
from aiayn.parsing.treebank import SPLITS, find_wsj, is_line_layout, read_split, section_files
from aiayn.parsing.trees import Tree, parse_tree

log = logging.getLogger(__name__)


@dataclass
class SplitStats:
    """What one split received: trees written, words, trees dropped as empty, bracket tokens by count."""

    trees: int = 0
    words: int = 0
    dropped: int = 0
    brackets: Counter = field(default_factory=Counter)


def cleaned(trees: Iterable[tuple[Tree, str]], stats: SplitStats) -> Iterator[Tree]:
    """Clean each tree; count (and skip) those that were only empty elements."""
    for tree, where in trees:
        clean = clean_tree(tree)
        if clean is None:
            stats.dropped += 1
            log.debug("%s: tree has only empty elements; dropped", where)
            continue
        yield clean


def write_split(
    trees: Iterable[Tree], out_dir: Path, split: str, mode: str, gold: bool, stats: SplitStats, source: str
) -> None:
    """Write ``split.words``, ``split.tree`` (and ``split.gold``) atomically, counting into ``stats``."""
    names = ["words", "tree"] + (["gold"] if gold else [])
    with contextlib.ExitStack() as stack:
        handles = [stack.enter_context(atomic_output(out_dir / f"{split}.{name}")) for name in names]
        for tree in trees:
            words = tree.words()
            tokens = linearize(tree, mode)
            handles[0].write(" ".join(words) + "\n")
            handles[1].write(" ".join(tokens) + "\n")
            stats.brackets.update(token for token in tokens if kept_whole(token, mode))
            if gold:
                handles[2].write(f"{tree}\n")
            stats.trees += 1
            stats.words += len(words)
        if stats.trees == 0:
            raise ValueError(f"split {split!r} is empty: no tree in {source} ({stats.dropped} dropped as empty)")


def _tree_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of the non-blank lines of a one-tree-per-line file."""
    with open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                yield number, line


def silver_trees(path: Path, wanted: int, seed: int, stats: SplitStats) -> Iterator[Tree]:
    """``wanted`` trees of a one-tree-per-line file, drawn without replacement (all if fewer).

    Only the drawn lines are parsed, so a silver corpus of millions of trees costs one quick pass
    to count and one to read.
    """
    total = sum(1 for _ in _tree_lines(path))
    if wanted > total:
        log.warning("%s: %d silver trees asked for, the file has %d: using them all", path, wanted, total)
        wanted = total
    keep = np.zeros(total, dtype=bool)
    keep[np.random.default_rng(seed).choice(total, size=wanted, replace=False)] = True
    chosen = (
        (parse_tree(line, str(path), number), f"{path}:{number}")
        for i, (number, line) in enumerate(_tree_lines(path))
        if keep[i]
    )
    for tree in cleaned(chosen, stats):
        stats.trees += 1
        stats.words += len(tree.preterminals())
        yield tree


def describe_sources(treebank: Path, sections: dict[str, tuple[int, int]]) -> dict[str, str]:
    """Where each split comes from, for messages; an LDC split without any ``.mrg`` file is an error."""
    if is_line_layout(treebank):
        return {split: str(treebank / f"{split}.trees") for split in SPLITS}
    wsj = find_wsj(treebank)
    sources = {}
    for split, (first, last) in sections.items():
        sources[split] = f"WSJ sections {first:02d}-{last:02d} of {wsj}"
        files, missing = section_files(wsj, first, last)
        if not files:
            raise ValueError(f"split {split!r} is empty: no .mrg file in {sources[split]}")
        if missing:
            log.warning(
                "%s: sections %s have no .mrg files (%d files in the others)", split, " ".join(missing), len(files)
            )
    return sources


def prepare(
    treebank: Path,
    out_dir: Path,
    sections: dict[str, tuple[int, int]],
    mode: str = "xx",
    silver: Path | None = None,
    silver_ratio: float = 0.0,
    seed: int = 1,
) -> dict[str, SplitStats]:
    """Write every split of ``treebank`` to ``out_dir``; returns the counts per split."""
    sources = describe_sources(treebank, sections)
    stats = {split: SplitStats() for split in SPLITS}
    for split in ("dev", "test"):
        write_split(
            cleaned(read_split(treebank, split, sections[split]), stats[split]),
            out_dir,
            split,
            mode,
            True,
            stats[split],
            sources[split],
        )
    gold_train = list(cleaned(read_split(treebank, "train", sections["train"]), stats["train"]))
    trees: Iterable[Tree] = gold_train
    if silver is not None:
        stats["silver"] = SplitStats()
        wanted = round(silver_ratio * len(gold_train))
        trees = itertools.chain(gold_train, silver_trees(silver, wanted, seed, stats["silver"]))
    write_split(trees, out_dir, "train", mode, False, stats["train"], sources["train"])
    write_symbols(stats["train"].brackets, out_dir / "train.symbols")
    return stats


def write_symbols(counts: Counter, path: Path) -> None:
    """One token per line, most frequent first (ties by name): the same trees, the same file."""
    with atomic_output(path) as handle:
        handle.writelines(f"{token}\n" for token, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m aiayn.parsing.prepare", description=__doc__.split("\n\n")[0])
    parser.add_argument("--treebank", required=True, type=Path, help="LDC99T42 root, wsj/ folder, or *.trees dir")
    parser.add_argument("--out-dir", required=True, type=Path)
    add_settings(parser, "the task's splits, linearization and silver as JSON")
    parser.add_argument("--seed", type=int, default=1, help="seed of the silver sample")
    add_log(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args.log)
    try:
        opts = settings.read(args.settings, TreebankConfig, "tasks.<parsing task>")
        sections = {split: tuple(getattr(opts.splits, split)) for split in SPLITS}
        silver = Path(opts.silver.path) if opts.silver else None
        stats = prepare(
            args.treebank,
            args.out_dir,
            sections,
            opts.linearization,
            silver,
            opts.silver.ratio if opts.silver else 0.0,
            args.seed,
        )
    except (OSError, ValueError) as error:  # TreeError is a ValueError: it names the file and line
        log.error("%s", error)
        return 1
    for split, s in stats.items():
        log.info(
            "%s: %d trees, %d words, %d dropped (only empty elements)%s",
            split,
            s.trees,
            s.words,
            s.dropped,
            " (silver included in train)" if split == "silver" else "",
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
