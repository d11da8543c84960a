"""The GPU acceptance run: every figure a lent GPU must give, one JSON file per call.

    PYTHONPATH=src python benchmarks/gpu_acceptance.py --sections throughput --modes eager compiled \
        --lengths .gpu/lengths-16000.npz --output $OUT/F.json                               # a GPU machine
    PYTHONPATH=src python benchmarks/gpu_acceptance.py --device cpu --tiny --output F.json   # CI

``benchmarks/gpu/README.md`` holds the lease plan: which sections, models and modes go into which
call, in what order, and how many minutes each takes. ``--sections``, ``--models`` and ``--modes``
select; the JSON is written after every section and every throughput run, with ``complete`` false
until the last, so a call cut at its time limit keeps what it measured.

Sections of the JSON (each with ``pass`` where there is a criterion; ``measured_bf16_tflops`` at the
top: an 8192-cubed bf16 product on random data, the ceiling a second MFU is given against):
- ``throughput``: per model (base and big at the paper's 25,000 target tokens a step in one forward
  pass; ``--tiny``: a tiny model, 1,024) and mode (eager; compiled, ``train.compile``; captured,
  ``train.compile_mode: reduce-overhead``, CUDA graphs), in that order (:func:`throughput`), on random
  ids at a real corpus's lengths (``--lengths``), batches padded to the ladder of 64 shapes: the
  warm-up (every shape once, twice captured) and its first step (the compilation), target tokens/s
  over ``--timed-steps`` steps between two synchronizations, MFU against the card's data-sheet peak
  (:data:`aiayn.runtime.gpus.CARDS`) and against the measured one, peak memory, and from one profiled
  step the attention kernels, the share of the step the GPU ran nothing and the device time by kind
  of kernel. Compiled runs report their graphs (:func:`aiayn.train.compiled.graph_report`) and pass
  only with one graph, no break, no eager fallback (and captured, with CUDA graphs recorded).
- ``decode``: a model trained briefly on a copy task decodes the same sentences in fp32 and in bf16
  autocast: the share of identical hypotheses and, where they differ, how much worse the fp32 model
  scores bf16's choice (pass: on average within 1%, :func:`decode_check`; judged on GPUs with bf16
  tensor cores); and beam-4 sentences/s of the base model on 3,003 sentences in fp32 and the device's
  ``auto`` precision (:func:`decode_speed`).
- ``bf16_agreement``: the same 200 training steps in fp32 and bf16 from one seed, the loss curves'
  gaps against a criterion fixed in advance (:func:`bf16_agreement`).
- ``host_syncs``: CUDA's own count of synchronizing operations (``torch.cuda.set_sync_debug_mode``)
  over training steps (the step and the reading of its statistics a step late) and over a beam
  search, by the line that caused each and the project's line that led there (:func:`sync_site`).
  Pass: none in training, and in decoding only the candidates' copy to the host, one per step
  (``aiayn/decode/beam.py`` ``_to_host``); ``tests/test_cuda_path.py`` takes the same inventory on
  a CPU. Skipped on a CPU.
- ``sdpa_shapes``: per attention backend, the first and second call at new shapes (:func:`sdpa_shapes`).
  Skipped on a CPU.
- ``resume``: ``python -m aiayn.train`` stopped with SIGTERM (what SLURM sends on preemption) after
  its first checkpoint, started again, and compared with an uninterrupted run: exit status 143,
  the same steps, losses within 1e-3 relative (exactly equal on a CPU), final weights' largest difference.
- ``resume_ranks``: the same under torchrun with 2 ranks (2 GPUs, NCCL; on a CPU 2 gloo ranks,
  ``train.cpu_ranks: 2``), compared step by step (:func:`resume_check`). Skipped with fewer than 2 GPUs.
- ``memory``: memory that runs out for real under a limit (on CUDA the caching allocator's, on a CPU
  RLIMIT_DATA): a training whose passes grow past it ends with the trainer's out-of-memory line naming
  train.tokens_per_pass, and smaller passes resume it; a decoding batch that does not fit is searched
  a sentence at a time (:func:`memory_check`).
- ``ddp`` and ``compile_ddp``: with 2 or more GPUs, ``train.gpus: 2`` (torchrun, NCCL) against one
  GPU with the same step, eager and compiled (:func:`ddp_verdict`). Skipped with one GPU or on a CPU.

Every section is a dict; a skipped one is ``{"skipped": why}``; one that raised is ``{"pass": false,
"error": ..., "traceback": ...}`` and the later sections still run. ``pass`` at the top is false when any
section's ``pass`` is false. Dynamo is reset before every section and every throughput run: its
recompile limit counts the compiled steps of the whole process.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import csv
import functools
import json
import logging
import os
import platform
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import torch
from decode_speed import copy_batch, random_sentences, train_copy_model
from torch.autograd import DeviceType
from train_throughput import PAPER_MODELS, lengths_task, synthetic_task, time_updates

from aiayn.data.shards import ShardWriter
from aiayn.decode.beam import SpecialIds, gnmt_length_penalty, translate_sentences
from aiayn.io import write_json
from aiayn.model import Transformer
from aiayn.options import DecodeConfig, ModelConfig
from aiayn.options.train import GPU_BATCH_SHAPES
from aiayn.paths import TrainPaths
from aiayn.runtime.checkpoint import list_checkpoints, load_checkpoint
from aiayn.runtime.devices import device_name
from aiayn.runtime.precision import (
    autocast_for,
    avoid_cudnn_attention,
    enable_tf32,
    native_bf16,
    resolve_precision,
    tf32_matmuls,
)
from aiayn.train.compiled import CUDA_GRAPHS_MODE, graph_counters, graph_report
from aiayn.train.distributed import DistEnv
from aiayn.train.prefetch import Prefetcher
from aiayn.train.trainer import Trainer, build_trainer

TINY_MODEL = {**PAPER_MODELS["base"], "n_layers": 2, "d_model": 64, "d_ff": 128, "n_heads": 4, "d_k": 16, "d_v": 16}
IDS = SpecialIds(pad=0, bos=2, eos=3)


def run_settings(model: dict, tokens_per_step: int, per_batch: int, steps: int, gpus: int, **train) -> dict:
    values = {
        "train_steps": steps,
        "tokens_per_step": tokens_per_step,
        "tokens_per_pass": per_batch,
        "gpus": gpus,
        "checkpoint_minutes": 0,
        "dev_every_steps": 0,
        "log_every_steps": 1,
        "warmup_steps": 4000,
    } | train
    return {"experiment": "acceptance", "task": "synthetic", "model": copy.deepcopy(model), "train": values}


# Device rows that mean the GPU was working: kineto's activity types for kernels and for copies/fills
# done by the GPU (torch 2.13, torch/autograd/profiler.py, _parse_kineto_results: every kineto event
# becomes a FunctionEvent whose activity_type is KinetoEvent.activity_type(), and each device row's
# time is also appended to its launching CPU op as a kernel; the names are pytorch/kineto
# libkineto/src/ActivityType.cpp's). "gpu_user_annotation" rows are also device rows, but they span a
# record_function region, idle gaps included, so they do not count.
DEVICE_WORK = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
STEP_LABEL = "acceptance_step"


def busy_microseconds(intervals: list[tuple[float, float]], start: float, end: float) -> float:
    """Length of the union of ``intervals`` clipped to ``[start, end]`` (kernels on two streams that
    overlap count once)."""
    busy, reach = 0.0, start
    for lo, hi in sorted(intervals):
        lo, hi = max(lo, reach), min(hi, end)
        if hi > lo:
            busy, reach = busy + hi - lo, hi
    return busy


def gpu_idle_share(events, label: str = STEP_LABEL) -> float:
    """Share of the ``label`` region's time during which the GPU ran no kernel, copy or fill.

    ``events``: torch profiler events (``prof.events()``). The region is the CPU row of the
    ``record_function(label)`` annotation (its body ends with a device synchronize, so it covers the
    step's last kernel); busy time comes from device rows only (``device_type`` CUDA and an activity
    type in :data:`DEVICE_WORK`): the CPU-side op rows carry the same kernels' time again, which is why
    summing ``self_device_time_total`` over every row counted kernels twice and could exceed the step.
    """
    [region] = [e for e in events if e.name == label and e.device_type == DeviceType.CPU]
    start, end = region.time_range.start, region.time_range.end
    return 1.0 - busy_microseconds(device_work(events), start, end) / (end - start)


def device_rows(events) -> list:
    """The device rows that are a kernel, copy or fill. torch 2.13 tags every row with kineto's activity
    type (:data:`DEVICE_WORK`). torch 2.11's ``FunctionEvent`` has no ``activity_type`` (its
    torch/autograd/profiler_util.py) but says ``is_user_annotation``, true for the GPU-side row of a
    ``record_function`` region, which spans idle gaps too; the rest are work. (Telling the region by its
    name, as a CPU row's, also dropped every kernel inductor generated: each launch runs inside a
    ``record_function`` of the kernel's own name, so the first H200 run's compiled steps showed the GPU
    idle 56% of a step, where the captured ones, whose replays have no such rows, showed 18%.)"""

    def work(event) -> bool:
        kind = getattr(event, "activity_type", None)
        if kind is not None:
            return kind in DEVICE_WORK
        return not getattr(event, "is_user_annotation", False)

    return [e for e in events if e.device_type == DeviceType.CUDA and work(e)]


def device_work(events) -> list[tuple[float, float]]:
    """(start, end) of each of :func:`device_rows`."""
    return [(e.time_range.start, e.time_range.end) for e in device_rows(events)]


def profile_step(trainer: Trainer) -> dict:
    """SDPA kernels seen, kernels launched and the GPU's idle share over one profiled step."""
    from torch.profiler import ProfilerActivity, profile, record_function

    cuda = trainer.setup.env.device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        with record_function(STEP_LABEL):
            trainer.train_step()
            if cuda:
                torch.cuda.synchronize()
    trainer.pending.ready(lag=0)
    events = prof.events()
    kernels = sorted({e.key for e in prof.key_averages() if "scaled_dot_product" in e.key and "backward" not in e.key})
    return {
        "sdpa_kernels": kernels,
        "gpu_idle_share": round(gpu_idle_share(events), 4) if cuda else None,
        "device_rows_per_step": len(device_work(events)) if cuda else None,
        "device_ms_by_kind": device_ms_by_kind(events) if cuda else None,
    }


