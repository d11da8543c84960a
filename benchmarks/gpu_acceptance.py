"""The GPU acceptance run: one command, one JSON file, everything a first real GPU run must show.

    PYTHONPATH=src python benchmarks/gpu_acceptance.py --output gpu_acceptance.json          # a GPU machine
    PYTHONPATH=src python benchmarks/gpu_acceptance.py --device cpu --tiny --output F.json   # CI, < 1 minute

Sections of the JSON (each with ``pass`` where there is a criterion):
- ``throughput``: per model (base and big at the paper's 25,000 tokens per step; ``--tiny``: a tiny
  model) and mode (eager, compiled): target tokens/s (median of timed steps), MFU (against the card's
  dense peak in the run's precision, ``gpu_model`` in :data:`aiayn.runtime.gpus.CARDS`; TF32's for fp32
  products run as TF32, ``tf32_matmuls``; none for a card not in the table), peak GPU memory,
  the scaled-dot-product-attention kernels that ran, and the share of the step's time the GPU ran no
  kernel, copy or fill (``gpu_idle_share``, from the device rows of a profiled step).
- ``resume``: ``python -m aiayn.train`` stopped with SIGTERM (what SLURM sends on preemption) after
  its first checkpoint, started again, and compared with an uninterrupted run: exit status 143,
  the same steps, losses within 1e-3 relative (exactly equal on a CPU), final weights' largest difference.
- ``resume_ranks``: the same under torchrun with 2 ranks (2 GPUs, NCCL; on a CPU 2 gloo ranks,
  ``train.cpu_ranks: 2``): SIGTERM to the command's process group (relaunch parent, torchrun; torchrun
  passes it to its ranks) after the first checkpoint, the same command again, compared with an
  uninterrupted 2-rank run: exit status 143, the same steps, losses and gradient norms of every step
  (``max_loss_rel_diff``, ``max_grad_norm_rel_diff``) and final weights; pass: all exactly equal on a
  CPU, losses within 1e-3 relative on GPUs (as ``resume``). Skipped with fewer than 2 GPUs on CUDA.
- ``decode``: a model trained briefly on a copy task decodes the same sentences in fp32 and in
  bf16 autocast: the share of identical hypotheses (pass: >= 0.9, and on a CPU or where bf16 is
  emulated it is reported only), and beam-4 sentences/s of the base model (fp32 and the device's
  ``auto`` precision, outputs of the source's length).
- ``host_syncs``: CUDA's own count of synchronizing operations (``torch.cuda.set_sync_debug_mode``)
  over training steps (the step and the reading of its statistics a step late) and over a beam
  search, by the line that caused each. Pass: none in training, and in decoding only the
  candidates' copy to the host, one per step (``aiayn/decode/beam.py`` ``_to_host``); the same
  inventory ``tests/test_cuda_path.py`` takes on a CPU. Skipped on a CPU.
- ``ddp``: with 2 or more GPUs, ``train.gpus: 2`` (torchrun, NCCL) against one GPU with the same
  step: the loss and gradient norm of every step (pass: within 1e-3 relative) and the final weights
  (pass: largest difference within a tenth of the summed learning rate). Skipped with one GPU or on a CPU.
- ``compile_ddp``: the ``ddp`` comparison with ``train.compile: true`` in both runs (2 compiled ranks
  under DDP against 1 compiled GPU with accumulation 2; the same tolerances, :func:`ddp_verdict`).
  Skipped with one GPU and on a CPU, where inductor compiles for minutes per run.

Every section is a dict; a skipped one is ``{"skipped": why}``; ``pass`` at the top is false when any
section's ``pass`` is false. ``seconds_per_section`` has one entry per section.
"""

from __future__ import annotations

import argparse
import copy
import csv
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

import torch
from decode_speed import random_sentences, train_copy_model
from torch.autograd import DeviceType
from train_throughput import PAPER_MODELS, synthetic_task, time_updates

from aiayn.decode.beam import SpecialIds, translate_sentences
from aiayn.io import write_json
from aiayn.model import Transformer
from aiayn.options import ModelConfig
from aiayn.runtime.checkpoint import load_checkpoint
from aiayn.runtime.devices import device_name
from aiayn.runtime.precision import autocast_for, enable_tf32, native_bf16, resolve_precision, tf32_matmuls
from aiayn.train.distributed import DistEnv
from aiayn.train.trainer import Trainer

