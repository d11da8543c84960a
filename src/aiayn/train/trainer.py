"""The training loop (paper section 5): token-budget steps, Adam with the eq. 3 schedule, checkpoints.

One optimizer step collects ``train.tokens_per_step`` target tokens (and about as many source tokens)
over all data-parallel ranks, whatever their number (:func:`aiayn.runtime.batches.plan_step`: each rank makes
``passes`` forward passes of ``tokens_per_pass`` tokens); the summed label-smoothed loss's gradient
is divided by the number of target tokens of the whole step. The step never waits for the GPU
(:mod:`aiayn.train.step`): its statistics are read one step late, and the next batches are collated
on a background thread (:mod:`aiayn.train.prefetch`). A killed run restarted with the same
``out_dir`` continues from its latest checkpoint (:mod:`aiayn.train.resume`), bit-identical on CPU to
a run that was never interrupted: dropout is reseeded from (seed, step, rank) every step. A step whose
loss or gradient is not finite applies no update and still counts (:class:`aiayn.train.step.Skips`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from pathlib import Path
from typing import Any, Mapping

import torch
from tqdm import tqdm

from aiayn.evaluate.perplexity import corpus_nll, perplexity_report
from aiayn.io import write_json
from aiayn.model import count_parameters
from aiayn.options import RunConfig
from aiayn.paths import TrainPaths
from aiayn.runtime.batches import PAD, Batch
from aiayn.runtime.checkpoint import Checkpoint, checkpoint_path, load_checkpoint, save_checkpoint
from aiayn.runtime.devices import device_name
from aiayn.train.distributed import DistEnv
from aiayn.train.metrics import MetricsLog, Progress, Window
from aiayn.train.resume import choose, data_state, publish_last, rng_state, rotate, set_rng_state
from aiayn.train.schedule import learning_rate
from aiayn.train.setup import TrainingSetup
from aiayn.train.setup import build as build_setup
from aiayn.train.signals import stop_on_signals
from aiayn.train.step import PendingResults, Skips, StepResult, apply_update, flags, step_seed

log = logging.getLogger(__name__)


def build_trainer(
    run: RunConfig | Mapping[str, Any],
    data_dir: Path,
    out_dir: Path,
    env: DistEnv,
    max_steps_this_run: int | None = None,
) -> Trainer:
    """The trainer of ``run`` on ``<data_dir>/{train,dev}`` into ``out_dir`` (:func:`aiayn.train.setup.build`)."""
    return Trainer(build_setup(run, data_dir, out_dir, env, max_steps_this_run))


class Trainer:
    """Runs a :class:`TrainingSetup` (see the module docstring): holds what changes during the run, its
    progress, the steps in flight, the stop and save requests."""

    def __init__(self, setup: TrainingSetup):
        self.setup = setup
        self.pending = PendingResults(setup.env.device)
        self.progress = Progress()
        self.window = Window()
        self.skips = Skips(setup.cfg.nan_policy)
        self.stop_requested = False  # this rank's signal handler
        self.stop_agreed = self.save_agreed = False  # what all ranks read from one step's statistics
        self.last_save, self.saved_step = time.perf_counter(), 0
        self.started, self.wall_before = time.perf_counter(), 0.0  # this run's start; resumed wall seconds

    def micro_step(self, batch: Batch) -> torch.Tensor:
        """Forward and backward of one batch; returns (loss sum, nll sum, target tokens, source tokens),
        float64 on the device."""
        loss, nll, n_tgt = self.setup.model(batch.src, batch.tgt_in, batch.tgt_out, batch.gold_rows, batch.src_padded)
        loss.backward()
        return torch.stack([loss.detach().double(), nll.double(), n_tgt.double(), batch.src.ne(PAD).sum().double()])

    def train_step(self) -> int:
        """Queue one optimizer step (results: :attr:`pending`); returns this rank's target tokens in it."""
        step = self.progress.step + 1
        torch.manual_seed(step_seed(self.setup.cfg.seed, step, self.setup.env.rank))
        sums, tokens = None, 0
        for i in range(self.setup.plan.passes):
            batch = self.setup.batches.next()
            tokens += batch.tgt_tokens
            sync = self.setup.ddp is None or i == self.setup.plan.passes - 1
            with contextlib.nullcontext() if sync else self.setup.ddp.no_sync():
                stats = self.micro_step(batch)
            sums = stats if sums is None else sums + stats
        save = self.setup.env.world_size > 1 and self.setup.env.is_main and self._time_to_save()
        stats = torch.cat([sums, flags(self.stop_requested, save, self.setup.env.device)])
        if self.setup.env.world_size > 1:
            torch.distributed.all_reduce(stats)
        lr = learning_rate(step, self.setup.model_cfg.d_model, self.setup.cfg.warmup_steps, self.setup.cfg.lr_scale)
        params = [p for p in self.setup.raw_model.parameters() if p.grad is not None]
        grad_norm, skipped = apply_update(
            params,
            self.setup.optimizer,
            stats,
            self.setup.env.world_size,
            self.setup.cfg.clip_norm,
            lr,
            keep_grads=self.setup.ddp is not None,
        )
        self.pending.push(step, lr, stats, grad_norm, skipped)
        self.progress.step = step
        return tokens

    def take_results(self, metrics: MetricsLog | None, bar: tqdm, elapsed: float, lag: int = 1) -> None:
        """Account for the steps whose statistics have arrived (all of them with ``lag=0``)."""
        for result in self.pending.ready(lag):
            self.stop_agreed |= result.stop
            self.save_agreed |= result.save and result.step > self.saved_step  # requests before a save are met
            if self.skips.count(result, self.progress):
                continue
            p = self.progress
            p.tokens_src, p.tokens_tgt = p.tokens_src + int(result.src_tokens), p.tokens_tgt + int(result.tgt_tokens)
            self.record(result, metrics, bar, elapsed)

    def checkpoint(self) -> Checkpoint:
        """This run now: what :meth:`resume` continues from."""
        return Checkpoint(
            model=self.setup.raw_model.state_dict(),
            settings=self.setup.settings,
            vocab=self.setup.vocab,
            step=self.progress.step,
            optimizer=self.setup.optimizer.state_dict(),
            data_state=self.setup.batches.state_dict(),
            progress=dataclasses.asdict(self.progress),
            window=self.window.sums(),
            rng=rng_state(),
            world_size=self.setup.env.world_size,
            batches_per_rank=self.setup.stream.sampler.per_rank,
        )

    def save(self) -> Path:
        """Write ``checkpoints/ckpt_<step>.pt`` (main rank only); keep the newest ``keep_checkpoints``
        step-spaced ones and the newest of all (:func:`aiayn.train.resume.rotate`)."""
        path = checkpoint_path(self.setup.out_dir, self.progress.step)
        if self.setup.env.is_main:
            save_checkpoint(path, self.checkpoint())
            rotate(
                self.setup.out_dir,
                self.setup.cfg.keep_checkpoints,
                self.setup.cfg.checkpoint_steps,
                self.setup.cfg.train_steps,
            )
            log.info("saved %s", path)
        self.last_save, self.save_agreed, self.saved_step = time.perf_counter(), False, self.progress.step
        return path

    def resume(self) -> bool:
        """Load the newest good checkpoint under ``out_dir`` if there is one; returns whether it did.

        Rank 0 alone decides (:func:`aiayn.train.resume.choose`) and broadcasts the file it chose; the
        other ranks load that same file (every rank deciding for itself raced: two ranks renamed one
        folder). The model and optimizer states move to the device as they load, the generator states
        stay on the host. Another number of ranks: :func:`aiayn.train.resume.data_state`.
        """
        choice, checkpoint = (
            choose(self.setup.out_dir, self.setup.settings, self.setup.vocab)
            if self.setup.env.is_main
            else (None, None)
        )
        if self.setup.env.world_size > 1:
            box = [choice]
            torch.distributed.broadcast_object_list(box, src=0)
            choice = box[0]
        if choice is None:
            return False
        path, step = Path(choice[0]), choice[1]
        if checkpoint is None:
            checkpoint = load_checkpoint(path, step=step)
        self.setup.raw_model.load_state_dict(checkpoint.model)
        self.setup.optimizer.load_state_dict(checkpoint.optimizer)
        self.setup.batches.load_state_dict(
            data_state(checkpoint, self.setup.env.world_size, self.setup.stream.sampler.per_rank)
        )
        self.progress = Progress(**checkpoint.progress)
        self.window = Window(**checkpoint.window)
        set_rng_state(checkpoint.rng)
        self.saved_step = step
        log.info("resumed from %s (step %d, epoch %d)", path, step, self.setup.stream.epoch)
        return True

    def _time_to_save(self) -> bool:
        minutes = self.setup.cfg.checkpoint_minutes
        return bool(minutes) and time.perf_counter() - self.last_save >= 60 * minutes

    def _checkpoint_due(self, step: int) -> bool:
        """By steps (every rank knows), or by time (alone: the clock; with ranks: rank 0's clock, agreed)."""
        by_steps = self.setup.cfg.checkpoint_steps and step % self.setup.cfg.checkpoint_steps == 0
        by_time = self.save_agreed if self.setup.env.world_size > 1 else self._time_to_save()
        return bool(by_steps or by_time) and step < self.setup.cfg.train_steps

    def dev_perplexity(self) -> float:
        totals = corpus_nll(
            self.setup.raw_model,
            self.setup.dev_data,
            self.setup.plan.tokens_per_pass,
            self.setup.env.device,
            self.setup.max_len,
            self.setup.autocast(),
            drop_overlong=True,
        )
        ppl = perplexity_report(totals)["ppl"]
        self.progress.dev_ppl = ppl
        log.info("step %d: dev perplexity %.4f (%d tokens)", self.progress.step, ppl, totals["tokens"])
        return ppl

    def record(self, result: StepResult, metrics: MetricsLog | None, bar: tqdm, elapsed: float) -> None:
        """Add a step to the log window; every ``log_every_steps`` (and at the end) write a row."""
        window = self.window.add(result)
        if metrics and (result.step % self.setup.cfg.log_every_steps == 0 or result.step == self.setup.cfg.train_steps):
            self.progress.train_loss = metrics.write_window(
                window, result, self.setup.cfg.train_steps, elapsed, self.setup.mfu, self.setup.env.device
            )
            bar.set_postfix(loss=f"{self.progress.train_loss:.3f}", lr=f"{result.lr:.2e}")
            self.window = Window(start=result.queued_at)

    def _stopping(self, steps_this_run: int) -> bool:
        """A stop signal (alone: this process's; with ranks: any rank's, agreed) or the run's step limit."""
        signalled = self.stop_agreed or (self.setup.env.world_size == 1 and self.stop_requested)
        return signalled or steps_this_run == self.setup.max_steps_this_run

    def run(self) -> int:
        """Train to ``train_steps`` (or ``max_steps_this_run`` more steps); returns an exit status."""
        self.started = time.perf_counter()
        self.resume()
        self.wall_before, steps_this_run = self.progress.wall_seconds, 0
        metrics = MetricsLog(self.setup.out_dir, self.progress.step) if self.setup.env.is_main else None
        self._log_start()
        bar = tqdm(
            total=self.setup.cfg.train_steps,
            initial=self.progress.step,
            disable=None if self.setup.env.is_main else True,
            unit="step",
            dynamic_ncols=True,
        )
        self.window.start = self.last_save = time.perf_counter()
        try:
            while self.progress.step < self.setup.cfg.train_steps:
                if self._stopping(steps_this_run):
                    self._settle(metrics, bar)
                    if self.saved_step != self.progress.step:  # a checkpoint step can be the stop step
                        self.save()
                    if self.setup.env.world_size > 1:
                        torch.distributed.barrier()  # no rank exits while rank 0 still writes
                    log.info("stopped at step %d; run again with the same --out-dir to continue", self.progress.step)
                    return 143 if self.stop_agreed or self.stop_requested else 0
                self.train_step()
                steps_this_run += 1
                bar.update(1)
                self.take_results(metrics, bar, self._wall())
                step = self.progress.step
                if (
                    self.setup.env.is_main
                    and self.setup.cfg.dev_every_steps
                    and step % self.setup.cfg.dev_every_steps == 0
                ):
                    metrics.dev(step, self.dev_perplexity())
                if self._checkpoint_due(step):
                    self._settle(metrics, bar)
                    self.save()
            self.take_results(metrics, bar, self._wall(), lag=0)
        finally:
            self.setup.batches.close()
        bar.close()
        if self.window.steps and metrics:
            self.progress.train_loss = self.window.loss / max(self.window.tokens, 1.0)
        self.progress.wall_seconds = self._wall()
        self.finish(metrics)
        return 0

    def _wall(self) -> float:
        """Wall seconds of the whole training: the resumed checkpoint's, and this run's since it started."""
        return self.wall_before + time.perf_counter() - self.started

    def _settle(self, metrics: MetricsLog | None, bar: tqdm) -> None:
        """Account for every step queued so far and record the wall time: what a checkpoint holds."""
        self.take_results(metrics, bar, self._wall(), lag=0)
        self.progress.wall_seconds = self._wall()

    def _log_start(self) -> None:
        log.info(
            "model: %d parameters, %.3g training FLOPs per target token; %d rank(s) on %s (%s, %s); "
            "%d forward pass(es) of <= %d tokens per rank: %d tokens per step",
            count_parameters(self.setup.raw_model),
            self.setup.flops_per_token,
            self.setup.env.world_size,
            self.setup.env.device,
            device_name(self.setup.env.device),
            self.setup.precision,
            self.setup.plan.passes,
            self.setup.plan.tokens_per_pass,
            self.setup.plan.tokens_per_step,
        )

    def finish(self, metrics: MetricsLog | None) -> None:
        """Final checkpoint, ``checkpoint_last.pt``, dev perplexity and ``summary.json`` (written last)."""
        if not self.setup.env.is_main:
            return
        if (
            self.progress.dev_ppl is None
            or self.setup.cfg.dev_every_steps == 0
            or self.progress.step % self.setup.cfg.dev_every_steps
        ):
            ppl = self.dev_perplexity()
            if metrics:
                metrics.dev(self.progress.step, ppl)
        path = checkpoint_path(self.setup.out_dir, self.progress.step)
        if self.saved_step != self.progress.step or not path.exists():
            path = self.save()
        publish_last(self.setup.out_dir, path)
        if metrics:
            metrics.close()
        write_json(TrainPaths(str(self.setup.out_dir)).summary, self.summary())
        log.info(
            "done: %d steps, final train loss %s, dev perplexity %.4f",
            self.progress.step,
            self.progress.train_loss,
            self.progress.dev_ppl,
        )

    def summary(self) -> dict:
        return {
            "experiment": self.setup.settings.get("experiment"),
            "task": self.setup.settings.get("task"),
            "params": count_parameters(self.setup.raw_model),
            **self.progress.summary(self.setup.flops_per_token),
            "device": self.setup.env.device.type,
            "precision": self.setup.precision,
            "gpu_model": device_name(self.setup.env.device),
            "world_size": self.setup.env.world_size,
            "settings": self.setup.settings,
        }

    def stopping_on_signals(self) -> contextlib.AbstractContextManager:
        """Stop at the next step boundary with a checkpoint on SIGTERM or a first SIGINT, inside the ``with``
        block (:func:`aiayn.train.signals.stop_on_signals`)."""
        return stop_on_signals(lambda: setattr(self, "stop_requested", True))
