"""The CUDA code paths run on a CPU: training steps, dev perplexity, checkpoints, averaging and beam
search on a ``cuda:0`` that computes on the CPU (``pretend_cuda``), compared with the CPU path, and
every wait of the host for the device and every host tensor they make, counted by where it happens.

A GPU run of the same code dies of what these tests refuse: a CPU tensor meeting a ``cuda`` one, a
dtype mismatch under bf16 autocast, a host read inside a step (each one stalls the GPU's queue).
"""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest
import torch
from pretend_cuda import CUDA, CudaTensor, DeviceMismatch, HostTensorError, PretendCuda
from train_helpers import make_task, settings

from aiayn.decode.average import average_checkpoints
from aiayn.decode.beam import SpecialIds, translate_sentences_n_best
from aiayn.evaluate.perplexity import corpus_nll
from aiayn.model import Transformer
from aiayn.options import DecodeConfig, ModelConfig
from aiayn.options.train import GPU_BATCH_SHAPES
from aiayn.runtime.checkpoint import load_checkpoint, non_finite
from aiayn.runtime.session import inference_session
from aiayn.train.distributed import DistEnv
from aiayn.train.trainer import build_trainer

# Where the training loop may make tensors on the host, and why.
TRAINING_HOST_TENSORS = {
    "aiayn/runtime/batches.py _empty",  # a batch is padded into pinned host memory (worker thread) ...
    "aiayn/runtime/batches.py collate",  # ... and its gold positions pinned, then copied asynchronously
    "aiayn/train/step.py push",  # the pinned buffer a step's statistics are copied into
    "aiayn/train/resume.py rng_state",  # a checkpoint's generator states (host generators)
}
# Where it may wait for the device: the step's statistics a step late, one read per dev evaluation,
# one per checkpoint (its weights checked for NaN before they are written).
TRAINING_SYNCS = {
    "aiayn/train/step.py ready",
    "aiayn/evaluate/perplexity.py corpus_nll",
    "aiayn/runtime/checkpoint.py non_finite",
}


def where(event) -> str:
    """``path function`` of an event's line."""
    return f"{event.where.split(':')[0]} {event.where.split(' ')[-1]}"


