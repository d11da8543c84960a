"""Render the paper's Tables 2, 3 and 4 with our numbers beside the paper's, and the experiments table.

``python -m aiayn.report.tables --config CONFIG_YAML --results-dir R --out-dir R/tables
[--tables table2 table3 table4 experiments] [--log F]`` reads the metric files of docs/ARCHITECTURE.md
under ``R`` and writes ``<table>.{md,csv,tex,html}`` for each table asked for (default: all four) to the out
dir, atomically. ``experiments`` lists every run with its settings, scores and cost
(:mod:`aiayn.report.experiments`).
Every file a table needs is checked before anything is written: a missing one is an error naming it.
Each table ends with a footer saying what produced it (config file, git commit, date).
"""

from __future__ import annotations

import argparse
import datetime
import logging
import subprocess
from pathlib import Path

from aiayn import config as aiayn_config
from aiayn import runs as aiayn_runs
from aiayn.io import atomic_output, setup_logging
from aiayn.report import experiments, table2, table3, table4
from aiayn.report.layout import RENDERERS, Table
from aiayn.report.metrics import MetricFileError, report_parser, require

log = logging.getLogger(__name__)

BUILDERS = {"table2": table2, "table3": table3, "table4": table4, "experiments": experiments}


def git_commit(directory: Path) -> str | None:
    """The commit checked out in ``directory`` (here: the package's source), ``+dirty`` with local changes;
    ``None`` outside git."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=directory, capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()

    try:
        commit = git("rev-parse", "--short=12", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+dirty" if dirty else "")


def provenance(config_path: Path, commit: str | None, when: datetime.datetime) -> str:
    """The footer under every table: what produced its numbers."""
    return (
        f"Produced by aiayn.report.tables from config {config_path}, "
        f"git commit {commit or 'unknown (not a git checkout)'}, {when:%Y-%m-%d %H:%M} UTC."
    )


def build_tables(config: dict, results_dir: Path, footer: str, names: list[str] | None = None) -> list[Table]:
    """Tables ``names`` (default: all); raises :class:`~aiayn.report.metrics.MetricFileError` before
    building anything if an input of any of them is missing."""
    require(aiayn_runs.Records(config, results_dir).inputs(list(names or BUILDERS)))
    tables = [BUILDERS[name].build(config, results_dir) for name in (names or BUILDERS)]
    for table in tables:
        table.footer = footer
    return tables


def write_tables(tables: list[Table], out_dir: Path) -> list[Path]:
    """Write ``<name>.{md,csv,tex,html}`` for every table, atomically; returns the paths written."""
    written = []
    for table in tables:
        for suffix, render in RENDERERS.items():
            path = Path(out_dir) / f"{table.name}.{suffix}"
            with atomic_output(path) as handle:
                handle.write(render(table))
            written.append(path)
    return written


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    return report_parser(
        "python -m aiayn.report.tables",
        __doc__.splitlines()[0],
        "where <table>.{md,csv,tex} go",
        "which tables to write (default: all)",
    ).parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_logging(args.log)
    config = aiayn_config.load(args.config)
    now = datetime.datetime.now(datetime.timezone.utc)
    footer = provenance(args.config, git_commit(Path(__file__).resolve().parent), now)
    try:
        tables = build_tables(config, args.results_dir, footer, args.tables)
    except MetricFileError as err:
        log.error("%s", err)
        return 1
    for path in write_tables(tables, args.out_dir):
        log.info("wrote %s", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
