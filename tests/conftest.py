"""Fixtures shared across test modules: the checkout's paths and the tiny reversal task with one
finished training run over it. Constants for module-level use live in ``paths.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
from paths import ROOT, SHARED


@pytest.fixture(scope="session")
def root() -> Path:
    """The checkout: Snakefile, config.yaml, configs/, src/."""
    return ROOT


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The shared data beside the checkout (WMT and PTB samples); tests that need it skip without it."""
    return SHARED


@pytest.fixture(scope="session")
def toy_task(tmp_path_factory) -> Path:
    """``train/`` and ``dev/`` shards of ``train_helpers.make_task`` with its defaults. Read-only: a test
    that needs other data makes its own."""
    from train_helpers import make_task

    return make_task(tmp_path_factory.mktemp("bin") / "toy")


@pytest.fixture(scope="session")
def toy_run(tmp_path_factory, toy_task) -> Path:
    """The output folder of one uninterrupted run of ``train_helpers.settings()`` on ``toy_task``, on one
    CPU thread (what the resume tests compare against bit for bit). Read-only."""
    import torch
    from train_helpers import settings

    from aiayn.train.distributed import DistEnv
    from aiayn.train.trainer import build_trainer

    out = tmp_path_factory.mktemp("toy_run")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert build_trainer(settings(), toy_task, out, DistEnv(0, 1, torch.device("cpu"))).run() == 0
    finally:
        torch.set_num_threads(threads)
    return out
