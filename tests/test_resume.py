"""aiayn.train.resume: rotation, the newest good checkpoint, RNG state, and which settings a run may
change and still continue."""

import dataclasses
import logging
import random

import numpy as np
import pytest
import torch
from test_checkpoint import _state, names, touch

from aiayn.runtime import checkpoint as ck
from aiayn.train import resume


def test_rotation_keeps_the_newest_spaced_ones_and_the_newest_of_all(tmp_path):
    """Steps 100, 200, ... spaced; 250 (the clock's) and 530 (a stop's) are for resuming only."""
    touch(tmp_path, 100, 200, 250, 300, 400, 500)
    assert resume.rotate(tmp_path, keep=3, checkpoint_steps=100, final_step=1000) == [
        ck.checkpoint_path(tmp_path, s) for s in (100, 200, 250)
    ]
    assert names(tmp_path) == [300, 400, 500]
    touch(tmp_path, 530)
    resume.rotate(tmp_path, keep=3, checkpoint_steps=100, final_step=1000)
    assert names(tmp_path) == [300, 400, 500, 530]  # 530 stays: a resumed run starts there
    touch(tmp_path, 600)
    resume.rotate(tmp_path, keep=3, checkpoint_steps=100, final_step=1000)
    assert names(tmp_path) == [400, 500, 600]  # a clock checkpoint never pushes out a spaced one


def test_rotation_without_step_spacing_keeps_the_newest(tmp_path):
    touch(tmp_path, 7, 19, 23)
    resume.rotate(tmp_path, keep=2)
    assert names(tmp_path) == [19, 23]


def test_resume_sets_corrupt_checkpoints_aside_and_takes_the_newest_good_one(tmp_path, caplog):
    for step in (2, 4, 6):
        ck.save_checkpoint(ck.checkpoint_path(tmp_path, step), _state(step))
    newest = ck.checkpoint_path(tmp_path, 6)
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])  # a torn write
    ck.checkpoint_path(tmp_path, 4).write_bytes(b"")  # an empty file
    with caplog.at_level(logging.WARNING):
        step, path, state = resume.newest_good_checkpoint(tmp_path)
    assert (step, path.name, state.step) == (2, "ckpt_00000002.pt", 2)
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == [
        "ckpt_00000002.pt",
        "ckpt_00000004.pt.corrupt",
        "ckpt_00000006.pt.corrupt",
    ]
    assert "ckpt_00000006.pt: not a readable checkpoint" in caplog.text and "set aside" in caplog.text


def test_rng_state_round_trip(tmp_path):
    random.seed(3), np.random.seed(3), torch.manual_seed(3)
    state = resume.rng_state()
    want = (random.random(), np.random.rand(), torch.rand(1).item())
    ck.save_checkpoint(tmp_path / "c.pt", dataclasses.replace(_state(0), rng=state))
    resume.set_rng_state(ck.load_checkpoint(tmp_path / "c.pt").rng)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == want


class FakeCudaRng:
    """torch.cuda's generator functions on a machine with ``count`` GPUs."""

    def __init__(self, count: int):
        self.count, self.set = count, {}

    def set_rng_state(self, state, device="cuda"):
        index = torch.device(device).index or 0 if not isinstance(device, int) else device
        if index >= self.count:
            raise RuntimeError(f"CUDA error: invalid device ordinal {index}")
        assert state.device.type == "cpu" and state.dtype == torch.uint8
        self.set[index] = state


@pytest.mark.parametrize("saved, visible", [(2, 1), (1, 2), (2, 2)])
def test_cuda_generators_restore_onto_fewer_or_more_gpus(monkeypatch, caplog, saved, visible):
    fake = FakeCudaRng(visible)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: visible)
    monkeypatch.setattr(torch.cuda, "set_rng_state", fake.set_rng_state)
    monkeypatch.setattr(torch.cuda.random, "set_rng_state", fake.set_rng_state)
    state = resume.rng_state()
    state["cuda"] = [torch.full((16,), i, dtype=torch.uint8) for i in range(saved)]
    resume.set_rng_state(state)
    assert sorted(fake.set) == list(range(min(saved, visible)))
    assert all(int(fake.set[i][0]) == i for i in fake.set)
    if saved > visible:
        assert "1 of 2 saved CUDA generator states" in caplog.text


def test_a_checkpoint_written_before_a_key_was_renamed_resumes_under_the_new_name():
    vocab = {"size": 8}
    before = ck.Checkpoint(
        model={}, settings={"model": {}, "train": {"max_tokens": 4096, "warmup_steps": 4000}}, vocab=vocab
    )
    now = {"model": {}, "train": {"tokens_per_step": 4096, "warmup_steps": 4000}}
    assert resume.trajectory_changes(before, now, vocab) == []
    changed = {"model": {}, "train": {"tokens_per_step": 2048, "warmup_steps": 4000}}
    assert resume.trajectory_changes(before, changed, vocab) == ["train settings (tokens_per_step)"]


def test_a_checkpoint_written_before_a_key_existed_resumes_under_the_value_that_behaves_as_before():
    """train.max_length came later: a run written without it dropped no long pair (max_length 0)."""
    vocab = {"size": 8}
    before = ck.Checkpoint(model={}, settings={"model": {}, "train": {"warmup_steps": 4000}}, vocab=vocab)
    assert (
        resume.trajectory_changes(before, {"model": {}, "train": {"warmup_steps": 4000, "max_length": 0}}, vocab) == []
    )
    assert resume.trajectory_changes(
        before, {"model": {}, "train": {"warmup_steps": 4000, "max_length": 256}}, vocab
    ) == ["train settings (max_length)"]
