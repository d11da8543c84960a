"""Numeric precision of training, scoring and decoding: bf16 autocast where the GPU has it, else fp32.

``auto`` is bf16 on a GPU of compute capability 8.0 or newer (A100, H100, L40S, ...: bf16 tensor
cores), fp32 elsewhere (older GPUs emulate bf16, slower than fp32; a CPU's fp32 is its fast path).
On a GPU under ``auto`` and ``bf16``, fp32 matrix products use TF32 tensor cores (10-bit mantissa
inputs, fp32 accumulation); ``fp32`` leaves them off.

Deviation from paper: the paper trained (and decoded) in fp32 on P100 GPUs, which have neither bf16
nor TF32; ``auto`` uses bf16 autocast on GPUs that have bf16 tensor cores (weights, optimizer state,
softmax, layer norms and the loss stay fp32) and TF32 for fp32 matrix products there.
``train.precision: fp32`` and ``decode.precision: fp32`` restore fp32 storage and arithmetic, TF32
matrix products included.
"""

from __future__ import annotations

import contextlib
import logging

import torch

from aiayn.model.functional import onednn_available
from aiayn.model.int8 import int8_available
from aiayn.options.decode import INT8, PRECISIONS

log = logging.getLogger(__name__)


def native_bf16(device: torch.device) -> bool:
    """Whether ``device`` is a GPU with bf16 tensor cores (compute capability 8.0 or newer)."""
    return device.type == "cuda" and tuple(torch.cuda.get_device_capability(device)) >= (8, 0)


def resolve_precision(precision: str, device: torch.device) -> str:
    """``bf16`` or ``fp32`` for a setting of :data:`PRECISIONS` on ``device`` (see the module docstring)."""
    if precision not in PRECISIONS:
        raise ValueError(
            f"precision {precision!r} is not supported: use {', '.join(PRECISIONS)} "
            "(fp16 would need loss scaling; bf16 has fp32's range)"
        )
    if device.type == "cuda" and precision != "fp32" and not native_bf16(device):
        major, minor = torch.cuda.get_device_capability(device)
        if precision == "auto":
            log.info(
                "precision auto: fp32 on this GPU (compute capability %d.%d has no bf16 tensor cores)", major, minor
            )
            return "fp32"
        log.warning(
            "precision bf16 on a GPU of compute capability %d.%d: bf16 is emulated there and slower "
            "than fp32 (precision auto picks fp32)",
            major,
            minor,
        )
    if precision == "auto":
        return "bf16" if device.type == "cuda" else "fp32"
    return precision


def enable_tf32(device: torch.device, precision: str) -> None:
    """TF32 tensor cores for fp32 matrix products and convolutions on CUDA under ``precision`` ``auto``
    or ``bf16``; under ``fp32`` (the paper's arithmetic) full fp32, set explicitly since the switches
    are process-wide. Nothing off CUDA."""
    if device.type != "cuda":
        return
    tf32 = precision != "fp32"
    torch.set_float32_matmul_precision("high" if tf32 else "highest")
    torch.backends.cudnn.allow_tf32 = tf32


def avoid_cudnn_attention(device: torch.device) -> None:
    """Keep ``scaled_dot_product_attention`` off cuDNN's kernel on CUDA (flash and memory-efficient
    kernels remain), process-wide as the TF32 switches.

    cuDNN's attention builds an execution graph for every new shape of its inputs (pytorch/pytorch
    ``aten/src/ATen/native/cudnn/MHA.cpp``: its graph cache is keyed by every size and stride of q, k
    and v, ``MHAParams``; the opt-in ``TORCH_CUDNN_SDPA_AVOID_RECOMPILE`` of pull request 155958 rounds
    lengths up instead), hundreds of milliseconds each (sgl-project/sglang pull request 4650 measured
    about 400 ms), and here every shape is new: each training batch's lengths differ, and decoding adds
    a key per step. On an H200 with torch 2.11, where bf16 attention picked cuDNN's kernel, a base and a
    big model's steps of 25,000 tokens took the same 0.8 s with the GPU idle 89-93% of each step, and
    bf16 beam search ran 11 times slower than fp32, whose attention cuDNN does not serve. Graph building
    fits both (the same time for both sizes, an idle GPU, bf16 alone); ``benchmarks/gpu_acceptance.py``
    measures training and decoding with cuDNN's kernel allowed and not, side by side, which proves or
    refutes it."""
    if device.type == "cuda":
        torch.backends.cuda.enable_cudnn_sdp(False)


def tf32_matmuls(device: torch.device) -> bool:
    """Whether float32 matrix products on ``device`` may run on TF32 tensor cores (process-wide
    ``torch.set_float32_matmul_precision``, "highest" is plain fp32), which sets their peak FLOP/s."""
    return device.type == "cuda" and torch.get_float32_matmul_precision() != "highest"


def autocast_for(resolved: str, device: torch.device) -> contextlib.AbstractContextManager:
    """bf16 autocast for a resolved precision ``bf16``; nothing (fp32) for ``fp32``."""
    if resolved == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def set_up_arithmetic(
    model, precision: str, cpu_matmul: str, device: torch.device, compiled: bool = False, key: str = "train.cpu_matmul"
) -> str:
    """What every stage that runs ``model`` on ``device`` sets up: TF32 as ``precision`` says
    (:func:`enable_tf32`), attention off cuDNN's kernel (:func:`avoid_cudnn_attention`) and the
    model's float32 CPU products through oneDNN as ``cpu_matmul`` says (:func:`use_onednn`); returns
    the resolved precision to autocast in (:func:`resolve_precision`)."""
    enable_tf32(device, precision)
    avoid_cudnn_attention(device)
    model.use_onednn(use_onednn(cpu_matmul, compiled, device, key))
    if cpu_matmul == INT8:
        use_int8(model, device, key)
    return resolve_precision(precision, device)


def use_int8(model, device: torch.device, key: str) -> None:
    """``key`` int8: the model's products in int8 on a CPU (:mod:`aiayn.model.int8`); a GPU runs its
    products as the precision says (said in the log); a CPU without the operator is an error."""
    if device.type != "cpu":
        log.info("%s int8 is for CPUs: on %s the products run as the precision says", key, device)
        return
    if not int8_available():
        raise ValueError(f"{key} int8: this torch build has no oneDNN int8 product; use onednn or mkl")
    model.use_int8()


def use_onednn(matmul: str, compile_model: bool, device: torch.device, key: str = "train.cpu_matmul") -> bool:
    """Whether float32 CPU products go through oneDNN (``key``, ``train.cpu_matmul`` or
    ``decode.cpu_matmul``, is ``onednn``; :mod:`aiayn.model.functional`): on a CPU, not compiled
    (inductor picks its own kernels), and where this torch build has oneDNN's linear operator (else
    MKL's, said in the log)."""
    if matmul != "onednn" or compile_model or device.type != "cpu":
        return False
    if not onednn_available():
        log.info("%s onednn: this torch build has no oneDNN linear operator; using its default", key)
        return False
    return True
