"""Label-smoothed loss, forward + backward: time and peak memory of three implementations.

    PYTHONPATH=src python benchmarks/loss_speed.py --rows 8192 --vocab 37000 --threads 2 [--device cuda]

- ``blocked``: :func:`aiayn.runtime.loss.label_smoothed_loss` (row blocks, gradient in the forward pass);
- ``unblocked``: the whole-tensor formulation it replaced (an fp32 copy, full log-probabilities, and
  full-size zero tensors in the backward of ``gather`` and of the padding column), kept here as the
  baseline;
- ``cross_entropy``: ``F.cross_entropy(reduction="sum", label_smoothing=eps, ignore_index=pad)`` (its
  smoothing spreads eps over all V classes: not the same loss, the speed reference).

Time: the median of ``--repeats`` rounds, the three taking turns within each round (outside load
hits them alike). Peak memory: on a CPU, each implementation runs once in a fresh process and the
growth of its peak resident set over the inputs' is reported; on CUDA, ``max_memory_allocated``
beyond the inputs. Both include the logits' gradient (the same for all three). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

from aiayn.runtime.loss import label_smoothed_loss

EPS, PAD = 0.1, 0


def unblocked(logits, target, smoothing, pad_id=PAD):
    """The whole-tensor formulation (the baseline)."""
    vocab = logits.shape[-1]
    lprobs = F.log_softmax(logits.float(), dim=-1).view(-1, vocab)
    target = target.reshape(-1)
    keep = target.ne(pad_id)
    gold = lprobs.gather(1, target.unsqueeze(1)).squeeze(1)
    nll = -(gold * keep).sum()
    others = lprobs.sum(dim=1) - gold - lprobs[:, pad_id]
    return (1.0 - smoothing) * nll - smoothing / (vocab - 2) * (others * keep).sum()


def blocked(logits, target, smoothing):
    return label_smoothed_loss(logits, target, smoothing, PAD)[0]


def cross_entropy(logits, target, smoothing):
    return F.cross_entropy(
        logits.view(-1, logits.shape[-1]).float(),
        target.view(-1),
        ignore_index=PAD,
        reduction="sum",
        label_smoothing=smoothing,
    )


VARIANTS = {"blocked": blocked, "unblocked": unblocked, "cross_entropy": cross_entropy}


def inputs(rows: int, vocab: int, device: str, dtype: torch.dtype):
    g = torch.Generator().manual_seed(0)
    logits = (2 * torch.randn(rows, vocab, generator=g)).to(device=device, dtype=dtype).requires_grad_()
    target = torch.randint(4, vocab, (rows,), generator=g)
    target[::10] = PAD  # a tenth of the positions are padding
    return logits, target.to(device)


def run_once(name: str, logits, target) -> None:
    logits.grad = None
    VARIANTS[name](logits, target, EPS).backward()


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def time_all(args, dtype) -> dict:
    logits, target = inputs(args.rows, args.vocab, args.device, dtype)
    times = {name: [] for name in VARIANTS}
    for name in VARIANTS:  # warm-up
        run_once(name, logits, target)
    for _ in range(args.repeats):
        for name in VARIANTS:
            sync(args.device)
            start = time.perf_counter()
            run_once(name, logits, target)
            sync(args.device)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def peak_bytes(args, name: str, dtype) -> int:
    """Peak memory of one forward + backward beyond the inputs (see the module docstring)."""
    if args.device.startswith("cuda"):
        logits, target = inputs(args.rows, args.vocab, args.device, dtype)
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        run_once(name, logits, target)
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - base
    command = [
        sys.executable,
        __file__,
        "--child",
        name,
        "--rows",
        str(args.rows),
        "--vocab",
        str(args.vocab),
        "--dtype",
        args.dtype,
        "--threads",
        str(args.threads),
    ]
    return int(subprocess.run(command, check=True, capture_output=True, text=True).stdout.split()[-1])


def _status_kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as handle:
        return int(next(line for line in handle if line.startswith(field)).split()[1])


def child(args, dtype) -> int:
    """In a fresh process: print the growth of the peak RSS (bytes) over one forward + backward.

    Linux: the peak (VmHWM) is reset to the current RSS first (``/proc/self/clear_refs``), so what
    making the inputs cost is not counted.
    """
    small = inputs(4, args.vocab, "cpu", dtype)
    run_once(args.child, *small)  # load the code paths, not the memory
    logits, target = inputs(args.rows, args.vocab, "cpu", dtype)
    with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
        handle.write("5")
    before = _status_kib("VmRSS:")
    run_once(args.child, logits, target)
    print((_status_kib("VmHWM:") - before) * 1024)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8192, help="target positions (tokens x batch)")
    parser.add_argument("--vocab", type=int, default=37000)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--child", choices=sorted(VARIANTS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    if args.child:
        return child(args, dtype)
    seconds = time_all(args, dtype)
    peaks = {name: peak_bytes(args, name, dtype) for name in VARIANTS}
    result = {
        "machine": f"{platform.processor() or platform.machine()}, torch threads {args.threads}",
        "torch": torch.__version__,
        "device": args.device,
        "dtype": args.dtype,
        "shape": [args.rows, args.vocab],
        "repeats": args.repeats,
        "seconds": {k: round(v, 4) for k, v in seconds.items()},
        "peak_mib": {k: round(v / 2**20, 1) for k, v in peaks.items()},
        "time_vs_cross_entropy": round(seconds["blocked"] / seconds["cross_entropy"], 3),
        "time_vs_unblocked": round(seconds["blocked"] / seconds["unblocked"], 3),
        "peak_vs_unblocked": round(peaks["blocked"] / max(peaks["unblocked"], 1), 3),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
