"""Training throughput of :class:`aiayn.train.trainer.Trainer`: target tokens per second per update.

    PYTHONPATH=src python benchmarks/train_throughput.py --threads 2 --rounds 2 \
        --fairseq-bin /work/venvs/fairseq/bin                                      # CPU, side by side
    PYTHONPATH=src python benchmarks/train_throughput.py --gpu --models base big   # GPU, bf16, paper batch

CPU: d_model 256, 3+3 layers, 4 heads, d_ff 1024, shared embeddings, about 4096 target tokens per
update, on 20,000 synthetic pairs of 10-40 word ids (vocabulary 10,000); the peers install as
``benchmarks/peers.md`` says. End to end: ``Trainer.run`` for 50 updates with a ``log.csv`` row
per update (its tokens/s covers everything the loop does between two rows: batches, step,
bookkeeping), the median of updates 11-50. With ``--fairseq-bin DIR`` (a virtual environment's
``bin`` holding ``fairseq-preprocess`` and ``fairseq-train``) fairseq-train runs the same data and
shape, its own ``wps`` per update (log interval 1) over updates 11-50 (``--updates`` changes 50);
``--rounds N`` alternates the two N times (ours, fairseq, ours, fairseq, ...) so that load from other
jobs hits both alike, and reports each round's ratio and their median, with the load average before
and after. ``--cpu-matmul mkl onednn``: ours once with each value of ``train.cpu_matmul`` per round (the
first's ratio is ``aiayn_vs_fairseq``). The output names the CPU and the instruction set torch uses.
GPU: the paper's base and big models at 25,000 target tokens per step (two forward passes of
12,500), bf16 autocast; prints tokens/s, MFU and a torch.profiler summary of a few steps.
Run it on an idle machine: other jobs on the same cores change the figures a lot.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from aiayn.data.shards import ShardedCorpus, ShardWriter
from aiayn.train.distributed import DistEnv
from aiayn.train.trainer import Trainer, build_trainer

log = logging.getLogger("benchmark")

CPU_MODEL = {
    "n_layers": 3,
    "d_model": 256,
    "d_ff": 1024,
    "n_heads": 4,
    "d_k": 64,
    "d_v": 64,
    "dropout": 0.1,
    "attention_dropout": 0.0,
    "relu_dropout": 0.0,
    "positional": "sinusoid",
    "max_positions": 1024,
    "norm": "post",
    "layer_norm_eps": 1e-6,
    "share_embeddings": True,
}
PAPER_MODELS = {
    "base": {**CPU_MODEL, "n_layers": 6, "d_model": 512, "d_ff": 2048, "n_heads": 8},
    "big": {**CPU_MODEL, "n_layers": 6, "d_model": 1024, "d_ff": 4096, "n_heads": 16, "dropout": 0.3},
}


def synthetic_task(root: Path, pairs: int, vocab: int, lengths: tuple[int, int], seed: int = 0) -> Path:
    """Random pairs of word ids (target length within 20% of the source's), as ShardWriter shards."""
    rng = np.random.default_rng(seed)
    for split, n in (("train", pairs), ("dev", 100)):
        with ShardWriter(root / split, vocab_size=vocab) as writer:
            for _ in range(n):
                s = int(rng.integers(*lengths))
                t = max(1, int(s * rng.uniform(0.8, 1.2)))
                writer.add(rng.integers(4, vocab, s), rng.integers(4, vocab, t))
    return root


def lengths_task(
    root: Path, src_lengths: np.ndarray, tgt_lengths: np.ndarray, pairs: int, vocab: int, seed: int = 0
) -> Path:
    """``pairs`` pairs of random word ids whose (source, target) lengths are drawn with replacement from the
    pairs of ``src_lengths`` and ``tgt_lengths`` (a real corpus's joint distribution: the ladder's shapes
    and padding are that corpus's), as ShardWriter shards written a chunk at a time; a dev split of 100."""
    rng = np.random.default_rng(seed)
    for split, n in (("train", pairs), ("dev", 100)):
        with ShardWriter(root / split, vocab_size=vocab) as writer:
            for start in range(0, n, 1_000_000):
                pick = rng.integers(0, len(src_lengths), min(n - start, 1_000_000))
                src, tgt = np.maximum(src_lengths[pick], 1), np.maximum(tgt_lengths[pick], 1)
                ids = rng.integers(4, vocab, int(src.sum()) + int(tgt.sum()))
                writer.add_chunk(ids[: src.sum()], src, ids[src.sum() :], tgt)
    return root


def settings(model: dict, tokens_per_step: int, per_batch: int, precision: str) -> dict:
    train = {
        "train_steps": 10**6,
        "tokens_per_step": tokens_per_step,
        "tokens_per_pass": per_batch,
        "precision": precision,
        "gpus": 1,
        "checkpoint_minutes": 0,
        "dev_every_steps": 0,
        "log_every_steps": 10**6,
    }
    return {"experiment": "benchmark", "task": "synthetic", "model": model, "train": train}


def time_updates(trainer: Trainer, updates: int) -> list[float]:
    """Target tokens per second of each of ``updates`` optimizer steps (this rank's tokens)."""
    rates = []
    for _ in range(updates):
        if trainer.setup.env.device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        tokens = trainer.train_step()
        if trainer.setup.env.device.type == "cuda":
            torch.cuda.synchronize()
        rates.append(tokens / (time.perf_counter() - start))
    trainer.pending.ready(lag=0)
    return rates


def cpu_benchmark(work: Path, threads: int, round_: int = 0, updates: int = 50, cpu_matmul: str = "mkl") -> dict:
    """``Trainer.run`` for ``updates`` updates; tokens/s per update from its ``log.csv``, median from update 11."""
    torch.set_num_threads(threads)
    data = work / "data"
    if not (data / "train" / "manifest.json").exists():
        synthetic_task(data, 20000, 10000, (10, 41))
    run = settings(CPU_MODEL, 4096, 4096, "fp32")
    run["train"].update(train_steps=updates, log_every_steps=1, checkpoint_steps=0, cpu_matmul=cpu_matmul)
    out = work / f"out-{round_}-{cpu_matmul}"
    build_trainer(run, data, out, DistEnv(0, 1, torch.device("cpu"))).run()
    with open(out / "log.csv", encoding="utf-8") as handle:
        rates = {int(r["step"]): float(r["tokens_per_s"]) for r in csv.DictReader(handle) if r["tokens_per_s"]}
    window = [rates[u] for u in sorted(rates) if 11 <= u <= updates]
    return {
        "device": "cpu",
        "toolkit": "aiayn",
        "cpu_matmul": cpu_matmul,
        "threads": threads,
        "updates": f"11-{updates}",
        "median_tokens_per_s": statistics.median(window),
        "min": min(window),
        "max": max(window),
    }


def export_text(split_dir: Path, prefix: Path) -> None:
    """Write a shard split as ``<prefix>.src`` / ``<prefix>.tgt`` lines of ``w<id>`` words (fairseq's input)."""
    corpus = ShardedCorpus(split_dir)
    for side in ("src", "tgt"):
        with open(f"{prefix}.{side}", "w", encoding="utf-8") as out:
            for i in range(len(corpus)):
                out.write(" ".join(f"w{t}" for t in getattr(corpus, side)(i)) + "\n")


def fairseq_benchmark(work: Path, bin_dir: Path, threads: int, updates: int = 50) -> dict:
    """fairseq-train on the same data and shape; median ``wps`` (target tokens/s) from update 11."""
    data = work / "data"
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    if not (work / "fairseq-bin").exists():
        for split, name in (("train", "train"), ("dev", "valid")):
            export_text(data / split, work / name)
        subprocess.run(
            [
                str(bin_dir / "fairseq-preprocess"),
                "--source-lang",
                "src",
                "--target-lang",
                "tgt",
                "--trainpref",
                str(work / "train"),
                "--validpref",
                str(work / "valid"),
                "--joined-dictionary",
                "--destdir",
                str(work / "fairseq-bin"),
                "--workers",
                "1",
            ],
            check=True,
            env=env,
            capture_output=True,
        )
    arch = [
        "--arch",
        "transformer",
        "--encoder-layers",
        "3",
        "--decoder-layers",
        "3",
        "--encoder-embed-dim",
        "256",
        "--decoder-embed-dim",
        "256",
        "--encoder-ffn-embed-dim",
        "1024",
        "--decoder-ffn-embed-dim",
        "1024",
        "--encoder-attention-heads",
        "4",
        "--decoder-attention-heads",
        "4",
        "--share-all-embeddings",
        "--dropout",
        "0.1",
    ]
    train = [
        "--optimizer",
        "adam",
        "--adam-betas",
        "(0.9, 0.98)",
        "--lr",
        "7e-4",
        "--lr-scheduler",
        "inverse_sqrt",
        "--warmup-updates",
        "4000",
        "--criterion",
        "label_smoothed_cross_entropy",
        "--label-smoothing",
        "0.1",
        "--max-tokens",
        "4096",
        "--max-update",
        str(updates),
        "--cpu",
        "--num-workers",
        "0",
        "--disable-validation",
        "--no-save",
        "--seed",
        "1",
        "--log-format",
        "json",
        "--log-interval",
        "1",
    ]
    run = subprocess.run(
        [str(bin_dir / "fairseq-train"), str(work / "fairseq-bin"), *arch, *train],
        check=True,
        env=env,
        capture_output=True,
        text=True,
    )
    rates = {}
    for line in (run.stdout + run.stderr).splitlines():
        start = line.find("{")
        if start >= 0 and '"wps"' in line:
            entry = json.loads(line[start:])
            rates[int(entry["num_updates"])] = float(entry["wps"])
    window = [rates[u] for u in sorted(rates) if 11 <= u <= updates]
    return {
        "device": "cpu",
        "toolkit": "fairseq",
        "threads": threads,
        "updates": f"11-{updates}",
        "median_tokens_per_s": statistics.median(window),
        "min": min(window),
        "max": max(window),
    }


def gpu_benchmark(work: Path, name: str, profile: bool) -> dict:
    data = synthetic_task(work / f"data-{name}", 60000, 37000, (10, 41))
    trainer = build_trainer(
        settings(PAPER_MODELS[name], 25000, 12500, "bf16"),
        data,
        work / f"out-{name}",
        DistEnv(0, 1, torch.device("cuda")),
    )
    rates = time_updates(trainer, 30)
    median = statistics.median(rates[10:])
    result = {
        "model": name,
        "device": torch.cuda.get_device_name(),
        "median_tokens_per_s_updates_11_30": median,
        "mfu": trainer.setup.mfu(median),
        "flops_per_token": trainer.setup.flops_per_token,
        "peak_memory_gib": torch.cuda.max_memory_allocated() / 2**30,
    }
    if profile:
        from torch.profiler import ProfilerActivity
        from torch.profiler import profile as torch_profile

        with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            time_updates(trainer, 3)
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=15))
    return result


