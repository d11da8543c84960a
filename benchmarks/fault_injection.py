"""Faults measured: kill the workflow at random moments of every stage, recover, compare with a clean run.

Runs a cut-down test config (config.yaml + configs/demo.yaml + configs/test.yaml, with fewer
experiments, each trained ``--train-steps`` steps so that training lasts long enough to be hit
between checkpoints) in two copies of the workflow: once uninterrupted, once with K faults. Each fault waits until a job
of the next stage kind starts (download, extract, tokenize, BPE, binarize, train, average, translate,
score, tables; kinds in pipeline order, repeated until K), waits a random delay drawn with the seed,
then signals the whole process group (Snakemake and its jobs): SIGKILL, or SIGTERM with ``--sigterm``
(what SLURM sends before preemption). After a fault it runs the README's recovery: ``snakemake
--unlock`` and the same command for SIGKILL, the same command alone for SIGTERM; the next fault hits
that run. Then it compares every final output with the uninterrupted run:

* BLEU/EVALB/perplexity JSON, EVALB reports, translations, trees, shards' manifests, BPE models,
  cleaning counts: byte for byte (sha256);
* checkpoints (``avg.pt``, ``checkpoint_last.pt``) by content, every tensor's sha256 and every value
  (their bytes name the temporary file they were written as); ``checkpoint_last.pt`` without its RNG
  state and wall-clock progress; ``summary.json`` without ``wall_seconds``; ``log.csv`` without speed,
  elapsed time and memory (``rss_mb``, ``gpu_peak_mb``); the tables without their footer's date and the
  columns that come from the wall clock: Table 2's
  training cost by the paper's method (training time x GPUs x peak FLOP/s), the experiments table's
  training time and target tokens/s;

and looks for anything half-written: a temporary file or directory left behind, a JSON that does not
parse, a checkpoint that does not load, shards whose checksums differ from their manifest.

    python benchmarks/fault_injection.py --kills 20 --seed 1
    python benchmarks/fault_injection.py --kills 10 --seed 2 --sigterm --reuse-reference
    python benchmarks/fault_injection.py --kills 10 --seed 3 --cpu-ranks 2 --workdir /tmp/aiayn-faults-ranks

``--cpu-ranks N`` trains every experiment as N gloo ranks under torchrun (``train.cpu_ranks``), so
faults land in multi-rank trainings: the relaunch parent, its torchrun and every rank are in the
signalled group. Its reference run must use the same N (a separate ``--workdir``).

Prints the figures; not a test. Every job runs with one thread (configs/test.yaml).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]
OVERLAYS = [ROOT / "config.yaml", ROOT / "configs/demo.yaml", ROOT / "configs/test.yaml"]
# Stage kinds in pipeline order, the rules of each, and the delays (s) after a job starts that a
# fault is drawn from: a job's first second or two is Python starting; training runs for tens of
# seconds (--train-steps), so its faults fall after its first checkpoints.
KINDS = {
    "download": (("demo_mirror", "download"), (0.0, 1.0)),
    "extract": (("extract",), (0.0, 1.5)),
    "tokenize": (("tokenize", "clean_en_de", "clean_en_fr", "treebank"), (0.0, 2.0)),
    "bpe": (("bpe_learn", "bpe_encode"), (0.0, 0.6)),  # tiny corpora: done in about a second
    "binarize": (("binarize",), (0.0, 2.0)),
    "train": (("train",), (4.0, 20.0)),
    "average": (("average",), (0.0, 2.0)),
    "translate": (("translate", "detokenize", "trees"), (0.0, 3.0)),
    "score": (("bleu", "perplexity", "evalb", "flat_baseline"), (0.0, 2.0)),
    "tables": (("tables", "plots"), (0.0, 3.0)),
}
RULE_KIND = {rule: kind for kind, (rules, _) in KINDS.items() for rule in rules}
# Table columns that come from the wall clock, by CSV key or by the header Markdown and LaTeX show:
# Table 2's cost by the paper's method (report/table2.py) and the experiments table's training time
# and tokens/s (report/experiments.py).
CLOCK_COLUMN = re.compile(
    r"^\s*(cost_ours_paper_method|(ours: )?training cost, paper's method \(.*\)|train_seconds|"
    r"training time|tokens_per_second|target tokens/s)\s*(\\\\)?\s*$",
    re.IGNORECASE,
)
TABLES = ("table2", "table3", "table4", "experiments")
# log.csv columns measured from the machine, not computed by training: speed, time, memory
LOG_MEASURED = ("tokens_per_s", "mfu", "elapsed", "rss_mb", "gpu_peak_mb")


def merged_config(experiments: list[str], train_steps: int) -> dict:
    """The overlays merged as Snakemake merges --configfile (dicts deep, the rest replaced), with
    only ``experiments`` kept, each trained ``train_steps`` steps."""

    def merge(base, over):
        for key, value in over.items():
            base[key] = (
                merge(base.get(key, {}), value)
                if isinstance(value, dict) and isinstance(base.get(key), dict)
                else value
            )
        return base

    config: dict = {}
    for path in OVERLAYS:
        merge(config, yaml.safe_load(path.read_text()))
    config["experiments"] = {name: spec for name, spec in config["experiments"].items() if name in experiments}
    for section in [config["defaults"], *config["experiments"].values()]:
        if "train_steps" in section.get("train", {}) or section is config["defaults"]:
            section.setdefault("train", {})["train_steps"] = train_steps
    return config


def with_cpu_ranks(config: dict, ranks: int) -> dict:
    """``config`` with every training run as ``ranks`` gloo ranks under torchrun (``train.cpu_ranks``),
    set in the defaults and over any experiment's own value, so that faults hit multi-rank trainings."""
    for section in [config["defaults"], *config["experiments"].values()]:
        if section is config["defaults"] or "cpu_ranks" in section.get("train", {}):
            section.setdefault("train", {})["cpu_ranks"] = ranks
    return config


