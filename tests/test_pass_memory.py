"""How many tokens a pass holds where train.tokens_per_pass is null (aiayn.train.memory): on a GPU,
measured by two probe passes and extrapolated; on a CPU, the fixed default."""

import pytest
import torch
from pretend_cuda import CUDA, PretendCuda
from train_helpers import make_task, settings

from aiayn.options.train import CPU_TOKENS_PER_PASS
from aiayn.train.distributed import DistEnv
from aiayn.train.memory import HEADROOM, tokens_that_fit
from aiayn.train.trainer import build_trainer


def test_the_pass_that_fits_is_extrapolated_from_two_probes():
    """1 GB fixed and 100 kB a token: 0.85 x 80 GB less 2 GB of optimizer state and the fixed GB
    leaves room for 650,000 tokens (rounded down to a thousand)."""

    def peak(tokens: int) -> int:
        return 10**9 + 10**5 * tokens

    assert HEADROOM == 0.85
    assert tokens_that_fit(peak, 80 * 10**9, 2 * 10**9) == 650_000
    assert tokens_that_fit(peak, 2 * 10**9, 10**9) == 2048  # never below the smaller probe
    assert tokens_that_fit(lambda tokens: 10**9, 80 * 10**9, 0) == 10**9  # no growth measured: no limit


def test_a_gpu_training_with_tokens_per_pass_null_probes_on_the_device_and_plans_one_pass(tmp_path):
    """On a (pretend) GPU the probe passes run the model on the device; with memory to spare the step
    is one pass of all its tokens. On a CPU null is the fixed default."""
    task = make_task(tmp_path / "toy")
    run = settings(tokens_per_step=256, tokens_per_pass=None, train_steps=2, dev_every_steps=0, precision="fp32")
    with PretendCuda():
        trainer = build_trainer(run, task, tmp_path / "gpu", DistEnv(0, 1, CUDA))
        assert (trainer.setup.plan.passes, trainer.setup.plan.tokens_per_pass) == (1, 256)
        assert all(p.grad is None for p in trainer.setup.raw_model.parameters())  # the probes left no gradient
        assert trainer.run() == 0
    cpu = build_trainer(run, task, tmp_path / "cpu", DistEnv(0, 1, torch.device("cpu")))
    assert cpu.setup.plan.tokens_per_pass == min(256, CPU_TOKENS_PER_PASS) and cpu.setup.plan.passes == 1


@pytest.mark.parametrize("fits, passes", [(10**9, 1), (2048, 2)])
def test_a_pass_that_does_not_fit_makes_the_step_of_more_passes(tmp_path, monkeypatch, fits, passes):
    import aiayn.train.setup as module

    monkeypatch.setattr(module, "tokens_that_fit", lambda *args: fits)
    task = make_task(tmp_path / "toy", n_train=1000)
    run = settings(tokens_per_step=4096, tokens_per_pass=None, train_steps=1, dev_every_steps=0, precision="fp32")
    with PretendCuda():
        trainer = build_trainer(run, task, tmp_path / "gpu", DistEnv(0, 1, CUDA))
    assert trainer.setup.plan.passes == passes and trainer.setup.plan.tokens_per_step == 4096
