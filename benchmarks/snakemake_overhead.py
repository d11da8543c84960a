"""How much CPU Snakemake itself spends running the workflow, beside its jobs.

    python benchmarks/snakemake_overhead.py --work /tmp/overhead -- --configfile config.yaml configs/demo.yaml

Runs ``snakemake --cores N <your arguments>`` inside this process (its ``__main__``, in ``--work``, on
this checkout's Snakefile) and prints, at the end, the process's own CPU (``getrusage(RUSAGE_SELF)``:
parsing, DAG, scheduling, bookkeeping) beside its jobs' (``RUSAGE_CHILDREN``) and the wall time.
Arguments after ``--`` go to Snakemake; relative config paths are taken from the checkout. Run it on an
otherwise idle machine: the scheduler's passes depend on how long the jobs take.
"""

from __future__ import annotations

import argparse
import resource
import runpy
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ours, theirs = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True, help="the workflow's working directory")
    parser.add_argument("--cores", default="2")
    args = parser.parse_args(ours)
    args.work.mkdir(parents=True, exist_ok=True)
    theirs = [str(ROOT / a) if (ROOT / a).is_file() and not Path(a).is_absolute() else a for a in theirs]
    sys.argv = [
        "snakemake",
        "-s",
        str(ROOT / "Snakefile"),
        "--directory",
        str(args.work),
        "--cores",
        args.cores,
        *theirs,
    ]
    start, code = time.perf_counter(), 0
    try:
        runpy.run_module("snakemake", run_name="__main__")
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    wall = time.perf_counter() - start
    own, jobs = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"snakemake exit {code}, wall {wall:.1f} s; Snakemake's own CPU {own.ru_utime:.1f} s user + "
        f"{own.ru_stime:.1f} s system ({100 * (own.ru_utime + own.ru_stime) / wall:.0f}% of a core); its jobs "
        f"{jobs.ru_utime:.1f} s user + {jobs.ru_stime:.1f} s system",
        file=sys.stderr,
    )
    return code


if __name__ == "__main__":
    raise SystemExit(main())
