"""A training run's setup: what :class:`~aiayn.train.trainer.Trainer` runs, built once from the run's settings.

:func:`build` makes the model (seeded by ``train.seed``), its arithmetic (precision, compilation),
the step's plan (:func:`aiayn.runtime.batches.plan_step`; on a GPU with ``train.tokens_per_pass`` null,
what its memory holds, measured), the loss, the optimizer and the batches, in the order that seeds them,
into a :class:`TrainingSetup` that stays fixed to the end of the run; the trainer holds what changes.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import torch

from aiayn.data.shards import ShardedCorpus
from aiayn.model import Transformer, flops_per_token
from aiayn.options import ModelConfig, RunConfig, TrainConfig
from aiayn.runtime.batches import BOS, EOS, PAD, UNK, StepPlan, plan_step
from aiayn.runtime.devices import device_name
from aiayn.runtime.gpus import peak_tflops
from aiayn.runtime.precision import autocast_for, set_up_arithmetic, tf32_matmuls
from aiayn.train.compiled import CUDA_GRAPHS_MODE
from aiayn.train.distributed import DistEnv, wrap_model
from aiayn.train.forward import TrainingLoss, way_for
from aiayn.train.memory import device_bytes, probe_peak, tokens_that_fit
from aiayn.train.order import BatchSampler, BatchStream, load_corpora, training_batches
from aiayn.train.prefetch import Prefetcher

log = logging.getLogger(__name__)


def build(
    run: RunConfig | Mapping[str, Any],
    data_dir: Path,
    out_dir: Path,
    env: DistEnv,
    max_steps_this_run: int | None = None,
) -> TrainingSetup:
    """The setup of ``run`` (its settings, built once by the caller; a mapping, as tests and benchmarks
    write them, is built here) on ``<data_dir>/{train,dev}`` into ``out_dir``: the model, its arithmetic,
    the step's plan, the loss, the optimizer and the batches, in the order that seeds them."""
    run = run if isinstance(run, RunConfig) else RunConfig.from_dict(run)
    cfg, device = run.train, env.device
    train_data, dev_data = load_corpora(Path(data_dir))
    torch.manual_seed(cfg.seed)
    raw_model = Transformer(run.model, train_data.vocab_size, PAD).to(device)
    compiled = cfg.compile_on(device.type)
    precision = set_up_arithmetic(raw_model, cfg.precision, cfg.cpu_matmul, device, compiled)
    plan = plan_step(cfg, env.world_size, _tokens_that_fit(raw_model, run, env, precision, train_data.vocab_size))
    way = way_for(device, precision, compiled, cfg.compile_mode == CUDA_GRAPHS_MODE)
    model, ddp = wrap_model(
        TrainingLoss(raw_model, cfg.label_smoothing, way, _autocast_dtype(precision)), env, compiled, cfg.compile_mode
    )
    optimizer = torch.optim.Adam(
        raw_model.parameters(),
        lr=0.0,
        betas=cfg.adam_betas,
        eps=cfg.adam_eps,
        weight_decay=cfg.weight_decay,
        fused=True,
    )
    limit, shapes = run.model.position_limit, cfg.batch_shapes_on(device.type)
    batches, ladder = training_batches(train_data, plan, cfg, limit, shapes)
    stream = BatchStream(BatchSampler(batches, cfg.seed, env.rank, env.world_size, shapes=ladder))
    src_len, tgt_len = float(train_data.src_lengths.mean()) + 1, float(train_data.tgt_lengths.mean()) + 1
    return TrainingSetup(
        settings=dict(run.values),
        model_cfg=run.model,
        cfg=cfg,
        env=env,
        out_dir=Path(out_dir),
        max_steps_this_run=max_steps_this_run,
        train_data=train_data,
        dev_data=dev_data,
        raw_model=raw_model,
        model=model,
        ddp=ddp,
        optimizer=optimizer,
        precision=precision,
        plan=plan,
        stream=stream,
        batches=Prefetcher(stream, train_data, device, depth=plan.passes + 1),
        flops_per_token=flops_per_token(run.model, src_len, tgt_len, train_data.vocab_size),
    )


