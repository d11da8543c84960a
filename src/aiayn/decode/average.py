"""Checkpoint averaging (paper section 6.1): the element-wise mean of the last N checkpoints.

"For the base models, we used a single model obtained by averaging the last 5 checkpoints, which were
written at 10-minute intervals. For the big models, we averaged the last 20 checkpoints."

The last N are counted among the step-spaced checkpoints (every ``train.checkpoint_steps`` steps and
the final one, read from the newest checkpoint's settings): a checkpoint the trainer wrote by the
clock or when stopped, off that spacing, is never averaged (:mod:`aiayn.runtime.checkpoint`).

theta_avg = (1/N) sum_i theta_i for every floating-point parameter, accumulated in float64 and stored
in float32 (whatever precision the checkpoints hold). Non-floating tensors (integer buffers) must be
identical in every checkpoint and are copied.

CLI: ``python -m aiayn.decode.average --train-dir DIR --settings FILE --output F [--log F]`` averages the last
``average.last`` (:class:`~aiayn.options.AverageConfig`) of ``DIR/checkpoints/ckpt_<step:08d>.pt``.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import torch

from aiayn import settings
from aiayn.cli import add_log, add_settings
from aiayn.options import AverageConfig
from aiayn.paths import TrainPaths
from aiayn.runtime.checkpoint import Checkpoint, list_checkpoints, load_checkpoint, save_checkpoint, spaced_checkpoints

log = logging.getLogger(__name__)


def _check_same_layout(reference: dict, ref_path: Path, state: dict, path: Path) -> None:
    """Raise unless ``state`` has the keys and shapes of ``reference``, naming both files."""
    missing, extra = sorted(set(reference) - set(state)), sorted(set(state) - set(reference))
    if missing or extra:
        raise ValueError(
            f"{path} and {ref_path} hold different parameters: "
            f"missing from {path.name}: {missing[:5]}, extra in {path.name}: {extra[:5]}"
        )
    for key, tensor in reference.items():
        if state[key].shape != tensor.shape:
            raise ValueError(
                f"{path} and {ref_path} disagree on the shape of {key!r}: "
                f"{tuple(state[key].shape)} vs {tuple(tensor.shape)}"
            )


def average_states(states: list[tuple[Path, dict]]) -> dict[str, torch.Tensor]:
    """Element-wise mean of model state_dicts ``[(path, state_dict), ...]`` (fairseq's shape).

    Floating tensors: mean accumulated in float64, returned as float32. Other tensors: must be equal
    everywhere, returned as they are. Different key sets or shapes raise, naming the two files.
    """
    if not states:
        raise ValueError("no checkpoints to average")
    first_path, first = states[0]
    sums: dict[str, torch.Tensor] = {}
    for path, state in states:
        _check_same_layout(first, first_path, state, path)
        for key, tensor in state.items():
            if not tensor.is_floating_point():
                if not torch.equal(tensor, first[key]):
                    raise ValueError(f"{path} and {first_path} disagree on non-float tensor {key!r}")
                continue
            value = tensor.detach().to(torch.float64)
            sums[key] = value.clone() if key not in sums else sums[key].add_(value)
    return {key: (sums[key] / len(states)).to(torch.float32) if key in sums else first[key].clone() for key in first}


def average_checkpoints(train_dir: str | Path, last: int) -> Checkpoint:
    """The averaged checkpoint of the last ``last`` checkpoints of the training run in ``train_dir``, by step.

    Returns a :class:`~aiayn.runtime.checkpoint.Checkpoint` of ``model, settings, vocab, step,
    averaged_steps`` (no optimizer state); settings and vocab come from the newest averaged checkpoint.
    Fewer than ``last`` available: averages those, warning. Each file is read once.
    """
    if last < 1:
        raise ValueError(f"average.last must be at least 1, got {last}")
    available = list_checkpoints(train_dir)
    if not available:
        raise FileNotFoundError(f"{train_dir}: no step checkpoint in {TrainPaths(str(train_dir)).checkpoints}")
    newest_step, newest_file = available[-1]
    loaded = {newest_file: load_checkpoint(newest_file, "cpu", mmap=True, step=newest_step)}  # verified
    chosen = select_spaced(available, loaded[newest_file])[-last:]
    if len(chosen) < last:
        log.warning(
            "%s: only %d checkpoints (asked for the last %d): averaging all of them", train_dir, len(chosen), last
        )
    states, newest, newest_path = [], None, None
    for file_step, path in chosen:
        # verified: a corrupt input is refused
        state = loaded.pop(path, None) or load_checkpoint(path, "cpu", mmap=True, step=file_step)
        if newest is not None and state.vocab != newest.vocab:
            raise ValueError(f"{path} and {newest_path} have different vocabularies")
        states.append((path, state.model))
        newest, newest_path = state, path
    steps = [step for step, _ in chosen]
    log.info("averaging %d checkpoints of %s: steps %s", len(steps), train_dir, steps)
    return Checkpoint(
        model=average_states(states), settings=newest.settings, vocab=newest.vocab, step=steps[-1], averaged_steps=steps
    )


def select_spaced(available: list[tuple[int, Path]], newest: Checkpoint) -> list[tuple[int, Path]]:
    """The step-spaced checkpoints of ``available`` (by step), the spacing and final step taken from
    ``newest``, the newest checkpoint's ``settings.train``; the others are logged by step."""
    try:
        spacing, final = newest.train_setting("checkpoint_steps"), newest.train_setting("train_steps")
    except (KeyError, TypeError, AttributeError):
        raise ValueError(
            f"{available[-1][1]}: no settings.train in the checkpoint (not written by the trainer)"
        ) from None
    spaced = spaced_checkpoints(available, spacing, final)
    skipped = [step for step, path in available if (step, path) not in spaced]
    if skipped:
        log.info(
            "not averaged: %d checkpoint(s) off the %d-step spacing (written by the clock or when "
            "stopped, for resuming): steps %s",
            len(skipped),
            spacing,
            skipped,
        )
    return spaced


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m aiayn.decode.average", description=__doc__.split("\n\n")[0])
    parser.add_argument("--train-dir", required=True, help="a training run's --out-dir (holds checkpoints/)")
    add_settings(parser, "average.last as JSON (default: 5, the paper's base model)")
    parser.add_argument("--output", required=True, help="averaged checkpoint (written atomically)")
    add_log(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    opts = settings.start(args, AverageConfig, "average")
    averaged = average_checkpoints(args.train_dir, opts.last)
    save_checkpoint(args.output, averaged)
    log.info("wrote %s (step %d, averaged steps %s)", args.output, averaged.step, averaged.averaged_steps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