# Kinds of device work by the kernel's name, first match wins: attention (the flash and
# memory-efficient kernels: "flash", "fmha", whose names also say "cutlass"), cuBLAS and CUTLASS
# products ("gemm", "nvjet", "cutlass", "xmma"),
# kernels inductor generated ("triton_"), copies and fills (kineto names them "Memcpy ..." and
# "Memset ..."), and everything else (eager elementwise, reductions, the optimizer's foreach kernels).
KINDS = (
    ("attention", ("flash", "fmha", "attention")),
    ("matmul", ("gemm", "nvjet", "cutlass", "xmma")),
    ("compiled", ("triton_",)),
    ("copy", ("memcpy", "memset")),
)


def kind_of(name: str) -> str:
    """The :data:`KINDS` entry a device row's name falls in, else ``other``."""
    lower = name.lower()
    return next((kind for kind, marks in KINDS if any(mark in lower for mark in marks)), "other")


def device_ms_by_kind(events) -> dict[str, float]:
    """Milliseconds of :func:`device_rows` by :func:`kind_of` (rows on two streams that overlap count twice)."""
    totals: dict[str, float] = {}
    for e in device_rows(events):
        kind = kind_of(e.name)
        totals[kind] = totals.get(kind, 0.0) + (e.time_range.end - e.time_range.start) / 1000
    return {kind: round(ms, 4) for kind, ms in sorted(totals.items())}


# torch.compile's mode of each throughput mode (eager: not compiled)
MODES = {"eager": None, "compiled": "default", "captured": CUDA_GRAPHS_MODE}


def shape_tour(sampler) -> list[int]:
    """One batch of each distinct (rows, S, T) of ``sampler`` (its first in the batch list), smallest
    shape first: what a warm-up must meet once for every shape of the ladder to be compiled (and,
    twice, captured: a CUDA graph is recorded at a shape's second call)."""
    first: dict = {}
    for index, shape in enumerate(sampler.shapes or []):
        first.setdefault(shape, index)
    return [first[shape] for shape in sorted(first, key=lambda shape: (shape[1] + shape[2], shape))]


class Tour:
    """A batch stream (as :class:`aiayn.train.order.BatchStream` serves the trainer's prefetcher) of the
    batches ``indices`` of ``sampler``, in order, again and again."""

    def __init__(self, sampler, indices: list[int]):
        self.sampler, self.indices, self.position = sampler, indices, 0

    def next(self):
        index = self.indices[self.position % len(self.indices)]
        self.position += 1
        return self.sampler.batches[index], self.sampler.shapes[index]

    def state_dict(self) -> dict:
        return {"position": self.position}

    def load_state_dict(self, state: dict) -> None:
        self.position = state["position"]


def tour_steps(trainer: Trainer, rounds: int) -> tuple[int, float]:
    """Train on :func:`shape_tour`'s batches ``rounds`` times (through the trainer's own step and
    prefetcher), then give the trainer back its own stream; (steps, seconds of the first step)."""
    sampler = trainer.setup.stream.sampler
    tour = shape_tour(sampler) or [0]  # greedy batches (no ladder): the first batch stands for the rest
    own = trainer.setup.batches
    if not sampler.shapes:
        return 0, 0.0
    trainer.setup.batches = Prefetcher(
        Tour(sampler, tour), trainer.setup.train_data, trainer.setup.env.device, own.depth
    )
    try:
        first = None
        for _ in range(rounds * len(tour)):
            began = time.perf_counter()
            trainer.train_step()
            trainer.pending.ready(lag=0 if first is None else 1)
            first = time.perf_counter() - began if first is None else first
        trainer.pending.ready(lag=0)
    finally:
        trainer.setup.batches.close()
        trainer.setup.batches = own
    return rounds * len(tour), first


