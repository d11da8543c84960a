import csv
import dataclasses
import datetime
import json
import logging
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp
from train_helpers import make_task, settings

from aiayn.options import RunConfig, TrainConfig
from aiayn.runtime.devices import GpuClaim, GpuUnavailableError
from aiayn.settings import read
from aiayn.train.__main__ import main
from aiayn.train.distributed import DistEnv
from aiayn.train.step import NonFiniteError
from aiayn.train.trainer import Trainer, build_trainer

CPU = DistEnv(0, 1, torch.device("cpu"))


@pytest.fixture
def data(toy_task):
    """The toy task conftest.py builds once per session."""
    return toy_task


def final_state(out: Path) -> dict:
    return torch.load(out / "checkpoint_last.pt", weights_only=True)


@pytest.mark.slow
def test_cli_end_to_end(data, tmp_path):
    out = tmp_path / "train"
    (tmp_path / "train.json").write_text(json.dumps(settings()))
    cmd = [
        sys.executable,
        "-m",
        "aiayn.train",
        "--data",
        str(data),
        "--settings",
        str(tmp_path / "train.json"),
        "--out-dir",
        str(out),
        "--threads",
        "1",
        "--log",
        str(tmp_path / "train.log"),
    ]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 6 and summary["world_size"] == 1 and summary["gpu_model"] == "cpu"
    assert summary["tokens_tgt"] > 0 and summary["train_flops"] == pytest.approx(
        summary["flops_per_token"] * summary["tokens_tgt"]
    )
    assert math.isfinite(summary["final_train_loss"]) and 1.0 < summary["final_dev_ppl"] < 60
    assert summary["settings"]["train"]["train_steps"] == 6 and summary["experiment"] == "tiny"
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["ckpt_00000004.pt", "ckpt_00000006.pt"]
    assert os.path.samefile(out / "checkpoint_last.pt", out / "checkpoints" / "ckpt_00000006.pt")
    last = final_state(out)
    assert set(last) >= {"model", "settings", "vocab", "step", "optimizer", "data_state", "rng"}
    assert last["step"] == 6 and last["vocab"] == {"size": 40, "pad_id": 0, "unk_id": 1, "bos_id": 2, "eos_id": 3}
    rows = list(csv.DictReader(open(out / "log.csv")))
    train_rows, dev_rows = [r for r in rows if r["tokens_per_s"]], [r for r in rows if r["dev_ppl"]]
    assert [int(r["step"]) for r in train_rows] == [2, 4, 6] and all(float(r["tokens_per_s"]) > 0 for r in train_rows)
    assert int(dev_rows[-1]["step"]) == 6 and float(dev_rows[-1]["dev_ppl"]) == pytest.approx(
        summary["final_dev_ppl"], rel=1e-5
    )
    ppl_json = tmp_path / "dev.ppl.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "aiayn.evaluate.perplexity",
            "--checkpoint",
            str(out / "checkpoint_last.pt"),
            "--data",
            str(data / "dev"),
            "--output",
            str(ppl_json),
            "--threads",
            "1",
        ],
        check=True,
        timeout=60,
    )
    assert json.loads(ppl_json.read_text())["ppl"] == pytest.approx(summary["final_dev_ppl"], rel=1e-6)


def test_kill_and_resume_is_bit_identical(data, toy_run, tmp_path):
    torch.set_num_threads(1)
    assert build_trainer(settings(), data, tmp_path / "split", CPU, max_steps_this_run=3).run() == 0
    assert not (tmp_path / "split" / "summary.json").exists()
    assert (tmp_path / "split" / "checkpoints" / "ckpt_00000003.pt").exists()
    assert build_trainer(settings(), data, tmp_path / "split", CPU).run() == 0
    whole, split = final_state(toy_run), final_state(tmp_path / "split")
    for key, value in whole["model"].items():
        assert torch.equal(value, split["model"][key]), key
    assert whole["data_state"] == split["data_state"]
    assert whole["optimizer"]["state"][0]["exp_avg_sq"].equal(split["optimizer"]["state"][0]["exp_avg_sq"])
    logs = [list(csv.DictReader(open(run / "log.csv"))) for run in (toy_run, tmp_path / "split")]
    assert [(r["step"], r["loss"]) for r in logs[0]] == [(r["step"], r["loss"]) for r in logs[1]]


