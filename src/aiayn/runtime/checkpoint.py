"""Checkpoint files: their contents (:class:`Checkpoint`), atomic writes, verified reads, and which
ones averaging takes (docs/ARCHITECTURE.md). What only training needs (rotation, the newest good one,
RNG state, whether a run may continue one) is :mod:`aiayn.train.resume`'s.

A checkpoint is written by :func:`save_checkpoint` and read by :func:`load_checkpoint`, nowhere else:
the trainer, averaging and every stage that loads a model build and read the one type.

Which checkpoints are averaged (paper section 6.1: the last 5, big the last 20) is decided by step:
a checkpoint is *spaced* when its step is a multiple of ``train.checkpoint_steps`` or the final step
(:func:`is_spaced`). The wall-clock checkpoints (``train.checkpoint_minutes``) and the one written
when a run is stopped are for resuming only: rotation keeps the newest checkpoint of any kind plus the
newest ``keep_checkpoints`` spaced ones, and averaging takes spaced ones only.

Deviation from paper: the paper wrote a checkpoint every 10 minutes on 8 P100s, about 1,400 steps
apart for base (100,000 steps in 12 hours: 1,389) and 600 for big (300,000 in 3.5 days: 595). On
a faster setup 10 minutes spans many more steps, and "the last 5" would average a larger part of
the run, so checkpoints are spaced by those step counts (``train.checkpoint_steps``: base 1400, big
600). ``train.checkpoint_steps: 0`` spaces them by ``checkpoint_minutes`` alone, as the paper did
on its hardware.
"""

from __future__ import annotations

import errno
import logging
import pickle
import shutil
import zipfile
from dataclasses import dataclass, fields
from pathlib import Path

import torch

from aiayn.io import atomic_path
from aiayn.options import TrainConfig
from aiayn.paths import CHECKPOINT_RE, TrainPaths

log = logging.getLogger(__name__)


class CorruptCheckpoint(ValueError):
    """A checkpoint file that does not load, lacks an entry, or holds non-finite weights."""


class NonFiniteWeights(ValueError):
    """A model state with NaN or infinite weights, which is never written as a checkpoint."""


