import dataclasses
import logging
import random

import numpy as np
import pytest
import torch

from aiayn.runtime import checkpoint
from aiayn.runtime import checkpoint as ck
from aiayn.runtime.checkpoint import Checkpoint, load_checkpoint, rng_state, save_checkpoint, set_rng_state


def touch(out_dir, *steps):
    for step in steps:
        path = checkpoint.checkpoint_path(out_dir, step)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")


def names(out_dir):
    return [step for step, _ in checkpoint.list_checkpoints(out_dir)]


@pytest.mark.parametrize("step, checkpoint_steps, final, spaced", [
    (1400, 1400, 100000, True), (2800, 1400, 100000, True), (1401, 1400, 100000, False),
    (100000, 1400, 100000, True),      # the final step is averaged although 100000 % 1400 != 0
    (777, 0, 100000, True),            # checkpoint_steps 0: spacing by the clock, every one counts
])
def test_is_spaced(step, checkpoint_steps, final, spaced):
    assert checkpoint.is_spaced(step, checkpoint_steps, final) is spaced


def test_rotation_keeps_the_newest_spaced_ones_and_the_newest_of_all(tmp_path):
    """Steps 100, 200, ... spaced; 250 (the clock's) and 530 (a stop's) are for resuming only."""
    touch(tmp_path, 100, 200, 250, 300, 400, 500)
    assert checkpoint.rotate(tmp_path, keep=3, checkpoint_steps=100, final_step=1000) == [
        checkpoint.checkpoint_path(tmp_path, s) for s in (100, 200, 250)]
    assert names(tmp_path) == [300, 400, 500]
    touch(tmp_path, 530)
    checkpoint.rotate(tmp_path, keep=3, checkpoint_steps=100, final_step=1000)
    assert names(tmp_path) == [300, 400, 500, 530]   # 530 stays: a resumed run starts there
    touch(tmp_path, 600)
    checkpoint.rotate(tmp_path, keep=3, checkpoint_steps=100, final_step=1000)
    assert names(tmp_path) == [400, 500, 600]        # a clock checkpoint never pushes out a spaced one


def test_rotation_without_step_spacing_keeps_the_newest(tmp_path):
    touch(tmp_path, 7, 19, 23)
    checkpoint.rotate(tmp_path, keep=2)
    assert names(tmp_path) == [19, 23]


def _state(step, value=1.0):
    return Checkpoint(model={"w": torch.full((2,), value), "n": torch.tensor([step])}, settings={}, vocab={}, step=step)


def test_the_file_is_the_dict_of_the_entries_set_and_loads_back(tmp_path):
    """On disk a checkpoint stays the dict every earlier version wrote: readable by them, and theirs by it."""
    ckpt = dataclasses.replace(_state(5), settings={"model": {}, "train": {}}, averaged_steps=[4, 5])
    save_checkpoint(tmp_path / "c.pt", ckpt)
    on_disk = torch.load(tmp_path / "c.pt", weights_only=True)
    assert list(on_disk) == ["model", "settings", "vocab", "step", "averaged_steps"]
    loaded = load_checkpoint(tmp_path / "c.pt")
    assert (loaded.averaged_steps == [4, 5] and loaded.optimizer is None
            and torch.equal(loaded.model["w"], ckpt.model["w"]))
    torch.save({**on_disk, "tokenizer": "x"}, tmp_path / "d.pt")
    with pytest.raises(ck.CorruptCheckpoint, match=r"d\.pt: not a checkpoint of this project "
                                                   r"\(unknown entries \['tokenizer'\]"):
        load_checkpoint(tmp_path / "d.pt")


def test_a_train_setting_left_out_is_its_definitions_default():
    partial = Checkpoint(model={}, settings={"train": {"precision": "bf16"}}, vocab={})
    assert (partial.train_setting("precision"), partial.train_setting("checkpoint_steps")) == ("bf16", 1400)


