"""The trainer with several gloo ranks (spawned here; tests/test_torchrun.py runs them under torchrun):
the stop checkpoint every rank waits for, resume decided by rank 0 alone, resuming on another number
of ranks, and one checkpoint when a checkpoint step is the stop step."""

import datetime
import json
import time
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp
from train_helpers import settings

from aiayn.train import resume as resumelib
from aiayn.train import trainer as trainerlib
from aiayn.train.distributed import DistEnv
from aiayn.train.trainer import Trainer, build_trainer

CPU = DistEnv(0, 1, torch.device("cpu"))


@pytest.fixture
def data(toy_task):
    """The toy task conftest.py builds once per session."""
    return toy_task


def no_dropout(**train) -> dict:
    run = settings(dev_every_steps=0, **train)
    run["model"]["dropout"] = 0.0  # masks are drawn per rank: runs on other rank counts compare equal
    return run


def _worker(rank: int, world: int, job: str, data: str, out: str, run: dict, init_file: str) -> None:
    """One of ``world`` gloo ranks doing ``job``; writes what it saw to ``<out>/<job>-rank<rank>.json``."""
    torch.set_num_threads(1)
    torch.distributed.init_process_group(
        "gloo", init_method=f"file://{init_file}", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60)
    )
    try:
        trainer = build_trainer(run, Path(data), Path(out), DistEnv(rank, world, torch.device("cpu")))
        report = globals()[f"_job_{job}"](rank, trainer)
        Path(out, f"{job}-rank{rank}.json").write_text(json.dumps(report))
    finally:
        torch.distributed.destroy_process_group()


def spawn(job: str, data: Path, out: Path, run: dict, world: int = 2) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    init = out.parent / f"{out.name}-{job}.init"
    init.unlink(missing_ok=True)
    mp.spawn(_worker, args=(world, job, str(data), str(out), run, str(init)), nprocs=world, join=True)
    return [json.loads((out / f"{job}-rank{r}.json").read_text()) for r in range(world)]


def _job_slow_stop(rank: int, trainer: Trainer) -> dict:
    """Rank 1 is stopped during step 3; rank 0's save takes 3 s (a big checkpoint on a slow disk)."""
    real_save = trainerlib.save_checkpoint

    def slow_save(path, state):
        time.sleep(3)
        real_save(path, state)

    trainerlib.save_checkpoint = slow_save
    real_step = trainer.micro_step

    def micro_step(batch):
        trainer.stop_requested = trainer.stop_requested or (rank == 1 and trainer.progress.step == 2)
        return real_step(batch)

    trainer.micro_step = micro_step
    status = trainer.run()
    return {
        "status": status,
        "step": trainer.progress.step,
        "saved_when_returned": sorted(p.name for p in (trainer.setup.out_dir / "checkpoints").glob("ckpt_*.pt")),
    }


@pytest.mark.slow
def test_every_rank_waits_for_the_stop_checkpoint(data, tmp_path):
    """No rank exits before rank 0's stop checkpoint is on disk (torchrun kills the rest 30 s after a
    first worker exits), and all ranks exit with the same status."""
    ranks = spawn("slow_stop", data, tmp_path / "out", no_dropout(train_steps=12, checkpoint_steps=0))
    step = ranks[0]["step"]
    assert [r["status"] for r in ranks] == [143, 143] and ranks[1]["step"] == step and 3 <= step < 12
    assert ranks[1]["saved_when_returned"] == [f"ckpt_{step:08d}.pt"]


def _job_resume(rank: int, trainer: Trainer) -> dict:
    decided = []
    real_newest = resumelib.newest_good_checkpoint
    resumelib.newest_good_checkpoint = lambda *a, **k: decided.append(rank) or real_newest(*a, **k)
    resumed = trainer.resume()
    return {
        "decided": decided,
        "resumed": resumed,
        "step": trainer.progress.step,
        "data": trainer.setup.batches.state_dict(),
        "weights": float(sum(p.double().sum() for p in trainer.setup.raw_model.parameters())),
    }


@pytest.mark.slow
def test_rank_zero_alone_decides_resume_and_set_aside(data, tmp_path):
    """Changed settings: one rename of the folder, by rank 0 (two ranks renaming it raced); a corrupt
    newest checkpoint: set aside by rank 0, and every rank loads the one before it."""
    out = tmp_path / "out"
    assert (
        build_trainer(settings(label_smoothing=0.2, keep_checkpoints=10), data, out, CPU, max_steps_this_run=4).run()
        == 0
    )
    ranks = spawn("resume", data, out, settings(keep_checkpoints=10))
    assert [r["decided"] for r in ranks] == [[0], []] and not any(r["resumed"] for r in ranks)
    assert (out / "checkpoints.stale-1").is_dir() and not (out / "checkpoints.stale-2").exists()
    assert build_trainer(settings(keep_checkpoints=10), data, out, CPU, max_steps_this_run=4).run() == 0
    newest = out / "checkpoints" / "ckpt_00000004.pt"
    newest.write_bytes(newest.read_bytes()[:1000])
    ranks = spawn("resume", data, out, settings(keep_checkpoints=10))
    assert [r["decided"] for r in ranks] == [[0], []] and all(r["resumed"] and r["step"] == 2 for r in ranks)
    assert ranks[0]["weights"] == ranks[1]["weights"] and (out / "checkpoints" / "ckpt_00000004.pt.corrupt").exists()


def _job_train(rank: int, trainer: Trainer) -> dict:
    return {"status": trainer.run(), "step": trainer.progress.step}


@pytest.mark.slow
def test_a_checkpoint_continues_on_another_number_of_ranks(data, tmp_path):
    """Three steps on one rank (two passes per step), three more on two ranks (one pass each): the
    run continues at step 3 without setting anything aside, at the same place in the epoch; with the
    same batch budget and no dropout it equals six steps on one rank."""
    whole, split = tmp_path / "whole", tmp_path / "split"
    assert build_trainer(no_dropout(train_steps=6, checkpoint_steps=3), data, whole, CPU).run() == 0
    assert (
        build_trainer(no_dropout(train_steps=6, checkpoint_steps=3), data, split, CPU, max_steps_this_run=3).run() == 0
    )
    ranks = spawn("train", data, split, no_dropout(train_steps=6, checkpoint_steps=3, cpu_ranks=2, threads=4))
    assert all(r == {"status": 0, "step": 6} for r in ranks)
    assert not list(tmp_path.glob("split/checkpoints.stale-*"))
    one, two = (torch.load(out / "checkpoint_last.pt", weights_only=True) for out in (whole, split))
    # 8 batches an epoch: one rank ends at batch 4 of 8 of epoch 2, each of two ranks at 2 of 4
    assert (
        two["world_size"] == 2
        and two["data_state"] == {"epoch": 2, "position": 2}
        and one["data_state"] == {"epoch": 2, "position": 4}
    )
    for name, value in one["model"].items():
        torch.testing.assert_close(two["model"][name], value, rtol=1e-5, atol=1e-6)


def test_a_checkpoint_step_that_is_the_stop_step_writes_one_checkpoint(data, tmp_path, monkeypatch):
    writes = []
    real_save = trainerlib.save_checkpoint
    monkeypatch.setattr(
        trainerlib, "save_checkpoint", lambda path, state: writes.append(path.name) or real_save(path, state)
    )
    assert build_trainer(settings(checkpoint_steps=3), data, tmp_path, CPU, max_steps_this_run=3).run() == 0
    assert writes == ["ckpt_00000003.pt"]
