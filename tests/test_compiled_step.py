"""The compiled training step (``train.compile``; the fused way of :mod:`aiayn.train.forward`): the fused loss
equals the blocked one, reads each logit once and writes its gradient once; a compiled training has no
graph break, compiles nothing new once its ladder's shapes have been met, and computes the eager losses."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest
import torch
from paths import ROOT
from train_helpers import make_task, settings

from aiayn.runtime.loss import fused_label_smoothed_loss, label_smoothed_loss
from aiayn.train.distributed import DistEnv
from aiayn.train.trainer import Trainer

CPU = DistEnv(0, 1, torch.device("cpu"))


def logits_and_targets(rows: int, vocab: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    logits = (3 * torch.randn(rows, vocab, generator=generator)).requires_grad_()
    target = torch.randint(0, vocab, (rows,), generator=generator)
    target[::7] = 0  # padding positions, which weigh nothing
    return logits, target


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_the_fused_loss_equals_the_blocked_loss_and_its_gradient(smoothing):
    logits, target = logits_and_targets(300, 50)
    ours = fused_label_smoothed_loss(logits, target, smoothing, 0)
    (grad,) = torch.autograd.grad(ours[0], logits)
    reference = label_smoothed_loss(logits, target, smoothing, 0, chunk_rows=64)
    (want,) = torch.autograd.grad(reference[0], logits)
    for got, expected in zip(ours, reference):
        assert float(got.detach()) == pytest.approx(float(expected.detach()), rel=1e-5)
    torch.testing.assert_close(grad, want, rtol=1e-5, atol=1e-7)


@pytest.mark.slow
def test_the_compiled_fused_loss_reads_each_logit_once_and_writes_its_gradient_once():
    """bf16 logits: 2 bytes read forward, 2 read and 2 written backward (``benchmarks/step_overhead.py``
    measures the kernels inductor makes); the compiled values equal the eager ones."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from step_overhead import compiled_loss_bytes

    forward, backward = compiled_loss_bytes(512, 3000, torch.bfloat16)
    assert forward + backward <= 8.0 and forward == pytest.approx(2.0, abs=0.1)
    logits, target = logits_and_targets(256, 1000, seed=1)
    compiled = torch.compile(fused_label_smoothed_loss)(logits, target, 0.1, 0)
    (grad,) = torch.autograd.grad(compiled[0], logits)
    eager = fused_label_smoothed_loss(logits, target, 0.1, 0)
    (want,) = torch.autograd.grad(eager[0], logits)
    assert float(compiled[0].detach()) == pytest.approx(float(eager[0].detach()), rel=1e-5)
    torch.testing.assert_close(grad, want, rtol=1e-5, atol=1e-7)


def train_recording(task, out, compile: bool, epochs: int = 3) -> tuple[Trainer, list[float], list[int]]:
    """A training of ``epochs`` epochs on one thread; each step's summed loss, and after each step the
    number of graphs torch.compile has made so far."""
    from torch._dynamo.utils import counters

    run = settings(
        compile=compile,
        batch_shapes=4,
        tokens_per_step=128,
        tokens_per_pass=128,
        log_every_steps=1,
        dev_every_steps=0,
        checkpoint_steps=0,
        train_steps=10**6,
    )
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        trainer = Trainer(run, task, out, CPU)
        steps = epochs * trainer.stream.sampler.per_rank
        trainer.cfg = dataclasses.replace(trainer.cfg, train_steps=steps)
        losses, graphs = [], []
        step, record = trainer.train_step, trainer.record

        def train_step():
            tokens = step()
            graphs.append(counters["stats"]["unique_graphs"])
            return tokens

        def record_loss(result, *args):
            losses.append(result.loss)
            return record(result, *args)

        trainer.train_step, trainer.record = train_step, record_loss
        assert trainer.run() == 0
        return trainer, losses, graphs
    finally:
        torch.set_num_threads(threads)


@pytest.mark.slow
def test_a_compiled_training_compiles_its_ladder_once_and_computes_the_eager_losses(tmp_path):
    """Three epochs of four batch shapes: no graph break, nothing compiled after the first epoch, and
    every step's loss the eager step's (random numbers drawn as eagerly: ``fallback_random``)."""
    from torch._dynamo.utils import counters

    task = make_task(tmp_path / "toy", n_train=200)
    torch._dynamo.reset()
    counters.clear()
    with torch._inductor.config.patch(fallback_random=True):
        compiled, losses, graphs = train_recording(task, tmp_path / "compiled", compile=True)
    eager, want, _ = train_recording(task, tmp_path / "eager", compile=False)
    assert compiled.model._orig_mod.way == "fused" and eager.model.way == "blocked"
    assert len(set(compiled.stream.sampler.shapes)) == 4
    assert not counters["graph_break"], dict(counters["graph_break"])
    per_epoch = compiled.stream.sampler.per_rank
    assert graphs[per_epoch - 1] == graphs[-1] >= 1, graphs  # the ladder's shapes all met in the first epoch
    assert losses == pytest.approx(want, rel=1e-5)


@pytest.mark.slow
def test_a_compiled_training_keeps_its_compile_cache_for_the_resumed_run(tmp_path):
    """``python -m aiayn.train`` with train.compile: torch.compile's cache lands in the run's folder, and a
    run resumed there (two more steps) finishes from it."""
    task = make_task(tmp_path / "toy")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("TORCHINDUCTOR_CACHE_DIR", None)

    def train(steps: int) -> None:
        (tmp_path / "train.json").write_text(json.dumps(settings(compile=True, train_steps=steps, batch_shapes=2)))
        subprocess.run(
            [
                sys.executable,
                "-m",
                "aiayn.train",
                "--data",
                str(task),
                "--settings",
                str(tmp_path / "train.json"),
                "--out-dir",
                str(out),
                "--threads",
                "1",
            ],
            check=True,
            capture_output=True,
            timeout=600,
            env=env,
        )

    train(2)
    cache = out / "compile-cache"
    assert cache.is_dir() and any(cache.rglob("*")), "torch.compile wrote nothing under the run's folder"
    train(4)
    assert json.loads((out / "summary.json").read_text())["steps"] == 4
