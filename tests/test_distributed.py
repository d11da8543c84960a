import os
import tempfile
import time

import pytest
import torch
from torch import nn

from aiayn.runtime import devices
from aiayn.runtime.devices import GpuUnavailableError, check_cuda, default_lock_dir, resolve_device
from aiayn.train import distributed
from aiayn.train.distributed import DistEnv, RankLost, rank_lost, wrap_model


def fake_cuda(monkeypatch, available: bool, count: int = 0, built: str | None = "12.8") -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: available)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(torch.version, "cuda", built)


def test_cuda_that_cannot_be_used_is_a_clear_error(monkeypatch):
    fake_cuda(monkeypatch, False, built=None)
    with pytest.raises(GpuUnavailableError, match=r"train\.gpus=1 but this torch .* without CUDA.*gpus: 0"):
        check_cuda(1)
    fake_cuda(monkeypatch, False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(GpuUnavailableError, match=r"CUDA is not usable.*CUDA_VISIBLE_DEVICES=''"):
        check_cuda(1)
    fake_cuda(monkeypatch, True, count=2)
    with pytest.raises(GpuUnavailableError, match=r"train\.gpus=4 but 2 GPU\(s\) are visible"):
        check_cuda(4)
    with pytest.raises(GpuUnavailableError, match=r"GPU index 2 does not exist: 2 GPU\(s\) are visible"):
        check_cuda(1, index=2)
    check_cuda(2)
    check_cuda(0)  # the CPU needs nothing


def test_training_with_gpus_never_falls_back_to_the_cpu(monkeypatch):
    fake_cuda(monkeypatch, False)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    with pytest.raises(GpuUnavailableError, match="train.gpus=1"):
        distributed.init_from_environment(1)
    assert distributed.init_from_environment(0) == DistEnv(0, 1, torch.device("cpu"))


def test_decoding_device_auto_explicit_and_missing(monkeypatch, tmp_path):
    fake_cuda(monkeypatch, False)
    monkeypatch.setattr(devices, "physical_gpu_count", lambda: 0)
    assert resolve_device("auto", tmp_path)[0] == torch.device("cpu")
    assert resolve_device("cpu", tmp_path)[0] == torch.device("cpu")
    with pytest.raises(GpuUnavailableError, match=r"--device cuda:1 but"):
        resolve_device("cuda:1", tmp_path)
    fake_cuda(monkeypatch, True, count=1)
    with pytest.raises(GpuUnavailableError, match=r"--device cuda:1 but GPU index 1 does not exist"):
        resolve_device("cuda:1", tmp_path)
    assert resolve_device("cuda", tmp_path) == (torch.device("cuda", 0), None)
    for other in ("mps", "tpu"):  # a device torch knows but decoding does not use, and one it does not know
        with pytest.raises(ValueError, match=f"--device {other}: use auto, cpu, cuda or cuda:N"):
            resolve_device(other, tmp_path)


def test_auto_device_claims_a_free_gpu_like_training(monkeypatch, tmp_path):
    fake_cuda(monkeypatch, True, count=2)
    monkeypatch.setattr(devices, "physical_gpu_count", lambda: 2)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    held = devices.GpuClaim(tmp_path)
    assert held.try_claim(1, 2) == [0]
    device, claim = resolve_device("auto", tmp_path)
    try:
        assert device == torch.device("cuda", 0) and os.environ["CUDA_VISIBLE_DEVICES"] == "1"
        assert sorted(claim.handles) == [1]
    finally:
        claim.release()
        held.release()


def test_lock_files_live_in_a_directory_of_their_own_per_user(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(os, "getuid", lambda: 1000)
    first = default_lock_dir()
    monkeypatch.setattr(os, "getuid", lambda: 1001)
    second = default_lock_dir()
    assert first != second and first.parent == second.parent == tmp_path and "1000" in first.name
    claim = devices.GpuClaim(first)
    assert claim.try_claim(1, 1) == [0]
    assert (first / "gpu0.lock").exists() and (first.stat().st_mode & 0o777) == 0o700
    claim.release()


def test_ddp_wraps_the_model_before_compile_without_broadcasting_buffers(monkeypatch):
    calls = []

    class FakeDDP(nn.Module):
        def __init__(self, module, **kwargs):
            super().__init__()
            self.module, self.kwargs = module, kwargs
            calls.append(("ddp", type(module).__name__, kwargs))

    def fake_compile(module, **kwargs):
        calls.append(("compile", type(module).__name__, kwargs))
        return module

    monkeypatch.setattr(nn.parallel, "DistributedDataParallel", FakeDDP)
    monkeypatch.setattr(torch, "compile", fake_compile)
    model = nn.Linear(2, 2)
    wrapped, ddp = wrap_model(model, DistEnv(0, 2, torch.device("cpu")), compile=True)
    assert [c[:2] for c in calls] == [("ddp", "Linear"), ("compile", "FakeDDP")]
    assert calls[0][2]["broadcast_buffers"] is False and calls[1][2]["dynamic"] is True
    assert isinstance(ddp, FakeDDP) and ddp.module is model
    calls.clear()
    assert wrap_model(model, DistEnv(0, 1, torch.device("cpu")), compile=False) == (model, None) and not calls


def test_the_process_group_waits_long_enough_for_rank_zeros_writes(monkeypatch):
    """Ranks wait in a collective while rank 0 evaluates and writes checkpoints: the group's timeout is
    stated (an hour), not torch's default (10 minutes for NCCL)."""
    seen = {}
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setattr(
        distributed.dist, "init_process_group", lambda backend, **kw: seen.update(backend=backend, **kw)
    )
    monkeypatch.setattr(distributed.dist, "get_rank", lambda: 1)
    monkeypatch.setattr(distributed.dist, "get_world_size", lambda: 2)
    assert distributed.init_from_environment(0) == DistEnv(1, 2, torch.device("cpu"))
    assert seen == {"backend": "gloo", "timeout": distributed.PROCESS_GROUP_TIMEOUT}
    assert distributed.PROCESS_GROUP_TIMEOUT.total_seconds() >= 3600


def _all_reduce_after_peer_exits(rank: int, store_file: str, errors) -> None:
    """Rank 1 leaves right after joining; rank 0's next all-reduce reports what gloo says of that."""
    torch.distributed.init_process_group("gloo", init_method=f"file://{store_file}", rank=rank, world_size=2)
    torch.distributed.all_reduce(torch.ones(1))
    if rank == 1:
        os._exit(0)
    time.sleep(1)
    try:
        torch.distributed.all_reduce(torch.ones(1000))
    except RuntimeError as error:
        errors.put(str(error))
    else:
        errors.put(None)


@pytest.mark.slow  # two spawned processes
def test_a_rank_whose_peer_is_gone_says_so_and_names_the_checkpoint_to_resume(tmp_path):
    """gloo's own message for a peer that exited (a real two-process group) is recognised; the error names
    the newest checkpoint; other errors and one-rank runs pass through."""
    context = torch.multiprocessing.get_context("spawn")
    errors = context.Queue()
    processes = [
        context.Process(target=_all_reduce_after_peer_exits, args=(rank, str(tmp_path / "store"), errors))
        for rank in (0, 1)
    ]
    for process in processes:
        process.start()
    message = errors.get(timeout=120)
    for process in processes:
        process.join(timeout=60)
    assert message is not None, "the all-reduce with a departed peer did not fail"
    checkpoints = [(100, tmp_path / "ckpt_00000100.pt"), (200, tmp_path / "ckpt_00000200.pt")]
    lost = rank_lost(RuntimeError(message), 2, checkpoints)
    assert isinstance(lost, RankLost) and isinstance(lost, OSError), message
    assert "lost another rank of this 2-rank training" in str(lost)
    assert str(lost).endswith(f"resume from {tmp_path / 'ckpt_00000200.pt'} (step 200)")
    assert "start over" in str(rank_lost(RuntimeError(message), 2, []))
    assert rank_lost(RuntimeError(message), 1, checkpoints) is None
    assert rank_lost(RuntimeError("CUDA out of memory"), 2, checkpoints) is None
    assert rank_lost(ValueError(message), 2, checkpoints) is None
