"""Resuming a training run: which checkpoint it continues from, whether it may, and what it restores.

A killed run restarted with the same ``out_dir`` continues from its newest good checkpoint (model,
optimizer, step, data position, RNG); a corrupt newer one is set aside, and so is the whole folder
when the settings changed the run's trajectory (:func:`trajectory_changes`: every train key but those
marked ``resumable`` in :class:`aiayn.options.TrainConfig`). Rotation keeps the newest checkpoint of
any kind plus the newest ``keep_checkpoints`` spaced ones (:func:`aiayn.runtime.checkpoint.is_spaced`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import random
from pathlib import Path

import numpy as np
import torch

from aiayn.io import atomic_path
from aiayn.options import TrainConfig
from aiayn.options.core import absent_values, renames, spec
from aiayn.paths import STALE_CHECKPOINTS, TrainPaths
from aiayn.runtime.checkpoint import (
    Checkpoint,
    CorruptCheckpoint,
    list_checkpoints,
    load_checkpoint,
    spaced_checkpoints,
)

log = logging.getLogger(__name__)
RESUMABLE = frozenset(f.name for f in dataclasses.fields(TrainConfig) if spec(f).resumable)


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


def rotate(out_dir: Path, keep: int, checkpoint_steps: int = 0, final_step: int = 0) -> list[Path]:
    """Delete all but the newest ``keep`` spaced checkpoints and the newest one of any kind (the one
    a resumed run starts from); returns the deleted paths. ``checkpoint_steps == 0``: the newest ``keep``."""
    found = list_checkpoints(out_dir)
    kept = {path for _, path in spaced_checkpoints(found, checkpoint_steps, final_step)[-keep:]} | {
        path for _, path in found[-1:]
    }
    old = [path for _, path in found if path not in kept]
    for path in old:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    for stale in Path(TrainPaths(str(out_dir)).checkpoints).glob(STALE_CHECKPOINTS):  # left by a killed save
        with contextlib.suppress(FileNotFoundError):
            stale.unlink()
    return old


def publish_last(out_dir: Path, source: Path) -> Path:
    """The training's last checkpoint: a hard link to ``source`` (a copy where links are not possible),
    atomically."""
    target = Path(TrainPaths(str(out_dir)).last)
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
        "numpy": {
            "kind": kind,
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached),
        },
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
            log.warning(
                "restored %d of %d saved CUDA generator states (%d GPU(s) visible now)", visible, len(saved), visible
            )


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
    keys = sorted(k for k in set(old) | set(new) if k not in RESUMABLE and old.get(k) != new.get(k))
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


def choose(out_dir: Path, settings: dict, vocab: dict) -> tuple[tuple[str, int] | None, Checkpoint | None]:
    """Rank 0's decision: ((path, step), checkpoint) of the checkpoint to resume from, or (None, None).
    A corrupt newer checkpoint is set aside (:func:`newest_good_checkpoint`), and the whole folder when
    the settings changed the run's trajectory (:func:`trajectory_changes`)."""
    newest = newest_good_checkpoint(out_dir)
    if newest is None:
        return None, None
    step, path, checkpoint = newest
    changed = trajectory_changes(checkpoint, settings, vocab)
    if changed:
        aside = set_aside(Path(TrainPaths(str(out_dir)).checkpoints))
        log.warning(
            "%s was trained with other %s; moved the old checkpoints to %s and training from scratch",
            path,
            ", ".join(changed),
            aside,
        )
        return None, None
    return (str(path), step), checkpoint


def data_state(checkpoint: Checkpoint, world_size: int, per_rank: int) -> dict:
    """The checkpoint's data position, moved to the same fraction of its epoch when the batches were
    packed otherwise (another number of ranks, or another ``train.tokens_per_pass``: ``per_rank``
    batches a rank an epoch now). A checkpoint older than the ``world_size`` and ``batches_per_rank``
    entries is taken as packed as this run packs.

    Such a checkpoint (``train.gpus``, ``train.cpu_ranks``, ``train.nodes`` or ``train.tokens_per_pass``
    changed) continues at its step with its weights, optimizer and counters; what differs from a run that
    kept its packing is the data: batches are re-packed for the new per-rank budget, so the order within
    the current epoch is another (the run continues at the same fraction of that epoch), and dropout
    masks, drawn per (seed, step, rank), are others."""
    old_world = world_size if checkpoint.world_size is None else checkpoint.world_size
    old_per_rank = checkpoint.batches_per_rank or per_rank
    data = dict(checkpoint.data_state)
    if (old_world, old_per_rank) != (world_size, per_rank):
        data["position"] = min(per_rank, round(data["position"] * per_rank / old_per_rank))
        log.warning(
            "the checkpoint's batches were packed for %d rank(s), %d a rank an epoch; this run's for %d, "
            "%d: epoch %d continues at batch %d of %d per rank (another batch order and other dropout "
            "masks from here)",
            old_world,
            old_per_rank,
            world_size,
            per_rank,
            data["epoch"],
            data["position"],
            per_rank,
        )
    return data