def test_changed_settings_set_old_checkpoints_aside_and_start_fresh(data, tmp_path, caplog):
    build_trainer(settings(), data, tmp_path, CPU, max_steps_this_run=3).run()
    other = settings()
    other["model"]["d_ff"] = 48
    other["train"]["label_smoothing"] = 0.0
    assert build_trainer(other, data, tmp_path / "fresh", CPU).run() == 0
    assert build_trainer(other, data, tmp_path, CPU).run() == 0
    assert "model settings, train settings (label_smoothing)" in caplog.text
    assert "ckpt_00000003.pt" in {p.name for p in (tmp_path / "checkpoints.stale-1").iterdir()}
    fresh, rerun = final_state(tmp_path / "fresh"), final_state(tmp_path)
    assert all(torch.equal(value, rerun["model"][key]) for key, value in fresh["model"].items())


def test_more_train_steps_resume_instead_of_restarting(data, tmp_path):
    build_trainer(settings(), data, tmp_path, CPU).run()
    longer = settings()
    longer["train"]["train_steps"] = 8
    assert build_trainer(longer, data, tmp_path, CPU).run() == 0
    assert final_state(tmp_path)["step"] == 8 and not (tmp_path / "checkpoints.stale-1").exists()


def _poison_step(trainer: Trainer, bad_step: int, times: int = 1) -> None:
    original, poisoned = trainer.micro_step, []

    def micro_step(batch):
        stats = original(batch)
        if trainer.progress.step + 1 >= bad_step and len(poisoned) < times:
            next(trainer.setup.raw_model.parameters()).grad.fill_(float("nan"))
            poisoned.append(bad_step)
        return stats

    trainer.micro_step = micro_step


def test_non_finite_step_is_skipped_or_stops(data, tmp_path):
    trainer = build_trainer(settings(train_steps=3, dev_every_steps=0), data, tmp_path / "skip", CPU)
    _poison_step(trainer, 2)
    first = {k: v.clone() for k, v in trainer.setup.raw_model.state_dict().items()}
    assert trainer.run() == 0
    assert trainer.progress.skipped_steps == 1 and trainer.progress.step == 3
    # the skipped step applied no update and did not count in Adam's step (bias correction)
    assert all(int(s["step"]) == 2 for s in final_state(tmp_path / "skip")["optimizer"]["state"].values())
    assert any(not torch.equal(first[k], v) for k, v in final_state(tmp_path / "skip")["model"].items())
    assert all(torch.isfinite(p).all() for p in final_state(tmp_path / "skip")["model"].values())
    trainer = build_trainer(
        settings(train_steps=3, nan_policy="stop", checkpoint_steps=1), data, tmp_path / "stop", CPU
    )
    _poison_step(trainer, 2)
    with pytest.raises(NonFiniteError, match="nan_policy: stop"):
        trainer.run()
    assert [p.name for p in (tmp_path / "stop" / "checkpoints").iterdir()] == ["ckpt_00000001.pt"]
    trainer = build_trainer(settings(train_steps=20, dev_every_steps=0), data, tmp_path / "diverged", CPU)
    _poison_step(trainer, 2, times=10**6)
    trainer.skips.limit = 4
    with pytest.raises(NonFiniteError, match="5 steps in a row"):
        trainer.run()
    assert trainer.progress.step <= 7


def _ddp_worker(rank: int, data: str, out: str, init_file: str, stop_rank: int | None = None) -> None:
    """One of two gloo ranks; ``stop_rank`` gets a stop signal during step 5, and rank 0's clock calls for
    a checkpoint during step 2. Writes its exit status, last step and the steps it saved at."""
    torch.set_num_threads(1)
    torch.distributed.init_process_group(
        "gloo", init_method=f"file://{init_file}", rank=rank, world_size=2, timeout=datetime.timedelta(seconds=30)
    )
    try:
        run = settings(train_steps=3 if stop_rank is None else 12, dev_every_steps=0)
        run["model"]["dropout"] = 0.0
        trainer = build_trainer(run, Path(data), Path(out), DistEnv(rank, 2, torch.device("cpu")))
        assert trainer.setup.plan.passes == 1 and trainer.setup.plan.tokens_per_pass == 64
        saves, original_save = [], trainer.save
        trainer.save = lambda: saves.append(trainer.progress.step) or original_save()
        if stop_rank is not None:
            trainer.setup.cfg = dataclasses.replace(trainer.setup.cfg, checkpoint_steps=0)
            trainer._time_to_save = lambda: rank == 0 and trainer.progress.step == 1
        if rank == stop_rank:
            original = trainer.micro_step

            def micro_step(batch):
                trainer.stop_requested = trainer.stop_requested or trainer.progress.step == 4
                return original(batch)

            trainer.micro_step = micro_step
        status = trainer.run()
        Path(out, f"rank{rank}.json").write_text(
            json.dumps({"status": status, "step": trainer.progress.step, "saves": saves})
        )
    finally:
        torch.distributed.destroy_process_group()


