import logging

import pytest
import torch

from aiayn.train import checkpoint
from aiayn.train import checkpoint as ck


def touch(out_dir, *steps):
    for step in steps:
        path = checkpoint.checkpoint_path(out_dir, step)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")


def names(out_dir):
    return [step for step, _ in checkpoint.list_checkpoints(out_dir)]


@pytest.mark.parametrize("step, every, final, spaced", [
    (1400, 1400, 100000, True), (2800, 1400, 100000, True), (1401, 1400, 100000, False),
    (100000, 1400, 100000, True),      # the final step is averaged although 100000 % 1400 != 0
    (777, 0, 100000, True),            # checkpoint_steps 0: spacing by the clock, every one counts
])
def test_is_spaced(step, every, final, spaced):
    assert checkpoint.is_spaced(step, every, final) is spaced


def test_rotation_keeps_the_newest_spaced_ones_and_the_newest_of_all(tmp_path):
    """Steps 100, 200, ... spaced; 250 (the clock's) and 530 (a stop's) are for resuming only."""
    touch(tmp_path, 100, 200, 250, 300, 400, 500)
    assert checkpoint.rotate(tmp_path, keep=3, every=100, final_step=1000) == [
        checkpoint.checkpoint_path(tmp_path, s) for s in (100, 200, 250)]
    assert names(tmp_path) == [300, 400, 500]
    touch(tmp_path, 530)
    checkpoint.rotate(tmp_path, keep=3, every=100, final_step=1000)
    assert names(tmp_path) == [300, 400, 500, 530]   # 530 stays: a resumed run starts there
    touch(tmp_path, 600)
    checkpoint.rotate(tmp_path, keep=3, every=100, final_step=1000)
    assert names(tmp_path) == [400, 500, 600]        # a clock checkpoint never pushes out a spaced one


def test_rotation_without_step_spacing_keeps_the_newest(tmp_path):
    touch(tmp_path, 7, 19, 23)
    checkpoint.rotate(tmp_path, keep=2)
    assert names(tmp_path) == [19, 23]


def _state(step, value=1.0):
    return {"model": {"w": torch.full((2,), value), "n": torch.tensor([step])}, "settings": {}, "vocab": {},
            "step": step}


def test_resume_sets_corrupt_checkpoints_aside_and_takes_the_newest_good_one(tmp_path, caplog):
    for step in (2, 4, 6):
        ck.save_checkpoint(ck.checkpoint_path(tmp_path, step), _state(step))
    newest = ck.checkpoint_path(tmp_path, 6)
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])      # a torn write
    ck.checkpoint_path(tmp_path, 4).write_bytes(b"")                             # an empty file
    with caplog.at_level(logging.WARNING):
        step, path, state = ck.newest_good_checkpoint(tmp_path)
    assert (step, path.name, state["step"]) == (2, "ckpt_00000002.pt", 2)
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == [
        "ckpt_00000002.pt", "ckpt_00000004.pt.corrupt", "ckpt_00000006.pt.corrupt"]
    assert "ckpt_00000006.pt: not a readable checkpoint" in caplog.text and "set aside" in caplog.text


def test_a_checkpoint_with_non_finite_weights_is_never_written(tmp_path):
    ck.save_checkpoint(ck.checkpoint_path(tmp_path, 2), _state(2))
    with pytest.raises(ck.NonFiniteWeights, match=r"step 4: weights \['w'\] are not finite"):
        ck.save_checkpoint(ck.checkpoint_path(tmp_path, 4), _state(4, float("inf")))
    assert [p.name for p in (tmp_path / "checkpoints").iterdir()] == ["ckpt_00000002.pt"]
