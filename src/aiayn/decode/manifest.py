"""A run's inference manifest: what a run's model needs from outside its directory to read and write text.

``python -m aiayn.decode.manifest --kind K --source-lang L --target-lang L --spm M [--tokenize F]
--output MANIFEST [--log F]`` (``MANIFEST``: :attr:`aiayn.paths.RunPaths.inference`)

A run directory (``results/<task>/<experiment>``, :class:`aiayn.paths.RunPaths`) holds its checkpoints
(averaged and last) and its decode settings; the task's
sentencepiece model and the source side's ``data.tokenize`` settings lie under ``data_dir``. The
workflow writes this manifest into every run directory so that ``aiayn-translate --run DIR`` and
``aiayn-parse --run DIR`` find them without knowing the config: the paths are stored relative to the
manifest's directory (absolute when given absolute), so the results and data directories can move
together. Fields: ``kind`` (``translation`` or ``parsing``), ``source_lang`` and ``target_lang``
(a parsing task's ``words`` and ``tree``), ``spm``, and ``tokenize`` (``null`` for parsing: its input
is the treebank's words as they are).
"""

from __future__ import annotations

import argparse
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from aiayn.cli import add_log
from aiayn.io import read_json, setup_logging, write_json
from aiayn.paths import AVERAGED, LAST, RunPaths

log = logging.getLogger(__name__)

KINDS = ("translation", "parsing")


@dataclass(frozen=True)
class RunFiles:
    """Everything a run's model reads and writes text with: resolved paths and the languages."""

    kind: str
    source_lang: str
    target_lang: str
    checkpoint: Path
    spm: Path
    decode: Path | None
    tokenize: Path | None


def stored_path(path: str, manifest_dir: str) -> str:
    """``path`` as the manifest stores it: relative to ``manifest_dir`` unless it is absolute."""
    return path if os.path.isabs(path) else os.path.relpath(path, manifest_dir)


def write_manifest(output: str, kind: str, source_lang: str, target_lang: str, spm: str, tokenize: str | None) -> dict:
    """Write ``output`` (atomically) and return its content."""
    if kind not in KINDS:
        raise ValueError(f"--kind must be one of {KINDS}, got {kind!r}")
    if (kind == "translation") != (tokenize is not None):
        raise ValueError("--tokenize is needed for a translation task and only for one")
    where = os.path.dirname(output) or "."
    content = {
        "kind": kind,
        "source_lang": source_lang,
        "target_lang": target_lang,
        "spm": stored_path(spm, where),
        "tokenize": None if tokenize is None else stored_path(tokenize, where),
    }
    write_json(output, content)
    return content


def checkpoint_of(run_dir: Path, which: str) -> Path:
    """The run's averaged (``avg``) or last checkpoint; ``avg`` falls back to the last one, with a
    warning, when the run was not averaged (yet)."""
    paths = RunPaths(str(run_dir))
    wanted = [Path(paths.checkpoint(which))] + ([Path(paths.checkpoint(LAST))] if which == AVERAGED else [])
    found = [path for path in wanted if path.exists()]
    if not found:
        raise ValueError(f"{run_dir}: no checkpoint ({' nor '.join(map(str, wanted))}): has the run trained?")
    if found[0] != wanted[0]:
        log.warning("%s has no averaged checkpoint (%s): using the last one, %s", run_dir, wanted[0].name, found[0])
    return found[0]


def read_run(run_dir: str | os.PathLike, which: str = "avg") -> RunFiles:
    """The files of the run in ``run_dir``, from its manifest; a missing manifest or file is a ValueError
    that names it."""
    run_dir = Path(run_dir)
    manifest = Path(RunPaths(str(run_dir)).inference)
    if not manifest.exists():
        raise ValueError(
            f"{manifest}: no such file; the workflow writes it for every run it trains (snakemake ... {manifest})"
        )
    content = read_json(manifest)
    unknown = sorted(set(content) - {"kind", "source_lang", "target_lang", "spm", "tokenize"})
    if unknown or content.get("kind") not in KINDS:
        raise ValueError(f"{manifest}: not a run manifest (kind {content.get('kind')!r}, unknown keys {unknown})")
    files = {"spm": run_dir / content["spm"], "decode": Path(RunPaths(str(run_dir)).settings("decode"))}
    if content["tokenize"] is not None:
        files["tokenize"] = run_dir / content["tokenize"]
    for what, path in files.items():
        if not path.exists():
            raise ValueError(f"{manifest}: its {what} file {path} does not exist")
    return RunFiles(
        content["kind"],
        content["source_lang"],
        content["target_lang"],
        checkpoint_of(run_dir, which),
        files["spm"],
        files["decode"],
        files.get("tokenize"),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aiayn.decode.manifest", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", required=True, choices=KINDS)
    parser.add_argument("--source-lang", required=True, help="the task's source language (parsing: words)")
    parser.add_argument("--target-lang", required=True, help="the task's target language (parsing: tree)")
    parser.add_argument("--spm", required=True, help="the task's sentencepiece model")
    parser.add_argument("--tokenize", help="the source side's data.tokenize settings (translation tasks)")
    parser.add_argument("--output", required=True, help="the run's inference manifest")
    add_log(parser)
    args = parser.parse_args(argv)
    setup_logging(args.log)
    content = write_manifest(args.output, args.kind, args.source_lang, args.target_lang, args.spm, args.tokenize)
    log.info("wrote %s: %s", args.output, content)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
