"""The data stages at WMT14's size, through the workflow as a user runs it, and the trainer's start at EN-FR's.

Three commands:

``corpus``: a WMT14-EN-DE-sized corpus as a user's plain files, from the real sentences under
``../shared/data/wmt``: the 10,000 WMT EN-DE training pairs of ``train_sample/onmt-wmt-ende-10k.tok.*``
(Moses-detokenized back to raw text) and newstest2012's 3,003 pairs, drawn with replacement (seeded)
into three training corpora of ``--pairs`` pairs together (42.6%, 53.0% and 4.4% of them, so that
jobs differ in size as a real task's do); newstest2013 and newstest2014 are the dev and test sets,
read where they lie. Writes ``OUT/<corpus>.{en,de}`` and ``OUT/overlay.yaml``, the overlay that points
the paper's ``en-de`` task at them (``config.yaml`` otherwise unchanged, ``data_dir``
``OUT/data``).

``stages``: ``snakemake --cores N`` on ``config.yaml`` plus that overlay, one stage at a time
(``--until`` its rules, target the EN-DE shards): per stage the wall time of its Snakemake run, its
jobs and the longest one's wall time, the CPU time of that run and every process it started
(Snakemake's own planning included: exact, from ``getrusage``), the largest job's peak RSS (its
processes together, from the jobs' ``D/benchmarks/`` records: Snakemake samples every 0.5 s for
30 s, then every 30 s, so a short job's peak can be missed), the largest peak of one job's main
process and of one worker process (exact: the ``resources:`` line each data command logs at its end)
and the disk its outputs take.

``trainer``: ``--pairs`` pairs of shards with ids drawn at random and lengths drawn from a real
corpus's shards (``--lengths-from``, e.g. the ``stages`` run's), then ``python -m aiayn.train`` with a
small model for one step, on 1 and on 8 gloo ranks (``--ranks``): the seconds from launch to its
first step's log line and each rank's peak RSS until then (sampled every 0.2 s).

    PYTHONPATH=$PWD/src python benchmarks/wmt_scale.py corpus --pairs 4508785 --out /tmp/wmt45
    PYTHONPATH=$PWD/src python benchmarks/wmt_scale.py stages --corpus /tmp/wmt45 --cores 2
    PYTHONPATH=$PWD/src python benchmarks/wmt_scale.py trainer --pairs 40800000 --work /tmp/start \\
        --lengths-from /tmp/wmt45/data/bin/en-de/train --ranks 1 8

Prints tables; not a test. The figures and what they mean: docs/data.md, "Throughput and memory".
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
WMT = ROOT.parent / "shared" / "data" / "wmt"
LANGS = ("en", "de")
# name: share of the training pairs
CORPORA = {"europarl_v7_files": 0.426, "commoncrawl_files": 0.530, "news_commentary_v9_files": 0.044}
RESOURCES = re.compile(r"resources: .*peak RSS (\d+) MiB \(the largest worker (\d+) MiB\)")
PEAKS = ("process", "worker")
HELD_OUT = {"newstest2013_files": "newstest2013.{lang}", "newstest2014_files": "newstest2014-full.en-de.{lang}"}
# stage: (the rules --until stops at, in one job and in parts (data.chunks), where its jobs' records are
# under D/benchmarks, its outputs under D); a stage's rules of the other kind must not be named, or
# Snakemake takes both for the same file
STAGES = {
    "extract": (["convert"], ["convert"], ["download", "extract"], ["downloads", "raw"]),
    "tokenize": (["tokenize"], ["tokenize", "tokenize_gather"], ["tokenize"], ["tok"]),
    "clean": (["clean_en_de"], ["clean_en_de_gather"], ["clean"], ["clean"]),
    "bpe learn": (["bpe_learn"], ["bpe_learn"], ["bpe/en-de.learn"], ["bpe/en-de/spm.model", "bpe/en-de/spm.vocab"]),
    "encode": (
        ["bpe_encode"],
        ["bpe_encode", "bpe_encode_gather"],
        ["bpe/en-de.train", "bpe/en-de.dev", "bpe/en-de.test"],
        [],
    ),
    "binarize": ([], [], ["binarize"], ["bin"]),
}


def pool() -> list[tuple[str, str]]:
    """The real EN-DE pairs the corpus draws from: raw text."""
    from aiayn.data.detokenize import MosesDetok
    from aiayn.data.lines import read_lines

    sides = []
    for lang in LANGS:
        detok = MosesDetok(lang, unescape=True)
        sample = detok(read_lines(WMT / f"train_sample/onmt-wmt-ende-10k.tok.{lang}"))
        sides.append(sample + read_lines(WMT / f"plain/newstest2012.{lang}"))
    return list(zip(*sides))


def make_corpus(out: Path, pairs: int, seed: int) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    real = pool()
    rng = np.random.default_rng(seed)
    sizes = [int(pairs * share) for share in CORPORA.values()]
    sizes[0] += pairs - sum(sizes)
    sources = {}
    for (name, _), size in zip(CORPORA.items(), sizes):
        handles = [open(out / f"{name}.{lang}", "w", encoding="utf-8") for lang in LANGS]
        for start in range(0, size, 1_000_000):
            drawn = rng.integers(0, len(real), min(1_000_000, size - start))
            for side, handle in enumerate(handles):
                handle.write("".join(real[i][side] + "\n" for i in drawn))
        for handle in handles:
            handle.close()
        sources[name] = {"files": {lang: str(out / f"{name}.{lang}") for lang in LANGS}}
    for name, pattern in HELD_OUT.items():
        sources[name] = {"files": {lang: str(WMT / "plain" / pattern.format(lang=lang)) for lang in LANGS}}
    overlay = {
        "data_dir": str(out / "data"),
        "results_dir": str(out / "results"),
        "sources": sources,
        "tasks": {"en-de": {"train": list(CORPORA), "dev": "newstest2013_files", "test": "newstest2014_files"}},
    }
    (out / "overlay.yaml").write_text(yaml.safe_dump(overlay, sort_keys=False))
    print(f"{pairs} pairs from {len(real)} real ones: {dict(zip(CORPORA, sizes))}; overlay {out / 'overlay.yaml'}")
    return overlay


def _records(data: Path, prefixes: list[str]) -> list[dict]:
    """The stage's jobs: each one's Snakemake record, with ``process`` and ``worker``, the peak RSS in MiB
    of its main process and of its largest worker from the ``resources:`` line of its log (exact)."""
    rows = []
    for prefix in prefixes:
        folder, _, start = prefix.rpartition("/") if "/" in prefix else (prefix, "", "")
        for path in sorted((data / "benchmarks" / folder).rglob("*.tsv")):
            if path.name.startswith(start):
                with open(path, newline="") as handle:
                    row = list(csv.DictReader(handle, delimiter="\t"))[-1]
                log = (data / "logs" / path.relative_to(data / "benchmarks")).with_suffix(".log")
                found = RESOURCES.findall(log.read_text()) if log.exists() else []
                row["process"], row["worker"] = map(float, found[-1]) if found else (float("nan"),) * 2
                rows.append(row)
    return rows


def _disk(data: Path, outputs: list[str]) -> int:
    total = 0
    for name in outputs:
        path = data / name
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()] if path.exists() else []
        total += sum(p.stat().st_size for p in files)
    return total


def _children_cpu() -> float:
    """CPU seconds of every finished child process and its descendants (each waits for its own)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_stages(corpus: Path, cores: int, extra: list[str]) -> None:
    from aiayn.config import load as load_config
    from aiayn.data.lines import count_lines

    overlay = yaml.safe_load((corpus / "overlay.yaml").read_text())
    data = Path(overlay["data_dir"])
    pairs = sum(count_lines(corpus / f"{name}.en") for name in CORPORA)
    targets = [str(data / f"bin/en-de/{split}/manifest.json") for split in ("train", "dev", "test")]
    base = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--directory", str(ROOT)]
    base += ["--cores", str(cores), "--configfile", str(ROOT / "config.yaml"), str(corpus / "overlay.yaml")]
    chunks = load_config(ROOT / "config.yaml", corpus / "overlay.yaml")["data"]["chunks"]
    load = os.getloadavg()[0]
    print(f"{pairs} training pairs, data.chunks {chunks}; {os.cpu_count()} CPUs, load average {load:.1f} at start")
    print(
        f"{'stage':<10} {'wall s':>8} {'jobs':>5} {'longest s':>9} {'CPU s':>9} {'pairs/CPU-s':>11} {'job MiB':>8} "
        f"{'process':>8} {'worker':>7} {'disk MiB':>9}"
    )
    for stage, (whole, in_parts, records, outputs) in STAGES.items():
        until = in_parts if chunks > 1 else whole
        start, used = time.perf_counter(), _children_cpu()
        command = [*base, *extra, *(["--until", *until] if until else []), "--", *targets]
        result = subprocess.run(command, capture_output=True, text=True)
        wall, cpu = time.perf_counter() - start, _children_cpu() - used
        if result.returncode:
            raise SystemExit(f"{stage}: snakemake failed\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}")
        rows = _records(data, records)
        rss = max((float(r["max_rss"]) for r in rows if r["max_rss"] != "NA"), default=float("nan"))
        longest = max((float(r["s"]) for r in rows), default=float("nan"))
        process, worker = (max((r[k] for r in rows if r[k] == r[k]), default=float("nan")) for k in PEAKS)
        disk = _disk(data, outputs or [f"bpe/en-de/{s}.{lang}" for s in ("train", "dev", "test") for lang in LANGS])
        rate = pairs / cpu if cpu else float("nan")
        print(
            f"{stage:<10} {wall:8.0f} {len(rows):5d} {longest:9.0f} {cpu:9.0f} {rate:11.0f} {rss:8.0f} {process:8.0f} "
            f"{worker:7.0f} "
            f"{disk / 2**20:9.0f}"
        )
    manifest = json.loads((data / "bin/en-de/train/manifest.json").read_text())
    print(f"shards: {len(manifest['shards'])}, {manifest['sentences']} pairs")


