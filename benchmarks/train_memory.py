"""A CPU training's resident memory over its steps: ours (oneDNN or MKL products) beside fairseq-train.

    PYTHONPATH=src python benchmarks/train_memory.py --work /tmp/memory --steps 3000 \\
        --runs onednn mkl onednn-unbucketed fairseq --fairseq-python /work/venvs/fairseq/bin/python

Data: ``parity_data.py``'s real EN-DE text (about 16.7k WMT pairs through our tokenize, clean, BPE and
binarize stages; vocabulary ``--vocab-size``). Model: ``--layers``+``--layers`` layers, ``--d-model``,
``--heads`` heads, ``--d-ff``, shared embeddings; ``--tokens-per-step`` padded tokens per side per step; everything
else the trainer's defaults (fp32 on a CPU, no validation, checkpoints every 1,400 steps). Runs:

- ``onednn``, ``mkl``: ``python -m aiayn.train`` with ``train.cpu_matmul`` so; RSS from its ``log.csv``
  (``rss_mb``, written every 100 steps by the training process itself);
- ``onednn-unbucketed``: ``onednn`` with every row count reaching oneDNN as it is (the code before
  :func:`aiayn.model.functional.bucket_rows`), to show what the bucketing changes; for both ``onednn``
  runs the log says how many products went through oneDNN, how many distinct row counts it saw and
  how many rows the bucketing added (zero rows: arithmetic spent on nothing);
- ``fairseq``: fairseq-train with the equivalent recipe (``parity_fairseq.py``), its RSS read from
  outside whenever it logs (every 100 updates).

``--gpus 1`` trains ours on a GPU (``mkl``/``onednn`` then only name the runs) and adds the GPU's peak
allocated memory per 100 steps. ``--parallel 2`` runs two trainings at a time, each on ``--threads`` threads
(memory figures do not
depend on load; the tokens/s printed beside them do, so take speed from ``train_throughput.py`` on an
idle machine). Prints RSS in MB per system every 100 steps, then per system: RSS at step 500 and at the
end, the largest deviation from step 500's RSS of any sample after it ("flat" when within 10%), the
slope of RSS over those steps (MB per 1,000 steps) and the median tokens/s. Finished runs are read
back from ``--work/runs`` (their log.csv) rather than trained again.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import os
import statistics
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from parity_data import fairseq_preprocess, prepare  # noqa: E402
from parity_fairseq import fairseq_args  # noqa: E402

from aiayn.io import read_json, setup_logging, write_json  # noqa: E402
from aiayn.options import ModelConfig  # noqa: E402
from aiayn.paths import TrainPaths  # noqa: E402

log = logging.getLogger("train_memory")
WMT = Path(__file__).resolve().parents[2] / "shared" / "data" / "wmt"
RUNS = ("onednn", "mkl", "onednn-unbucketed", "fairseq")
LOG_EVERY = 100

# The training CLI, with bucket_rows replaced by the identity when asked (the code before the fix);
# the rows reaching oneDNN and the rows they were padded to are counted into the file named second.
OURS = """
import atexit, json, sys
from aiayn.model import functional
unbucketed, stats_path = sys.argv.pop(1) == "unbucketed", sys.argv.pop(1)
bucket, rows = functional.bucket_rows, {"products": 0, "rows": 0, "padded_rows": 0, "shapes": set()}
def counted(n):
    padded = n if unbucketed else bucket(n)
    rows["products"] += 1; rows["rows"] += n; rows["padded_rows"] += padded; rows["shapes"].add(padded)
    return padded