TINY_MODEL = {**PAPER_MODELS["base"], "n_layers": 2, "d_model": 64, "d_ff": 128, "n_heads": 4, "d_k": 16, "d_v": 16}
IDS = SpecialIds(pad=0, bos=2, eos=3)


def run_settings(model: dict, tokens_per_step: int, per_batch: int, steps: int, gpus: int, **train) -> dict:
    values = {"train_steps": steps, "tokens_per_step": tokens_per_step, "tokens_per_pass": per_batch, "gpus": gpus,
              "checkpoint_minutes": 0, "dev_every_steps": 0, "log_every_steps": 1, "warmup_steps": 4000} | train
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
    work = [(e.time_range.start, e.time_range.end) for e in events
            if e.device_type == DeviceType.CUDA and e.activity_type in DEVICE_WORK]
    return 1.0 - busy_microseconds(work, start, end) / (end - start)


def profile_step(trainer: Trainer) -> dict:
    """SDPA kernels seen and the GPU's idle share over one profiled step."""
    from torch.profiler import ProfilerActivity, profile, record_function

    cuda = trainer.env.device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        with record_function(STEP_LABEL):
            trainer.train_step()
            if cuda:
                torch.cuda.synchronize()
    kernels = sorted({e.key for e in prof.key_averages() if "scaled_dot_product" in e.key and "backward" not in e.key})
    return {"sdpa_kernels": kernels, "gpu_idle_share": round(gpu_idle_share(prof.events()), 4) if cuda else None}


