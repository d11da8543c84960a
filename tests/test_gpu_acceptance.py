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
    return SimpleNamespace(
        name=name, device_type=device, activity_type=activity, time_range=SimpleNamespace(start=start, end=end)
    )


STEP = row("acceptance_step", DeviceType.CPU, "user_annotation", 100.0, 200.0)
GPU_STEP = row("acceptance_step", DeviceType.CUDA, "gpu_user_annotation", 100.0, 200.0)  # spans idle gaps too
MM = row("aten::mm", DeviceType.CPU, "cpu_op", 105.0, 110.0)  # launches the kernel


@pytest.mark.parametrize(
    "events, idle",
    [
        # a kernel, its CPU op row (which also carries the kernel's time) and the GPU-side annotation: 25% busy
        ([STEP, GPU_STEP, MM, row("gemm", DeviceType.CUDA, "kernel", 120.0, 145.0)], 0.75),
        # two streams overlapping (120-160 and 150-180 is 60 busy), a copy, a warm-up kernel before the step
        (
            [
                STEP,
                MM,
                row("k1", DeviceType.CUDA, "kernel", 120.0, 160.0),
                row("k2", DeviceType.CUDA, "kernel", 150.0, 180.0),
                row("Memcpy HtoD", DeviceType.CUDA, "gpu_memcpy", 190.0, 195.0),
                row("k0", DeviceType.CUDA, "kernel", 10.0, 90.0),
            ],
            0.35,
        ),
        # kernels the whole step: counting them twice (CPU op rows and device rows) gave busy = 2 x step, an idle
        # share of -1 that max(0, ...) showed as 0; from device rows only it is 0 because it is 0
        (
            [
                STEP,
                GPU_STEP,
                row("aten::mm", DeviceType.CPU, "cpu_op", 100.0, 200.0),
                row("gemm", DeviceType.CUDA, "kernel", 100.0, 150.0),
                row("gemm", DeviceType.CUDA, "kernel", 150.0, 210.0),
            ],
            0.0,
        ),
        ([STEP, MM], 1.0),  # no device rows at all
    ],
)
def test_gpu_idle_share_counts_device_work_rows_once(events, idle):
    assert gpu_acceptance.gpu_idle_share(events) == idle


def test_device_work_without_activity_types_leaves_out_the_gpu_side_of_annotated_regions():
    """torch 2.11's profiler rows have no ``activity_type``: the GPU-side row of a ``record_function``
    region says ``is_user_annotation``; a kernel inductor generated runs inside a CPU region of its own
    name and is work all the same."""

    def bare(name, device, start, end, annotation=False):
        return SimpleNamespace(
            name=name,
            device_type=device,
            is_user_annotation=annotation,
            time_range=SimpleNamespace(start=start, end=end),
        )

    events = [
        bare("acceptance_step", DeviceType.CPU, 100.0, 200.0, True),
        bare("aten::mm", DeviceType.CPU, 105.0, 110.0),
        bare("triton_poi_fused_add_0", DeviceType.CPU, 111.0, 112.0, True),
        bare("Optimizer.step#Adam.step", DeviceType.CPU, 150.0, 190.0, True),
        bare("acceptance_step", DeviceType.CUDA, 100.0, 200.0, True),
        bare("Optimizer.step#Adam.step", DeviceType.CUDA, 150.0, 195.0, True),
        bare("void gemm_kernel<float>", DeviceType.CUDA, 120.0, 145.0),
        bare("triton_poi_fused_add_0", DeviceType.CUDA, 146.0, 148.0),
        bare("Memcpy DtoH (Device -> Pinned)", DeviceType.CUDA, 190.0, 195.0),
    ]
    assert gpu_acceptance.device_work(events) == [(120.0, 145.0), (146.0, 148.0), (190.0, 195.0)]
    assert gpu_acceptance.gpu_idle_share(events) == pytest.approx(0.68)


def test_busy_time_is_the_union_of_intervals_inside_the_window():
    assert gpu_acceptance.busy_microseconds([(0.0, 10.0), (5.0, 8.0), (9.0, 12.0), (20.0, 30.0)], 2.0, 25.0) == 15.0