functional.bucket_rows = counted
atexit.register(lambda: open(stats_path, "w").write(json.dumps({**rows, "shapes": len(rows["shapes"])})))
from aiayn.train.__main__ import main
raise SystemExit(main(sys.argv[1:]))
"""


def settings(args: argparse.Namespace, cpu_matmul: str) -> dict:
    """The run's settings file: the model of the arguments, the trainer's defaults but for the budget."""
    d = args.d_model
    model = ModelConfig.from_dict(
        {
            "n_layers": args.layers,
            "d_model": d,
            "d_ff": args.d_ff,
            "n_heads": args.heads,
            "d_k": d // args.heads,
            "d_v": d // args.heads,
            "share_embeddings": True,
        }
    ).to_dict()
    train = {
        "train_steps": args.steps,
        "tokens_per_step": args.tokens_per_step,
        "tokens_per_pass": args.tokens_per_step,
        "warmup_steps": args.warmup,
        "precision": "fp32" if args.gpus == 0 else "auto",
        "gpus": args.gpus,
        "cpu_matmul": cpu_matmul,
        "checkpoint_minutes": 0,
        "keep_checkpoints": 1,
        "log_every_steps": LOG_EVERY,
        "dev_every_steps": 0,
    }
    return {"experiment": "train_memory", "task": "en-de", "model": model, "train": train}


def run_ours(name: str, args: argparse.Namespace, out: Path) -> dict:
    """``python -m aiayn.train`` in a child process; returns {step: (rss MB, tokens/s, GPU peak MB or
    None)} from its log.csv."""
    out.mkdir(parents=True, exist_ok=True)
    cpu_matmul = "mkl" if name == "mkl" else "onednn"
    write_json(out / "settings.json", settings(args, cpu_matmul))
    command = [
        sys.executable,
        "-c",
        OURS,
        "unbucketed" if name == "onednn-unbucketed" else "bucketed",
        str(out / "rows.json"),
        "--data",
        str(args.work / "bin"),
        "--settings",
        str(out / "settings.json"),
        "--out-dir",
        str(out / "train"),
        "--threads",
        str(args.threads),
        "--log",
        str(out / "train.log"),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    rows = json.loads((out / "rows.json").read_text(encoding="utf-8"))
    log.info(
        "%s: %d products through oneDNN, %d distinct row counts, padded rows %.2f%% of %d",
        name,
        rows["products"],
        rows["shapes"],
        100 * (rows["padded_rows"] / max(rows["rows"], 1) - 1),
        rows["rows"],
    )
    with open(TrainPaths(str(out / "train")).log_csv, encoding="utf-8", newline="") as handle:
        return {
            int(r["step"]): (
                float(r["rss_mb"]),
                float(r["tokens_per_s"]),
                float(r["gpu_peak_mb"]) if r["gpu_peak_mb"] else None,
            )
            for r in csv.DictReader(handle)
            if r["rss_mb"]
        }


def run_fairseq(args: argparse.Namespace, out: Path) -> dict:
    """fairseq-train in a child process, its RSS sampled at each of its log lines: {step: (rss MB, wps)}."""
    out.mkdir(parents=True, exist_ok=True)
    data = fairseq_preprocess(args.fairseq_python, args.work)
    config = settings(args, "onednn")
    config["train"].update(label_smoothing=0.1, adam_betas=[0.9, 0.98], adam_eps=1e-9, lr_scale=1.0)
    command = [
        args.fairseq_python,
        "-m",
        "fairseq_cli.train",
        *fairseq_args(data, config["model"], config["train"], args.steps, LOG_EVERY, args.steps, 1),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "MKL_NUM_THREADS": str(args.threads)}
    rows = {}
    with (
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) as child,
        open(out / "fairseq.log", "w", encoding="utf-8") as log_file,
    ):
        process = psutil.Process(child.pid)
        for line in child.stdout:
            log_file.write(line)
            start = line.find("{")
            entry = _json(line[start:]) if start >= 0 else None
            if entry and "num_updates" in entry and "wps" in entry:
                rows[int(entry["num_updates"])] = (process.memory_info().rss / 2**20, float(entry["wps"]), None)
    if child.returncode:
        raise RuntimeError(f"fairseq-train failed ({child.returncode}), see {out / 'fairseq.log'}")
    return rows


def _json(text: str) -> dict | None:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def summarize(rows: dict) -> dict:
    """RSS at step 500 (or the first logged step after it) and at the end; the largest deviation of a
    sample from step 500 on from the step-500 value, relative to it ("flat" when within 10%); the
    least-squares slope of RSS over those steps in MB per 1,000 steps (a leak's rate; batch-to-batch
    swings of a few percent average out); the median tokens/s."""
    steps = sorted(rows)
    later = [s for s in steps if s >= 500] or steps
    at500, end = rows[later[0]][0], rows[steps[-1]][0]
    deviation = max(abs(rows[s][0] - at500) for s in later) / at500
    slope = statistics.linear_regression(later, [rows[s][0] for s in later]).slope if len(later) > 1 else 0.0
    return {
        "rss_500": at500,
        "rss_end": end,
        "deviation": deviation,
        "flat": deviation <= 0.10,
        "mb_per_1000_steps": 1000 * slope,
        "tokens_per_s": statistics.median(rows[s][1] for s in steps),
    }


def report(results: dict[str, dict]) -> str:
    names = list(results)
    steps = sorted(set().union(*(results[n] for n in names)))
    gpu = [n for n in names if any(row[2] is not None for row in results[n].values())]
    header = [f"{n} RSS MB" for n in names] + [f"{n} GPU peak MB" for n in gpu]
    lines = ["| step | " + " | ".join(header) + " |", "|---" * (len(header) + 1) + "|"]
    for step in steps:
        cells = [f"{results[n][step][0]:,.0f}" if step in results[n] else "" for n in names]
        cells += [f"{results[n][step][2]:,.0f}" if step in results[n] else "" for n in gpu]
        lines.append(f"| {step} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| system | RSS at 500 | RSS at end | largest deviation from 500 on | flat (<= 10%) | "
        "slope, MB per 1,000 steps | median tokens/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in names:
        s = summarize(results[name])
        lines.append(
            f"| {name} | {s['rss_500']:,.0f} MB | {s['rss_end']:,.0f} MB | {100 * s['deviation']:.1f}% | "
            f"{'yes' if s['flat'] else 'no'} | {s['mb_per_1000_steps']:+,.0f} | {s['tokens_per_s']:,.0f} |"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True, help="data and runs go here")
    parser.add_argument("--runs", nargs="+", default=list(RUNS), choices=RUNS)
    parser.add_argument("--fairseq-python", default="/work/venvs/fairseq/bin/python")
    parser.add_argument("--wmt", type=Path, default=WMT, help="the shared data/wmt folder")
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--d-ff", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--tokens-per-step", type=int, default=4096, help="padded tokens per side per step")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--warmup", type=int, default=4000)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per training")
    parser.add_argument(
        "--gpus",
        type=int,
        default=0,
        choices=(0, 1),
        help="1: our trainings on a GPU (precision auto), the GPU's peak allocated memory "
        "per 100 steps beside host RSS (log.csv gpu_peak_mb)",
    )
    parser.add_argument("--parallel", type=int, default=1, help="trainings at a time")
    parser.add_argument("--output", type=Path, default=None, help="also write the tables here (markdown)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_logging(None)
    args.work.mkdir(parents=True, exist_ok=True)
    prepare(args.wmt, args.work, args.vocab_size, 1000)
    lock = threading.Lock()

    def one(name: str) -> tuple[str, dict]:
        out = args.work / "runs" / f"{name}-{args.steps}-{args.tokens_per_step}"
        if (out / "memory.json").exists():
            return name, {int(step): tuple(row) for step, row in read_json(out / "memory.json").items()}
        log.info("training %s for %d steps -> %s", name, args.steps, out)
        rows = run_fairseq(args, out) if name == "fairseq" else run_ours(name, args, out)
        write_json(out / "memory.json", {str(step): list(row) for step, row in rows.items()})
        with lock:
            log.info("%s done: %s", name, summarize(rows))
        return name, rows

    with ThreadPoolExecutor(args.parallel) as pool:
        results = dict(pool.map(one, args.runs))
    text = (
        f"{args.layers}+{args.layers} layers x {args.d_model}, d_ff {args.d_ff}, {args.heads} heads, "
        f"{args.tokens_per_step} tokens per step, {args.steps} steps, {args.threads} thread(s) per training, "
        f"{args.parallel} at a time\n\n" + report(results)
    )
    print(text)
    if args.output:
        args.output.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
