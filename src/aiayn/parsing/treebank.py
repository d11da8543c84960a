"""Where the trees come from: the LDC99T42 layout by WSJ section, or one-tree-per-line files.

Two layouts are accepted for ``--treebank PATH``:

* **LDC99T42** (Treebank-3): ``PATH`` is the distribution root, any directory holding
  ``parsed/mrg/wsj/NN/`` (also one level down, e.g. the folder that holds ``treebank_3/``), or the
  ``wsj/`` folder itself. Section ``NN`` is the two-digit folder ``NN/`` and its ``*.mrg`` files
  (multi-line trees with the unlabeled outer bracket), read in file-name order.
* **One tree per line**: ``PATH`` holds ``train.trees``, ``dev.trees`` and ``test.trees``, each line
  one bracketed tree (the cleaned or raw PTB bracketing; blank lines are skipped and counted).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Iterator

from aiayn.io import open_text
from aiayn.parsing.trees import Tree, parse_tree, read_trees

log = logging.getLogger(__name__)
SPLITS = ("train", "dev", "test")


def is_line_layout(root: Path) -> bool:
    """True when ``root`` holds ``train.trees``, ``dev.trees`` and ``test.trees``."""
    return all((root / f"{split}.trees").is_file() for split in SPLITS)


def _has_sections(path: Path) -> bool:
    return path.is_dir() and any(p.is_dir() and p.name.isdigit() and len(p.name) == 2 for p in path.iterdir())


def find_wsj(root: Path) -> Path:
    """The ``wsj/`` folder holding the section folders ``00/`` .. ``24/``; FileNotFoundError if none."""
    candidates = [root / "parsed" / "mrg" / "wsj", root]
    if root.is_dir():
        candidates += sorted(p / "parsed" / "mrg" / "wsj" for p in root.iterdir() if p.is_dir())
    for path in candidates:
        if _has_sections(path):
            return path
    raise FileNotFoundError(
        f"{root}: no LDC99T42 treebank (parsed/mrg/wsj/NN/*.mrg) and no train.trees/dev.trees/test.trees files"
    )


def section_files(wsj: Path, first: int, last: int) -> tuple[list[Path], list[str]]:
    """The ``*.mrg`` files of sections ``first..last`` (inclusive), and the sections without any."""
    if first > last:
        raise ValueError(f"empty section range {first}..{last}")
    files, missing = [], []
    for section in range(first, last + 1):
        folder = wsj / f"{section:02d}"
        found = sorted(folder.glob("*.mrg")) if folder.is_dir() else []
        if not found:
            missing.append(f"{section:02d}")
        files.extend(found)
    return files, missing


def read_mrg_file(path: Path) -> Iterator[tuple[Tree, int]]:
    """Every tree of one ``.mrg`` file with the line it starts on; errors name the file and line."""
    with open_text(path) as handle:
        yield from read_trees(handle.read(), str(path))


def read_line_file(path: Path) -> Iterator[tuple[Tree, int]]:
    """One tree per line; blank lines are skipped (and counted in the log)."""
    blank = 0
    with open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                blank += 1
                continue
            yield parse_tree(line, str(path), number), number
    if blank:
        log.warning("%s: skipped %d blank lines", path, blank)


def read_sections(root: Path, first: int, last: int) -> Iterator[tuple[Tree, str]]:
    """Trees of WSJ sections ``first..last`` under ``root``, each with ``file:line`` for messages."""
    for path in section_files(find_wsj(root), first, last)[0]:
        for tree, line in read_mrg_file(path):
            yield tree, f"{path}:{line}"


def read_split(root: Path, split: str, sections: tuple[int, int]) -> Iterator[tuple[Tree, str]]:
    """The raw trees of one split, from whichever layout ``root`` has."""
    if is_line_layout(root):
        path = root / f"{split}.trees"
        for tree, line in read_line_file(path):
            yield tree, f"{path}:{line}"
    else:
        yield from read_sections(root, *sections)