@dataclass
class Checkpoint:
    """What one checkpoint file holds.

    ``model``: the model's state_dict. ``settings``: the run's resolved settings (``settings["model"]``
    the model section, ``settings["train"]`` the train section, with ``experiment`` and ``task``),
    from which the model is rebuilt. ``vocab``: ``{size, pad_id, unk_id, bos_id, eos_id}``. ``step``:
    the optimizer steps taken. A training checkpoint also holds what resuming needs (``optimizer``,
    ``data_state``, ``progress``, ``window``, ``rng``, ``world_size``, ``batches_per_rank``); an averaged
    one the steps it averages (``averaged_steps``).

    On disk: ``torch.save`` of :meth:`to_dict`, a dict of these entries by name without the ones that
    are None (the format of every checkpoint this project has written).
    """

    model: dict[str, torch.Tensor]
    settings: dict
    vocab: dict
    step: int | None = None
    optimizer: dict | None = None
    data_state: dict | None = None
    progress: dict | None = None
    window: dict | None = None
    rng: dict | None = None
    world_size: int | None = None
    batches_per_rank: int | None = None
    averaged_steps: list[int] | None = None

    @property
    def model_settings(self) -> dict:
        """The run's ``model`` section (:class:`aiayn.options.ModelConfig` keys)."""
        return self.settings["model"]

    def train_setting(self, key: str):
        """The run's ``train.<key>``, or its definition's default (:class:`aiayn.options.TrainConfig`);
        KeyError without a ``train`` section."""
        return self.settings["train"].get(key, getattr(TrainConfig, key))

    def to_dict(self) -> dict:
        """The dict ``torch.save`` writes: every entry that is not None, in field order."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    @classmethod
    def from_dict(cls, state: dict, path: Path | str = "checkpoint") -> "Checkpoint":
        """A checkpoint from what ``torch.load`` read; :class:`CorruptCheckpoint` naming ``path`` for
        a dict that is not one (no ``model``, ``settings`` or ``vocab``, or an unknown entry)."""
        if not isinstance(state, dict) or any(key not in state for key in ("model", "settings", "vocab")):
            raise CorruptCheckpoint(f"{path}: not a checkpoint of this project (lacks model, settings or vocab)")
        unknown = sorted(set(state) - {f.name for f in fields(cls)})
        if unknown:
            raise CorruptCheckpoint(f"{path}: not a checkpoint of this project (unknown entries {unknown[:5]})")
        return cls(**state)


def checkpoint_path(out_dir: Path, step: int) -> Path:
    return Path(TrainPaths(str(out_dir)).checkpoint(step))


def list_checkpoints(out_dir: Path) -> list[tuple[int, Path]]:
    """(step, path) of every ``checkpoints/ckpt_<step>.pt`` under ``out_dir``, oldest first."""
    folder = Path(TrainPaths(str(out_dir)).checkpoints)
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := CHECKPOINT_RE.match(p.name))]
    return sorted(found)


def save_checkpoint(path: Path, checkpoint: Checkpoint) -> None:
    """``torch.save`` to a temporary file beside ``path``, then rename: never a half-written checkpoint.

    A model with a non-finite weight raises :class:`NonFiniteWeights` and nothing is written, so the
    newest checkpoint (what a resumed run and averaging read) is always a usable one.
    """
    bad = non_finite(checkpoint.model)
    if bad:
        raise NonFiniteWeights(
            f"step {checkpoint.step}: weights {bad[:3]} are not finite; {path} is not "
            "written, the newest checkpoint is the last good one (the model diverged: "
            "lower train.lr_scale or set train.clip_norm)"
        )
    with atomic_path(path) as tmp:
        try:
            torch.save(checkpoint.to_dict(), tmp)
        except RuntimeError as error:
            raise write_failure(error, path, checkpoint) from None


def state_bytes(value) -> int:
    """Bytes of the tensors in a (nested) state: about what ``torch.save`` writes of it."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, dict):
        return sum(state_bytes(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(state_bytes(v) for v in value)
    return 0


def write_failure(error: RuntimeError, path: Path, checkpoint: Checkpoint) -> BaseException:
    """What a failed ``torch.save`` of ``checkpoint`` to ``path`` is: torch's zip writer reports a write
    that failed for want of space as a RuntimeError without path or cause ("[enforce fail at
    inline_container.cc:...] . unexpected pos ...", torch 2.13 ``caffe2/serialize/inline_container.cc``),
    so where the device holding ``path`` has less room than the checkpoint needs, the error is a full
    disk (ENOSPC, naming the path and both sizes); else ``error`` as it was."""
    needed = state_bytes(checkpoint.model) + state_bytes(checkpoint.optimizer)
    free = shutil.disk_usage(path.parent).free
    if free >= needed:
        return error
    detail = f"the checkpoint needs about {needed / 2**20:,.0f} MiB, {free / 2**20:,.0f} MiB are free there"
    return OSError(errno.ENOSPC, detail, str(path))


def non_finite(model_state: dict) -> list[str]:
    """Names of the floating-point tensors of a state_dict that hold a NaN or an infinity."""
    floats = [(key, tensor) for key, tensor in model_state.items() if tensor.is_floating_point()]
    if not floats:
        return []
    finite = torch.stack([torch.isfinite(tensor).all() for _, tensor in floats]).tolist()  # one read from a GPU
    return [key for (key, _), ok in zip(floats, finite) if not ok]


# What torch.load raises on a truncated or overwritten file.
_UNREADABLE = (RuntimeError, EOFError, OSError, pickle.UnpicklingError, zipfile.BadZipFile, ValueError)


def load_checkpoint(path: Path, map_location="cpu", mmap: bool = False, step: int | None = None) -> Checkpoint:
    """A checkpoint, verified: it loads (``weights_only``), is a :class:`Checkpoint` (``model``,
    ``settings`` and ``vocab``, no unknown entry), has the ``step`` its file name says (when given) and
    finite weights; otherwise
    :class:`CorruptCheckpoint` naming the file. (A flipped bit inside a tensor's bytes is not seen.)

    On the CPU by default: callers move what must move. Loading straight onto a GPU would put the
    generator states there too (``torch.set_rng_state`` takes CPU tensors only) and fill GPU memory
    with whatever the caller does not need.
    """
    try:
        state = torch.load(path, map_location=map_location, mmap=mmap, weights_only=True)
    except FileNotFoundError:
        raise
    except _UNREADABLE as error:
        reason = (str(error).split(". ") + [""])[0] or type(error).__name__
        raise CorruptCheckpoint(f"{path}: not a readable checkpoint, truncated or overwritten ({reason})") from None
    checkpoint = Checkpoint.from_dict(state, path)
    if step is not None and checkpoint.step != step:
        raise CorruptCheckpoint(f"{path}: holds step {checkpoint.step!r}, its name says {step}")
    bad = non_finite(checkpoint.model)
    if bad:
        raise CorruptCheckpoint(f"{path}: weights {bad[:3]} are not finite")
    return checkpoint


def is_spaced(step: int, checkpoint_steps: int, final_step: int) -> bool:
    """Whether a checkpoint at ``step`` is one averaging may take: a multiple of ``checkpoint_steps``
    (``train.checkpoint_steps``) or the final step; with ``checkpoint_steps == 0`` every checkpoint is."""
    return checkpoint_steps == 0 or step % checkpoint_steps == 0 or step == final_step


def spaced_checkpoints(found: list[tuple[int, Path]], checkpoint_steps: int, final_step: int) -> list[tuple[int, Path]]:
    """The (step, path) pairs of ``found`` that :func:`is_spaced` accepts, in their order."""
    return [(step, path) for step, path in found if is_spaced(step, checkpoint_steps, final_step)]
