"""Throughput and peak memory of the data stages, against a plain single-process loop.

Input: the shared EN-FR training sample (``../shared/data/wmt/train_sample/moses-nc-5k.fr-en.*``,
5000 raw pairs) repeated ``scale`` times. Every stage runs as its CLI in a subprocess (as Snakemake
runs it); its wall time and peak RSS (``os.wait4``: the process and the workers it waited for) are
measured. The baseline is the obvious loop: one process, sacremoses normalize + tokenize, then
sentencepiece ``encode``, line by line, on the same input with the same model.

    PYTHONPATH=$PWD/src python benchmarks/data_pipeline.py --scales 1 10 --processes 1 2 --chunk-lines 2000

Prints a table; not a test. Run it once: the figures depend on what else the machine runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "wmt" / "train_sample"
LANGS = ("en", "fr")


def run_stage(module: str, *args) -> tuple[float, float]:
    """Run ``python -m aiayn.data.<module> ARGS``; returns (wall seconds, peak RSS in MiB)."""
    with tempfile.TemporaryFile() as stderr:  # a pipe could fill up and block the child
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", f"aiayn.data.{module}", *map(str, args)], stdout=subprocess.DEVNULL, stderr=stderr
        )
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            stderr.seek(0)
            raise RuntimeError(f"{module} failed:\n{stderr.read().decode()[-2000:]}")
    return seconds, usage.ru_maxrss / 1024


def make_input(work: Path, scale: int) -> int:
    """Write ``raw.{en,fr}``: the sample repeated ``scale`` times; returns the number of pairs."""
    for lang in LANGS:
        text = (SAMPLE / f"moses-nc-5k.fr-en.{lang}").read_bytes()
        with open(work / f"raw.{lang}", "wb") as handle:
            for _ in range(scale):
                handle.write(text)
    return 5000 * scale


def pipeline(work: Path, processes: int, chunk_lines: int) -> dict[str, tuple[float, float]]:
    """Every stage on ``work/raw.*``; returns {stage: (seconds, peak MiB)}."""
    results = {}

    def both(stage, module, args_for):
        times = [run_stage(module, *args_for(lang)) for lang in LANGS]
        results[stage] = (sum(t for t, _ in times), max(m for _, m in times))

    (work / "tokenize.json").write_text(json.dumps({"chunk_lines": chunk_lines}))
    (work / "bpe.json").write_text(json.dumps({"vocab_size": 8000}))
    both(
        "tokenize",
        "tokenize",
        lambda lang: (
            "--lang",
            lang,
            "--input",
            work / f"raw.{lang}",
            "--output",
            work / f"tok.{lang}",
            "--threads",
            processes,
            "--settings",
            work / "tokenize.json",
        ),
    )
    results["clean"] = run_stage(
        "clean",
        "--src-lang",
        "en",
        "--tgt-lang",
        "fr",
        "--corpora",
        work / "tok",
        "--out-prefix",
        work / "clean",
        "--stats",
        work / "clean.json",
    )
    results["bpe learn"] = run_stage(
        "bpe",
        "learn",
        "--inputs",
        work / "clean.en",
        work / "clean.fr",
        "--model-prefix",
        work / "spm",
        "--settings",
        work / "bpe.json",
        "--threads",
        processes,
    )
    both(
        "bpe encode",
        "bpe",
        lambda lang: (
            "encode",
            "--model",
            work / "spm.model",
            "--input",
            work / f"clean.{lang}",
            "--output",
            work / f"bpe.{lang}",
            "--threads",
            processes,
            "--chunk-lines",
            chunk_lines,
        ),
    )
    results["binarize"] = run_stage(
        "binarize",
        "--model",
        work / "spm.model",
        "--src",
        work / "bpe.en",
        "--tgt",
        work / "bpe.fr",
        "--out-dir",
        work / "bin",
        "--threads",
        processes,
        "--chunk-lines",
        chunk_lines,
    )
    return results


def baseline_worker(work: Path) -> None:
    """The plain loop (run in a subprocess by :func:`baseline`)."""
    import sentencepiece as spm
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    sp = spm.SentencePieceProcessor(model_file=str(work / "spm.model"))
    for lang in LANGS:
        normalizer, tokenizer = MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang)
        with (
            open(work / f"raw.{lang}", encoding="utf-8") as src,
            open(work / f"baseline.{lang}", "w", encoding="utf-8") as out,
        ):
            for line in src:
                tokens = tokenizer.tokenize(
                    normalizer.normalize(line.rstrip("\n")), aggressive_dash_splits=True, escape=False, return_str=True
                )
                out.write(" ".join(sp.encode(tokens, out_type=str)) + "\n")


def baseline(work: Path) -> tuple[float, float]:
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, "--baseline-worker", str(work)])
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("baseline failed")
    return time.perf_counter() - start, usage.ru_maxrss / 1024


def report(label: str, pairs: int, results: dict[str, tuple[float, float]]) -> None:
    total = sum(t for t, _ in results.values())
    print(f"\n{label}: {pairs} pairs")
    print(f"  {'stage':<12} {'seconds':>8} {'pairs/s':>9} {'peak MiB':>9}")
    for stage, (seconds, mib) in {**results, "end to end": (total, max(m for _, m in results.values()))}.items():
        print(f"  {stage:<12} {seconds:8.2f} {pairs / seconds:9.0f} {mib:9.0f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--chunk-lines",
        type=int,
        default=2000,
        help="lines per work unit: small enough that the 1x input makes several",
    )
    parser.add_argument("--baseline-worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.baseline_worker:
        baseline_worker(Path(args.baseline_worker))
        return 0
    if not SAMPLE.is_dir():
        raise SystemExit(f"shared training sample not found at {SAMPLE}")
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    for scale in args.scales:
        with tempfile.TemporaryDirectory(prefix="aiayn-bench-") as tmp:
            work = Path(tmp)
            pairs = make_input(work, scale)
            for processes in args.processes:
                report(f"{scale}x input, {processes} process(es)", pairs, pipeline(work, processes, args.chunk_lines))
            seconds, mib = baseline(work)
            tok_enc = "tokenize + bpe encode"
            print(
                f"  baseline loop ({tok_enc}, 1 process): {seconds:.2f} s, {pairs / seconds:.0f} pairs/s, "
                f"peak {mib:.0f} MiB"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
