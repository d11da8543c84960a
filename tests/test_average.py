import logging

import pytest
import torch

from aiayn.decode import average
from aiayn.options import ModelConfig
from aiayn.runtime.checkpoint import Checkpoint, save_checkpoint

VOCAB = {"size": 10, "pad_id": 0, "unk_id": 1, "bos_id": 2, "eos_id": 3}
WALL_CLOCK = {"checkpoint_steps": 0, "train_steps": 20000}  # every checkpoint may be averaged


def save(train_dir, step, weight, dtype=torch.float32, extra=None, step_in_dict=None, train=WALL_CLOCK):
    """A checkpoint as the trainer names it: ``train_dir/checkpoints/ckpt_<step:08d>.pt``."""
    state = {"w": torch.tensor(weight, dtype=dtype), "count": torch.tensor([7, 8])}
    state.update(extra or {})
    checkpoint = Checkpoint(
        model=state,
        settings={"tag": step, "train": train},
        vocab=VOCAB,
        step=step if step_in_dict is None else step_in_dict,
        optimizer={"state": {}},
        rng={"torch": torch.get_rng_state()},
    )
    (train_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    # torch.save of the on-disk dict, not save_checkpoint: the tests write non-finite weights too
    torch.save(checkpoint.to_dict(), train_dir / "checkpoints" / f"ckpt_{step:08d}.pt")


def test_averages_last_n_by_step_golden(tmp_path):
    save(tmp_path, 100, [[100.0, 0.0]])  # oldest: not among the last 3
    save(tmp_path, 1000, [[1.0, 2.0]], dtype=torch.bfloat16)
    save(tmp_path, 300, [[3.0, -4.0]])
    save(tmp_path, 20000, [[0.5, 0.25]], dtype=torch.float16)
    (tmp_path / "checkpoints" / ".ckpt_00030000.pt.abc.tmp").write_bytes(b"partial")  # a killed save: ignored
    settings = tmp_path / "average.json"
    settings.write_text('{"last": 3}')
    out = tmp_path / "avg.pt"
    assert average.main(["--train-dir", str(tmp_path), "--settings", str(settings), "--output", str(out)]) == 0
    result = torch.load(out, weights_only=True)
    assert set(result) == {"model", "settings", "vocab", "step", "averaged_steps"}
    assert result["averaged_steps"] == [300, 1000, 20000]
    assert result["step"] == 20000 and result["vocab"] == VOCAB
    assert result["settings"] == {"tag": 20000, "train": WALL_CLOCK}
    assert result["model"]["w"].dtype == torch.float32
    expected = torch.tensor([[(3.0 + 1.0 + 0.5) / 3, (-4.0 + 2.0 + 0.25) / 3]], dtype=torch.float32)
    assert torch.equal(result["model"]["w"], expected)
    assert torch.equal(result["model"]["count"], torch.tensor([7, 8]))
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_averages_the_step_spaced_checkpoints_only(tmp_path, caplog):
    """checkpoint_steps 100, final step 1050: the clock's (250) and a stop's (1037) are not averaged."""
    train = {"checkpoint_steps": 100, "train_steps": 1050}
    for step in (100, 200, 250, 300, 1000, 1037, 1050):
        save(tmp_path, step, [float(step)], train=train)
    with caplog.at_level(logging.INFO):
        result = average.average_checkpoints(tmp_path, last=3)
    assert result.averaged_steps == [300, 1000, 1050]
    assert result.model["w"].tolist() == pytest.approx([(300 + 1000 + 1050) / 3])
    assert "not averaged: 2 checkpoint(s) off the 100-step spacing" in caplog.text and "[250, 1037]" in caplog.text


def test_fewer_than_asked_warns_and_records_steps(tmp_path, caplog):
    save(tmp_path, 5, [2.0])
    save(tmp_path, 10, [4.0])
    with caplog.at_level(logging.WARNING):
        result = average.average_checkpoints(tmp_path, last=5)
    assert "only 2 checkpoints" in caplog.text
    assert result.averaged_steps == [5, 10] and result.model["w"].tolist() == [3.0]


def test_shape_mismatch_names_both_files_and_tensor(tmp_path):
    save(tmp_path, 1, [1.0, 2.0])
    save(tmp_path, 2, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"ckpt_00000002\.pt and .*ckpt_00000001\.pt disagree on the shape of 'w'"):
        average.average_checkpoints(tmp_path, last=2)


def test_key_mismatch_refused(tmp_path):
    save(tmp_path, 1, [1.0])
    save(tmp_path, 2, [1.0], extra={"b": torch.zeros(1)})
    with pytest.raises(ValueError, match=r"different parameters: .*extra in ckpt_00000002\.pt: \['b'\]"):
        average.average_checkpoints(tmp_path, last=2)


def test_step_mismatch_and_empty_directory_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="no step checkpoint in"):
        average.average_checkpoints(tmp_path, last=1)
    save(tmp_path, 7, [1.0], step_in_dict=8)
    with pytest.raises(ValueError, match="holds step 8, its name says 7"):
        average.average_checkpoints(tmp_path, last=1)


def test_averaged_real_model_loads_with_load_model(tmp_path):
    from aiayn import model as model_module
    from aiayn.runtime.session import load_model

    settings = {
        "model": {"n_layers": 1, "d_model": 8, "d_ff": 16, "n_heads": 2, "d_k": 4, "d_v": 4},
        "train": {"checkpoint_steps": 10, "train_steps": 20},
    }
    states = []
    for step, seed in ((10, 0), (20, 1)):
        torch.manual_seed(seed)
        model = model_module.Transformer(ModelConfig.from_dict(settings["model"]), VOCAB["size"])
        states.append(model.state_dict())
        (tmp_path / "checkpoints").mkdir(exist_ok=True)
        save_checkpoint(
            tmp_path / "checkpoints" / f"ckpt_{step:08d}.pt",
            Checkpoint(model=model.state_dict(), settings=settings, vocab=VOCAB, step=step),
        )
    out = tmp_path / "avg.pt"
    assert average.main(["--train-dir", str(tmp_path), "--output", str(out)]) == 0
    loaded, checkpoint = load_model(out, "cpu")
    assert checkpoint.averaged_steps == [10, 20]
    for key, value in loaded.state_dict().items():
        torch.testing.assert_close(value, (states[0][key] + states[1][key]) / 2)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "nan"])
def test_a_corrupt_input_is_refused_naming_it(tmp_path, damage):
    for step in (1, 2, 3):
        save(tmp_path, step, [float(step)])
    bad = tmp_path / "checkpoints" / "ckpt_00000002.pt"
    if damage == "truncated":
        bad.write_bytes(bad.read_bytes()[:300])
    elif damage == "garbage":
        bad.write_bytes(b"\0" * 1000)
    else:
        save(tmp_path, 2, [float("nan")])
    with pytest.raises(
        ValueError,
        match=r"ckpt_00000002\.pt: (not a readable checkpoint|weights \['w'\] are "
        r"not finite)",
    ):
        average.average_checkpoints(tmp_path, last=3)