def test_the_cuda_memory_limit_runs_the_trainer_with_its_arguments(tmp_path):
    """The memory section's CUDA child sets its allocator's fraction, then runs the module with the rest of
    the arguments as ``python -m`` would; here the fraction is printed instead of set (no CUDA)."""
    code = gpu_acceptance.LIMITED_CUDA.replace(
        "torch.cuda.set_per_process_memory_fraction(float(sys.argv.pop(1)))",
        "print('fraction', float(sys.argv.pop(1)))",
    )
    assert code != gpu_acceptance.LIMITED_CUDA
    done = subprocess.run(
        [sys.executable, "-c", code, "0.004", "aiayn.train", "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("fraction 0.004\nusage: python -m aiayn.train "), done.stdout[:300]


def test_a_section_that_raises_fails_alone_and_the_verdict_sees_it():
    def broken():
        raise RuntimeError("CUDA error: no kernel image")

    failed = gpu_acceptance.run_section(broken)
    assert failed["pass"] is False and failed["error"] == "RuntimeError: CUDA error: no kernel image"
    assert "broken" in failed["traceback"]
    report = {
        "resume": {"pass": True},
        "decode": {"pass": None},
        "ddp": {"skipped": "CPU"},
        "throughput": [{"model": "base", "target_tokens_per_s": 1.0}],
    }
    assert gpu_acceptance.verdict(report, list(report) + ["host_syncs"])  # a section not yet run is no failure
    report["throughput"].append({"model": "big", "mode": "compiled"} | failed)
    assert gpu_acceptance.passed(report["throughput"]) is False
    assert not gpu_acceptance.verdict(report, list(report))


@pytest.mark.slow
def test_acceptance_runs_end_to_end_on_a_cpu(tmp_path):
    out = tmp_path / "acceptance.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--device", "cpu", "--tiny", "--threads", "1", "--output", str(out)]
        + ["--modes", "eager", "compiled"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    tiny, compiled = report["throughput"]
    assert tiny["target_tokens_per_s"] > 0 and tiny["precision"] == "fp32" and tiny["tokens_per_step"] == 1024
    assert tiny["tf32_matmuls"] is False and tiny["mfu"] is None and report["gpu_model"] == "cpu"
    assert any("scaled_dot_product" in k for k in tiny["sdpa_kernels"])
    assert tiny["warmup_steps"] == tiny["batch_shapes"] == compiled["warmup_steps"] >= 4  # every shape once
    assert tiny["timed"]["steps"] == 3 and "graphs" not in tiny
    assert compiled["mode"] == "compiled" and compiled["graphs"]["graphs"] == 1 and compiled["pass"] is True
    agreement = report["bf16_agreement"]
    assert agreement["steps"] == 40 and agreement["largest_step_gap"] < 0.05 and agreement["pass"] is None
    resume = report["resume"]
    assert resume["exit_status_stopped"] == 143 and 2 <= resume["stopped_at_step"] < resume["steps"]
    assert resume["exit_status_resumed"] == 0 and resume["max_loss_rel_diff"] == 0.0
    assert resume["max_final_weight_diff"] == 0.0 and resume["pass"] is True
    decode = report["decode"]
    assert 0.0 <= decode["bf16_same_as_fp32"] <= 1.0 and decode["pass"] is None
    assert decode["speed"]["sentences_per_s"]["fp32"] > 0
    ranks = report["resume_ranks"]  # 2 gloo ranks under torchrun, SIGTERM to the group, the same command again
    assert ranks["ranks"] == 2 and ranks["backend"] == "gloo", ranks
    assert ranks["exit_status_stopped"] == 143 and 2 <= ranks["stopped_at_step"] < ranks["steps"], ranks
    assert ranks["exit_status_resumed"] == 0 and ranks["max_loss_rel_diff"] == 0.0, ranks
    assert ranks["max_grad_norm_rel_diff"] == 0.0 and ranks["max_final_weight_diff"] == 0.0 and ranks["pass"] is True
    assert report["ddp"] == {"skipped": "CPU"} and report["compile_ddp"]["skipped"].startswith("CPU")
    assert report["host_syncs"]["skipped"].startswith("CPU")
    memory = report["memory"]  # the CPU allocator's own failures, under RLIMIT_DATA
    assert memory["train"]["exit_status_large"] == 1 and memory["train"]["steps"] == 4, memory["train"]
    assert "DefaultCPUAllocator: can't allocate memory" in memory["train"]["error_large"], memory["train"]
    assert memory["train"]["resumed"] and memory["decode"]["warnings"], memory
    assert memory["pass"] is True, memory
    assert report["pass"] is True and report["complete"] is True
    assert set(report["seconds_per_section"]) == {
        "throughput",
        "bf16_agreement",
        "resume",
        "resume_ranks",
        "decode",
        "host_syncs",
        "memory",
        "ddp",
        "compile_ddp",
        "sdpa_shapes",
    }
    assert report["sdpa_shapes"] == {"skipped": "CPU"}


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


@pytest.mark.parametrize(
    "other, weight, expected, ok",
    [
        # the same to the bit: passes
        (REFERENCE, 1.0, {"max_loss_rel_diff": 0.0, "max_grad_norm_rel_diff": 0.0, "max_final_weight_diff": 0.0}, True),
        # same losses, but step 2's gradient norm 1/8 off: a loss-only check passed this
        (
            [(1, 0.5, 4.0, 2.0), (2, 0.25, 3.0, 1.125)],
            1.0,
            {"max_loss_rel_diff": 0.0, "max_grad_norm_rel_diff": 0.125, "max_final_weight_diff": 0.0},
            False,
        ),
        # same losses and norms, weights 0.125 apart, above a tenth of the summed learning rate (0.075)
        (
            REFERENCE,
            1.125,
            {"max_loss_rel_diff": 0.0, "max_grad_norm_rel_diff": 0.0, "max_final_weight_diff": 0.125},
            False,
        ),
        # weights 0.0625 apart, within 0.075
        (
            REFERENCE,
            1.0625,
            {"max_loss_rel_diff": 0.0, "max_grad_norm_rel_diff": 0.0, "max_final_weight_diff": 0.0625},
            True,
        ),
        # a step missing from one log
        (
            REFERENCE[:1],
            1.0,
            {"max_loss_rel_diff": float("inf"), "max_grad_norm_rel_diff": float("inf"), "max_final_weight_diff": 0.0},
            False,
        ),
    ],
)
def test_ddp_comparison_judges_loss_gradient_norm_and_weights(tmp_path, other, weight, expected, ok):
    diff = gpu_acceptance.compare_trainings(
        training(tmp_path / "one", REFERENCE, 1.0), training(tmp_path / "two", other, weight)
    )
    assert diff == {"steps": 2, "summed_lr": 0.75, **expected}
    assert gpu_acceptance.ddp_verdict(diff) is ok


def test_sync_sites_name_the_warning_line_and_the_project_line_that_led_there():
    import traceback

    def frame(filename, lineno):
        return traceback.FrameSummary(filename, lineno, "f")

    torch_init = "/venv/lib/python3.12/site-packages/torch/cuda/__init__.py"
    stack = [
        frame("/repo/benchmarks/gpu_acceptance.py", 300),
        frame("/repo/src/aiayn/train/step.py", 110),
        frame(torch_init, 1270),
    ]
    assert gpu_acceptance.sync_site(torch_init, 1270, stack) == "__init__.py:1270 <- aiayn/train/step.py:110"
    beam = "/repo/src/aiayn/decode/beam.py"
    assert gpu_acceptance.sync_site(beam, 159, stack[:1] + [frame(beam, 159)]) == "beam.py:159"
    bench = str(Path(gpu_acceptance.__file__).resolve())
    assert (
        gpu_acceptance.sync_site(torch_init, 1270, [frame(bench, 290), frame(torch_init, 1270)])
        == "__init__.py:1270 <- gpu_acceptance.py:290"
    )
    assert gpu_acceptance.sync_site(torch_init, 1270, [frame(torch_init, 1270)]) == "__init__.py:1270"


def test_counting_syncs_counts_only_synchronizing_warnings(monkeypatch):
    import warnings

    import torch

    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", lambda mode: None)

    def work():
        for _ in range(2):
            warnings.warn("called a synchronizing CUDA operation")
        warnings.warn("something else")

    [(site, count)] = gpu_acceptance.counting_syncs(work).items()
    assert count == 2 and site.startswith("test_gpu_acceptance.py:")


def test_relative_gaps_are_zero_for_the_same_choice_and_large_for_a_wrong_one():
    import torch
    from decode_speed import train_copy_model

    from aiayn.decode.beam import translate_sentences
    from aiayn.options import DecodeConfig

    model = train_copy_model(
        30, 60, batch=16, seed=1, shape={"n_layers": 1, "d_model": 32, "d_ff": 64, "n_heads": 2, "d_k": 16, "d_v": 16}
    ).eval()
    sources = [[5, 6, 7, 8], [9, 10, 11]]
    opts = DecodeConfig(max_sentences=2, beam_size=2, length_penalty=0.6, max_len_a=1.0, max_len_b=5, early_stop=True)
    hyps = translate_sentences(model, sources, opts, ids=gpu_acceptance.IDS)
    best = [h.tokens for h in hyps]
    assert gpu_acceptance.relative_gaps(model, sources, best, best, 0.6, torch.device("cpu")) == [0.0, 0.0]
    worse = [[4] * len(h) for h in best]  # a word the source never has, as often
    gaps = gpu_acceptance.relative_gaps(model, sources, best, worse, 0.6, torch.device("cpu"))
    assert all(g > gpu_acceptance.MEAN_GAP for g in gaps), gaps


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
    assert modes == ["warn", "default"] * (1 + 2 * 5 + 1)  # nothing, each step's two halves, the search
    assert report == {"empty": {}, "training_steps": 5, "training": {}, "decoding": {}, "pass": True}
    # the only waits: the warm-up's timing (torch.cuda.synchronize), the statistics a step late, the beam's reads
    assert {e.where.split(":")[0] for e in runtime.waits()} == {
        "train_throughput.py",
        "aiayn/train/step.py",
        "aiayn/decode/beam.py",
    }


def test_the_warm_up_meets_every_shape_once_smallest_first():
    sampler = SimpleNamespace(shapes=[(8, 9, 9), (4, 20, 18), (8, 9, 9), (16, 4, 5), (4, 20, 18)])
    assert gpu_acceptance.shape_tour(sampler) == [3, 0, 1]
    assert gpu_acceptance.shape_tour(SimpleNamespace(shapes=None)) == []


def test_throughput_runs_go_eager_then_compiled_then_captured():
    models = {"base": {}, "big": {}}
    assert gpu_acceptance.throughput_runs(models, ["captured", "eager", "compiled"], False) == [
        ("base", "eager", False),
        ("big", "eager", False),
        ("base", "compiled", False),
        ("big", "compiled", False),
        ("base", "captured", False),
        ("big", "captured", False),
    ]
    assert gpu_acceptance.throughput_runs(models, ["captured", "compiled"], True) == [
        ("base", "compiled", False),
        ("big", "compiled", False),
        ("base", "captured", False),
        ("big", "captured", False),
        ("base", "compiled", True),
        ("big", "compiled", True),
    ]


@pytest.mark.parametrize(
    "name, kind",
    [
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "matmul"),
        ("nvjet_tst_192x192_64x3_2x1_v_bz_coopB_TNT", "matmul"),
        ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128>>", "attention"),
        ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80", "attention"),
        ("triton_per_fused_native_layer_norm_add_3", "compiled"),
        ("Memcpy HtoD (Pinned -> Device)", "copy"),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", "other"),
    ],
)
def test_device_rows_are_sorted_into_kinds_by_name(name, kind):
    assert gpu_acceptance.kind_of(name) == kind


def test_device_time_by_kind_sums_work_rows_only():
    events = [
        STEP,
        GPU_STEP,
        MM,
        row("sm90_xmma_gemm_bf16", DeviceType.CUDA, "kernel", 120.0, 145.0),
        row("triton_poi_fused_add_0", DeviceType.CUDA, "kernel", 150.0, 152.5),
        row("triton_poi_fused_mul_1", DeviceType.CUDA, "kernel", 153.0, 154.0),
    ]
    assert gpu_acceptance.device_ms_by_kind(events) == {"compiled": 0.0035, "matmul": 0.025}