def throughput(work: Path, name: str, model: dict, compiled: bool, args, device: torch.device) -> dict:
    tokens_per_step, per_batch = (1024, 512) if args.tiny else (25000, 12500)
    data = work / "data-tiny" if args.tiny else work / "data-paper"
    run = run_settings(model, tokens_per_step, per_batch, 10**6, 1, compile=compiled, precision="auto")
    torch.manual_seed(0)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    trainer = Trainer(run, data, work / f"tp-{name}-{compiled}", DistEnv(0, 1, device))
    time_updates(trainer, args.warmup_steps)
    rates = time_updates(trainer, args.timed_steps)
    median = statistics.median(rates)
    result = {"model": name, "compiled": compiled, "precision": trainer.precision, "tf32_matmuls": tf32_matmuls(device),
              "tokens_per_step": trainer.plan.tokens_per_step, "target_tokens_per_s": round(median, 1),
              "mfu": None if trainer.mfu(median) is None else round(trainer.mfu(median), 4),
              "peak_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if device.type == "cuda" else None}
    result |= profile_step(trainer)
    trainer.batches.close()
    return result


def train_command(data: Path, settings: dict, out: Path, threads: int) -> list[str]:
    """``python -m aiayn.train`` on ``data`` into ``out`` with ``settings`` (written beside ``out``)."""
    path = out.with_name(f"{out.name}.settings.json")
    path.write_text(json.dumps(settings), encoding="utf-8")
    return [sys.executable, "-m", "aiayn.train", "--data", str(data), "--settings", str(path),
            "--out-dir", str(out), "--threads", str(threads)]


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
    proc = subprocess.Popen(train_command(data, settings, split, args.threads), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    first = split / "checkpoints" / "ckpt_00000002.pt"
    while not first.exists() and proc.poll() is None:
        time.sleep(0.01)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    status = proc.wait()
    stopped_at = max(int(p.stem.split("_")[1]) for p in (split / "checkpoints").glob("ckpt_*.pt"))
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
    return {"signal": "SIGTERM", "exit_status_stopped": status, "stopped_at_step": stopped_at,
            "exit_status_resumed": again.returncode, "steps": max(a, default=0), "max_loss_rel_diff": worst,
            "max_grad_norm_rel_diff": norms, "max_final_weight_diff": weights, "pass": ok,
            "stderr_tail": "" if again.returncode == 0 else again.stderr[-2000:]}


def decode_check(args, device: torch.device) -> dict:
    """bf16-vs-fp32 hypotheses of a copy-trained model, and beam-4 speed of the base model."""
    vocab = 200 if args.tiny else 1000
    shape = {key: TINY_MODEL[key]
             for key in ("n_layers", "d_model", "d_ff", "n_heads", "d_k", "d_v")} if args.tiny else None
    model = train_copy_model(vocab, args.copy_steps, batch=64, seed=1, shape=shape, device=device)
    sources = random_sentences(64 if args.tiny else 500, vocab, torch.Generator().manual_seed(7))
    search = dict(max_sentences=64, device=device, ids=IDS, beam_size=4, length_penalty=0.6,
                  max_len_a=1.0, max_len_b=50.0, early_stop=True)
    fp32 = translate_sentences(model, sources, **search)
    with autocast_for("bf16", device):
        bf16 = translate_sentences(model, sources, **search)
    same = sum(a.tokens == b.tokens for a, b in zip(fp32, bf16)) / len(sources)
    judged = device.type == "cuda" and native_bf16(device)
    result = {"copy_steps": args.copy_steps, "sentences": len(sources), "bf16_same_as_fp32": round(same, 4),
              "exact_copies_fp32": sum(h.tokens == s for h, s in zip(fp32, sources)),
              "tolerance": ">= 0.9 identical hypotheses (judged on GPUs with bf16 tensor cores only)",
              "pass": same >= 0.9 if judged else None}
    result["speed"] = decode_speed(args, device)
    return result


def decode_speed(args, device: torch.device) -> dict:
    shape = TINY_MODEL if args.tiny else PAPER_MODELS["base"]
    torch.manual_seed(1)
    model = Transformer(ModelConfig.from_dict(shape | {"dropout": 0.0}), 1000 if args.tiny else 37000).to(device).eval()
    sources = random_sentences(64 if args.tiny else 1000, 1000 if args.tiny else 37000,
                               torch.Generator().manual_seed(3))
    out = {}
    for precision in sorted({"fp32", resolve_precision("auto", device)}):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        with autocast_for(precision, device):
            translate_sentences(model, sources, max_sentences=128, device=device, ids=IDS, beam_size=4,
                                length_penalty=0.6, max_len_a=1.0, max_len_b=0.0, early_stop=True)
        if device.type == "cuda":
            torch.cuda.synchronize()
        out[precision] = round(len(sources) / (time.perf_counter() - start), 2)
    return {"model": "tiny" if args.tiny else "base", "sentences_per_s": out, "beam_size": 4, "batch": 128}


def sync_lines(caught: list[warnings.WarningMessage]) -> Counter:
    """``file:line`` of each synchronizing-operation warning of ``set_sync_debug_mode("warn")``."""
    return Counter(f"{Path(w.filename).name}:{w.lineno}" for w in caught if "synchroniz" in str(w.message))


def counting_syncs(work: callable) -> Counter:
    """The synchronizing CUDA operations ``work()`` ran, by line (:func:`sync_lines`)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            work()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return sync_lines(caught)


def host_sync_check(work: Path, args, device: torch.device) -> dict:
    """Synchronizing operations in training steps and in a beam search (the module docstring)."""
    if device.type != "cuda":
        return {"skipped": "CPU: tests/test_cuda_path.py counts the host's waits on a pretend device"}
    trainer = Trainer(run_settings(TINY_MODEL, 1024, 512, 10**6, 1, precision="auto"), work / "data-tiny",
                      work / "syncs", DistEnv(0, 1, device))
    time_updates(trainer, 2)  # warm-up: the first steps allocate

    def steps():
        for _ in range(5):
            trainer.train_step()
            trainer.take_results(None, None, 0.0)
    training = counting_syncs(steps)
    trainer.batches.close()
    torch.manual_seed(1)
    model = Transformer(ModelConfig.from_dict(TINY_MODEL | {"dropout": 0.0}), 200).to(device).eval()
    sources = random_sentences(16, 200, torch.Generator().manual_seed(3))
    decoding = counting_syncs(lambda: translate_sentences(
        model, sources, max_sentences=16, device=device, ids=IDS, beam_size=4, length_penalty=0.6,
        max_len_a=1.0, max_len_b=5.0, early_stop=True))
    beam_lines = {line for line in decoding if line.startswith("beam.py:")}
    return {"training_steps": 5, "training": dict(training), "decoding": dict(decoding),
            "pass": not training and len(beam_lines) <= 1 and set(decoding) == beam_lines}


def max_rel_diff(a: dict[int, float], b: dict[int, float]) -> float:
    """Largest ``|a - b| / |a|`` over the steps; infinite when the two logs do not have the same steps."""
    if sorted(a) != sorted(b) or not a:
        return float("inf")
    return max(abs(a[s] - b[s]) / abs(a[s]) for s in a)


def compare_trainings(reference: Path, other: Path) -> dict:
    """Two trainings meant to be the same, step by step: loss and gradient norm of every logged step,
    and the final weights (``checkpoint_last.pt``), with the reference's summed learning rate as the
    scale of the weights' difference."""
    return {"steps": max(losses(reference), default=0),
            "max_loss_rel_diff": max_rel_diff(losses(reference), losses(other)),
            "max_grad_norm_rel_diff": max_rel_diff(log_column(reference, "grad_norm"), log_column(other, "grad_norm")),
            "max_final_weight_diff": final_weights_diff(reference, other),
            "summed_lr": sum(log_column(reference, "lr").values())}


def ddp_verdict(diff: dict) -> bool:
    """Same loss and gradient norm at every step within 1e-3 relative (1 GPU with accumulation 2 and 2
    GPUs run the same micro-batches; only the order of the fp32 all-reduce differs), and final weights
    within a tenth of the summed learning rate: an Adam step moves a weight by about its learning rate at
    most, so a lost or doubled update on one rank shows, a different summation order does not."""
    return (diff["max_loss_rel_diff"] <= 1e-3 and diff["max_grad_norm_rel_diff"] <= 1e-3
            and diff["max_final_weight_diff"] <= 0.1 * diff["summed_lr"])


def ddp_check(work: Path, data: Path, model: dict, args, compiled: bool = False) -> dict:
    """``train.gpus: 2`` (torchrun, NCCL) against one GPU at the same tokens per step (see ddp_verdict),
    both with ``train.compile`` as ``compiled`` says."""
    if torch.cuda.device_count() < 2:
        return {"skipped": f"{torch.cuda.device_count()} GPU(s) visible; needs 2"}
    quiet = copy.deepcopy(model) | {"dropout": 0.0}
    name = "compile-ddp" if compiled else "ddp"
    for gpus in (1, 2):
        settings = run_settings(quiet, 25000, 12500, args.ddp_steps, gpus, warmup_steps=100, compile=compiled)
        done = subprocess.run(train_command(data, settings, work / f"{name}-{gpus}", args.threads),
                              capture_output=True, text=True)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, required=True, help="the JSON file to write")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--tiny", action="store_true", help="tiny models and data (a CPU run in under a minute)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    args.warmup_steps, args.timed_steps = (2, 3) if args.tiny else (5, 10)
    args.resume_steps, args.copy_steps, args.ddp_steps = (30, 40, 4) if args.tiny else (60, 600, 20)
    torch.set_num_threads(args.threads)
    device = torch.device("cuda", 0) if args.device == "cuda" else torch.device("cpu")
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda but CUDA is not available (use --device cpu --tiny on a CPU)")
    enable_tf32(device, "auto")  # its trainings run precision auto
    started = time.perf_counter()
    report = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
              "gpu_model": device_name(device),
              "torch": torch.__version__, "tiny": args.tiny, "load_average": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="aiayn-acceptance-") as tmp:
        work = Path(tmp)
        tiny_data = synthetic_task(work / "data-tiny", 2000, 200, (5, 20))
        models = {"tiny": TINY_MODEL} if args.tiny else {name: PAPER_MODELS[name] for name in ("base", "big")}
        if not args.tiny:
            synthetic_task(work / "data-paper", 60000, 37000, (10, 41))
        modes = (False,) if device.type == "cpu" else (False, True)
        gpus = 1 if device.type == "cuda" else 0
        sections = {
            "throughput": lambda: [throughput(work, name, model, compiled, args, device)
                                   for name, model in models.items() for compiled in modes],
            "resume": lambda: resume_check(work, tiny_data, TINY_MODEL, args, gpus),
            "resume_ranks": lambda: resume_ranks_check(work, tiny_data, args, gpus),
            "decode": lambda: decode_check(args, device),
            "host_syncs": lambda: host_sync_check(work, args, device),
            "ddp": lambda: (ddp_check(work, work / "data-paper", PAPER_MODELS["base"], args)
                            if gpus else {"skipped": "CPU"}),
            "compile_ddp": lambda: (ddp_check(work, work / "data-paper", PAPER_MODELS["base"], args, compiled=True)
                                    if gpus else {"skipped": "CPU: inductor compiles for minutes per run"}),
        }
        report["seconds_per_section"] = {}
        for name, section in sections.items():
            begin = time.perf_counter()
            report[name] = section()
            report["seconds_per_section"][name] = round(time.perf_counter() - begin, 1)
        if device.type == "cpu":
            report["throughput_compiled"] = ("skipped on a CPU (inductor compiles for minutes); "
                                             "see tests/test_trainer.py")
    report["seconds"] = round(time.perf_counter() - started, 1)
    report["pass"] = all(report[name].get("pass") is not False for name in sections if name != "throughput")
    write_json(args.output, report)
    print(json.dumps(report, indent=2))
    return 0 if report["pass"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