def timed_steps(trainer: Trainer, steps: int) -> dict:
    """``steps`` optimizer steps as the training loop runs them (each step's statistics read a step
    late), timed between two synchronizations: target tokens/s and steps/s over the whole stretch."""
    synchronize(trainer.setup.env.device)
    began = time.perf_counter()
    tokens = 0
    for _ in range(steps):
        tokens += trainer.train_step()
        trainer.pending.ready(lag=1)
    trainer.pending.ready(lag=0)
    synchronize(trainer.setup.env.device)
    seconds = time.perf_counter() - began
    return {
        "steps": steps,
        "target_tokens": tokens,
        "seconds": round(seconds, 3),
        "target_tokens_per_s": tokens / seconds,
    }


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def throughput(
    work: Path, name: str, model: dict, mode: str, args, device: torch.device, cudnn_attention: bool = False
) -> dict:
    """Training speed of ``model`` at ``args.tokens_per_step`` in one forward pass a step, ``mode`` one of
    :data:`MODES`, batches padded to the GPU's ladder of shapes (``train.batch_shapes`` null).

    Dynamo is reset first: each run compiles its own graph, and the recompile limit counts every
    ``TrainingLoss`` of the process. Warm-up: :func:`tour_steps`, every shape of the ladder once (twice
    captured); its seconds are ``warmup_seconds``, its first step's ``first_step_seconds`` (the
    compilation, where compiled). Then :func:`timed_steps` and one profiled step. Compiled modes pass
    when the run made one graph, no break, and stayed below the recompile limit (no eager fallback);
    captured also when CUDA graphs were recorded and none skipped. ``cudnn_attention`` lets attention
    use cuDNN's kernel again (what torch picks by itself), to measure what
    :func:`aiayn.runtime.precision.avoid_cudnn_attention` saves."""
    torch._dynamo.reset()
    compiled = MODES[mode] is not None
    tokens = args.tokens_per_step
    run = run_settings(
        model,
        tokens,
        tokens,
        10**6,
        1,
        compile=compiled,
        compile_mode=MODES[mode] or "default",
        precision="auto",
        batch_shapes=GPU_BATCH_SHAPES,  # what null means on a GPU; on a CPU too, for the same path
    )
    began = time.perf_counter()
    torch.manual_seed(0)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    before = graph_counters()
    trainer = build_trainer(run, args.paper_data, work / f"tp-{name}-{mode}-{cudnn_attention}", DistEnv(0, 1, device))
    with cudnn_attention_allowed(cudnn_attention):
        warm = time.perf_counter()
        tour, first_step = tour_steps(trainer, 2 if mode == "captured" else 1)
        warmup_seconds = time.perf_counter() - warm
        timed = timed_steps(trainer, args.timed_steps)
        profile = run_section(lambda: profile_step(trainer))  # a failed profile keeps the figures below
    rate = timed["target_tokens_per_s"]
    shapes = trainer.setup.stream.sampler.shapes
    result = {
        "model": name,
        "mode": mode,
        "passes": trainer.setup.plan.passes,
        "precision": trainer.setup.precision,
        "tf32_matmuls": tf32_matmuls(device),
        "batch_shapes": len(set(shapes)) if shapes else None,
        "tokens_per_step": trainer.setup.plan.tokens_per_step,
        "target_tokens_per_s": round(rate, 1),
        "timed": timed,
        "flops_per_token": round(trainer.setup.flops_per_token),
        "mfu": None if trainer.setup.mfu(rate) is None else round(trainer.setup.mfu(rate), 4),
        "mfu_measured_peak": round(trainer.setup.flops_per_token * rate / (args.peak_tflops * 1e12), 4)
        if args.peak_tflops
        else None,
        "warmup_steps": tour,
        "warmup_seconds": round(warmup_seconds, 1),
        "first_step_seconds": round(first_step, 2),
        "peak_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if device.type == "cuda" else None,
    }
    if compiled:
        graphs = run_section(lambda: graph_report(trainer.setup.model._orig_mod, before, device))
        recorded = graphs.get("cuda_graphs") != 0 and not graphs.get("cudagraph_skips")  # None: not countable
        captured = mode != "captured" or device.type != "cuda" or recorded
        result |= {"graphs": graphs, "pass": graphs.get("one_graph") is True and captured}
    result |= profile | {"cudnn_attention": cudnn_attention}
    result["seconds"] = round(time.perf_counter() - began, 1)
    trainer.setup.batches.close()
    return result


def throughput_runs(models: dict, modes: list[str], cudnn: bool) -> list[tuple[str, str, bool]]:
    """(model, mode, cuDNN's attention) of the throughput section: every model eager, then compiled,
    then captured (the modes asked for, in that order), and with ``cudnn`` every model once more in the
    first of those modes with cuDNN's attention allowed."""
    ordered = [mode for mode in MODES if mode in modes]
    runs = [(name, mode, False) for mode in ordered for name in models]
    return runs + ([(name, ordered[0], True) for name in models] if cudnn and ordered else [])


def throughputs(report: dict, save: callable, work: Path, models: dict, args, device: torch.device) -> list[dict]:
    """:func:`throughput` of each of :func:`throughput_runs`, each entry added to ``report["throughput"]``
    and saved as it is measured."""
    report["throughput"] = []
    for name, mode, cudnn in throughput_runs(models, args.modes, args.cudnn_attention):
        report["throughput"].append(
            {"model": name, "mode": mode}
            | run_section(lambda: throughput(work, name, models[name], mode, args, device, cudnn))
        )
        save()
    return report["throughput"]


@contextlib.contextmanager
def cudnn_attention_allowed(allowed: bool):
    """cuDNN's attention kernel enabled inside (when ``allowed``), disabled again after."""
    if allowed:
        torch.backends.cuda.enable_cudnn_sdp(True)
    try:
        yield
    finally:
        if allowed:
            torch.backends.cuda.enable_cudnn_sdp(False)


def train_command(data: Path, settings: dict, out: Path, threads: int) -> list[str]:
    """``python -m aiayn.train`` on ``data`` into ``out`` with ``settings`` (written beside ``out``)."""
    path = out.with_name(f"{out.name}.settings.json")
    path.write_text(json.dumps(settings), encoding="utf-8")
    return [
        sys.executable,
        "-m",
        "aiayn.train",
        "--data",
        str(data),
        "--settings",
        str(path),
        "--out-dir",
        str(out),
        "--threads",
        str(threads),
    ]


def log_column(out: Path, column: str) -> dict[int, float]:
    """``{step: value}`` of one column of a training's ``log.csv`` (rows where it is empty left out)."""
    with open(out / "log.csv", encoding="utf-8") as handle:
        return {int(r["step"]): float(r[column]) for r in csv.DictReader(handle) if r[column]}


def losses(out: Path) -> dict[int, float]:
    return log_column(out, "loss")


def final_weights_diff(a: Path, b: Path) -> float:
    x = load_checkpoint(a / "checkpoint_last.pt").model
    y = load_checkpoint(b / "checkpoint_last.pt").model
    return max(float((x[k].float() - y[k].float()).abs().max()) for k in x)


