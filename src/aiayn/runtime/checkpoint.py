"""Checkpoint files: their contents (:class:`Checkpoint`), atomic writes, verified reads, rotation, the
latest one, RNG state (docs/ARCHITECTURE.md).

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

import contextlib
import logging
import os
import pickle
import random
import re
import zipfile
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import torch

from aiayn.io import atomic_path
from aiayn.options import TrainConfig
from aiayn.options.core import absent_values, renames

CKPT_RE = re.compile(r"^ckpt_(\d{8})\.pt$")
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
    return Path(out_dir) / "checkpoints" / f"ckpt_{step:08d}.pt"


def list_checkpoints(out_dir: Path) -> list[tuple[int, Path]]:
    """(step, path) of every ``checkpoints/ckpt_<step>.pt`` under ``out_dir``, oldest first."""
    folder = Path(out_dir) / "checkpoints"
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := CKPT_RE.match(p.name))]
    return sorted(found)


def save_checkpoint(path: Path, checkpoint: Checkpoint) -> None:
    """``torch.save`` to a temporary file beside ``path``, then rename: never a half-written checkpoint.

    A model with a non-finite weight raises :class:`NonFiniteWeights` and nothing is written, so the
    newest checkpoint (what a resumed run and averaging read) is always a usable one.
    """
    bad = non_finite(checkpoint.model)
    if bad:
        raise NonFiniteWeights(f"step {checkpoint.step}: weights {bad[:3]} are not finite; {path} is not "
                               "written, the newest checkpoint is the last good one (the model diverged: "
                               "lower train.lr_scale or set train.clip_norm)")
    with atomic_path(path) as tmp:
        torch.save(checkpoint.to_dict(), tmp)


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


def set_aside_corrupt(path: Path) -> Path:
    """Rename a corrupt checkpoint to ``<name>.corrupt`` (kept for inspection, no longer listed).
    Every data-parallel rank resumes the same way: a file another rank moved already is fine."""
    aside = path.with_name(path.name + ".corrupt")
    with contextlib.suppress(FileNotFoundError):
        os.replace(path, aside)
    return aside


def newest_good_checkpoint(out_dir: Path, map_location="cpu") -> tuple[int, Path, Checkpoint] | None:
    """(step, path, checkpoint) of the newest checkpoint that :func:`load_checkpoint` accepts; each newer,
    corrupt one is set aside (:func:`set_aside_corrupt`) with a warning. None if there is none."""
    for step, path in reversed(list_checkpoints(out_dir)):
        try:
            return step, path, load_checkpoint(path, map_location, step=step)
        except CorruptCheckpoint as error:
            log.warning("%s; set aside as %s, resuming from the one before", error, set_aside_corrupt(path).name)
    return None


def is_spaced(step: int, checkpoint_steps: int, final_step: int) -> bool:
    """Whether a checkpoint at ``step`` is one averaging may take: a multiple of ``checkpoint_steps``
    (``train.checkpoint_steps``) or the final step; with ``checkpoint_steps == 0`` every checkpoint is."""
    return checkpoint_steps == 0 or step % checkpoint_steps == 0 or step == final_step


def spaced_checkpoints(found: list[tuple[int, Path]], checkpoint_steps: int, final_step: int) -> list[tuple[int, Path]]:
    """The (step, path) pairs of ``found`` that :func:`is_spaced` accepts, in their order."""
    return [(step, path) for step, path in found if is_spaced(step, checkpoint_steps, final_step)]


def rotate(out_dir: Path, keep: int, checkpoint_steps: int = 0, final_step: int = 0) -> list[Path]:
    """Delete all but the newest ``keep`` spaced checkpoints and the newest one of any kind (the one
    a resumed run starts from); returns the deleted paths. ``checkpoint_steps == 0``: the newest ``keep``."""
    found = list_checkpoints(out_dir)
    kept = ({path for _, path in spaced_checkpoints(found, checkpoint_steps, final_step)[-keep:]}
            | {path for _, path in found[-1:]})
    old = [path for _, path in found if path not in kept]
    for path in old:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    for stale in (Path(out_dir) / "checkpoints").glob(".ckpt_*.tmp"):  # left by a killed save
        with contextlib.suppress(FileNotFoundError):
            stale.unlink()
    return old


def publish_last(out_dir: Path, source: Path) -> Path:
    """``checkpoint_last.pt``: a hard link to ``source`` (a copy where links are not possible), atomically."""
    target = Path(out_dir) / "checkpoint_last.pt"
    with atomic_path(target) as tmp:
        os.unlink(tmp)
        try:
            os.link(source, tmp)
        except OSError:
            import shutil

            shutil.copyfile(source, tmp)
    return target


def rng_state() -> dict:
    """Python, numpy, torch and CUDA generator states, as tensors and plain values (weights_only-safe)."""
    version, internal, gauss = random.getstate()
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    state = {
        "python": [version, list(internal), gauss],
        "numpy": {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "cached_gaussian": float(cached)},
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    """Restore what :func:`rng_state` captured (its tensors may sit on any device).

    CUDA generators are restored for the GPUs both runs have: a job requeued onto fewer visible
    GPUs restores the first ones and logs how many it left out.
    """
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    n = state["numpy"]
    keys = n["keys"].cpu().numpy().astype(np.uint32)
    np.random.set_state((n["kind"], keys, n["pos"], n["has_gauss"], n["cached_gaussian"]))
    torch.set_rng_state(state["torch"].cpu())
    saved = state.get("cuda") or []
    if saved and torch.cuda.is_available():
        visible = torch.cuda.device_count()
        for index, generator in enumerate(saved[:visible]):
            torch.cuda.set_rng_state(generator.cpu(), index)
        if len(saved) > visible:
            log.warning("restored %d of %d saved CUDA generator states (%d GPU(s) visible now)",
                     visible, len(saved), visible)


# Train settings a run may change and still continue from a checkpoint: extending training, how often
# it logs, evaluates and saves, how it is compiled, and where it runs. The number of ranks (gpus,
# cpu_ranks, nodes) keeps the tokens per step (TrainConfig.plan) but changes the batch order from the
# current epoch on and the dropout masks (Trainer.resume says how); threads at most the order of a
# CPU's float sums.
RESUMABLE_TRAIN_KEYS = frozenset({
    "train_steps", "log_every_steps", "dev_every_steps", "checkpoint_minutes", "checkpoint_steps",
    "keep_checkpoints", "compile", "gpus", "cpu_ranks", "nodes", "rendezvous", "threads",
})


def trajectory_changes(checkpoint: Checkpoint, settings: dict, vocab: dict) -> list[str]:
    """What differs between a checkpoint and this run in a way that makes resuming from it wrong."""
    changed = []
    if checkpoint.model_settings != settings["model"]:
        changed.append("model settings")
    if checkpoint.vocab != vocab:
        changed.append("vocabulary")
    renamed = renames(TrainConfig)  # a checkpoint written before a key's rename resumes under the new name
    written = {renamed.get(key, key): value for key, value in checkpoint.settings["train"].items()}
    new = settings["train"]
    # a key added since the checkpoint was written compares as the value that behaves as before it
    old = {key: value for key, value in absent_values(TrainConfig).items() if key in new} | written
    keys = sorted(k for k in set(old) | set(new) if k not in RESUMABLE_TRAIN_KEYS and old.get(k) != new.get(k))
    if keys:
        changed.append("train settings (" + ", ".join(keys) + ")")
    return changed


def set_aside(folder: Path) -> Path:
    """Rename ``folder`` to the first free ``<folder>.stale-N``: kept for the user, out of resume's way."""
    n = 1
    while (aside := folder.with_name(f"{folder.name}.stale-{n}")).exists():
        n += 1
    folder.rename(aside)
    return aside