@pytest.mark.slow
def test_ddp_two_ranks_equal_one_rank_with_accumulation(data, tmp_path):
    """The same tokens_per_step on one rank (two passes) and two ranks (one pass each): the same step."""
    torch.set_num_threads(1)
    single = settings(train_steps=3, dev_every_steps=0)
    single["model"]["dropout"] = 0.0
    trainer = build_trainer(single, data, tmp_path / "one", CPU)
    assert (trainer.setup.plan.passes, trainer.setup.plan.tokens_per_pass) == (2, 64)
    trainer.run()
    mp.spawn(_ddp_worker, args=(str(data), str(tmp_path / "two"), str(tmp_path / "init")), nprocs=2, join=True)
    one, two = final_state(tmp_path / "one"), final_state(tmp_path / "two")
    assert two["data_state"] == {"epoch": 1, "position": 3} and one["data_state"] == {"epoch": 1, "position": 6}
    for key, value in one["model"].items():
        torch.testing.assert_close(two["model"][key], value, rtol=1e-5, atol=1e-6)
    summary = json.loads((tmp_path / "two" / "summary.json").read_text())
    assert summary["world_size"] == 2
    assert summary["tokens_tgt"] == json.loads((tmp_path / "one" / "summary.json").read_text())["tokens_tgt"]


@pytest.mark.slow
def test_a_stop_signal_on_one_rank_stops_every_rank_at_the_same_step(data, tmp_path):
    torch.set_num_threads(1)
    out = tmp_path / "two"
    mp.spawn(_ddp_worker, args=(str(data), str(out), str(tmp_path / "init"), 1), nprocs=2, join=True)
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0] == ranks[1] and ranks[0]["status"] == 143 and 5 <= ranks[0]["step"] < 12
    # rank 0's clock asked for a checkpoint during step 2: both ranks saved once for it, at one step
    assert ranks[0]["saves"] == [3, ranks[0]["step"]]
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == [
        "ckpt_00000003.pt",
        f"ckpt_{ranks[0]['step']:08d}.pt",
    ]
    assert (
        torch.load(out / "checkpoints" / f"ckpt_{ranks[0]['step']:08d}.pt", weights_only=True)["step"]
        == ranks[0]["step"]
    )


def test_resume_onto_a_gpu_reads_the_checkpoint_on_the_cpu(data, tmp_path, monkeypatch):
    """What a GPU does with map_location=cuda: every tensor lands off the host (here: the meta device)."""
    build_trainer(settings(), data, tmp_path, CPU, max_steps_this_run=3).run()
    trainer = build_trainer(settings(), data, tmp_path, CPU)
    trainer.setup.env = DistEnv(0, 1, torch.device("cuda", 0))
    real_load = torch.load

    def load(path, map_location=None, **kwargs):
        state = real_load(path, map_location="cpu", **kwargs)
        if torch.device(map_location).type != "cpu":
            state = torch.utils._pytree.tree_map(lambda x: x.to("meta") if isinstance(x, torch.Tensor) else x, state)
        return state

    monkeypatch.setattr(torch, "load", load)
    assert trainer.resume() and trainer.progress.step == 3
    assert all(p.device.type == "cpu" and p.is_leaf for p in trainer.setup.raw_model.parameters())


def test_gpu_claims_are_exclusive(tmp_path):
    first, second, third = GpuClaim(tmp_path), GpuClaim(tmp_path), GpuClaim(tmp_path)
    assert first.try_claim(2, 3) == [0, 1]
    assert second.try_claim(1, 3) == [2]
    assert third.try_claim(1, 3) is None and third.handles == {}
    first.release()
    assert third.try_claim(2, 3) == [0, 1]
    with pytest.raises(GpuUnavailableError, match="train.gpus=4 but this machine has 3 GPU"):
        GpuClaim(tmp_path).claim(4, 3)