def cpu_identity() -> dict:
    """What the figures depend on beyond the code: the CPU (``/proc/cpuinfo``'s model name, family and
    model) and the instruction set torch's kernels use; oneDNN against MKL reversed between two CPUs."""
    info = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "cpu family", "model") and key.strip() not in info:
                    info[key.strip()] = value.strip()
    except OSError:
        pass
    return {"cpu": info, "torch_cpu_capability": torch.backends.cpu.get_cpu_capability()}


def side_by_side(
    work: Path,
    threads: int,
    rounds: int,
    fairseq_bin: Path | None,
    updates: int = 50,
    cpu_matmuls: tuple[str, ...] = ("mkl",),
) -> dict:
    """``rounds`` alternations of ours (once per ``cpu_matmuls`` entry) and fairseq's (if given) on the
    same data; each of ours' ratio to the fairseq run of its round."""
    runs, ratios = [], {m: [] for m in cpu_matmuls}
    load_before = os.getloadavg()
    for round_ in range(rounds):
        ours = {m: cpu_benchmark(work, threads, round_, updates, m) | {"round": round_ + 1} for m in cpu_matmuls}
        runs.extend(ours.values())
        if fairseq_bin:
            theirs = fairseq_benchmark(work, fairseq_bin, threads, updates) | {"round": round_ + 1}
            runs.append(theirs)
            for m in cpu_matmuls:
                ratios[m].append(ours[m]["median_tokens_per_s"] / theirs["median_tokens_per_s"])
    result = {"runs": runs, "load_average_before": load_before, "load_average_after": os.getloadavg(), **cpu_identity()}
    for m, values in ratios.items():
        if values:
            name = "aiayn_vs_fairseq" if m == cpu_matmuls[0] else f"aiayn_{m}_vs_fairseq"
            result |= {
                f"{name}_per_round": [round(r, 3) for r in values],
                f"{name}_median": round(statistics.median(values), 3),
            }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1, help="CPU: alternate ours and fairseq's this many times")
    parser.add_argument("--updates", type=int, default=50, help="CPU: updates per run (the median is from update 11)")
    parser.add_argument(
        "--cpu-matmul",
        nargs="+",
        default=["mkl"],
        choices=("mkl", "onednn"),
        help="CPU: our float32 products (train.cpu_matmul); several run one after the other per round",
    )
    parser.add_argument("--gpu", action="store_true", help="benchmark the paper's models on CUDA instead")
    parser.add_argument("--models", nargs="+", default=["base", "big"], choices=sorted(PAPER_MODELS))
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument(
        "--fairseq-bin", type=Path, default=None, help="bin/ of a venv with fairseq, for a side-by-side run"
    )
    parser.add_argument("--output", type=Path, default=None, help="also write the results as JSON")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="aiayn-bench-") as tmp:
        if args.gpu:
            results = [gpu_benchmark(Path(tmp), name, not args.no_profile) for name in args.models]
        else:
            results = side_by_side(
                Path(tmp), args.threads, args.rounds, args.fairseq_bin, args.updates, tuple(args.cpu_matmul)
            )
    text = json.dumps(results, indent=2)
    print(text)
    if args.output:
        args.output.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
