"""Train one model: ``python -m aiayn.train --data D/bin/<task> --settings FILE --out-dir R/<task>/<exp>/train``.

``--settings`` is the run's ``R/<task>/<exp>/settings/train.json``: its ``model`` and ``train`` sections
(``aiayn.runs.resolve``) with ``experiment`` and ``task``; they travel into every checkpoint.

Writes ``checkpoints/ckpt_<step:08d>.pt``, ``checkpoint_last.pt``, ``log.csv`` and, last,
``summary.json`` under ``--out-dir``; a rerun with the same ``--out-dir`` resumes from the latest
checkpoint. ``train.gpus > 1`` (DDP, NCCL) or ``train.gpus: 0`` with ``train.cpu_ranks > 1`` (DDP,
gloo) restarts itself under torchrun, one worker per rank; with ``train.nodes > 1`` the same
command runs once on each node, and the nodes' torchrun agents meet at a c10d rendezvous
(``train.rendezvous``, else the first host of the SLURM allocation). Each worker's torch threads are the job's
CPUs (``--threads``, else ``train.threads``, else the CPUs this process may use) shared by its ranks.
A compiled training (``train.compile``) keeps torch.compile's cache in ``--out-dir``'s ``compile-cache/``
(unless ``TORCHINDUCTOR_CACHE_DIR`` says where), so a resumed run, on any node that sees the folder,
takes the compiled graphs and kernels from there instead of compiling them again.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

import torch

from aiayn import settings
from aiayn.cli import add_log, add_settings
from aiayn.io import first_line, out_of_memory
from aiayn.options import RunConfig
from aiayn.paths import TrainPaths
from aiayn.runtime.checkpoint import list_checkpoints
from aiayn.runtime.devices import check_cuda, claim_gpus_if_shared
from aiayn.train.distributed import (
    die_with_parent,
    init_from_environment,
    rank_lost,
    relaunch_under_torchrun,
    should_relaunch,
    threads_per_rank,
)
from aiayn.train.trainer import build_trainer

log = logging.getLogger("aiayn.train")


def check_data(data: Path) -> None:
    for split in ("train", "dev"):
        if not (data / split / "manifest.json").exists():
            raise FileNotFoundError(f"{data / split / 'manifest.json'}: missing (run the binarize stage)")


def memory_exhausted(error: RuntimeError, step: int, device: torch.device, tokens_per_pass: int) -> MemoryError:
    """The user's error for memory that ran out after ``step`` (the last step done), naming the key that
    sizes a forward pass and the size it had."""
    return MemoryError(
        f"out of memory on {device} after step {step} ({first_line(error)}): a "
        f"forward pass holds up to train.tokens_per_pass={tokens_per_pass} tokens a side; with a "
        "smaller value, train.tokens_per_step is made up of more passes, and the same command "
        "resumes from the newest checkpoint"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m aiayn.train", description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path, help="binarized task directory holding train/ and dev/")
    add_settings(parser, "the run's model and train sections (its train settings file)", required=True, type=Path)
    parser.add_argument(
        "--out-dir", required=True, type=Path, help="where the checkpoints, training log and summary go"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="CPUs of the job, shared by its ranks on this node (default: train.threads)",
    )
    parser.add_argument(
        "--max-steps-this-run",
        type=int,
        default=None,
        help="stop with a checkpoint after this many steps (resume later with the same --out-dir)",
    )
    parser.add_argument(
        "--gpu-lock-dir",
        type=Path,
        default=None,
        help="where GPU claim locks live (default: <tmp>/aiayn-gpu-locks-<uid>)",
    )
    add_log(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--"]:  # the end of torchrun's options, where a Python's argparse passes it on
        argv = argv[1:]
    if "LOCAL_RANK" in os.environ and "TORCHELASTIC_RUN_ID" in os.environ:
        die_with_parent()  # a torchrun worker: never outlive the agent
    args = build_parser().parse_args(argv)
    run = settings.start(args, RunConfig)
    train_cfg = run.train
    check_data(args.data)
    local_ranks = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    threads = threads_per_rank(args.threads or train_cfg.threads, local_ranks)
    if threads:
        torch.set_num_threads(threads)
    if train_cfg.compile_on("cuda" if train_cfg.gpus else "cpu"):
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", TrainPaths(str(Path(args.out_dir).resolve())).compile_cache)
    claim = claim_gpus_if_shared(train_cfg.gpus, args.gpu_lock_dir)
    try:
        if "LOCAL_RANK" not in os.environ:
            check_cuda(train_cfg.gpus)  # before any worker starts: a clear error, never a CPU run
        if should_relaunch(train_cfg.local_ranks, train_cfg.nodes):
            return relaunch_under_torchrun(argv, train_cfg.local_ranks, train_cfg.nodes, train_cfg.rendezvous)
        env = init_from_environment(train_cfg.gpus)
        if not env.is_main:
            logging.getLogger().setLevel(logging.WARNING)  # one rank reports progress
        trainer = build_trainer(run, args.data, args.out_dir, env, args.max_steps_this_run)
        with trainer.stopping_on_signals():
            try:
                return trainer.run()
            except RuntimeError as error:
                lost = rank_lost(error, env.world_size, list_checkpoints(args.out_dir))
                if lost is not None:
                    raise lost from error
                if out_of_memory(error):
                    tokens = trainer.setup.plan.tokens_per_pass
                    raise memory_exhausted(error, trainer.progress.step, env.device, tokens) from error
                raise
    finally:
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
        if claim is not None:
            claim.release()


if __name__ == "__main__":
    raise SystemExit(main())