def make_copy(where: Path, config: dict) -> Path:
    """A copy of the workflow (Snakefile, rules, default profile) with ``config`` as its config.yaml."""
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    for name in ("Snakefile", "workflow", "envs", "profiles"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, where / name)
    (where / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return where


class Run:
    """One ``snakemake`` process in its own process group; tracks which rules' jobs are running."""

    def __init__(self, workdir: Path, cores: int, extra: tuple[str, ...] = ()):
        self.running: dict[str, str] = {}
        self.started: list[tuple[float, str]] = []
        self.log = open(workdir / "snakemake.out", "a")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "snakemake", "--cores", str(cores), *extra],
            cwd=workdir,
            start_new_session=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        rule = None
        for line in self.proc.stdout:
            self.log.write(line)
            if m := re.match(r"^(?:local)?rule (\w+):", line):
                rule = m.group(1)
            elif (m := re.match(r"^\s+jobid: (\d+)", line)) and rule:
                self.running[m.group(1)] = rule
                self.started.append((time.monotonic(), rule))
                rule = None
            elif m := re.match(r"^Finished jobid: (\d+)", line):
                self.running.pop(m.group(1), None)
        self.log.flush()

    def wait(self) -> int:
        code = self.proc.wait()
        self.reader.join()
        return code

    def signal(self, signum: int) -> list[str]:
        """Signal the whole process group; returns the rules that were running."""
        rules = sorted(set(self.running.values()))
        os.killpg(self.proc.pid, signum)
        return rules

    def wait_group(self) -> None:
        """Wait until every process of the group has exited (a trainer stopping on SIGTERM saves a
        checkpoint first), as a scheduler does before it runs the job again."""
        while True:
            try:
                os.killpg(self.proc.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)