def write_shards(out: Path, pairs: int, lengths_from: Path, vocab: int, seed: int) -> None:
    """``pairs`` pairs with random ids and lengths drawn from ``lengths_from``'s shards (train) and a
    small dev split."""
    from aiayn.data.shards import ShardedCorpus, ShardWriter

    real = ShardedCorpus(lengths_from)
    src_lengths, tgt_lengths = np.asarray(real.src_lengths), np.asarray(real.tgt_lengths)
    rng = np.random.default_rng(seed)
    for split, count in (("train", pairs), ("dev", 3000)):
        if (out / split / "manifest.json").exists():
            continue
        writer = ShardWriter(out / split, vocab)
        for start in range(0, count, 1_000_000):
            drawn = rng.integers(0, len(src_lengths), min(1_000_000, count - start))
            src, tgt = src_lengths[drawn], tgt_lengths[drawn]
            writer.add_chunk(rng.integers(4, vocab, int(src.sum())), src, rng.integers(4, vocab, int(tgt.sum())), tgt)
        writer.close({"lengths_from": str(lengths_from)})


def first_step(work: Path, data: Path, ranks: int, threads: int) -> tuple[float, float, list[float]]:
    """Launch a one-step training on ``ranks`` gloo ranks; returns the seconds from launch to its set-up's
    end (the log's ``model:`` line, after the data is indexed and the batches planned) and to its first
    step's log line, and each rank's peak RSS in MiB until then."""
    import psutil

    out = work / f"train-{ranks}"
    subprocess.run(["rm", "-rf", str(out)], check=True)
    settings = {
        "experiment": "start",
        "task": "en-fr",
        "model": {"n_layers": 1, "d_model": 64, "d_ff": 128, "n_heads": 2, "d_k": 32, "d_v": 32},
        "train": {
            "train_steps": 1,
            "gpus": 0,
            "cpu_ranks": ranks,
            "log_every_steps": 1,
            "dev_every_steps": 0,
            "checkpoint_minutes": 0,
            "checkpoint_steps": 0,
        },
    }
    path = work / f"settings-{ranks}.json"
    path.write_text(json.dumps(settings))
    log = work / f"train-{ranks}.log"
    log.unlink(missing_ok=True)
    command = [sys.executable, "-m", "aiayn.train", "--data", str(data), "--settings", str(path)]
    start, launched = time.perf_counter(), datetime.datetime.now()
    proc = subprocess.Popen([*command, "--out-dir", str(out), "--threads", str(threads), "--log", str(log)])
    peaks: dict[int, float] = {}
    seen = None
    while proc.poll() is None and seen is None:
        try:
            family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        for member in family:
            try:
                is_rank = member.pid == proc.pid if ranks == 1 else "LOCAL_RANK" in member.environ()
                if is_rank:  # under torchrun: its workers, not the launcher or the agent
                    peaks[member.pid] = max(peaks.get(member.pid, 0), member.memory_info().rss / 2**20)
            except psutil.NoSuchProcess:
                pass
        if log.exists() and re.search(r"step 1/1", log.read_text()):
            seen = time.perf_counter() - start
        time.sleep(0.2)
    proc.wait()
    if seen is None:
        raise SystemExit(f"no first step ({ranks} ranks):\n{log.read_text()[-3000:] if log.exists() else ''}")
    stamp = re.search(r"^(\S+ \S+) INFO aiayn.train.trainer: model:", log.read_text(), re.M)
    ready = (datetime.datetime.strptime(stamp[1], "%Y-%m-%d %H:%M:%S,%f") - launched).total_seconds()
    rank_peaks = sorted(peaks.values(), reverse=True)[:ranks]
    return ready, seen, rank_peaks


