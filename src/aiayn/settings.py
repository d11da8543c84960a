"""A stage's settings: one JSON file per stage and run, read into that stage's dataclass.

The workflow writes each stage's section of the config (``aiayn.runs.settings_files``) into a file
that the stage's rule takes as input and passes as ``--settings FILE``; nothing else carries a setting
from the config to a stage. Each dataclass (:mod:`aiayn.options`) has the keys of its config section and
the paper's values as defaults, so a stage run by hand without ``--settings`` runs the paper's setup.

    python -m aiayn.settings --json STRING --output FILE [--log F]

writes one settings file (the workflow's ``settings`` rule): the JSON value, indented, keys sorted.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import TypeVar

from aiayn.cli import add_log
from aiayn.io import setup_logging, write_json
from aiayn.options.core import build

log = logging.getLogger(__name__)
T = TypeVar("T")


def read(path: str | Path | None, cls: type[T], section: str | None = None) -> T:
    """The settings file ``path`` as ``cls``, its keys named as config section ``section`` in errors
    (``None``: ``cls.from_dict`` builds it, as a training's :class:`~aiayn.options.RunConfig`);
    ``path`` ``None``: the paper's settings (``cls()``). Every error names the file."""
    if path is None:
        return cls()
    try:
        values = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON: {error}") from None
    try:
        return build(cls, values, section) if section is not None else cls.from_dict(values)  # type: ignore[attr-defined]
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def start(args: argparse.Namespace, cls: type[T], section: str | None = None) -> T:
    """A stage's start-up: its log (``--log``) first, so that everything after it, a bad settings file
    included, is reported there; then its settings file (``--settings``) as ``cls`` (:func:`read`)."""
    setup_logging(args.log)
    return read(args.settings, cls, section)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aiayn.settings", description="Write one settings file.")
    parser.add_argument("--json", required=True, help="the settings as a JSON string")
    parser.add_argument("--output", required=True)
    add_log(parser)
    args = parser.parse_args(argv)
    setup_logging(args.log)
    write_json(args.output, json.loads(args.json))
    log.info("wrote %s", args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