def left_behind(workdir: Path) -> list[str]:
    """Processes still running in ``workdir`` once the signalled group has gone, killed here as an
    operator would have to before running again. torchrun starts its ranks in sessions of their own
    (torch 2.13, torch/distributed/elastic/multiprocessing/subprocess_handler/subprocess_handler.py):
    a SIGKILL of the group cannot reach them, and nothing is left to pass it on."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and int(proc.name) != os.getpid() and (proc / "cwd").resolve() == workdir.resolve():
                found.append((int(proc.name), (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]))
        except OSError:  # gone, or not ours to read
            continue
    for pid, _ in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    while any(_alive(pid) for pid, _ in found):
        time.sleep(0.05)
    return [f"{pid} {command}" for pid, command in found]


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for a parent that may never reap it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_for_kind(run: Run, kind: str) -> str | None:
    """Block until a job of ``kind`` starts; its rule, or None if the run ended first."""
    rules, seen = KINDS[kind][0], 0
    while run.proc.poll() is None:
        for _, rule in run.started[seen:]:
            if rule in rules:
                return rule
        seen = len(run.started)
        time.sleep(0.02)
    return None


def inject(workdir: Path, kills: int, seed: int, signum: int, cores: int) -> dict:
    """Run with ``kills`` faults, each followed by the README's recovery; returns what happened."""
    rng = random.Random(seed)
    order = list(KINDS)
    plan = [order[i * len(order) // kills] for i in range(kills)]  # K=20: every kind twice
    faults, recovered, train_logs = [], 0, TrainLogs()
    for i, kind in enumerate(plan):
        run = Run(workdir, cores)
        if i:  # the previous fault's recovery: it must get as far as starting a job
            recovered += 1 if _started_a_job(run) else 0
        hit = wait_for_kind(run, kind)
        if hit is None:
            faults.append({"target": kind, "hit": None, "note": f"run ended (status {run.wait()})"})
            break
        delay = rng.uniform(*KINDS[RULE_KIND[hit]][1])
        time.sleep(delay)
        if run.proc.poll() is not None:
            faults.append({"target": kind, "hit": None, "note": "run ended during the delay"})
            break
        rules = run.signal(signum)
        status = run.proc.wait()
        run.wait_group()
        left = left_behind(workdir)  # outside the group, they may hold Snakemake's output pipe open
        run.reader.join()
        train_logs.scan(workdir)
        faults.append(
            {
                "target": kind,
                "hit": RULE_KIND.get(hit),
                "delay": round(delay, 2),
                "running": rules,
                "status": status,
                "left_behind": left,
            }
        )
        print(
            f"fault {i + 1}/{kills}: {signal.Signals(signum).name} {delay:.2f} s after {hit} started; "
            f"running: {', '.join(rules) or '-'}; processes left behind: {len(left)}",
            flush=True,
        )
        if signum == signal.SIGKILL:
            subprocess.run(
                [sys.executable, "-m", "snakemake", "--unlock"], cwd=workdir, check=True, capture_output=True
            )
    final = Run(workdir, cores)
    if faults:
        recovered += 1 if _started_a_job(final) else 0
    status = final.wait()
    train_logs.scan(workdir)
    return {"faults": faults, "recovered": recovered, "final_status": status, "training": train_logs.counts()}


def _started_a_job(run: Run) -> bool:
    while run.proc.poll() is None and not run.started:
        time.sleep(0.02)
    return bool(run.started) or run.proc.returncode == 0


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fingerprint(path: Path) -> object:
    """What must agree between the runs for one output (see the module docstring)."""
    name = path.name
    if name == "summary.json":
        return {k: v for k, v in json.loads(path.read_text()).items() if k != "wall_seconds"}
    if path.suffix == ".pt":
        return checkpoint_content(path)
    if name == "log.csv":  # step, learning rate, losses, gradient norm, dev perplexity; not speed, time or memory
        rows = list(csv.DictReader(path.open()))
        return [{k: v for k, v in row.items() if k not in LOG_MEASURED} for row in rows]
    if path.stem in TABLES and path.suffix in (".md", ".csv", ".tex"):
        return table_without_clock(path)
    return sha256(path)


def checkpoint_content(path: Path) -> object:
    """A checkpoint's tensors (by sha256) and values; not the file's bytes, which name the temporary
    file it was written as. ``checkpoint_last.pt`` also holds wall-clock progress: left out."""
    state = torch.load(path, map_location="cpu", weights_only=True)

    def content(value):
        if isinstance(value, torch.Tensor):
            return hashlib.sha256(value.contiguous().cpu().numpy().tobytes()).hexdigest()
        if isinstance(value, dict):
            return {k: content(v) for k, v in value.items() if k not in ("wall_seconds", "window")}
        if isinstance(value, (list, tuple)):
            return [content(v) for v in value]
        return value

    return content({k: v for k, v in state.items() if k != "rng"} if path.name == "checkpoint_last.pt" else state)


def table_without_clock(path: Path) -> list[list[str]]:
    """A table's cells, row by row, without its footer's date and with the wall-clock columns
    (:data:`CLOCK_COLUMN`) blanked: CSV read as CSV, Markdown split on ``|``, LaTeX on ``&``."""
    text = "\n".join(line for line in path.read_text().splitlines() if "Produced by aiayn.report.tables" not in line)
    if path.suffix == ".csv":
        rows = list(csv.reader(text.splitlines()))
    else:
        sep = "|" if path.suffix == ".md" else "&"
        rows = [line.split(sep) for line in text.splitlines()]
    header = next((row for row in rows if any(CLOCK_COLUMN.match(cell) for cell in row)), None)
    if header is None:
        return rows
    blank = {i for i, cell in enumerate(header) if CLOCK_COLUMN.match(cell)}
    return [
        row if row is header or len(row) != len(header) else ["" if i in blank else cell for i, cell in enumerate(row)]
        for row in rows
    ]


COMPARED = (
    "*.md",
    "*.csv",
    "*.tex",
    "*.bleu.json",
    "*.evalb.json",
    "*.ppl.json",
    "*.hyp.tok",
    "*.hyp.txt",
    "*.trees",
    "*.evalb.txt",
    "avg.pt",
    "summary.json",
    "checkpoint_last.pt",
    "log.csv",
    "manifest.json",
    "spm.model",
    "train.stats.json",
)


def final_outputs(workdir: Path) -> dict[str, Path]:
    found = {}
    for top in ("data", "results"):
        for pattern in COMPARED:
            for path in (workdir / top).rglob(pattern):
                if "mirror" not in path.parts and not path.name.startswith("."):
                    found[str(path.relative_to(workdir))] = path
    return found


def half_written(workdir: Path) -> list[str]:
    """Temporary leftovers, and outputs that exist but do not parse or verify."""
    from aiayn.data.shards import ShardedCorpus

    bad = []
    for top in ("data", "results"):
        for path in (workdir / top).rglob("*"):
            rel = str(path.relative_to(workdir))
            if path.name.startswith(".") and (path.name.endswith(".tmp") or path.is_dir()):
                bad.append(f"{rel} (temporary, left behind)")
            elif path.suffix == ".json" and not path.name.startswith("."):
                try:
                    json.loads(path.read_text())
                except (ValueError, UnicodeDecodeError):
                    bad.append(f"{rel} (not JSON)")
            elif path.suffix == ".pt":
                try:
                    torch.load(path, map_location="cpu", weights_only=True)
                except Exception as error:  # any failure to load is what we count
                    bad.append(f"{rel} (does not load: {type(error).__name__})")
        for manifest in (workdir / top).rglob("manifest.json"):
            try:
                ShardedCorpus(manifest.parent, verify=True)
            except (ValueError, OSError) as error:
                bad.append(f"{manifest.parent.relative_to(workdir)} (shards: {error})")
    return bad


class TrainLogs:
    """What the training logs say about stopping and resuming, read after every fault: Snakemake
    empties a job's log when it runs the job again, so each attempt's lines are collected before."""

    PATTERNS = {
        "resumed": "resumed from",
        "stopped_with_checkpoint": "run again with the same --out-dir",
        "set_aside": "set aside as",
    }

    def __init__(self):
        self.lines: dict[str, set[str]] = {key: set() for key in self.PATTERNS}

    def scan(self, workdir: Path) -> None:
        for log in (workdir / "results").rglob("train.log"):
            for line in log.read_text(errors="replace").splitlines():
                for key, pattern in self.PATTERNS.items():
                    if pattern in line:
                        self.lines[key].add(f"{log}: {line}")

    def counts(self) -> dict[str, int]:
        return {key: len(lines) for key, lines in self.lines.items()}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=20, help="faults injected (K)")
    parser.add_argument("--seed", type=int, default=1, help="seeds the delays")
    parser.add_argument("--sigterm", action="store_true", help="SIGTERM instead of SIGKILL")
    parser.add_argument("--experiments", default="base,big,A1,parser", help="experiments kept (every stage kind)")
    parser.add_argument(
        "--train-steps", type=int, default=96, help="steps of every training (configs/test.yaml: 24, a few seconds)"
    )
    parser.add_argument(
        "--cpu-ranks",
        type=int,
        default=0,
        help="train every experiment as this many gloo CPU ranks under torchrun "
        "(train.cpu_ranks); 0: as the configs say (configs/test.yaml: big with 2)",
    )
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/aiayn-faults"))
    parser.add_argument("--reuse-reference", action="store_true", help="keep an earlier uninterrupted run")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    config = merged_config(args.experiments.split(","), args.train_steps)
    if args.cpu_ranks:
        config = with_cpu_ranks(config, args.cpu_ranks)
    signum = signal.SIGTERM if args.sigterm else signal.SIGKILL
    reference, faulted = args.workdir / "reference", args.workdir / "faulted"
    start = time.perf_counter()
    if not (args.reuse_reference and (reference / "results").is_dir()):
        make_copy(reference, config)
        status = Run(reference, args.cores).wait()
        if status != 0:
            print(f"the uninterrupted run failed (status {status}): see {reference}/snakemake.out")
            return 1
    clean_seconds = time.perf_counter() - start
    make_copy(faulted, config)
    start = time.perf_counter()
    result = inject(faulted, args.kills, args.seed, signum, args.cores)
    faulted_seconds = time.perf_counter() - start
    report(args, result, reference, faulted, clean_seconds, faulted_seconds)
    return 0 if result["final_status"] == 0 else 1


def report(args, result, reference, faulted, clean_seconds, faulted_seconds) -> None:
    ref, got = final_outputs(reference), final_outputs(faulted)
    same = [k for k in ref if k in got and fingerprint(ref[k]) == fingerprint(got[k])]
    different = [k for k in ref if k in got and k not in same]
    missing = sorted(set(ref) - set(got))
    hits: dict[str, int] = {}
    for fault in result["faults"]:
        if fault.get("hit"):
            hits[fault["hit"]] = hits.get(fault["hit"], 0) + 1
    name = "SIGTERM" if args.sigterm else "SIGKILL"
    print(
        f"\n{name} faults, K={args.kills}, seed {args.seed}, experiments {args.experiments}, "
        f"{args.train_steps} training steps, --cores {args.cores}, "
        f"cpu ranks per training: {args.cpu_ranks or 'as configured'}"
    )
    print(f"wall time: uninterrupted {clean_seconds:.0f} s, with faults {faulted_seconds:.0f} s")
    running: dict[str, int] = {}
    for fault in result["faults"]:
        for kind in {RULE_KIND.get(rule, "settings") for rule in fault.get("running", [])}:
            running[kind] = running.get(kind, 0) + 1
    print(
        f"faults injected: {sum(1 for f in result['faults'] if f.get('hit'))} "
        f"(by the stage kind that had started: {', '.join(f'{k} {hits.get(k, 0)}' for k in KINDS)}; "
        f"with a job running at the kill: {', '.join(f'{k} {running.get(k, 0)}' for k in [*KINDS, 'settings'])})"
    )
    print(
        f"runs that recovered: {result['recovered']} of {len(result['faults'])}; "
        f"final run status {result['final_status']}"
    )
    left = [line for fault in result["faults"] for line in fault.get("left_behind", [])]
    print(f"processes left behind by the faults (killed before the recovery): {len(left)}")
    for line in left:
        print(f"  {line}")
    print(f"training (log lines of every attempt): {result['training']}")
    print(f"outputs identical: {len(same)} of {len(ref)}; different: {len(different)}; missing: {len(missing)}")
    for key in different + missing:
        print(f"  {'DIFFERENT' if key in different else 'MISSING'} {key}")
    print(
        "compared: sha256 of every output but checkpoints (by content: every tensor's sha256 and every "
        "value; checkpoint_last.pt without RNG and wall-clock progress), summary.json without wall_seconds, "
        "log.csv without speed, time and memory, tables without their date and wall-clock columns (Table 2's cost, "
        "the experiments table's training time and tokens/s)"
    )
    bad = half_written(faulted)
    print(f"half-written files: {len(bad)}")
    for line in bad:
        print(f"  {line}")


if __name__ == "__main__":
    raise SystemExit(main())
