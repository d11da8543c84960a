import logging

import pytest
import torch

from aiayn.model.functional import onednn_available
from aiayn.runtime import precision as precisionlib
from aiayn.runtime.precision import autocast_for, resolve_precision


def on_gpu(monkeypatch, capability):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    return torch.device("cuda", 0)


@pytest.mark.parametrize("capability, want", [((7, 0), "fp32"), ((7, 5), "fp32"), ((8, 0), "bf16"), ((9, 0), "bf16")])
def test_auto_picks_bf16_only_where_the_gpu_has_it(monkeypatch, caplog, capability, want):
    caplog.set_level(logging.INFO)
    assert resolve_precision("auto", on_gpu(monkeypatch, capability)) == want
    if want == "fp32":
        assert "compute capability 7." in caplog.text and "fp32" in caplog.text


def test_cpu_and_explicit_choices(monkeypatch, caplog):
    assert resolve_precision("auto", torch.device("cpu")) == "fp32"
    assert resolve_precision("fp32", on_gpu(monkeypatch, (9, 0))) == "fp32"
    assert resolve_precision("bf16", torch.device("cpu")) == "bf16"
    assert resolve_precision("bf16", on_gpu(monkeypatch, (7, 0))) == "bf16"
    assert "emulated" in caplog.text
    with pytest.raises(ValueError, match="precision 'fp16'"):
        resolve_precision("fp16", torch.device("cpu"))


def test_tf32_matmuls_on_cuda_only_under_auto_and_bf16(monkeypatch):
    calls = []
    monkeypatch.setattr(torch, "set_float32_matmul_precision", calls.append)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    for precision in ("auto", "bf16", "fp32"):
        precisionlib.enable_tf32(torch.device("cpu"), precision)
    assert calls == [] and torch.backends.cudnn.allow_tf32 is False
    precisionlib.enable_tf32(torch.device("cuda", 0), "auto")
    assert calls == ["high"] and torch.backends.cudnn.allow_tf32 is True
    precisionlib.enable_tf32(torch.device("cuda", 0), "fp32")  # after a TF32 stage in the same process
    assert calls == ["high", "highest"] and torch.backends.cudnn.allow_tf32 is False
    precisionlib.enable_tf32(torch.device("cuda", 0), "bf16")
    assert calls[-1] == "high" and torch.backends.cudnn.allow_tf32 is True


def test_every_stage_on_cuda_keeps_attention_off_cudnn(monkeypatch):
    """Training and inference both set up through set_up_arithmetic; a CPU stage leaves the switch alone."""
    calls = []
    monkeypatch.setattr(torch.backends.cuda, "enable_cudnn_sdp", calls.append)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    model = torch.nn.Linear(2, 2)
    model.use_onednn = lambda on: None
    assert precisionlib.set_up_arithmetic(model, "auto", "default", torch.device("cpu")) == "fp32"
    assert calls == []
    monkeypatch.setattr(torch, "set_float32_matmul_precision", lambda value: None)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    assert precisionlib.set_up_arithmetic(model, "auto", "default", torch.device("cuda", 0)) == "bf16"
    assert calls == [False]


def test_autocast_only_for_bf16():
    assert isinstance(autocast_for("bf16", torch.device("cpu")), torch.autocast)
    assert not isinstance(autocast_for("fp32", torch.device("cpu")), torch.autocast)


def test_onednn_only_for_uncompiled_cpu_training_where_the_build_has_it(monkeypatch, caplog):
    cpu = torch.device("cpu")
    assert precisionlib.use_onednn("onednn", False, cpu) == onednn_available()
    assert not precisionlib.use_onednn("mkl", False, cpu)
    assert not precisionlib.use_onednn("onednn", True, cpu)  # inductor chooses its own kernels
    assert not precisionlib.use_onednn("onednn", False, torch.device("cuda", 0))
    monkeypatch.setattr(precisionlib, "onednn_available", lambda: False)
    with caplog.at_level("INFO"):
        assert not precisionlib.use_onednn("onednn", False, cpu)
    assert "no oneDNN linear operator" in caplog.text