def test_bad_settings_and_missing_data_fail_early(tmp_path):
    path = tmp_path / "train.json"
    path.write_text("{model")
    with pytest.raises(ValueError, match=r"train\.json: not valid JSON"):
        read(path, RunConfig)
    bad = settings()
    bad["train"]["warmup"] = 4
    path.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match=r"train\.json: unknown train setting\(s\) \['warmup'\]"):
        read(path, RunConfig)
    path.write_text(json.dumps(settings()))
    with pytest.raises(FileNotFoundError, match="train/manifest.json"):
        main(["--data", str(tmp_path), "--settings", str(path), "--out-dir", str(tmp_path / "o")])


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT"])
def test_sigterm_and_a_first_sigint_stop_with_a_checkpoint(data, tmp_path, signame):
    import signal

    signum = getattr(signal, signame)
    trainer = build_trainer(settings(dev_every_steps=0, checkpoint_steps=0), data, tmp_path, CPU)
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    original, sent = trainer.micro_step, []

    def micro_step(batch):
        if trainer.progress.step == 1 and not sent:  # once: a second SIGINT would interrupt at once
            sent.append(os.kill(os.getpid(), signum))
        return original(batch)

    trainer.micro_step = micro_step
    with trainer.stopping_on_signals():
        assert trainer.run() == 143
        if signum == signal.SIGINT:  # a second Ctrl-C interrupts at once
            assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    # the process goes on with its own handlers (a forked worker would otherwise inherit the stop flag's)
    assert {sig: signal.getsignal(sig) for sig in previous} == previous
    assert [p.name for p in (tmp_path / "checkpoints").iterdir()] == ["ckpt_00000002.pt"]
    assert not (tmp_path / "summary.json").exists()


def test_bf16_autocast_and_learned_positions_train(data, tmp_path):
    run = settings(train_steps=2, precision="bf16", dev_every_steps=0)
    run["model"].update(positional="learned", max_positions=8, norm="pre", share_embeddings=False)
    trainer = build_trainer(run, data, tmp_path, CPU)
    assert trainer.run() == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["steps"] == 2 and math.isfinite(summary["final_dev_ppl"])
    # pairs with a side of 8 or more tokens (+ eos/bos > max_positions) are dropped from training
    kept = sum(len(b) for b in trainer.setup.stream.sampler.batches)
    longest = torch.maximum(
        torch.from_numpy(trainer.setup.train_data.src_lengths), torch.from_numpy(trainer.setup.train_data.tgt_lengths)
    )
    assert kept == int((longest + 1 <= 8).sum()) < len(trainer.setup.train_data)


def _checkpoints_are_finite(out: Path) -> list[int]:
    """Steps of the checkpoints under ``out``; each must hold finite weights only."""
    steps = []
    for path in sorted((out / "checkpoints").glob("ckpt_*.pt")):
        state = torch.load(path, weights_only=True)
        assert all(torch.isfinite(t).all() for t in state["model"].values() if t.is_floating_point()), path
        steps.append(state["step"])
    return steps


@pytest.mark.parametrize("policy", ["skip", "stop"])
def test_a_non_finite_loss_mid_run_never_reaches_a_checkpoint(data, tmp_path, monkeypatch, policy):
    from aiayn.train import forward as module

    trainer = build_trainer(
        settings(train_steps=5, checkpoint_steps=1, keep_checkpoints=10, dev_every_steps=0, nan_policy=policy),
        data,
        tmp_path,
        CPU,
    )
    assert trainer.setup.model.way == "blocked"  # a CPU float32 training: its loss forms the logits in blocks
    original, poisoned = module.projected_label_smoothed_loss, []

    def loss_at_step_3_is_nan(*args, **kwargs):
        loss, nll, tokens = original(*args, **kwargs)
        if trainer.progress.step + 1 == 3 and not poisoned:  # once: the retried step 3 is finite
            poisoned.append(3)
            loss = loss * float("nan")
        return loss, nll, tokens

    monkeypatch.setattr(module, "projected_label_smoothed_loss", loss_at_step_3_is_nan)
    if policy == "skip":
        assert trainer.run() == 0 and trainer.progress.skipped_steps == 1
        assert _checkpoints_are_finite(tmp_path) == [1, 2, 3, 4, 5]
    else:
        with pytest.raises(NonFiniteError, match=r"^step 3: loss nan .* \(train.nan_policy: stop\)$"):
            trainer.run()
        assert _checkpoints_are_finite(tmp_path) == [1, 2]