def _autocast_dtype(precision: str) -> torch.dtype | None:
    return torch.bfloat16 if precision == "bf16" else None


def _tokens_that_fit(
    raw_model: Transformer, run: RunConfig, env: DistEnv, precision: str, vocab_size: int
) -> int | None:
    """Where ``train.tokens_per_pass`` is null, on a GPU: the tokens a side a pass may hold, measured
    (:mod:`aiayn.train.memory`), the same on every rank (the smallest); else None."""
    cfg, device = run.train, env.device
    if cfg.tokens_per_pass is not None or device.type != "cuda":
        return None
    eager = TrainingLoss(raw_model, cfg.label_smoothing, way_for(device, precision, False), _autocast_dtype(precision))
    length = cfg.length_limit(run.model.position_limit) or 256

    def run_pass(tokens: int) -> None:  # pairs as long as training allows: the most memory per token
        ids = torch.randint(4, vocab_size, (max(1, tokens // length), length), device=device)
        loss, _, _ = eager(ids, ids, ids, torch.arange(ids.numel(), device=device), False)
        loss.backward()
        raw_model.zero_grad(set_to_none=True)

    params = sum(p.numel() * p.element_size() for p in raw_model.parameters())
    state = 2 * params + (params if env.world_size > 1 else 0)  # Adam's moments, DDP's buckets
    fits = tokens_that_fit(probe_peak(run_pass, device), device_bytes(device), state)
    if env.world_size > 1:
        least = torch.tensor(fits, device=device)
        torch.distributed.all_reduce(least, op=torch.distributed.ReduceOp.MIN)
        fits = int(least.item())
    log.info(
        "train.tokens_per_pass null: a pass of up to %d tokens a side fits in this GPU's memory (aiayn.train.memory)",
        fits,
    )
    return fits


@dataclass
class TrainingSetup:
    """What a run trains with, fixed from its start to its end (:func:`build`; a test or a benchmark
    may swap a part before the run starts): its settings
    (``settings``: the settings file's content, as checkpoints record it), ranks, model, optimizer, step
    plan and batches."""

    settings: dict[str, Any]
    model_cfg: ModelConfig
    cfg: TrainConfig
    env: DistEnv
    out_dir: Path
    max_steps_this_run: int | None
    train_data: ShardedCorpus
    dev_data: ShardedCorpus
    raw_model: Transformer
    model: torch.nn.Module  # the loss around the model: compiled and/or DDP-wrapped as the run says
    ddp: Any  # the DistributedDataParallel wrapper, or None on one rank
    optimizer: torch.optim.Optimizer
    precision: str  # the resolved train.precision: bf16 or fp32
    plan: StepPlan
    stream: BatchStream
    batches: Prefetcher
    flops_per_token: float

    @property
    def vocab(self) -> dict[str, int]:
        """The vocabulary as checkpoints record it: its size and the special ids."""
        return {"size": self.train_data.vocab_size, "pad_id": PAD, "unk_id": UNK, "bos_id": BOS, "eos_id": EOS}

    @property
    def max_len(self) -> int | None:
        return self.model_cfg.position_limit

    def autocast(self) -> contextlib.AbstractContextManager:
        return autocast_for(self.precision, self.env.device)

    def mfu(self, tokens_per_s: float) -> float | None:
        """Model FLOP/s over the GPUs' dense peak in the run's precision (TF32's for fp32 products run
        as TF32; :mod:`aiayn.runtime.gpus`); None on a CPU or a card without a peak."""
        peak = peak_tflops(device_name(self.env.device), self.precision, tf32_matmuls(self.env.device))
        return None if peak is None else self.flops_per_token * tokens_per_s / (peak * 1e12 * self.env.world_size)
