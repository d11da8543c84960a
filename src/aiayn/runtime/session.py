"""Loading a checkpoint's model and running it: the inference session of decoding, scoring and figures.

``with inference_session(path, device=..., precision=..., threads=..., cpu_matmul=...) as session``
does, in order: torch's CPU threads, the device (``auto`` claims a free GPU as training does,
:func:`aiayn.runtime.devices.resolve_device`), the checkpoint's model loaded onto it in eval mode
(:func:`load_model`), TF32 and oneDNN as the precision and ``cpu_matmul`` say
(:mod:`aiayn.runtime.precision`), and on leaving, the GPU claim released. ``session.autocast()`` is
the autocast context of the resolved precision.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from aiayn.model import Transformer
from aiayn.options import DecodeConfig, ModelConfig
from aiayn.runtime.checkpoint import Checkpoint, load_checkpoint
from aiayn.runtime.devices import resolve_device
from aiayn.runtime.precision import autocast_for, set_up_arithmetic


def load_model(path: str | os.PathLike, device: str | torch.device = "cpu") -> tuple[Transformer, Checkpoint]:
    """Build the model a checkpoint describes (``settings["model"]``, ``vocab["size"]``) and load it.

    Returns (model in eval mode on ``device``, the checkpoint without its optimizer state). Checkpoints
    are read with ``weights_only=True`` (tensors and plain Python values only), memory-mapped onto the
    CPU: only the weights are read, and only they move to ``device`` (a training checkpoint's Adam
    moments, twice the weights, never reach the GPU).
    """
    checkpoint = load_checkpoint(path, "cpu", mmap=True)  # verified: a corrupt file is refused, naming it
    checkpoint = dataclasses.replace(checkpoint, optimizer=None)
    cfg = ModelConfig.from_dict(checkpoint.model_settings)
    model = Transformer(cfg, int(checkpoint.vocab["size"]), pad_id=int(checkpoint.vocab.get("pad_id", 0)))
    model.load_state_dict(checkpoint.model)
    return model.to(device).eval(), checkpoint


@dataclass
class InferenceSession:
    """A checkpoint's model placed on ``device`` in eval mode, and the precision it runs in."""

    model: Transformer
    checkpoint: Checkpoint
    device: torch.device
    precision: str  # resolved: bf16 or fp32

    def autocast(self) -> contextlib.AbstractContextManager:
        """bf16 autocast when the session runs in bf16; nothing in fp32."""
        return autocast_for(self.precision, self.device)


@contextlib.contextmanager
def inference_session(
    checkpoint_path: str | os.PathLike,
    device: str = "auto",
    precision: str | None = DecodeConfig.precision,
    threads: int | None = None,
    cpu_matmul: str | None = DecodeConfig.cpu_matmul,
    lock_dir: Path | None = None,
    matmul_key: str = "decode.cpu_matmul",
) -> Iterator[InferenceSession]:
    """The model of ``checkpoint_path`` on ``device`` (see the module docstring).

    ``precision`` and ``cpu_matmul``: as ``decode.precision`` and ``decode.cpu_matmul`` say; None takes
    the checkpoint's own ``train.precision`` / ``train.cpu_matmul`` (the arithmetic its run validated
    with; :meth:`~aiayn.runtime.checkpoint.Checkpoint.train_setting`). ``matmul_key`` names the setting in the log.
    """
    if threads:
        torch.set_num_threads(threads)
    place, claim = resolve_device(device, lock_dir)
    try:
        model, checkpoint = load_model(checkpoint_path, place)
        precision = checkpoint.train_setting("precision") if precision is None else precision
        cpu_matmul = checkpoint.train_setting("cpu_matmul") if cpu_matmul is None else cpu_matmul
        resolved = set_up_arithmetic(model, precision, cpu_matmul, place, key=matmul_key)
        yield InferenceSession(model, checkpoint, place, resolved)
    finally:
        if claim is not None:
            claim.release()
