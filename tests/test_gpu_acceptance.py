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
      row("Memcpy HtoD", DeviceType.CUDA, "gpu_memcpy", 190.0, 195.0), row("k0", DeviceType.CUDA, "kernel", 10.0, 90.0)],
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


def test_acceptance_runs_end_to_end_on_a_cpu(tmp_path):
    out = tmp_path / "acceptance.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--tiny", "--threads", "1",
                           "--output", str(out)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    [tiny] = report["throughput"]
    assert tiny["target_tokens_per_s"] > 0 and tiny["precision"] == "fp32" and tiny["tokens_per_step"] == 1024
    assert any("scaled_dot_product" in k for k in tiny["sdpa_kernels"])
    resume = report["resume"]
    assert resume["exit_status_stopped"] == 143 and 2 <= resume["stopped_at_step"] < resume["steps"]
    assert resume["exit_status_resumed"] == 0 and resume["max_loss_rel_diff"] == 0.0
    assert resume["max_final_weight_diff"] == 0.0 and resume["pass"] is True
    decode = report["decode"]
    assert 0.0 <= decode["bf16_same_as_fp32"] <= 1.0 and decode["pass"] is None
    assert decode["speed"]["sentences_per_s"]["fp32"] > 0
    assert report["ddp"] == {"skipped": "CPU"} and report["pass"] is True
    assert set(report["seconds_per_section"]) == {"throughput", "resume", "decode", "ddp"}
