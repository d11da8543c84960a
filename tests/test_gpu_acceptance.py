"""The GPU acceptance script, run as CI can: on a CPU with tiny models (the same code paths end to end)."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_acceptance.py"


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
