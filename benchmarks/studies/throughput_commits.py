"""CPU training throughput of several commits, side by side with fairseq-train: where a ratio went.

    PYTHONPATH=src python benchmarks/studies/throughput_commits.py --commits 4c7716b aa3791d HEAD \
        --rounds 2 --fairseq-bin /work/venvs/fairseq/bin

Each commit's own ``benchmarks/train_throughput.py`` runs against that commit's ``src/`` (both taken
with ``git archive`` into a scratch directory), one update loop per commit and round, on the same
synthetic data and shape; then fairseq-train once per round (this tree's ``fairseq_benchmark``). A
round is every commit once and fairseq once, one after the other, so load from elsewhere hits them
alike; each commit's ratio is its median target tokens/s over fairseq's of the same round. Run it on
an idle machine. ``--threads`` is each toolkit's thread count (one runs at a time).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the standing benchmarks
import train_throughput  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def checkout(commit: str, root: Path) -> Path:
    """``src/`` and ``benchmarks/`` of ``commit`` under ``root/<commit>``."""
    where = root / commit
    where.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", commit, "src", "benchmarks"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    return where


def ours(tree: Path, threads: int, updates: int) -> dict:
    """The commit's own benchmark, ours alone, in a fresh process with the commit's package first."""
    out = tree / "result.json"
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    subprocess.run(
        [
            sys.executable,
            str(tree / "benchmarks" / "train_throughput.py"),
            "--threads",
            str(threads),
            "--rounds",
            "1",
            "--updates",
            str(updates),
            "--output",
            str(out),
        ],
        check=True,
        env=env,
        cwd=tree,
        capture_output=True,
    )
    return json.loads(out.read_text(encoding="utf-8"))["runs"][0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", nargs="+", required=True)
    parser.add_argument(
        "--fairseq-bin",
        type=Path,
        default=None,
        help="bin/ of a venv with fairseq (without it: our commits alone, tokens/s)",
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--updates", type=int, default=50, help="updates per run (the median is from update 11)")
    args = parser.parse_args(argv)
    commits = {
        c: subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", c], check=True, capture_output=True, text=True
        ).stdout.strip()
        for c in args.commits
    }
    rows = []
    with tempfile.TemporaryDirectory(prefix="aiayn-commits-") as tmp:
        trees = {name: checkout(sha, Path(tmp) / "trees") for name, sha in commits.items()}
        work = Path(tmp) / "fairseq"
        if args.fairseq_bin:
            train_throughput.synthetic_task(work / "data", 20000, 10000, (10, 41))
        for round_ in range(1, args.rounds + 1):
            load = os.getloadavg()[0]
            mine = {name: ours(tree, args.threads, args.updates)["median_tokens_per_s"] for name, tree in trees.items()}
            theirs = (
                train_throughput.fairseq_benchmark(work, args.fairseq_bin, args.threads, args.updates)[
                    "median_tokens_per_s"
                ]
                if args.fairseq_bin
                else float("nan")
            )
            for name, rate in mine.items():
                rows.append(
                    {
                        "round": round_,
                        "commit": commits[name],
                        "aiayn": round(rate),
                        "fairseq": round(theirs) if args.fairseq_bin else None,
                        "ratio": round(rate / theirs, 3) if args.fairseq_bin else None,
                        "load_before": round(load, 2),
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
    print(
        "\n| commit | "
        + " | ".join(f"round {r}: aiayn / fairseq" for r in range(1, args.rounds + 1))
        + " | median ratio |"
    )
    print("|---" * (args.rounds + 2) + "|")
    for sha in commits.values():
        mine = [r for r in rows if r["commit"] == sha]
        if not args.fairseq_bin:
            print(f"| {sha} | " + " | ".join(f"{r['aiayn']:,}" for r in mine) + " | |")
            continue
        cells = [f"{r['aiayn']:,} / {r['fairseq']:,}: {r['ratio']:.3f}x" for r in mine]
        print(f"| {sha} | " + " | ".join(cells) + f" | {statistics.median(r['ratio'] for r in mine):.3f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
