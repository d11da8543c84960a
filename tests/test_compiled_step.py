"""The compiled training step (``train.compile``; the fused ways of :mod:`aiayn.train.forward`): the fused loss
equals the blocked one, reads each logit once and writes its gradient once; the compiled step makes one
graph whatever a batch's padding and lengths, and one per model over a whole epoch of the 64-shape
ladder on real EN-DE lengths; a compiled training has no graph break and computes the eager losses."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest
import torch
from paths import ROOT
from train_helpers import SETTINGS, VOCAB, make_task, settings

from aiayn.model import Transformer
from aiayn.options import ModelConfig
from aiayn.runtime.loss import fused_label_smoothed_loss, label_smoothed_loss
from aiayn.train.compiled import CompiledStep, cache_entries, graph_counters, graph_report
from aiayn.train.distributed import DistEnv
from aiayn.train.forward import TrainingLoss
from aiayn.train.trainer import Trainer, build_trainer

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
        trainer = build_trainer(run, task, out, CPU)
        steps = epochs * trainer.setup.stream.sampler.per_rank
        trainer.setup.cfg = dataclasses.replace(trainer.setup.cfg, train_steps=steps)
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
    assert compiled.setup.model.way == "fused" and eager.setup.model.way == "blocked"
    assert len(set(compiled.setup.stream.sampler.shapes)) == 4
    assert not counters["graph_break"], dict(counters["graph_break"])
    per_epoch = compiled.setup.stream.sampler.per_rank
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


def padded_batch(rows: int, src_len: int, tgt_len: int, full: bool, seed: int):
    """(src, tgt_in, tgt_out, gold_rows, src_padded) of random pairs as the collate pads them: with
    ``full`` every source fills the ``src_len`` positions (no padding), else lengths vary."""
    generator = torch.Generator().manual_seed(seed)
    src = torch.randint(4, VOCAB, (rows, src_len), generator=generator)
    tgt_out = torch.randint(4, VOCAB, (rows, tgt_len), generator=generator)
    for row in range(rows):
        if not full:
            src[row, 2 + row % (src_len - 2) :] = 0
        tgt_out[row, 2 + (row * 3) % (tgt_len - 2) :] = 0
    tgt_in = torch.cat([torch.full((rows, 1), 2), tgt_out[:, :-1]], dim=1)
    return src, tgt_in, tgt_out, tgt_out.reshape(-1).ne(0).nonzero().squeeze(1), not full


# (rows, S, T, sources fill the rows): S == T first, where duck sizing gives the two one symbol; then a
# batch where they differ, and unpadded and padded sources both ways
BATCHES = [(3, 6, 6, True), (4, 7, 5, False), (2, 5, 9, True), (5, 9, 9, False)]


@pytest.mark.slow
def test_the_compiled_step_makes_one_graph_whatever_the_padding_and_the_lengths():
    """One graph for four batches of other sizes, S == T or not, padded sources or not, and the losses of
    the eager way; plain ``torch.compile(dynamic=True)`` of the same module makes a second graph (duck
    sizing), which is what :class:`CompiledStep` prevents."""
    torch.manual_seed(0)
    model = Transformer(ModelConfig.from_dict(SETTINGS["model"] | {"dropout": 0.0}), VOCAB)
    eager = TrainingLoss(model, 0.1, "rows")
    graphs = {}
    for name, make in (("ours", CompiledStep), ("plain", lambda m: torch.compile(m, dynamic=True))):
        torch._dynamo.reset()
        before = graph_counters()
        step = make(TrainingLoss(model, 0.1, "fused"))
        for i, shape in enumerate(BATCHES):
            batch = padded_batch(*shape, seed=i)
            got, want = step(*batch), eager(*batch)
            assert [float(t) for t in got] == pytest.approx([float(t) for t in want], rel=1e-5)
        graphs[name] = graph_counters()["graphs"] - before["graphs"]
    assert graphs == {"ours": 1, "plain": 2}


def real_length_task(root, pairs: int) -> tuple:
    """Random ids at the lengths of the shared EN-DE pairs through our BPE, resampled to ``pairs``
    (``benchmarks/step_overhead.py``'s ``real_lengths``), as a training task of vocabulary 64."""
    from paths import SHARED_WMT

    if not SHARED_WMT.is_dir():
        pytest.skip(f"{SHARED_WMT} is not there")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from step_overhead import real_lengths
    from train_throughput import lengths_task

    src, tgt = real_lengths(root, 16000)
    return lengths_task(root / "task", src, tgt, pairs, 64)


# The paper's base and big attention shapes (8 and 16 heads, d_ff 4 d_model) at a width that trains
# fast on a CPU; two layers, not six: depth adds compile time, not sizes or guards
TINY_BASE = {"n_layers": 2, "d_model": 32, "d_ff": 128, "n_heads": 8, "d_k": 4, "d_v": 4, "max_positions": 256}
TINY_BIG = TINY_BASE | {"n_heads": 16, "d_k": 2, "d_v": 2, "dropout": 0.3}


@pytest.mark.slow
def test_a_whole_epoch_of_the_ladder_compiles_one_graph_per_model(tmp_path):
    """An epoch of the 64-shape ladder (100,000 pairs of real lengths, 2,000 tokens a pass: 1,723 batches)
    through the compiled step of the base and then the big shape, in one process: one graph each,
    no break, no recompile, the limit never reached (two of its eight entries used)."""
    task = real_length_task(tmp_path, 100_000)
    torch._dynamo.reset()
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    reports, shapes, steps = [], [], []
    try:
        for model in (TINY_BASE, TINY_BIG):
            run = settings(compile=True, batch_shapes=64, tokens_per_step=2000, tokens_per_pass=2000, max_length=256)
            run["train"] |= {
                "train_steps": 10**6,
                "log_every_steps": 10**6,
                "dev_every_steps": 0,
                "checkpoint_steps": 0,
            }
            run["model"] |= model
            before = graph_counters()
            trainer = build_trainer(run, task, tmp_path / f"out-{model['n_heads']}", CPU)
            for _ in range(trainer.setup.stream.sampler.per_rank):
                trainer.train_step()
                trainer.pending.ready(lag=1)
            trainer.pending.ready(lag=0)
            trainer.setup.batches.close()
            shapes.append(len(set(trainer.setup.stream.sampler.shapes)))
            reports.append(graph_report(trainer.setup.model._orig_mod, before, CPU.device))
            steps.append(trainer.setup.model._orig_mod)
    finally:
        torch.set_num_threads(threads)
    assert shapes == [64, 64]
    for report in reports:
        assert report["graphs"] == 1 and report["graph_breaks"] == 0 and report["one_graph"], report
    assert cache_entries(steps[-1]) == 2 < reports[-1]["recompile_limit"]