@pytest.mark.parametrize("policy", ["skip", "stop"])
def test_non_finite_weights_are_never_written(data, tmp_path, policy):
    """Whatever made a weight infinite (an update the step's checks did not see), no checkpoint holds it."""
    from aiayn.runtime.checkpoint import NonFiniteWeights

    trainer = build_trainer(
        settings(train_steps=5, checkpoint_steps=1, keep_checkpoints=10, dev_every_steps=0, nan_policy=policy),
        data,
        tmp_path,
        CPU,
    )
    step = trainer.setup.optimizer.step

    def step_3_overflows(*args, **kwargs):
        result = step(*args, **kwargs)
        if trainer.progress.step + 1 == 3:
            next(trainer.setup.raw_model.parameters()).data[0] = float("inf")
        return result

    trainer.setup.optimizer.step = step_3_overflows
    with pytest.raises(NonFiniteWeights, match="step 3: weights .* are not finite"):
        trainer.run()
    assert _checkpoints_are_finite(tmp_path) == [1, 2]


def test_resume_skips_a_corrupt_newest_checkpoint(data, toy_run, tmp_path, caplog):
    torch.set_num_threads(1)
    split = tmp_path / "split"
    assert build_trainer(settings(keep_checkpoints=10), data, split, CPU, max_steps_this_run=4).run() == 0
    newest = split / "checkpoints" / "ckpt_00000004.pt"
    newest.write_bytes(newest.read_bytes()[:1000])  # torn by a crash
    with caplog.at_level(logging.INFO):
        assert build_trainer(settings(keep_checkpoints=10), data, split, CPU).run() == 0
    assert "ckpt_00000004.pt: not a readable checkpoint" in caplog.text and "resumed from" in caplog.text
    assert (split / "checkpoints" / "ckpt_00000004.pt.corrupt").exists()
    whole, resumed = final_state(toy_run), final_state(split)
    assert all(torch.equal(value, resumed["model"][key]) for key, value in whole["model"].items())


@pytest.mark.parametrize("max_length", [0, 10, 6])
def test_pairs_longer_than_max_length_are_not_trained_on_and_counted(data, tmp_path, caplog, max_length):
    """tensor2tensor's training reader dropped examples with a side over max_length (eos included)."""
    from aiayn.data.shards import ShardedCorpus

    corpus = ShardedCorpus(data / "train")
    longest = np.maximum(corpus.src_lengths, corpus.tgt_lengths) + 1  # ids + eos (or bos + ids)
    too_long = int((longest > max_length).sum()) if max_length else 0
    assert (too_long > 0) == (max_length == 6)  # the toy task's sides have 2 to 9 ids: at most 10 with eos
    with caplog.at_level(logging.INFO):
        trainer = build_trainer(settings(max_length=max_length), data, tmp_path / "out", CPU)
    kept = np.concatenate(trainer.setup.stream.sampler.batches)
    assert len(kept) == len(corpus) - too_long and not (max_length and (longest[kept] > max_length).any())
    assert f"{too_long} of {len(corpus)} sentence pairs dropped: {too_long} with a side longer than" in caplog.text
    trainer.setup.batches.close()


def test_a_near_empty_training_set_is_refused_before_training(tmp_path):
    tiny = make_task(tmp_path / "tiny", n_train=3)
    with pytest.raises(
        ValueError,
        match=r"tiny/train: 3 sentence pairs, \d+ target tokens: less than one batch "
        r"of 64 \(from train.tokens_per_step",
    ):
        build_trainer(settings(), tiny, tmp_path / "out", CPU)
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_compiled_training_equals_eager_with_few_recompiles(tmp_path):
    """torch.compile(dynamic=True) on CPU (inductor): batches of many shapes, one graph per mask mode."""
    from torch._dynamo.utils import counters

    torch.set_num_threads(1)
    data = make_task(tmp_path / "toy", n_train=200, seed=3)
    losses = {}
    torch._dynamo.reset()
    counters.clear()
    for compiled in (False, True):
        run = settings(train_steps=24, dev_every_steps=0, checkpoint_steps=0, log_every_steps=1, compile=compiled)
        run["model"]["dropout"] = 0.0
        trainer = build_trainer(run, data, tmp_path / str(compiled), CPU)
        shapes = set()
        original = trainer.micro_step
        trainer.micro_step = lambda batch: (
            shapes.add(tuple(batch.src.shape) + tuple(batch.tgt_in.shape)) or original(batch)
        )
        assert trainer.run() == 0
        rows = list(csv.DictReader(open(tmp_path / str(compiled) / "log.csv")))
        losses[compiled] = [float(r["loss"]) for r in rows if r["loss"]]
    assert len(shapes) >= 10 and len(losses[True]) == 24
    # equal at first; rounding differences of the fused kernels then compound a little over the steps
    assert losses[True][:5] == pytest.approx(losses[False][:5], rel=1e-4)
    assert losses[True] == pytest.approx(losses[False], rel=5e-3)
    assert 1 <= counters["stats"]["unique_graphs"] <= 3  # padded and unpadded sources