def resume_check(work: Path, data: Path, model: dict, args, gpus: int, **train) -> dict:
    """SIGTERM after the first checkpoint, start again, compare with an uninterrupted run. The signal
    goes to the command's process group (the command alone for one process; under torchrun the
    relaunch parent and torchrun, which passes it to its ranks)."""
    settings = run_settings(model, 1024, 512, args.resume_steps, gpus, checkpoint_steps=2, warmup_steps=10, **train)
    name = "resume-ranks" if train.get("cpu_ranks", 1) > 1 or gpus > 1 else "resume"
    whole, split = work / f"{name}-whole", work / f"{name}-split"
    done = subprocess.run(train_command(data, settings, whole, args.threads), capture_output=True, text=True)
    if done.returncode:
        return {"pass": False, "uninterrupted_stderr_tail": done.stderr[-2000:]}
    proc = subprocess.Popen(
        train_command(data, settings, split, args.threads),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    first = Path(TrainPaths(str(split)).checkpoint(2))
    while not first.exists() and proc.poll() is None:
        time.sleep(0.01)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    status = proc.wait()
    stopped_at = list_checkpoints(split)[-1][0]
    again = subprocess.run(train_command(data, settings, split, args.threads), capture_output=True, text=True)
    a, b = losses(whole), losses(split)
    worst = max((abs(a[s] - b.get(s, float("inf"))) / abs(a[s]) for s in a), default=float("inf"))
    ok = status == 143 and again.returncode == 0 and sorted(a) == sorted(b) and worst <= 1e-3
    if gpus == 0:
        ok = ok and worst == 0.0
    norms = max_rel_diff(log_column(whole, "grad_norm"), log_column(split, "grad_norm"))
    weights = final_weights_diff(whole, split)
    if gpus == 0:
        ok = ok and norms == 0.0 and weights == 0.0
    return {
        "signal": "SIGTERM",
        "exit_status_stopped": status,
        "stopped_at_step": stopped_at,
        "exit_status_resumed": again.returncode,
        "steps": max(a, default=0),
        "max_loss_rel_diff": worst,
        "max_grad_norm_rel_diff": norms,
        "max_final_weight_diff": weights,
        "pass": ok,
        "stderr_tail": "" if again.returncode == 0 else again.stderr[-2000:],
    }


# How much worse, relative to the fp32 search's, the fp32 model may score the bf16 search's hypotheses
# on average: bf16 keeps 8 significant bits (2^-8 = 0.4% of each value), so a search that is as good
# in bf16 differs by that order, where near ties fall the other way; a wrong bf16 path scores far worse.
MEAN_GAP = 0.01


def decode_check(args, device: torch.device) -> dict:
    """bf16-vs-fp32 hypotheses of a copy-trained model, and beam-4 speed of the base model.

    Pass: the fp32 model scores the bf16 search's hypotheses on average within :data:`MEAN_GAP` of the
    fp32 search's (identical hypotheses count 0). Not the share of identical hypotheses: on the first
    H200 runs, 600 steps left a model that copies 16% of the sentences exactly, and 17.6% of the bf16
    hypotheses differed, some by a worse path after an early near tie, some better (9 of 88);
    benchmarks/RESULTS.md, "The first GPU runs"."""
    vocab = 200 if args.tiny else 1000
    shape = (
        {key: TINY_MODEL[key] for key in ("n_layers", "d_model", "d_ff", "n_heads", "d_k", "d_v")}
        if args.tiny
        else None
    )
    model = train_copy_model(vocab, args.copy_steps, batch=64, seed=1, shape=shape, device=device)
    sources = random_sentences(64 if args.tiny else 500, vocab, torch.Generator().manual_seed(7))
    opts = DecodeConfig(max_sentences=64, beam_size=4, length_penalty=0.6, max_len_a=1.0, max_len_b=50, early_stop=True)
    search = dict(device=device, ids=IDS)
    fp32 = translate_sentences(model, sources, opts, **search)
    with autocast_for("bf16", device):
        bf16 = translate_sentences(model, sources, opts, **search)
    differ = [i for i, (a, b) in enumerate(zip(fp32, bf16)) if a.tokens != b.tokens]
    same = 1.0 - len(differ) / len(sources)
    gaps = relative_gaps(
        model,
        [sources[i] for i in differ],
        [fp32[i].tokens for i in differ],
        [bf16[i].tokens for i in differ],
        opts.length_penalty,
        device,
    )
    judged = device.type == "cuda" and native_bf16(device)
    result = {
        "copy_steps": args.copy_steps,
        "sentences": len(sources),
        "bf16_same_as_fp32": round(same, 4),
        "exact_copies_fp32": sum(h.tokens == s for h, s in zip(fp32, sources)),
        "tf32_matmuls": tf32_matmuls(device),
        "differing": len(differ),
        "bf16_better": sum(g < 0 for g in gaps),
        "median_relative_gap": round(statistics.median(gaps), 5) if gaps else None,
        "worst_relative_gap": round(max(gaps, default=0.0), 5),
        "mean_relative_gap": round(sum(gaps) / len(sources), 5),
        "tolerance": f"mean_relative_gap <= {MEAN_GAP} (judged on GPUs with bf16 tensor cores only)",
        "pass": sum(gaps) / len(sources) <= MEAN_GAP if judged else None,
    }
    result["speed"] = decode_speed(args, device)
    return result


@torch.no_grad()
def forced_scores(
    model, sources: list[list[int]], hyps: list[list[int]], alpha: float, device: torch.device
) -> torch.Tensor:
    """The beam's score of each hypothesis as a finished one, teacher-forced through ``model`` as it
    is (no autocast): log P(y + eos | x) / lp(|y| + 1), float64 on the host."""
    src, _, _ = copy_batch(sources)
    _, tgt_in, tgt_out = copy_batch(hyps)
    src, tgt_in, tgt_out = src.to(device), tgt_in.to(device), tgt_out.to(device)
    log_p = model(src, tgt_in).float().log_softmax(-1).gather(-1, tgt_out.unsqueeze(-1)).squeeze(-1)
    total = log_p.masked_fill(tgt_out == IDS.pad, 0.0).sum(1).double().cpu()
    return total / gnmt_length_penalty(torch.tensor([len(h) + 1.0 for h in hyps], dtype=torch.float64), alpha)


def relative_gaps(
    model, sources: list[list[int]], best: list[list[int]], other: list[list[int]], alpha: float, device: torch.device
) -> list[float]:
    """Per sentence, ``(score(best) - score(other)) / |score(best)|`` (:func:`forced_scores`)."""
    if not sources:
        return []
    a, b = forced_scores(model, sources, best, alpha, device), forced_scores(model, sources, other, alpha, device)
    return ((a - b) / a.abs()).tolist()


def decode_speed(args, device: torch.device) -> dict:
    """Beam-4 sentences/s of the base model (randomly initialised, so every output has its source's
    length, as a trained model's would: ``max_len_b`` 0) on ``args.decode_sentences`` sources (3,003:
    newstest2014's count) whose lengths are drawn from ``args.lengths`` (uniform 10-40 without), batches
    of 128, fp32 and the device's ``auto`` precision (and with ``--cudnn-attention`` that once more with
    cuDNN's attention allowed); an untimed warm-up batch first."""
    shape = TINY_MODEL if args.tiny else PAPER_MODELS["base"]
    vocab = 1000 if args.tiny else 37000
    torch.manual_seed(1)
    model = Transformer(ModelConfig.from_dict(shape | {"dropout": 0.0}), vocab).to(device).eval()
    generator = torch.Generator().manual_seed(3)
    if args.lengths is None:
        sources = random_sentences(args.decode_sentences, vocab, generator)
    else:
        src = np.load(args.lengths)["src"]
        sizes = np.maximum(src[np.random.default_rng(3).integers(0, len(src), args.decode_sentences)], 1)
        sources = [torch.randint(4, vocab, (int(n),), generator=generator).tolist() for n in sizes]
    opts = DecodeConfig(max_sentences=128, beam_size=4, length_penalty=0.6, max_len_a=1.0, max_len_b=0, early_stop=True)
    search = dict(device=device, ids=IDS)
    out, seconds = {}, {}
    auto = resolve_precision("auto", device)
    runs = [(precision, False) for precision in sorted({"fp32", auto})]
    if device.type == "cuda" and args.cudnn_attention:
        runs.append((auto, True))
    for precision, cudnn in runs:
        with autocast_for(precision, device), cudnn_attention_allowed(cudnn):
            translate_sentences(model, sources[:128], opts, **search)  # warm-up: kernels load, cuBLAS picks algorithms
            synchronize(device)
            start = time.perf_counter()
            translate_sentences(model, sources, opts, **search)
            synchronize(device)
        key = precision + ("+cudnn_attention" if cudnn else "")
        seconds[key] = round(time.perf_counter() - start, 2)
        out[key] = round(len(sources) / seconds[key], 2)
    return {
        "model": "tiny" if args.tiny else "base",
        "sentences": len(sources),
        "source_tokens": sum(map(len, sources)),
        "sentences_per_s": out,
        "seconds": seconds,
        "beam_size": 4,
        "batch": 128,
        "warm_up": "one batch per precision, untimed",
    }


# The bf16 agreement's criterion, fixed before any GPU run (issue: "a pass criterion stated in
# advance"): the bf16 run's loss may differ from the fp32 run's by at most AGREEMENT_STEP relative at
# any single step, and by at most AGREEMENT_WINDOW relative in the mean over the last
# AGREEMENT_LAST steps. bf16 keeps 8 significant bits (0.4% per value); two runs from one seed on one
# batch order and one set of dropout masks start equal to that order and drift apart as rounding
# compounds, so single steps may differ by a few percent where the curve falls fastest, while the
# curves' level must agree; a wrong bf16 path (a product in the wrong dtype, a loss in bf16, a
# lost scale) moves the level by far more.
AGREEMENT_STEPS, AGREEMENT_LAST = 200, 50
AGREEMENT_STEP, AGREEMENT_WINDOW = 0.05, 0.01
AGREEMENT_MODEL = {**PAPER_MODELS["base"], "d_model": 128, "d_ff": 512, "d_k": 16, "d_v": 16}


def copy_task(root: Path, pairs: int, vocab: int, lengths: tuple[int, int], seed: int = 0) -> Path:
    """Pairs whose target is their source (random word ids, lengths uniform in ``lengths``), as shards."""
    rng = np.random.default_rng(seed)
    for split, n in (("train", pairs), ("dev", 100)):
        sizes = rng.integers(lengths[0], lengths[1] + 1, n)
        ids = rng.integers(4, vocab, int(sizes.sum()))
        with ShardWriter(root / split, vocab_size=vocab) as writer:
            writer.add_chunk(ids, sizes, ids, sizes)
    return root


def bf16_agreement(work: Path, args, device: torch.device) -> dict:
    """The same :data:`AGREEMENT_STEPS` training steps of the base shape at width 128 (eager, 4,096 tokens
    a step, warm-up 100 steps) on a copy task, in fp32 and in bf16 from the same seed: each step's loss,
    their largest relative gap and the gap of their means over the last steps; pass as
    :data:`AGREEMENT_STEP` and :data:`AGREEMENT_WINDOW` say (judged on GPUs with bf16 tensor cores only).
    ``--tiny``: the tiny model and 40 steps."""
    steps = 40 if args.tiny else AGREEMENT_STEPS
    data = copy_task(work / "data-copy", 20000, 1000, (10, 40))
    curves = {}
    for precision in ("fp32", "bf16"):
        torch._dynamo.reset()
        out = work / f"agreement-{precision}"
        settings = run_settings(
            TINY_MODEL if args.tiny else AGREEMENT_MODEL,
            4096,
            4096,
            steps,
            1 if device.type == "cuda" else 0,
            warmup_steps=100,
            precision=precision,
            compile=False,
        )
        build_trainer(settings, data, out, DistEnv(0, 1, device)).run()
        curves[precision] = losses(out)
    fp32, bf16 = curves["fp32"], curves["bf16"]
    gaps = {step: abs(bf16[step] - fp32[step]) / fp32[step] for step in fp32}
    last = sorted(fp32)[-min(AGREEMENT_LAST, len(fp32)) :]
    window = abs(sum(bf16[s] for s in last) - sum(fp32[s] for s in last)) / sum(fp32[s] for s in last)
    worst = max(gaps, key=gaps.get)
    judged = device.type == "cuda" and native_bf16(device)
    return {
        "steps": len(fp32),
        "first_loss": {"fp32": round(fp32[min(fp32)], 4), "bf16": round(bf16[min(bf16)], 4)},
        "last_loss": {"fp32": round(fp32[max(fp32)], 4), "bf16": round(bf16[max(bf16)], 4)},
        "largest_step_gap": round(gaps[worst], 5),
        "largest_gap_at_step": worst,
        "last_window_gap": round(window, 5),
        "criterion": f"largest_step_gap <= {AGREEMENT_STEP} and last_window_gap <= {AGREEMENT_WINDOW} "
        f"(mean of the last {AGREEMENT_LAST} steps)",
        "pass": gaps[worst] <= AGREEMENT_STEP and window <= AGREEMENT_WINDOW if judged else None,
    }


def project_frame(stack: list[traceback.FrameSummary]) -> str | None:
    """``aiayn/...py:line`` (or a benchmark's ``name.py:line``) of the innermost frame of this project."""
    for frame in reversed(stack):
        path = Path(frame.filename)
        if "aiayn" in path.parts[:-1]:
            return f"{'/'.join(path.parts[path.parts.index('aiayn') :])}:{frame.lineno}"
        if path.parent == Path(__file__).resolve().parent:
            return f"{path.name}:{frame.lineno}"
    return None


def sync_site(filename: str, lineno: int, stack: list[traceback.FrameSummary]) -> str:
    """Where a synchronizing-operation warning came from: ``file:line`` as the warning names it, and
    where that line is not the project's own, `` <- `` the innermost project frame of the stack when it
    was raised (CUDA warns at the Python line that called into torch, which can be torch's own)."""
    site = f"{Path(filename).name}:{lineno}"
    ours = project_frame(stack)
    return site if ours is None or ours.endswith(f"{Path(filename).name}:{lineno}") else f"{site} <- {ours}"


def counting_syncs(work: callable) -> Counter:
    """The synchronizing CUDA operations ``work()`` ran (``torch.cuda.set_sync_debug_mode("warn")``),
    by :func:`sync_site`."""
    sites = Counter()

    def show(message, category, filename, lineno, file=None, line=None):
        if "synchroniz" in str(message):
            sites[sync_site(filename, lineno, traceback.extract_stack()[:-1])] += 1

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show  # restored by catch_warnings
        torch.cuda.set_sync_debug_mode("warn")
        try:
            work()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return sites


def host_sync_check(work: Path, args, device: torch.device) -> dict:
    """Synchronizing operations in training steps and in a beam search (the module docstring). Each
    step's two halves are counted apart (the mode switched on and off around each), after a count
    over nothing at all (``empty``: what switching the mode itself reports)."""
    if device.type != "cuda":
        return {"skipped": "CPU: tests/test_cuda_path.py counts the host's waits on a pretend device"}
    empty = counting_syncs(lambda: None)
    trainer = build_trainer(
        run_settings(TINY_MODEL, 1024, 512, 10**6, 1, precision="auto"),
        work / "data-tiny",
        work / "syncs",
        DistEnv(0, 1, device),
    )
    time_updates(trainer, 2)  # warm-up: the first steps allocate
    training = Counter()
    for _ in range(5):
        training.update({f"train_step: {k}": n for k, n in counting_syncs(trainer.train_step).items()})
        training.update(
            {f"take_results: {k}": n for k, n in counting_syncs(lambda: trainer.take_results(None, None, 0.0)).items()}
        )
    trainer.setup.batches.close()
    torch.manual_seed(1)
    model = Transformer(ModelConfig.from_dict(TINY_MODEL | {"dropout": 0.0}), 200).to(device).eval()
    sources = random_sentences(16, 200, torch.Generator().manual_seed(3))
    decoding = counting_syncs(
        lambda: translate_sentences(
            model,
            sources,
            DecodeConfig(
                max_sentences=16, beam_size=4, length_penalty=0.6, max_len_a=1.0, max_len_b=5, early_stop=True
            ),
            device=device,
            ids=IDS,
        )
    )
    beam_lines = {line for line in decoding if line.startswith("beam.py:")}
    return {
        "empty": dict(empty),
        "training_steps": 5,
        "training": dict(training),
        "decoding": dict(decoding),
        "pass": not training and len(beam_lines) <= 1 and set(decoding) == beam_lines,
    }


def max_rel_diff(a: dict[int, float], b: dict[int, float]) -> float:
    """Largest ``|a - b| / |a|`` over the steps; infinite when the two logs do not have the same steps."""
    if sorted(a) != sorted(b) or not a:
        return float("inf")
    return max(abs(a[s] - b[s]) / abs(a[s]) for s in a)


def compare_trainings(reference: Path, other: Path) -> dict:
    """Two trainings meant to be the same, step by step: loss and gradient norm of every logged step,
    and the final weights (``checkpoint_last.pt``), with the reference's summed learning rate as the
    scale of the weights' difference."""
    return {
        "steps": max(losses(reference), default=0),
        "max_loss_rel_diff": max_rel_diff(losses(reference), losses(other)),
        "max_grad_norm_rel_diff": max_rel_diff(log_column(reference, "grad_norm"), log_column(other, "grad_norm")),
        "max_final_weight_diff": final_weights_diff(reference, other),
        "summed_lr": sum(log_column(reference, "lr").values()),
    }


def ddp_verdict(diff: dict) -> bool:
    """Same loss and gradient norm at every step within 1e-3 relative (1 GPU with accumulation 2 and 2
    GPUs run the same micro-batches; only the order of the fp32 all-reduce differs), and final weights
    within a tenth of the summed learning rate: an Adam step moves a weight by about its learning rate at
    most, so a lost or doubled update on one rank shows, a different summation order does not."""
    return (
        diff["max_loss_rel_diff"] <= 1e-3
        and diff["max_grad_norm_rel_diff"] <= 1e-3
        and diff["max_final_weight_diff"] <= 0.1 * diff["summed_lr"]
    )


def ddp_check(work: Path, data: Path, model: dict, args, compiled: bool = False) -> dict:
    """``train.gpus: 2`` (torchrun, NCCL) against one GPU at the same tokens per step (see ddp_verdict),
    both with ``train.compile`` as ``compiled`` says."""
    if torch.cuda.device_count() < 2:
        return {"skipped": f"{torch.cuda.device_count()} GPU(s) visible; needs 2"}
    quiet = copy.deepcopy(model) | {"dropout": 0.0}
    name = "compile-ddp" if compiled else "ddp"
    for gpus in (1, 2):
        settings = run_settings(quiet, 25000, 12500, args.ddp_steps, gpus, warmup_steps=100, compile=compiled)
        done = subprocess.run(
            train_command(data, settings, work / f"{name}-{gpus}", args.threads), capture_output=True, text=True
        )
        if done.returncode:
            return {"pass": False, "gpus": gpus, "stderr_tail": done.stderr[-2000:]}
    diff = compare_trainings(work / f"{name}-1", work / f"{name}-2")
    return diff | {"compile": compiled, "pass": ddp_verdict(diff)}


def resume_ranks_check(work: Path, data: Path, args, gpus: int) -> dict:
    """:func:`resume_check` under torchrun with 2 ranks: 2 GPUs, or 2 gloo CPU ranks on a CPU."""
    if gpus == 0:
        return resume_check(work, data, TINY_MODEL, args, 0, cpu_ranks=2) | {"ranks": 2, "backend": "gloo"}
    if torch.cuda.device_count() < 2:
        return {"skipped": f"{torch.cuda.device_count()} GPU(s) visible; needs 2"}
    return resume_check(work, data, TINY_MODEL, args, 2) | {"ranks": 2, "backend": "nccl"}


# The memory section: a vocabulary whose logits make a training pass of MEMORY_STEP tokens need several
# times the headroom and one of MEMORY_PASS tokens a fraction of it (measured on a CPU, torch 2.13: the
# small pass fits in 400 MiB above the process's data at its start, the large one needs more than 800);
# a batch of 128 sentences' beam-4 logits is 64 MiB, one sentence's 0.5 MiB.
MEMORY_VOCAB, MEMORY_STEP, MEMORY_PASS = 32000, 32768, 512
MEMORY_HEADROOM, DECODE_HEADROOM = 600 * 2**20, 48 * 2**20


def vm_data(status: str) -> int:
    """The data segment in bytes (what RLIMIT_DATA limits) of a /proc/<pid>/status text."""
    return next(int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmData:"))


@contextlib.contextmanager
def memory_limit(device: torch.device, headroom: int):
    """Allocations of more than ``headroom`` bytes beyond what this process holds fail as the device's
    allocator fails when memory runs out: on CUDA the caching allocator's limit, on a CPU the data
    segment's (RLIMIT_DATA, which counts the anonymous mappings of torch's CPU allocator)."""
    if device.type == "cuda":
        torch.cuda.empty_cache()
        total = torch.cuda.get_device_properties(device).total_memory
        torch.cuda.set_per_process_memory_fraction(
            min(1.0, (torch.cuda.memory_reserved(device) + headroom) / total), device
        )
        try:
            yield
        finally:
            torch.cuda.set_per_process_memory_fraction(1.0, device)
            torch.cuda.empty_cache()
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    resource.setrlimit(resource.RLIMIT_DATA, (vm_data(Path("/proc/self/status").read_text()) + headroom, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


@functools.cache
def trainer_process_data() -> int:
    """The data segment of a Python process that has imported the trainer, in bytes."""
    probe = "import aiayn.train.__main__, aiayn.train.trainer; print(open('/proc/self/status').read())"
    return vm_data(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout)


# Runs a module (argv[2]) with the CUDA caching allocator limited to a fraction (argv[1]) of the device:
# torch.cuda.set_per_process_memory_fraction in the child itself, whatever torch's version.
LIMITED_CUDA = (
    "import runpy, sys, torch; torch.cuda.set_per_process_memory_fraction(float(sys.argv.pop(1))); "
    "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)"
)


def limited_run(command: list[str], device: torch.device, headroom: int) -> subprocess.CompletedProcess:
    """``command`` (``python -m <the trainer> ...``) with ``headroom`` bytes of memory: on CUDA the caching
    allocator's limit, set in the child (:data:`LIMITED_CUDA`); on a CPU RLIMIT_DATA above the data
    segment such a process has once it has imported the trainer."""
    python, flag, module, *arguments = command
    assert flag == "-m", command
    if device.type == "cuda":
        fraction = headroom / torch.cuda.get_device_properties(device).total_memory
        return subprocess.run(
            [python, "-c", LIMITED_CUDA, f"{fraction:.8f}", module, *arguments], capture_output=True, text=True
        )
    limit = trainer_process_data() + headroom
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_DATA, (limit, limit)),
    )


class LoggedWarnings(logging.Handler):
    """The warnings logged under ``name`` while it is entered."""

    def __init__(self, name: str):
        super().__init__(logging.WARNING)
        self.logger, self.messages = logging.getLogger(name), []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def __enter__(self) -> "LoggedWarnings":
        self.logger.addHandler(self)
        return self

    def __exit__(self, *exc) -> None:
        self.logger.removeHandler(self)


def memory_check(work: Path, args, device: torch.device) -> dict:
    """Memory that runs out for real, under a limit (:func:`memory_limit`, :func:`limited_run`).

    Training: 2 steps in passes of MEMORY_PASS tokens, then the same run extended to 4 steps with passes
    of MEMORY_STEP tokens, which must end with the trainer's out-of-memory line (exit 1, naming
    train.tokens_per_pass, not an internal error), then the small passes again, which must resume from
    the newest checkpoint and finish. Decoding: 128 sentences in one batch that does not fit must come
    back searched a sentence at a time (one warning), and (nearly) equal to the batch searched without
    a limit: padding changes the products' shapes, so the last bits and a near tie may differ."""
    data = synthetic_task(work / "data-memory", 4000, MEMORY_VOCAB, (5, 20))
    out, gpus = work / "memory", 1 if device.type == "cuda" else 0

    def train(tokens_per_pass: int, steps: int) -> subprocess.CompletedProcess:
        settings = run_settings(TINY_MODEL, MEMORY_STEP, tokens_per_pass, steps, gpus, checkpoint_steps=1)
        return limited_run(train_command(data, settings, out, args.threads), device, MEMORY_HEADROOM)

    first, large, again = train(MEMORY_PASS, 2), train(MEMORY_STEP, 4), train(MEMORY_PASS, 4)
    error = next((line[line.index("error:") :] for line in large.stderr.splitlines() if "error:" in line), "")
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else {}
    training = {
        "exit_status_small": first.returncode,
        "exit_status_large": large.returncode,
        "error_large": error[:400],
        "exit_status_resumed": again.returncode,
        "resumed": "resumed from" in again.stderr,
        "steps": summary.get("steps"),
    }
    training["pass"] = (
        first.returncode == 0
        and large.returncode == 1
        and error.startswith("error: out of memory")
        and f"train.tokens_per_pass={MEMORY_STEP} " in error
        and "internal error" not in large.stderr
        and again.returncode == 0
        and training["resumed"]
        and summary.get("steps") == 4
    )
    if not training["pass"]:
        training["stderr_tails"] = [run.stderr[-1500:] for run in (first, large, again)]
    torch.manual_seed(0)
    model = Transformer(ModelConfig.from_dict(TINY_MODEL), MEMORY_VOCAB).to(device).eval()
    sources = random_sentences(128, MEMORY_VOCAB, torch.Generator().manual_seed(3), lengths=(10, 20))
    opts = DecodeConfig(
        max_sentences=128, beam_size=4, length_penalty=0.6, max_len_a=1.0, max_len_b=10, early_stop=True
    )
    search = dict(device=device, ids=IDS)
    batched = translate_sentences(model, sources, opts, **search)
    with LoggedWarnings("aiayn.decode.beam") as warned, memory_limit(device, DECODE_HEADROOM):
        limited = translate_sentences(model, sources, opts, **search)
    same = sum(a.tokens == b.tokens for a, b in zip(batched, limited)) / len(sources)
    decoding = {
        "sentences": len(sources),
        "warnings": warned.messages,
        "same_as_unlimited": round(same, 4),
        "pass": len(warned.messages) == 1 and "searched one at a time" in warned.messages[0] and same >= 0.9,
    }
    return {"train": training, "decode": decoding, "pass": training["pass"] and decoding["pass"]}


SECTIONS = (
    "throughput",
    "decode",
    "bf16_agreement",
    "host_syncs",
    "sdpa_shapes",
    "resume",
    "resume_ranks",
    "memory",
    "ddp",
    "compile_ddp",
)


def sdpa_shapes(device: torch.device, lengths: tuple[int, ...] = (37, 53, 71, 89)) -> dict:
    """Milliseconds of the first and of the second forward and backward call of scaled-dot-product attention
    at shapes not met before, per SDPA backend (median over ``lengths``, bf16, 64 x 8 heads x 64, a padding
    mask but for flash, which takes none): first minus second is what a backend spends on a new shape
    (an execution plan, a kernel's compile or choice), the second the call itself. CUDA only."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if device.type != "cuda":
        return {"skipped": "CPU"}
    result = {}
    for backend in (
        SDPBackend.FLASH_ATTENTION,
        SDPBackend.EFFICIENT_ATTENTION,
        SDPBackend.CUDNN_ATTENTION,
        SDPBackend.MATH,
    ):
        firsts, seconds = [], []
        for length in lengths:
            q = torch.randn(64, 8, length, 64, device=device, dtype=torch.bfloat16, requires_grad=True)
            mask = (
                None
                if backend == SDPBackend.FLASH_ATTENTION
                else torch.ones(64, 1, 1, length, dtype=torch.bool, device=device)
            )
            for times in (firsts, seconds):
                torch.cuda.synchronize(device)
                began = time.perf_counter()
                with sdpa_kernel([backend]):
                    torch.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=mask).sum().backward()
                torch.cuda.synchronize(device)
                times.append(1000 * (time.perf_counter() - began))
        result[backend.name.lower()] = {
            "first_ms": round(statistics.median(firsts), 2),
            "second_ms": round(statistics.median(seconds), 2),
        }
    return result


def run_section(section: callable) -> dict:
    """``section()``'s result, or what it raised as a failed section: one broken section on a first GPU
    run must not cost the others' figures."""
    try:
        return section()
    except Exception as error:  # noqa: BLE001  (reported in the JSON, and the run goes on)
        return {"pass": False, "error": f"{type(error).__name__}: {error}", "traceback": traceback.format_exc()[-4000:]}


def passed(result: dict | list) -> bool | None:
    """A section's verdict: False when it or one of its entries (``throughput``'s, one per model and
    mode, whose figures have no criterion but can fail by raising) failed."""
    if isinstance(result, list):
        return False if any(entry.get("pass") is False for entry in result) else None
    return result.get("pass")


def verdict(report: dict, sections: list[str]) -> bool:
    """False when a section that has run failed."""
    return all(passed(report[name]) is not False for name in sections if name in report)


def matmul_peak(device: torch.device, size: int = 8192, repeats: int = 10) -> float | None:
    """Measured bf16 TFLOP/s of a ``size``-cubed matrix product on random data (the mean of ``repeats``
    after three warm-ups, timed with CUDA events): the ceiling an MFU is also given against; None on a CPU."""
    if device.type != "cuda":
        return None
    a = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    b = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        a @ b
    end.record()
    torch.cuda.synchronize(device)
    return round(2 * size**3 * repeats / (start.elapsed_time(end) / 1000) / 1e12, 1)


def paper_data(work: Path, args) -> Path:
    """The throughput runs' corpus: ``--pairs`` pairs of random ids at the lengths of ``--lengths`` (a real
    corpus's; 1.5 million pairs make the ladder's 64 shapes at 25,000 tokens a pass), else 60,000 pairs of
    10-40 words (8 shapes); vocabulary 37,000 (the paper's EN-DE). ``--tiny``: 2,000 short pairs."""
    if args.tiny:
        return synthetic_task(work / "data-paper", 2000, 200, (5, 20))
    if args.lengths is None:
        return synthetic_task(work / "data-paper", 60000, 37000, (10, 41))
    lengths = np.load(args.lengths)
    return lengths_task(work / "data-paper", lengths["src"], lengths["tgt"], args.pairs, 37000)


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, required=True, help="the JSON file to write")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--tiny", action="store_true", help="tiny models and data (a CPU run in under a minute)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--sections", nargs="+", choices=SECTIONS, help="run these sections, in this order (default: all, as listed)"
    )
    parser.add_argument("--models", nargs="+", choices=("base", "big"), default=["base", "big"])
    parser.add_argument("--modes", nargs="+", choices=tuple(MODES), default=list(MODES))
    parser.add_argument(
        "--cudnn-attention",
        action="store_true",
        help="also the first model eager, and decoding, with cuDNN's attention",
    )
    parser.add_argument(
        "--lengths", type=Path, help="an .npz of src and tgt length arrays (a real corpus's) for the data"
    )
    parser.add_argument("--pairs", type=int, default=1_500_000, help="pairs of the throughput corpus with --lengths")
    parser.add_argument("--timed-steps", type=int, help="timed steps of each throughput run (default 50; tiny 3)")
    parser.add_argument("--decode-sentences", type=int, default=3003, help="sentences of the decoding speed")
    args = parser.parse_args(argv)
    args.timed_steps = args.timed_steps or (3 if args.tiny else 50)
    args.tokens_per_step = 1024 if args.tiny else 25000
    args.decode_sentences = 64 if args.tiny else args.decode_sentences
    args.resume_steps, args.copy_steps, args.ddp_steps = (30, 40, 4) if args.tiny else (60, 600, 20)
    device = torch.device("cuda", 0) if args.device == "cuda" else torch.device("cpu")
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda but CUDA is not available (use --device cpu --tiny on a CPU)")
    args.device = device
    return args


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    device = args.device
    torch.set_num_threads(args.threads)
    enable_tf32(device, "auto")  # its trainings run precision auto; its own models are set up as the stages'
    avoid_cudnn_attention(device)
    started = time.perf_counter()
    args.peak_tflops = matmul_peak(device)
    report = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
        "gpu_model": device_name(device),
        "torch": torch.__version__,
        "tiny": args.tiny,
        "argv": sys.argv[1:] if argv is None else argv,
        "load_average": os.getloadavg(),
        "measured_bf16_tflops": args.peak_tflops,
    }
    with tempfile.TemporaryDirectory(prefix="aiayn-acceptance-") as tmp:
        work = Path(tmp)
        tiny_data = synthetic_task(work / "data-tiny", 2000, 200, (5, 20))
        models = {"tiny": TINY_MODEL} if args.tiny else {name: PAPER_MODELS[name] for name in args.models}
        gpus = 1 if device.type == "cuda" else 0
        chosen = args.sections or list(SECTIONS)
        if {"throughput", "ddp", "compile_ddp"} & set(chosen):
            args.paper_data = paper_data(work, args)
        sections = {
            "throughput": lambda: throughputs(
                report, lambda: write_json(args.output, report), work, models, args, device
            ),
            "decode": lambda: decode_check(args, device),
            "bf16_agreement": lambda: bf16_agreement(work, args, device),
            "host_syncs": lambda: host_sync_check(work, args, device),
            "sdpa_shapes": lambda: sdpa_shapes(device),
            "resume": lambda: resume_check(work, tiny_data, TINY_MODEL, args, gpus),
            "resume_ranks": lambda: resume_ranks_check(work, tiny_data, args, gpus),
            "memory": lambda: memory_check(work, args, device),
            "ddp": lambda: ddp_check(work, args.paper_data, PAPER_MODELS["base"], args) if gpus else {"skipped": "CPU"},
            "compile_ddp": lambda: (
                ddp_check(work, args.paper_data, PAPER_MODELS["base"], args, compiled=True)
                if gpus
                else {"skipped": "CPU: inductor compiles for minutes per run"}
            ),
        }
        report |= {"sections": chosen, "seconds_per_section": {}, "complete": False}
        for name in chosen:
            begin = time.perf_counter()
            torch._dynamo.reset()  # the recompile limit counts every compiled TrainingLoss of the process
            report[name] = run_section(sections[name])
            report["seconds_per_section"][name] = round(time.perf_counter() - begin, 1)
            report["seconds"] = round(time.perf_counter() - started, 1)
            report["pass"] = verdict(report, chosen)
            write_json(args.output, report)
            print(
                f"gpu_acceptance: {name} done in {report['seconds_per_section'][name]} s, pass {passed(report[name])}",
                file=sys.stderr,
                flush=True,
            )
    report["complete"] = True
    write_json(args.output, report)
    print(summary(report))
    return 0 if report["pass"] else 1


def summary(report: dict) -> str:
    """A short table of the figures (the device tool's reply keeps the end of the output)."""
    lines = [f"{report['device']}, torch {report['torch']}, measured bf16 {report['measured_bf16_tflops']} TFLOP/s"]
    for run in report.get("throughput", []):
        graphs = run.get("graphs") or {}
        lines.append(
            f"{run['model']:5} {run['mode']:9} {run.get('target_tokens_per_s', 'error')!s:>10} tok/s "
            f"mfu {run.get('mfu')} / {run.get('mfu_measured_peak')} warm-up {run.get('warmup_seconds')} s "
            f"first {run.get('first_step_seconds')} s graphs {graphs.get('graphs')} cuda graphs "
            f"{graphs.get('cuda_graphs')} idle {run.get('gpu_idle_share')} mem {run.get('peak_memory_gib')} "
            f"pass {run.get('pass')} {run.get('error', '')}"
        )
    for name in report["sections"]:
        if name != "throughput":
            lines.append(f"{name}: pass {passed(report[name])} in {report['seconds_per_section'].get(name)} s")
    if isinstance(report.get("decode"), dict) and "speed" in report["decode"]:
        lines.append(f"decode: {report['decode']['speed'].get('sentences_per_s')}")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
