"""The training loop (paper section 5): token-budget steps, Adam with the eq. 3 schedule, checkpoints.

One optimizer step collects ``train.max_tokens`` target tokens (and about as many source tokens)
over all data-parallel ranks and ``accumulation`` forward passes of at most
``train.max_tokens_per_batch`` tokens each; the summed label-smoothed loss's gradient is divided by
the number of target tokens of the whole step. A killed run restarted with the same ``out_dir``
continues from its latest checkpoint (model, optimizer, step, data position, RNG), bit-identical
on CPU to a run that was never interrupted: dropout is reseeded from (seed, step, rank) every step.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from tqdm import tqdm

from aiayn.data.shards import ShardedCorpus
from aiayn.io import write_json
from aiayn.model import ModelConfig, Transformer, count_parameters, flops_per_token
from aiayn.train.batching import (BOS, EOS, PAD, UNK, BatchSampler, BatchStream, check_at_least_one_batch,
                                  collate, make_batches)
from aiayn.train.checkpoint import (checkpoint_path, newest_good_checkpoint, publish_last, rng_state, rotate,
                                    save_checkpoint, set_aside, set_rng_state, trajectory_changes)
from aiayn.train.distributed import PEAK_BF16_FLOPS, DistEnv, device_name
from aiayn.train.evaluation import corpus_nll, perplexity_report
from aiayn.train.loss import label_smoothed_loss
from aiayn.train.metrics import MetricsLog
from aiayn.train.schedule import learning_rate
from aiayn.train.settings import TrainConfig, resolve_precision

log = logging.getLogger(__name__)


MAX_CONSECUTIVE_SKIPS = 100


class NonFiniteError(RuntimeError):
    """A step's loss or gradient norm was not finite under ``nan_policy: stop``, or too many in a row."""


@dataclass
class Progress:
    """Counters that travel in checkpoints: applied steps, wall time and tokens over all runs."""

    step: int = 0
    wall_seconds: float = 0.0
    tokens_src: int = 0
    tokens_tgt: int = 0
    skipped_steps: int = 0
    train_loss: float | None = None
    dev_ppl: float | None = None


@dataclass
class Window:
    """Sums over the steps since the last ``log.csv`` row."""

    loss: float = 0.0
    nll: float = 0.0
    tokens: float = 0.0
    steps: int = 0
    timed_tokens: float = 0.0  # tokens since ``start`` in this process (throughput), not checkpointed
    start: float = dataclasses.field(default_factory=time.perf_counter)

    def sums(self) -> dict:
        """What a checkpoint keeps, so that a resumed run logs the same rows."""
        return {"loss": self.loss, "nll": self.nll, "tokens": self.tokens, "steps": self.steps}


def load_corpora(data_dir: Path) -> tuple[ShardedCorpus, ShardedCorpus]:
    """``<data_dir>/train`` and ``<data_dir>/dev``; their vocabulary sizes must agree."""
    train, dev = ShardedCorpus(data_dir / "train"), ShardedCorpus(data_dir / "dev")
    if train.vocab_size != dev.vocab_size:
        raise ValueError(f"{data_dir}: train has {train.vocab_size} ids but dev has {dev.vocab_size}")
    if len(train) == 0:
        raise ValueError(f"{data_dir / 'train'}: no sentence pairs")
    return train, dev


def autocast_for(precision: str, device: torch.device) -> contextlib.AbstractContextManager:
    """bf16 autocast for ``bf16`` (and ``auto`` on CUDA, :func:`resolve_precision`); nothing (fp32) otherwise."""
    if resolve_precision(precision, device.type) == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def step_seed(seed: int, step: int, rank: int) -> int:
    """The torch seed of one (step, rank): dropout masks depend on nothing else, so resuming is exact."""
    return (seed * 1_000_003 + step) * 4099 + rank


