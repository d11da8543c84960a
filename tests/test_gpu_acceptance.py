"""The GPU acceptance script, run as CI can: on a CPU with tiny models (the same code paths end to end)."""

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from torch.autograd import DeviceType

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_acceptance.py"
sys.path.insert(0, str(SCRIPT.parent))
import gpu_acceptance  # noqa: E402  (a script beside its sibling benchmarks, not a package)


def row(name, device, activity, start, end):
    """A profiler event as ``gpu_idle_share`` reads it (torch.autograd.profiler_util.FunctionEvent)."""
    return SimpleNamespace(name=name, device_type=device, activity_type=activity,
                           time_range=SimpleNamespace(start=start, end=end))


STEP = row("acceptance_step", DeviceType.CPU, "user_annotation", 100.0, 200.0)
GPU_STEP = row("acceptance_step", DeviceType.CUDA, "gpu_user_annotation", 100.0, 200.0)   # spans idle gaps too
MM = row("aten::mm", DeviceType.CPU, "cpu_op", 105.0, 110.0)                                # launches the kernel


@pytest.mark.parametrize("events, idle", [
    # a kernel, its CPU op row (which also carries the kernel's time) and the GPU-side annotation: 25% busy
    ([STEP, GPU_STEP, MM, row("gemm", DeviceType.CUDA, "kernel", 120.0, 145.0)], 0.75),
    # two streams overlapping (120-160 and 150-180 is 60 busy), a copy, a warm-up kernel before the step
    ([STEP, MM, row("k1", DeviceType.CUDA, "kernel", 120.0, 160.0), row("k2", DeviceType.CUDA, "kernel", 150.0, 180.0),
      row("Memcpy HtoD", DeviceType.CUDA, "gpu_memcpy", 190.0, 195.0),
      row("k0", DeviceType.CUDA, "kernel", 10.0, 90.0)],
     0.35),
    # kernels the whole step: counting them twice (CPU op rows and device rows) gave busy = 2 x step, an idle
    # share of -1 that max(0, ...) showed as 0; from device rows only it is 0 because it is 0
    ([STEP, GPU_STEP, row("aten::mm", DeviceType.CPU, "cpu_op", 100.0, 200.0),
      row("gemm", DeviceType.CUDA, "kernel", 100.0, 150.0), row("gemm", DeviceType.CUDA, "kernel", 150.0, 210.0)], 0.0),
    ([STEP, MM], 1.0),                                                                          # no device rows at all
])
def test_gpu_idle_share_counts_device_work_rows_once(events, idle):
    assert gpu_acceptance.gpu_idle_share(events) == idle


def test_busy_time_is_the_union_of_intervals_inside_the_window():
    assert gpu_acceptance.busy_microseconds([(0.0, 10.0), (5.0, 8.0), (9.0, 12.0), (20.0, 30.0)], 2.0, 25.0) == 15.0


@pytest.mark.slow
def test_acceptance_runs_end_to_end_on_a_cpu(tmp_path):
    out = tmp_path / "acceptance.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--tiny", "--threads", "1",
                           "--output", str(out)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    [tiny] = report["throughput"]
    assert tiny["target_tokens_per_s"] > 0 and tiny["precision"] == "fp32" and tiny["tokens_per_step"] == 1024
    assert tiny["tf32_matmuls"] is False and tiny["mfu"] is None and report["gpu_model"] == "cpu"
    assert any("scaled_dot_product" in k for k in tiny["sdpa_kernels"])
    resume = report["resume"]
    assert resume["exit_status_stopped"] == 143 and 2 <= resume["stopped_at_step"] < resume["steps"]
    assert resume["exit_status_resumed"] == 0 and resume["max_loss_rel_diff"] == 0.0
    assert resume["max_final_weight_diff"] == 0.0 and resume["pass"] is True
    decode = report["decode"]
    assert 0.0 <= decode["bf16_same_as_fp32"] <= 1.0 and decode["pass"] is None
    assert decode["speed"]["sentences_per_s"]["fp32"] > 0
    ranks = report["resume_ranks"]   # 2 gloo ranks under torchrun, SIGTERM to the group, the same command again
    assert ranks["ranks"] == 2 and ranks["backend"] == "gloo", ranks
    assert ranks["exit_status_stopped"] == 143 and 2 <= ranks["stopped_at_step"] < ranks["steps"], ranks
    assert ranks["exit_status_resumed"] == 0 and ranks["max_loss_rel_diff"] == 0.0, ranks
    assert ranks["max_grad_norm_rel_diff"] == 0.0 and ranks["max_final_weight_diff"] == 0.0 and ranks["pass"] is True
    assert report["ddp"] == {"skipped": "CPU"} and report["compile_ddp"]["skipped"].startswith("CPU")
    assert report["host_syncs"]["skipped"].startswith("CPU")
    assert report["pass"] is True
    assert set(report["seconds_per_section"]) == {"throughput", "resume", "resume_ranks", "decode", "host_syncs",
                                                  "ddp", "compile_ddp"}


