"""Checkpoint files: atomic writes, rotation, the latest one, RNG state (docs/ARCHITECTURE.md)."""

from __future__ import annotations

import contextlib
import logging
import os
import random
import re
from pathlib import Path

import numpy as np
import torch

from aiayn.io import atomic_path

CKPT_RE = re.compile(r"^ckpt_(\d{8})\.pt$")
log = logging.getLogger(__name__)


def checkpoint_path(out_dir: Path, step: int) -> Path:
    return Path(out_dir) / "checkpoints" / f"ckpt_{step:08d}.pt"


def list_checkpoints(out_dir: Path) -> list[tuple[int, Path]]:
    """(step, path) of every ``checkpoints/ckpt_<step>.pt`` under ``out_dir``, oldest first."""
    folder = Path(out_dir) / "checkpoints"
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := CKPT_RE.match(p.name))]
    return sorted(found)


def save_checkpoint(path: Path, state: dict) -> None:
    """``torch.save`` to a temporary file beside ``path``, then rename: never a half-written checkpoint."""
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


def rotate(out_dir: Path, keep: int) -> list[Path]:
    """Delete all but the newest ``keep`` checkpoints; returns the deleted paths."""
    old = [path for _, path in list_checkpoints(out_dir)[:-keep]]
    for path in old:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
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


def load_checkpoint(path: Path) -> dict:
    """A checkpoint's contents on the CPU (``weights_only``): callers move what must move.

    Loading straight onto a GPU would put the generator states there too (``torch.set_rng_state``
    takes CPU tensors only) and fill GPU memory with whatever the caller does not need.
    """
    return torch.load(path, map_location="cpu", weights_only=True)


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


# Train settings that do not change what a resumed run computes: extending training, how often it
# logs, evaluates and saves, and how it is compiled.
RESUMABLE_TRAIN_KEYS = frozenset({
    "train_steps", "log_every_steps", "dev_every_steps", "checkpoint_minutes", "checkpoint_steps",
    "keep_checkpoints", "compile",
})


def trajectory_changes(state: dict, settings: dict, vocab: dict) -> list[str]:
    """What differs between a checkpoint and this run in a way that makes resuming from it wrong."""
    changed = []
    if state["settings"]["model"] != settings["model"]:
        changed.append("model settings")
    if state["vocab"] != vocab:
        changed.append("vocabulary")
    old, new = state["settings"]["train"], settings["train"]
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