class Trainer:
    """Trains one model on ``<data_dir>/{train,dev}`` into ``out_dir`` (see the module docstring)."""

    def __init__(self, settings: dict, data_dir: Path, out_dir: Path, env: DistEnv, max_steps_this_run: int | None = None):
        self.settings, self.env, self.out_dir = settings, env, Path(out_dir)
        self.model_cfg = ModelConfig.from_dict(settings["model"])
        self.cfg = TrainConfig.from_dict(settings["train"])
        self.max_steps_this_run = max_steps_this_run
        self.train_data, self.dev_data = load_corpora(Path(data_dir))
        self.vocab = {"size": self.train_data.vocab_size, "pad_id": PAD, "unk_id": UNK, "bos_id": BOS, "eos_id": EOS}
        torch.manual_seed(self.cfg.seed)
        self.raw_model = Transformer(self.model_cfg, self.vocab["size"], PAD).to(env.device)
        self.model = self._wrap(self.raw_model)
        self.optimizer = torch.optim.Adam(self.raw_model.parameters(), lr=0.0, betas=self.cfg.adam_betas,
                                          eps=self.cfg.adam_eps, weight_decay=self.cfg.weight_decay,
                                          fused=True)
        self.autocast = autocast_for(self.cfg.precision, env.device)
        self.max_len = self.model_cfg.max_positions if self.model_cfg.positional == "learned" else None
        self.stream = BatchStream(BatchSampler(self._batches(), self.cfg.seed, env.rank, env.world_size))
        self.accumulation = self.cfg.accumulation(env.world_size)
        src_len = float(self.train_data.src_lengths.mean()) + 1
        tgt_len = float(self.train_data.tgt_lengths.mean()) + 1
        self.flops_per_token = flops_per_token(self.model_cfg, src_len, tgt_len, self.vocab["size"])
        self.progress = Progress()
        self.window = Window()
        self.consecutive_skips, self.max_consecutive_skips = 0, MAX_CONSECUTIVE_SKIPS
        self.stop_requested = False

    def _wrap(self, model: nn.Module) -> nn.Module:
        if self.cfg.compile:
            model = torch.compile(model)
        if self.env.world_size > 1:
            device_ids = [self.env.device.index] if self.env.device.type == "cuda" else None
            model = nn.parallel.DistributedDataParallel(model, device_ids=device_ids)
        return model

    def _batches(self) -> list:
        batches, dropped = make_batches(self.train_data.src_lengths, self.train_data.tgt_lengths,
                                        self.cfg.max_tokens_per_batch, self.max_len)
        check_at_least_one_batch(str(self.train_data.dir), self.train_data.tgt_lengths, batches,
                                 self.cfg.max_tokens_per_batch)
        log.info("%d training batches of at most %d tokens per side; %d of %d sentence pairs dropped "
                 "(a side longer than the batch budget%s)", len(batches), self.cfg.max_tokens_per_batch,
                 dropped, len(self.train_data), f" or max_positions={self.max_len}" if self.max_len else "")
        return batches

    # ---- one optimizer step -------------------------------------------------------------------

    def micro_step(self, indices) -> torch.Tensor:
        """Forward and backward of one batch; returns (loss sum, nll sum, target tokens, source tokens)."""
        batch = collate(self.train_data, indices).to(self.env.device)
        with self.autocast:
            logits = self.model(batch.src, batch.tgt_in)  # (B, T, V)
        loss, nll, _ = label_smoothed_loss(logits, batch.tgt_out, self.cfg.label_smoothing, PAD)
        loss.backward()
        counts = torch.tensor([batch.tgt_tokens, batch.src_tokens], dtype=torch.float64, device=self.env.device)
        return torch.cat([torch.stack([loss.detach(), nll.detach()]).double(), counts])

    def train_step(self) -> dict | None:
        """One optimizer step over ``accumulation`` batches per rank; None when skipped (non-finite)."""
        step = self.progress.step + 1
        torch.manual_seed(step_seed(self.cfg.seed, step, self.env.rank))
        stats = torch.zeros(4, dtype=torch.float64, device=self.env.device)
        for i in range(self.accumulation):
            sync = self.env.world_size == 1 or i == self.accumulation - 1
            with contextlib.nullcontext() if sync else self.model.no_sync():
                stats += self.micro_step(self.stream.next())
        if self.env.world_size > 1:
            torch.distributed.all_reduce(stats)
        params = [p for p in self.raw_model.parameters() if p.grad is not None]
        grads = [p.grad for p in params]
        torch._foreach_mul_(grads, self.env.world_size / max(stats[2].item(), 1.0))
        grad_norm = torch.nn.utils.get_total_norm(grads)
        loss, nll, n_tgt, n_src = stats.tolist()
        if not (math.isfinite(loss) and math.isfinite(grad_norm.item())):
            return self._skip(step, loss, grad_norm.item())
        if self.cfg.clip_norm > 0:
            torch.nn.utils.clip_grads_with_norm_(params, self.cfg.clip_norm, grad_norm)
        lr = learning_rate(step, self.model_cfg.d_model, self.cfg.warmup_steps, self.cfg.lr_scale)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.consecutive_skips = 0
        p = self.progress
        p.step, p.tokens_src, p.tokens_tgt = step, p.tokens_src + int(n_src), p.tokens_tgt + int(n_tgt)
        return {"step": step, "lr": lr, "loss": loss, "nll": nll, "tokens": n_tgt, "grad_norm": grad_norm.item()}

    def _skip(self, step: int, loss: float, grad_norm: float) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        message = f"step {step}: loss {loss} or gradient norm {grad_norm} is not finite"
        if self.cfg.nan_policy == "stop":
            raise NonFiniteError(message + " (train.nan_policy: stop)")
        self.progress.skipped_steps += 1
        self.consecutive_skips += 1
        if self.consecutive_skips > self.max_consecutive_skips:
            raise NonFiniteError(f"{message}; {self.consecutive_skips} steps in a row were not finite, "
                                 "the model has diverged (lower train.lr_scale or set train.clip_norm)")
        log.warning("%s; step skipped (%d so far, train.nan_policy: skip)", message, self.progress.skipped_steps)
        return None

    # ---- checkpoints --------------------------------------------------------------------------

    def state_dict(self) -> dict:
        return {"model": self.raw_model.state_dict(), "settings": self.settings, "vocab": self.vocab,
                "step": self.progress.step, "optimizer": self.optimizer.state_dict(),
                "data_state": self.stream.state_dict(), "progress": dataclasses.asdict(self.progress),
                "window": self.window.sums(), "rng": rng_state()}

    def save(self) -> Path:
        """Write ``checkpoints/ckpt_<step>.pt`` (main rank only); keep the newest ``keep_checkpoints``
        step-spaced ones and the newest of all (:func:`aiayn.train.checkpoint.rotate`)."""
        path = checkpoint_path(self.out_dir, self.progress.step)
        if self.env.is_main:
            save_checkpoint(path, self.state_dict())
            rotate(self.out_dir, self.cfg.keep_checkpoints, self.cfg.checkpoint_steps, self.cfg.train_steps)
            log.info("saved %s", path)
        return path

    def resume(self) -> bool:
        """Load the latest checkpoint under ``out_dir`` if there is one; returns whether it did."""
        newest = newest_good_checkpoint(self.out_dir, self.env.device)  # corrupt ones are set aside
        if newest is None:
            return False
        step, path, state = newest
        changed = trajectory_changes(state, self.settings, self.vocab)
        if changed:
            aside = set_aside(self.out_dir / "checkpoints")
            log.warning("%s was trained with other %s; moved the old checkpoints to %s and training from "
                        "scratch", path, ", ".join(changed), aside)
            return False
        self.raw_model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.stream.load_state_dict(state["data_state"])
        self.progress = Progress(**state["progress"])
        self.window = Window(**state["window"])
        set_rng_state(state["rng"])
        log.info("resumed from %s (step %d, epoch %d)", path, step, self.stream.epoch)
        return True

    # ---- the loop -----------------------------------------------------------------------------

    def dev_perplexity(self) -> float:
        totals = corpus_nll(self.raw_model, self.dev_data, self.cfg.max_tokens_per_batch, self.env.device,
                            self.max_len, self.autocast, drop_overlong=True)
        ppl = perplexity_report(totals)["ppl"]
        self.progress.dev_ppl = ppl
        log.info("step %d: dev perplexity %.4f (%d tokens)", self.progress.step, ppl, totals["tokens"])
        return ppl

    def mfu(self, tokens_per_s: float) -> float | None:
        peak = PEAK_BF16_FLOPS.get(device_name(self.env.device))
        return None if peak is None else self.flops_per_token * tokens_per_s / (peak * self.env.world_size)

    def record(self, result: dict, metrics: MetricsLog | None, bar: tqdm, elapsed: float) -> None:
        """Add a step to the log window; every ``log_every_steps`` (and at the end) write a row."""
        window = self.window
        window.loss, window.nll = window.loss + result["loss"], window.nll + result["nll"]
        window.tokens, window.steps = window.tokens + result["tokens"], window.steps + 1
        window.timed_tokens += result["tokens"]
        step = result["step"]
        if metrics and (step % self.cfg.log_every_steps == 0 or step == self.cfg.train_steps):
            self.log_window(window, result, metrics, elapsed)
            bar.set_postfix(loss=f"{self.progress.train_loss:.3f}", lr=f"{result['lr']:.2e}")
            self.window = Window()

    def log_window(self, window: Window, result: dict, metrics: MetricsLog, elapsed: float) -> None:
        seconds = time.perf_counter() - window.start
        tokens_per_s = window.timed_tokens / seconds if seconds > 0 else 0.0
        self.progress.train_loss = window.loss / max(window.tokens, 1.0)
        metrics.write({"step": result["step"], "lr": result["lr"], "loss": self.progress.train_loss,
                       "nll": window.nll / max(window.tokens, 1.0), "grad_norm": result["grad_norm"],
                       "tokens_per_s": tokens_per_s, "mfu": self.mfu(tokens_per_s), "elapsed": elapsed})

    def run(self) -> int:
        """Train to ``train_steps`` (or ``max_steps_this_run`` more steps); returns an exit status."""
        started, resumed = time.perf_counter(), self.resume()
        wall0, steps_this_run = self.progress.wall_seconds, 0
        metrics = MetricsLog(self.out_dir, self.progress.step) if self.env.is_main else None
        last_save, saved_step = time.perf_counter(), self.progress.step if resumed else -1
        self._log_start()
        bar = tqdm(total=self.cfg.train_steps, initial=self.progress.step, disable=None if self.env.is_main else True,
                   unit="step", dynamic_ncols=True)
        self.window.start = time.perf_counter()
        while self.progress.step < self.cfg.train_steps:
            if self.stop_requested or steps_this_run == self.max_steps_this_run:
                self.progress.wall_seconds = wall0 + time.perf_counter() - started
                self.save()
                log.info("stopped at step %d; run again with the same --out-dir to continue", self.progress.step)
                return 0 if not self.stop_requested else 143
            result = self.train_step()
            if result is None:
                continue
            steps_this_run, step = steps_this_run + 1, result["step"]
            bar.update(1)
            self.record(result, metrics, bar, wall0 + time.perf_counter() - started)
            if self.env.is_main and self.cfg.dev_every_steps and step % self.cfg.dev_every_steps == 0:
                metrics.dev(step, self.dev_perplexity())
            if self._checkpoint_due(step, last_save):
                self.progress.wall_seconds = wall0 + time.perf_counter() - started
                self.save()
                last_save, saved_step = time.perf_counter(), step
        bar.close()
        if self.window.steps and metrics:
            self.progress.train_loss = self.window.loss / max(self.window.tokens, 1.0)
        self.progress.wall_seconds = wall0 + time.perf_counter() - started
        self.finish(saved_step, metrics)
        return 0

    def _checkpoint_due(self, step: int, last_save: float) -> bool:
        """Every ``checkpoint_steps`` steps (the ones averaged), or after ``checkpoint_minutes`` without
        any checkpoint (a safety net for resuming, never averaged unless it falls on the step grid)."""
        by_steps = self.cfg.checkpoint_steps and step % self.cfg.checkpoint_steps == 0
        by_time = self.cfg.checkpoint_minutes and time.perf_counter() - last_save >= 60 * self.cfg.checkpoint_minutes
        return bool(by_steps or by_time) and step < self.cfg.train_steps

    def _log_start(self) -> None:
        log.info("model: %d parameters, %.3g training FLOPs per target token; %d rank(s) on %s (%s), "
                 "%d forward pass(es) of <= %d tokens per rank and step", count_parameters(self.raw_model),
                 self.flops_per_token, self.env.world_size, self.env.device, device_name(self.env.device),
                 self.accumulation, self.cfg.max_tokens_per_batch)

    def finish(self, saved_step: int, metrics: MetricsLog | None) -> None:
        """Final checkpoint, ``checkpoint_last.pt``, dev perplexity and ``summary.json`` (written last)."""
        if not self.env.is_main:
            return
        if self.progress.dev_ppl is None or self.cfg.dev_every_steps == 0 or self.progress.step % self.cfg.dev_every_steps:
            ppl = self.dev_perplexity()
            if metrics:
                metrics.dev(self.progress.step, ppl)
        path = checkpoint_path(self.out_dir, self.progress.step)
        if saved_step != self.progress.step or not path.exists():
            path = self.save()
        publish_last(self.out_dir, path)
        if metrics:
            metrics.close()
        write_json(self.out_dir / "summary.json", self.summary())
        log.info("done: %d steps, final train loss %s, dev perplexity %.4f", self.progress.step,
                 self.progress.train_loss, self.progress.dev_ppl)

    def summary(self) -> dict:
        p = self.progress
        return {"experiment": self.settings.get("experiment"), "task": self.settings.get("task"),
                "params": count_parameters(self.raw_model), "steps": p.step, "wall_seconds": p.wall_seconds,
                "tokens_src": p.tokens_src, "tokens_tgt": p.tokens_tgt, "flops_per_token": self.flops_per_token,
                "train_flops": self.flops_per_token * p.tokens_tgt, "device": self.env.device.type,
                "gpu_model": device_name(self.env.device), "world_size": self.env.world_size,
                "skipped_steps": p.skipped_steps, "final_train_loss": p.train_loss, "final_dev_ppl": p.dev_ppl,
                "settings": self.settings}

    def install_signal_handlers(self) -> None:
        """SIGTERM (SLURM pre-emption, a time limit) stops at the next step boundary with a checkpoint."""
        def handler(signum, frame):
            log.warning("signal %d: stopping after this step", signum)
            self.stop_requested = True

        signal.signal(signal.SIGTERM, handler)