def training(path, rows, weight):
    """A training's output folder as compare_trainings reads it: log.csv rows (step, lr, loss, grad_norm)
    plus a dev-perplexity row with empty loss, and checkpoint_last.pt with one 2x2 weight."""
    import torch

    from aiayn.runtime.checkpoint import Checkpoint, save_checkpoint

    path.mkdir()
    lines = ["step,lr,loss,nll,grad_norm,tokens_per_s,mfu,elapsed,dev_ppl"]
    lines += [f"{step},{lr},{loss},,{norm},,,," for step, lr, loss, norm in rows] + [f"{rows[-1][0]},,,,,,,,9.5"]
    (path / "log.csv").write_text("\n".join(lines) + "\n")
    weights = Checkpoint(model={"w": torch.full((2, 2), weight)}, settings={}, vocab={})
    save_checkpoint(path / "checkpoint_last.pt", weights)
    return path


REFERENCE = [(1, 0.5, 4.0, 2.0), (2, 0.25, 3.0, 1.0)]


@pytest.mark.parametrize("other, weight, expected, ok", [
    # the same to the bit: passes
    (REFERENCE, 1.0, {"max_loss_rel_diff": 0.0, "max_grad_norm_rel_diff": 0.0, "max_final_weight_diff": 0.0}, True),
    # same losses, but step 2's gradient norm 1/8 off: a loss-only check passed this
    ([(1, 0.5, 4.0, 2.0), (2, 0.25, 3.0, 1.125)], 1.0,
     {"max_loss_rel_diff": 0.0, "max_grad_norm_rel_diff": 0.125, "max_final_weight_diff": 0.0}, False),
    # same losses and norms, weights 0.125 apart, above a tenth of the summed learning rate (0.075)
    (REFERENCE, 1.125, {"max_loss_rel_diff": 0.0, "max_grad_norm_rel_diff": 0.0,
                        "max_final_weight_diff": 0.125}, False),
    # weights 0.0625 apart, within 0.075
    (REFERENCE, 1.0625, {"max_loss_rel_diff": 0.0, "max_grad_norm_rel_diff": 0.0,
                         "max_final_weight_diff": 0.0625}, True),
    # a step missing from one log
    (REFERENCE[:1], 1.0, {"max_loss_rel_diff": float("inf"), "max_grad_norm_rel_diff": float("inf"),
                          "max_final_weight_diff": 0.0}, False),
])
def test_ddp_comparison_judges_loss_gradient_norm_and_weights(tmp_path, other, weight, expected, ok):
    diff = gpu_acceptance.compare_trainings(training(tmp_path / "one", REFERENCE, 1.0),
                                            training(tmp_path / "two", other, weight))
    assert diff == {"steps": 2, "summed_lr": 0.75, **expected}
    assert gpu_acceptance.ddp_verdict(diff) is ok


def test_sync_lines_counts_synchronizing_warnings_by_line():
    import warnings

    def caught(message, filename, lineno):
        return warnings.WarningMessage(UserWarning(message), UserWarning, filename, lineno)

    lines = gpu_acceptance.sync_lines([caught("called a synchronizing CUDA operation", "/x/beam.py", 156),
                                       caught("called a synchronizing CUDA operation", "/x/beam.py", 156),
                                       caught("something else", "/x/step.py", 3)])
    assert lines == {"beam.py:156": 2}


@pytest.mark.slow
def test_host_sync_check_runs_its_training_and_decoding_on_a_cuda_device(tmp_path, monkeypatch):
    """The section's code on the pretend device (CUDA's sync debug mode itself exists only on a GPU)."""
    import torch
    from pretend_cuda import CUDA, PretendCuda
    from train_throughput import synthetic_task

    synthetic_task(tmp_path / "data-tiny", 200, 200, (5, 20))
    modes = []
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", modes.append)
    args = SimpleNamespace(threads=1)
    with PretendCuda() as runtime:
        report = gpu_acceptance.host_sync_check(tmp_path, args, CUDA)
    assert modes == ["warn", "default", "warn", "default"]
    assert report == {"training_steps": 5, "training": {}, "decoding": {}, "pass": True}
    # the only waits: the warm-up's timing (torch.cuda.synchronize), the statistics a step late, the beam's reads
    assert {e.where.split(":")[0] for e in runtime.waits()} == {"train_throughput.py", "aiayn/train/step.py",
                                                                "aiayn/decode/beam.py"}
