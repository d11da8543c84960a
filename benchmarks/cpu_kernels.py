"""The CPU kernels of :mod:`aiayn.model.functional` against torch's defaults, side by side.

    PYTHONPATH=src python benchmarks/cpu_kernels.py --threads 2

Matrix products at the CPU training benchmark's shapes (``train_throughput.py``: 4096 rows,
d_model 256, d_ff 1024, a 10,000-symbol vocabulary), each as the training step runs it: forward
(x W^T), input gradient (g W) and weight gradient (g^T x), in GFLOP/s, torch's default (MKL) and
oneDNN; then the forward and backward of dropout (p 0.1 on 4096 x 256), ``F.dropout`` and
:func:`aiayn.model.functional.dropout`, in ms. Variants alternate within each repetition (ABAB), the
median over ``--repeats`` is printed, so load from other jobs hits both alike.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from aiayn.model.functional import dropout, onednn_available

SHAPES = {
    "qkv": (256, 768),
    "W^O": (256, 256),
    "FFN W1": (256, 1024),
    "FFN W2": (1024, 256),
    "softmax projection": (256, 10000),
}


def onednn(a: torch.Tensor, b_t: torch.Tensor) -> torch.Tensor:
    return torch.ops.mkldnn._linear_pointwise(a, b_t, None, "none", [], "")


def seconds(fn, repeats: int) -> list[float]:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def side_by_side(variants: dict, repeats: int) -> dict[str, float]:
    """Median seconds of each variant, the variants interleaved one call at a time."""
    times = {name: [] for name in variants}
    for _ in range(repeats):
        for name, fn in variants.items():
            times[name] += seconds(fn, 1)
    return {name: statistics.median(t) for name, t in times.items()}


def products(rows: int, repeats: int) -> list[str]:
    lines = [f"{'product':<36}{'MKL GFLOP/s':>12}{'oneDNN':>9}{'ratio':>7}"]
    for name, (k, m) in SHAPES.items():
        g = torch.Generator().manual_seed(0)
        x, w, grad = (torch.randn(*shape, generator=g) for shape in ((rows, k), (m, k), (rows, m)))
        flops = 2 * rows * k * m
        for part, mkl, dnn in (
            ("forward", lambda: F.linear(x, w), lambda: onednn(x, w)),
            ("input gradient", lambda: grad @ w, lambda: onednn(grad, w.t())),
            ("weight gradient", lambda: grad.t() @ x, lambda: onednn(grad.t(), x.t())),
        ):
            t = side_by_side({"mkl": mkl, "onednn": dnn}, repeats)
            lines.append(
                f"{name + ' ' + part:<36}{flops / t['mkl'] / 1e9:>12.0f}{flops / t['onednn'] / 1e9:>9.0f}"
                f"{t['mkl'] / t['onednn']:>7.2f}"
            )
    return lines


def dropouts(repeats: int) -> list[str]:
    x = torch.randn(4096, 256, requires_grad=True)

    def step(fn):
        return lambda: fn().backward(torch.ones_like(x))

    t = side_by_side(
        {"F.dropout": step(lambda: F.dropout(x, 0.1, True)), "aiayn": step(lambda: dropout(x, 0.1, True))}, repeats
    )
    return [
        f"dropout p=0.1, 4096 x 256, forward + backward: F.dropout {t['F.dropout'] * 1e3:.2f} ms, "
        f"aiayn {t['aiayn'] * 1e3:.2f} ms, ratio {t['F.dropout'] / t['aiayn']:.2f}"
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if not onednn_available():
        print("this torch build has no oneDNN linear operator: nothing to compare")
        return 1
    print("\n".join(products(args.rows, args.repeats) + dropouts(args.repeats)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