def test_resume_sets_corrupt_checkpoints_aside_and_takes_the_newest_good_one(tmp_path, caplog):
    for step in (2, 4, 6):
        ck.save_checkpoint(ck.checkpoint_path(tmp_path, step), _state(step))
    newest = ck.checkpoint_path(tmp_path, 6)
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])      # a torn write
    ck.checkpoint_path(tmp_path, 4).write_bytes(b"")                             # an empty file
    with caplog.at_level(logging.WARNING):
        step, path, state = ck.newest_good_checkpoint(tmp_path)
    assert (step, path.name, state.step) == (2, "ckpt_00000002.pt", 2)
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == [
        "ckpt_00000002.pt", "ckpt_00000004.pt.corrupt", "ckpt_00000006.pt.corrupt"]
    assert "ckpt_00000006.pt: not a readable checkpoint" in caplog.text and "set aside" in caplog.text


def test_a_checkpoint_with_non_finite_weights_is_never_written(tmp_path):
    ck.save_checkpoint(ck.checkpoint_path(tmp_path, 2), _state(2))
    with pytest.raises(ck.NonFiniteWeights, match=r"step 4: weights \['w'\] are not finite"):
        ck.save_checkpoint(ck.checkpoint_path(tmp_path, 4), _state(4, float("inf")))
    assert [p.name for p in (tmp_path / "checkpoints").iterdir()] == ["ckpt_00000002.pt"]
def test_rng_state_round_trip(tmp_path):
    random.seed(3), np.random.seed(3), torch.manual_seed(3)
    state = rng_state()
    want = (random.random(), np.random.rand(), torch.rand(1).item())
    save_checkpoint(tmp_path / "c.pt", dataclasses.replace(_state(0), rng=state))
    set_rng_state(load_checkpoint(tmp_path / "c.pt").rng)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == want


def test_checkpoints_load_onto_the_cpu_whatever_the_caller_trains_on(tmp_path, monkeypatch):
    save_checkpoint(tmp_path / "c.pt", dataclasses.replace(_state(0), rng=rng_state()))
    seen = []
    real_load = torch.load

    def load(*args, **kwargs):
        seen.append(kwargs.get("map_location"))
        return real_load(*args, **kwargs)

    monkeypatch.setattr(torch, "load", load)
    state = load_checkpoint(tmp_path / "c.pt")
    assert torch.device(seen[0]) == torch.device("cpu") and state.model["w"].device.type == "cpu"


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
    state = rng_state()
    state["cuda"] = [torch.full((16,), i, dtype=torch.uint8) for i in range(saved)]
    set_rng_state(state)
    assert sorted(fake.set) == list(range(min(saved, visible)))
    assert all(int(fake.set[i][0]) == i for i in fake.set)
    if saved > visible:
        assert "1 of 2 saved CUDA generator states" in caplog.text



def test_a_checkpoint_written_before_a_key_was_renamed_resumes_under_the_new_name():
    vocab = {"size": 8}
    before = Checkpoint(model={}, settings={"model": {}, "train": {"max_tokens": 4096, "warmup_steps": 4000}},
                        vocab=vocab)
    now = {"model": {}, "train": {"tokens_per_step": 4096, "warmup_steps": 4000}}
    assert ck.trajectory_changes(before, now, vocab) == []
    changed = {"model": {}, "train": {"tokens_per_step": 2048, "warmup_steps": 4000}}
    assert ck.trajectory_changes(before, changed, vocab) == ["train settings (tokens_per_step)"]


def test_a_checkpoint_written_before_a_key_existed_resumes_under_the_value_that_behaves_as_before():
    """train.max_length came later: a run written without it dropped no long pair (max_length 0)."""
    vocab = {"size": 8}
    before = Checkpoint(model={}, settings={"model": {}, "train": {"warmup_steps": 4000}}, vocab=vocab)
    assert ck.trajectory_changes(before, {"model": {}, "train": {"warmup_steps": 4000, "max_length": 0}}, vocab) == []
    assert ck.trajectory_changes(before, {"model": {}, "train": {"warmup_steps": 4000, "max_length": 256}},
                                 vocab) == ["train settings (max_length)"]