def test_gpus_that_cannot_be_used_fail_before_training(data, tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    path = tmp_path / "train.json"
    path.write_text(json.dumps(settings(gpus=1)))
    with pytest.raises(GpuUnavailableError, match=r"train\.gpus=1 but .*gpus: 0"):
        main(
            [
                "--data",
                str(data),
                "--settings",
                str(path),
                "--out-dir",
                str(tmp_path / "o"),
                "--gpu-lock-dir",
                str(tmp_path / "locks"),
            ]
        )
    assert not (tmp_path / "o").exists()


def test_progress_line_golden():
    from aiayn.train.metrics import progress_line

    line = progress_line(200, 1000, 5210.4, 6.12341, 3.5e-4, 0.95)
    assert line == "step 200/1000 (20.0%) | 5210 tokens/s | loss 6.1234 | lr 3.50e-04 | ETA 0:12:40"
    assert progress_line(1000, 1000, 1.0, 1.0, 1.0, 9.0).endswith("ETA 0:00:00")
    assert progress_line(0, 100, 1.0, 1.0, 1.0, 3600.0).endswith("ETA 100:00:00")


def test_cpu_matmul_takes_onednn_or_mkl():
    assert TrainConfig().cpu_matmul == "mkl" and TrainConfig(cpu_matmul="onednn").cpu_matmul == "onednn"
    with pytest.raises(ValueError, match="train.cpu_matmul: 'blas' is not one of onednn, mkl"):
        TrainConfig(cpu_matmul="blas")


def test_memory_that_runs_out_names_the_key_that_sizes_a_pass_and_a_smaller_one_resumes(data, tmp_path, monkeypatch):
    """An allocation that fails mid-run (the CUDA allocator's error, raised in step 3's forward pass) ends the
    training with one line naming the last step done and train.tokens_per_pass; the same command with half the
    tokens a pass resumes from step 2's checkpoint (nothing set aside), in two passes a step, to the end."""
    from aiayn.train import trainer as module

    original = module.Trainer.micro_step

    def out_of_memory_in_step_3(self, batch):
        if self.progress.step + 1 == 3:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB (GPU 0; 79.11 GiB total)")
        return original(self, batch)

    monkeypatch.setattr(module.Trainer, "micro_step", out_of_memory_in_step_3)
    run = settings(train_steps=5, checkpoint_steps=1, dev_every_steps=0, tokens_per_pass=128)
    (tmp_path / "train.json").write_text(json.dumps(run))
    args = [
        "--data",
        str(data),
        "--settings",
        str(tmp_path / "train.json"),
        "--out-dir",
        str(tmp_path / "out"),
        "--threads",
        "1",
    ]
    expected = (
        r"^out of memory on cpu after step 2 \(CUDA out of memory\. Tried to allocate 20\.00 GiB .*\): a "
        r"forward pass holds up to train\.tokens_per_pass=128 tokens a side; with a smaller value, "
    )
    with pytest.raises(MemoryError, match=expected):
        main(args)
    assert _checkpoints_are_finite(tmp_path / "out") == [1, 2]
    monkeypatch.undo()
    run["train"]["tokens_per_pass"] = 64
    (tmp_path / "train.json").write_text(json.dumps(run))
    assert main([*args, "--log", str(tmp_path / "train.log")]) == 0
    log = (tmp_path / "train.log").read_text(encoding="utf-8")
    assert "resumed from" in log and "(step 2," in log and "the checkpoint's batches were packed for 1 rank(s), " in log
    assert not list(tmp_path.glob("out/checkpoints.stale-*"))
    assert _checkpoints_are_finite(tmp_path / "out")[-1] == 5
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["steps"] == 5