def run_trainer(args: argparse.Namespace) -> None:
    data = args.work / "bin"
    start = time.perf_counter()
    write_shards(data, args.pairs, args.lengths_from, args.vocab, args.seed)
    train = json.loads((data / "train/manifest.json").read_text())
    print(
        f"shards: {train['sentences']} pairs, {train['src_tokens'] + train['tgt_tokens']} tokens, "
        f"{len(train['shards'])} shard(s), written in {time.perf_counter() - start:.0f} s"
    )
    print(f"{'ranks':>5} {'set-up s':>8} {'first step s':>12}  peak RSS per rank, MiB")
    for ranks in args.ranks:
        ready, seconds, peaks = first_step(args.work, data, ranks, args.threads)
        print(f"{ranks:5d} {ready:8.1f} {seconds:12.1f}  {', '.join(f'{p:.0f}' for p in peaks)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    corpus = commands.add_parser("corpus", help="write the corpus and its overlay")
    corpus.add_argument("--pairs", type=int, default=4_508_785, help="training pairs (WMT14 EN-DE's raw count)")
    corpus.add_argument("--out", type=Path, required=True)
    corpus.add_argument("--seed", type=int, default=1)
    stages = commands.add_parser("stages", help="run and measure the data stages on a corpus")
    stages.add_argument("--corpus", type=Path, required=True, help="a `corpus` command's --out")
    stages.add_argument("--cores", type=int, default=os.cpu_count())
    stages.add_argument("--snakemake-args", nargs=argparse.REMAINDER, default=[], help="passed on")
    trainer = commands.add_parser("trainer", help="the trainer's start on synthetic shards")
    trainer.add_argument("--pairs", type=int, default=40_800_000, help="pairs (WMT14 EN-FR's raw count)")
    trainer.add_argument("--work", type=Path, required=True)
    trainer.add_argument("--lengths-from", type=Path, required=True, help="a shards directory (its train split)")
    trainer.add_argument("--vocab", type=int, default=32_000)
    trainer.add_argument("--ranks", type=int, nargs="+", default=[1, 8])
    trainer.add_argument("--threads", type=int, default=os.cpu_count(), help="CPUs the ranks share")
    trainer.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.command == "corpus":
        make_corpus(args.out, args.pairs, args.seed)
    elif args.command == "stages":
        run_stages(args.corpus, args.cores, args.snakemake_args)
    else:
        run_trainer(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