def log_rows(out: Path) -> list[dict]:
    with open(out / "log.csv", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def column(rows: list[dict], name: str) -> list[float]:
    return [float(r[name]) for r in rows if r[name]]


@pytest.fixture(scope="module")
def task(tmp_path_factory) -> Path:
    return make_task(tmp_path_factory.mktemp("cuda") / "toy")


def train(task: Path, out: Path, device: torch.device, dropout: float = 0.0, **train_settings) -> PretendCuda | None:
    """One training of ``settings(**train_settings)`` on one thread; on ``cuda``, the runtime that ran it
    (the model built on the host, then the run strict about host tensors). Without dropout by default:
    the CPU draws its masks another way (``aiayn.model.functional.dropout``), so only then do the two
    devices train the same weights."""
    run = settings(**train_settings)
    run["model"]["dropout"] = dropout
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        if device.type == "cpu":
            assert build_trainer(run, task, out, DistEnv(0, 1, device)).run() == 0
            return None
        with PretendCuda() as runtime:
            trainer = build_trainer(run, task, out, DistEnv(0, 1, device))
            runtime.clear()
            runtime.strict = TRAINING_HOST_TENSORS
            assert trainer.run() == 0
        return runtime
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def cuda_run(task, tmp_path_factory):
    out = tmp_path_factory.mktemp("cuda_run")
    return out, train(task, out, CUDA, precision="fp32", batch_shapes=None)


def test_training_on_cuda_computes_what_the_cpu_computes(task, cuda_run, tmp_path):
    """On a GPU the batches are padded to a ladder of shapes (train.batch_shapes null); the CPU run is
    given the same ladder, and so the same batches."""
    out, _ = cuda_run
    shapes = GPU_BATCH_SHAPES
    train(task, tmp_path / "cpu", torch.device("cpu"), precision="fp32", cpu_matmul="mkl", batch_shapes=shapes)
    cpu, gpu = log_rows(tmp_path / "cpu"), log_rows(out)
    assert [r["step"] for r in gpu] == [r["step"] for r in cpu]
    for name in ("loss", "nll", "grad_norm", "dev_ppl"):
        assert column(gpu, name) == pytest.approx(column(cpu, name), rel=1e-5), name
    assert column(gpu, "gpu_peak_mb") and not column(cpu, "gpu_peak_mb")  # the cuda branch of the log ran
    summary = (out / "summary.json").read_text()
    assert '"device": "cuda"' in summary and '"gpu_model": "H100 SXM"' in summary


def test_the_training_loop_waits_for_the_device_only_where_listed(cuda_run):
    out, runtime = cuda_run
    waits = Counter(where(e) for e in runtime.waits())
    assert set(waits) == TRAINING_SYNCS, waits
    assert waits["aiayn/train/step.py ready"] == settings()["train"]["train_steps"]  # Event.synchronize, a step late
    # one .item() per dev evaluation (steps 3 and 6), one .tolist() per checkpoint (steps 2, 4, 6)
    assert waits["aiayn/evaluate/perplexity.py corpus_nll"] == len(column(log_rows(out), "dev_ppl")) == 2
    assert waits["aiayn/runtime/checkpoint.py non_finite"] == 3
    # every copy onto the device comes from pinned memory without waiting; statistics leave the same way
    assert runtime.of("to_device") and not [e for e in runtime.of("to_device") if e.blocking]
    assert [e for e in runtime.of("to_host") if not e.blocking]
    assert {where(e) for e in runtime.of("to_host") if not e.blocking} == {"aiayn/train/step.py push"}


def test_bf16_training_on_cuda_runs_in_bf16_and_stays_near_fp32(task, cuda_run, tmp_path):
    """precision auto on an H100 is bf16 autocast (with dropout, on the GPU's path); the first steps'
    losses stay within 2% of fp32's."""
    runtime = train(task, tmp_path / "bf16", CUDA, dropout=0.1, precision="auto", train_steps=2, dev_every_steps=0)
    assert runtime is not None
    summary = (tmp_path / "bf16" / "summary.json").read_text()
    assert '"precision": "bf16"' in summary
    fp32 = column(log_rows(cuda_run[0]), "loss")[:1]
    assert column(log_rows(tmp_path / "bf16"), "loss") == pytest.approx(fp32, rel=0.02)


def test_checkpoints_of_a_cuda_run_average_and_decode_on_cuda(cuda_run, tmp_path):
    out, _ = cuda_run
    averaged = average_checkpoints(out, 2)
    newest = [load_checkpoint(p) for p in sorted((out / "checkpoints").glob("ckpt_*.pt"))[-2:]]
    for key, value in averaged.model.items():
        mean = (newest[0].model[key].double() + newest[1].model[key].double()) / 2
        torch.testing.assert_close(value.double(), mean, rtol=0, atol=1e-6)
    sources = [[5, 6, 7, 8], [9, 10, 11], [12, 13, 14, 15, 16]]
    search = dict(ids=SpecialIds(0, 2, 3), n_best=2)
    opts = DecodeConfig(max_sentences=2, beam_size=2)
    with inference_session(out / "checkpoint_last.pt", device="cpu", precision="fp32", cpu_matmul="mkl") as s:
        cpu = translate_sentences_n_best(s.model, sources, opts, device=s.device, **search)
    with PretendCuda():
        with inference_session(out / "checkpoint_last.pt", device="cuda", precision="fp32", cpu_matmul="mkl") as s:
            assert all(isinstance(p, CudaTensor) for p in s.model.parameters()) and s.device == CUDA
            gpu = translate_sentences_n_best(s.model, sources, opts, device=s.device, **search)
    assert [[h.tokens for h in n] for n in gpu] == [[h.tokens for h in n] for n in cpu]


def test_dev_perplexity_on_cuda_reads_one_value(task):
    torch.manual_seed(0)
    model = Transformer(ModelConfig.from_dict(settings()["model"]), 40).eval()
    from aiayn.data.shards import ShardedCorpus

    dev = ShardedCorpus(task / "dev")
    cpu = corpus_nll(model, dev, 64, torch.device("cpu"))
    with PretendCuda(strict={"aiayn/runtime/batches.py _empty", "aiayn/runtime/batches.py collate"}) as runtime:
        model.to(CUDA)
        runtime.clear()
        gpu = corpus_nll(model, dev, 64, CUDA)
    assert gpu["tokens"] == cpu["tokens"] and gpu["nll"] == pytest.approx(cpu["nll"], rel=1e-6)
    assert [where(e) for e in runtime.waits()] == ["aiayn/evaluate/perplexity.py corpus_nll"]
    assert runtime.of("to_device") and not [e for e in runtime.of("to_device") if e.blocking]


def test_beam_search_on_cuda_equals_the_cpu_with_one_read_per_step():
    torch.manual_seed(0)
    cfg = ModelConfig.from_dict(
        {"n_layers": 2, "d_model": 32, "d_ff": 64, "n_heads": 4, "d_k": 8, "d_v": 8, "dropout": 0.0}
    )
    model = Transformer(cfg, 50).eval()
    generator = torch.Generator().manual_seed(1)
    sources = [
        torch.randint(4, 50, (int(n),), generator=generator).tolist()
        for n in torch.randint(3, 12, (10,), generator=generator)
    ]
    search = dict(ids=SpecialIds(0, 2, 3), n_best=4)
    opts = DecodeConfig(max_sentences=4, beam_size=4, length_penalty=0.6, max_len_a=1.0, max_len_b=5, early_stop=True)
    cpu = translate_sentences_n_best(model, sources, opts, device="cpu", **search)
    # the host keeps the finished sets and the beams' bookkeeping: those functions make host tensors
    host_side = {
        f"aiayn/decode/beam.py {name}"
        for name in (
            "beam_search_n_best",
            "_to_host",
            "_collect_finished",
            "_next_live",
            "_done",
            "_finish_at_max_len",
            "_advance",
            "_to_device",
            "pad_sources",
            "gnmt_length_penalty",
            "__init__",
            "add",
            "select",
        )
    }
    with PretendCuda(strict=host_side) as runtime:
        model.to(CUDA)
        runtime.clear()
        gpu = translate_sentences_n_best(model, sources, opts, device=CUDA, **search)
    assert [[h.tokens for h in n_best] for n_best in gpu] == [[h.tokens for h in n_best] for n_best in cpu]
    assert [h.score for n_best in gpu for h in n_best] == pytest.approx(
        [h.score for n_best in cpu for h in n_best], rel=1e-5
    )
    # per step: the 2K candidates come to the host in one copy (the host waits: it decides what is
    # done), the surviving rows go back in one asynchronous copy; no other read of the device
    reads, writes = runtime.of("to_host"), runtime.of("to_device")
    assert {where(e) for e in reads} == {"aiayn/decode/beam.py _to_host"} and all(e.blocking for e in reads)
    steps = len(reads)
    batches = -(-len(sources) // opts.max_sentences)
    # ... and each batch's sources go the same way (pad_sources through _to_device)
    assert Counter((where(e), e.blocking) for e in writes) == {
        ("aiayn/decode/beam.py _to_device", False): steps + batches
    }
    assert [e for e in runtime.waits() if where(e) != "aiayn/decode/beam.py _to_host"] == []


# ---- the pretend device itself: each check can fail ------------------------------------------------


def test_a_cpu_tensor_meeting_a_cuda_tensor_is_refused_naming_the_line():
    with PretendCuda(), pytest.raises(DeviceMismatch, match=r"aten\.add\.Tensor.*shape \(3,\).*test_cuda_path\.py:\d+"):
        torch.zeros(3, device="cuda") + torch.ones(3)
    with PretendCuda():  # a 0-dimensional CPU tensor is a scalar, as CUDA takes it
        assert (torch.zeros(3, device="cuda") + torch.tensor(1.0)).device == CUDA


def test_host_reads_are_recorded_where_they_happen():
    with PretendCuda() as runtime:
        x = torch.arange(4, device="cuda")
        x.sum().item(), x.tolist(), x.cpu(), x.nonzero(), x[x > 1]
        if x.sum():
            pass
        x.to("cpu", non_blocking=True)
    kinds = [(e.kind, e.blocking) for e in runtime.events if e.kind != "host"]
    assert kinds == [
        ("sync", True),
        ("to_host", True),
        ("to_host", True),
        ("sync", True),
        ("sync", True),
        ("sync", True),
        ("to_host", False),
    ]
    assert all(e.where.startswith("test_cuda_path.py:") for e in runtime.events)


def test_strict_refuses_a_host_tensor_made_elsewhere():
    def stray():
        return non_finite({"w": torch.ones(2)})  # host tensors in aiayn/runtime/checkpoint.py non_finite

    with PretendCuda(strict=set()), pytest.raises(HostTensorError, match=r"aiayn/runtime/checkpoint\.py:\d+"):
        stray()
    with PretendCuda(strict={"aiayn/runtime/checkpoint.py non_finite"}):
        assert stray() == []


def test_fused_adam_and_bf16_autocast_on_cuda():
    with PretendCuda() as runtime:
        linear = torch.nn.Linear(3, 2).to("cuda")
        optimizer = torch.optim.Adam(linear.parameters(), fused=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = linear(torch.randn(4, 3).to("cuda"))
        assert y.dtype == torch.bfloat16 and y.device == CUDA
        y.float().sum().backward()
        optimizer.found_inf = torch.zeros((), device="cuda")
        optimizer.step()
        assert isinstance(linear.weight, CudaTensor) and isinstance(linear.weight.grad, CudaTensor)
    assert runtime.of("sync") == [] and not runtime.of("to_host")
