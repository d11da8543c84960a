import dataclasses

import pytest
import torch

from aiayn.runtime import checkpoint
from aiayn.runtime import checkpoint as ck
from aiayn.runtime.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from aiayn.train.resume import rng_state


def touch(out_dir, *steps):
    for step in steps:
        path = checkpoint.checkpoint_path(out_dir, step)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")


def names(out_dir):
    return [step for step, _ in checkpoint.list_checkpoints(out_dir)]


@pytest.mark.parametrize(
    "step, checkpoint_steps, final, spaced",
    [
        (1400, 1400, 100000, True),
        (2800, 1400, 100000, True),
        (1401, 1400, 100000, False),
        (100000, 1400, 100000, True),  # the final step is averaged although 100000 % 1400 != 0
        (777, 0, 100000, True),  # checkpoint_steps 0: spacing by the clock, every one counts
    ],
)
def test_is_spaced(step, checkpoint_steps, final, spaced):
    assert checkpoint.is_spaced(step, checkpoint_steps, final) is spaced


def _state(step, value=1.0):
    return Checkpoint(model={"w": torch.full((2,), value), "n": torch.tensor([step])}, settings={}, vocab={}, step=step)


def test_the_file_is_the_dict_of_the_entries_set_and_loads_back(tmp_path):
    """On disk a checkpoint stays the dict every earlier version wrote: readable by them, and theirs by it."""
    ckpt = dataclasses.replace(_state(5), settings={"model": {}, "train": {}}, averaged_steps=[4, 5])
    save_checkpoint(tmp_path / "c.pt", ckpt)
    on_disk = torch.load(tmp_path / "c.pt", weights_only=True)
    assert list(on_disk) == ["model", "settings", "vocab", "step", "averaged_steps"]
    loaded = load_checkpoint(tmp_path / "c.pt")
    assert (
        loaded.averaged_steps == [4, 5] and loaded.optimizer is None and torch.equal(loaded.model["w"], ckpt.model["w"])
    )
    torch.save({**on_disk, "tokenizer": "x"}, tmp_path / "d.pt")
    with pytest.raises(
        ck.CorruptCheckpoint,
        match=r"d\.pt: not a checkpoint of this project "
        r"\(unknown entries \['tokenizer'\]",
    ):
        load_checkpoint(tmp_path / "d.pt")


def test_a_train_setting_left_out_is_its_definitions_default():
    partial = Checkpoint(model={}, settings={"train": {"precision": "bf16"}}, vocab={})
    assert (partial.train_setting("precision"), partial.train_setting("checkpoint_steps")) == ("bf16", 1400)


def test_a_checkpoint_with_non_finite_weights_is_never_written(tmp_path):
    ck.save_checkpoint(ck.checkpoint_path(tmp_path, 2), _state(2))
    with pytest.raises(ck.NonFiniteWeights, match=r"step 4: weights \['w'\] are not finite"):
        ck.save_checkpoint(ck.checkpoint_path(tmp_path, 4), _state(4, float("inf")))
    assert [p.name for p in (tmp_path / "checkpoints").iterdir()] == ["ckpt_00000002.pt"]


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
