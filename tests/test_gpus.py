"""GPU names as torch.cuda.get_device_name reports them, to the exact card and its data-sheet peaks."""

import re
from types import SimpleNamespace

import pytest
import torch

from aiayn.runtime import devices, gpus, precision
from aiayn.train import distributed
from aiayn.train.setup import TrainingSetup

# (torch.cuda.get_device_name, card, dense bf16 TFLOPS, fp32 TFLOPS without tensor cores)
NAMES = [
    ("NVIDIA H100 80GB HBM3", "H100 SXM", 989.5, 67.0),
    ("NVIDIA H100 PCIe", "H100 PCIe", 756.5, 51.0),
    ("NVIDIA H100 NVL", "H100 NVL", 835.5, 60.0),
    ("NVIDIA H200", "H200", 989.5, 67.0),
    ("NVIDIA H200 NVL", "H200 NVL", 835.5, 60.0),
    ("NVIDIA GH200 480GB", "GH200", 989.5, 67.0),
    ("NVIDIA GH200 144G HBM3e", "GH200", 989.5, 67.0),
    ("NVIDIA A100-SXM4-80GB", "A100", 312.0, 19.5),
    ("NVIDIA A100-SXM4-40GB", "A100", 312.0, 19.5),
    ("NVIDIA A100 80GB PCIe", "A100", 312.0, 19.5),
    ("NVIDIA A100-PCIE-40GB", "A100", 312.0, 19.5),
    ("NVIDIA L40S", "L40S", 362.05, 91.6),
    ("NVIDIA L40", "L40", 181.05, 90.5),  # not the L4
    ("NVIDIA L4", "L4", 121.0, 30.3),
    ("NVIDIA A40", "A40", 149.7, 37.4),  # the data sheet's 149.7, not 150
    ("NVIDIA A10", "A10", 125.0, 31.2),
    ("NVIDIA RTX A4000", "RTX A4000", None, 19.2),  # not the A40
    ("NVIDIA RTX A6000", "RTX A6000", None, 38.7),
    ("Tesla V100-SXM2-16GB", "V100 SXM2", None, 15.7),
    ("Tesla V100-PCIE-32GB", "V100 PCIe", None, 14.0),
    ("Tesla T4", "T4", None, 8.1),
    ("Tesla P100-PCIE-16GB", "P100", None, 9.5),  # the paper's figure
    ("Tesla K80", "K80", None, 2.8),
]


@pytest.mark.parametrize("name, card, bf16, fp32", NAMES)
def test_each_reported_name_is_its_exact_card_with_its_data_sheet_peaks(name, card, bf16, fp32):
    assert gpus.card_of(name) == card
    assert gpus.peak_tflops(card, "bf16") == bf16 and gpus.peak_tflops(card, "fp32") == fp32


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA A10G",
        "NVIDIA GeForce RTX 4090",
        "NVIDIA RTX A4500",
        "NVIDIA L20",
        "NVIDIA H800",
        "NVIDIA B200",
        "cpu",
        "",
    ],
)
def test_a_card_not_in_the_table_has_no_peak(name):
    assert gpus.card_of(name) is None and gpus.peak_tflops(name, "bf16") is None


@pytest.mark.parametrize("card, tf32", [("H100 SXM", 494.5), ("H100 PCIe", 378.0), ("A100", 156.0), ("L4", 60.0)])
def test_fp32_products_run_as_tf32_are_measured_against_the_tf32_peak(card, tf32):
    assert gpus.peak_tflops(card, "fp32", tf32=True) == tf32


def test_every_card_names_its_source_and_no_two_patterns_share_a_name():
    for name, card in gpus.CARDS.items():
        assert card.source and (card.bf16 or card.fp32)
        assert [other for other, c in gpus.CARDS.items() if re.fullmatch(c.names, name)] in ([name], [])


def test_device_name_is_the_tables_name_or_the_full_name(monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H100 PCIe")
    assert devices.device_name(torch.device("cuda", 0)) == "H100 PCIe"
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA GeForce RTX 4090")
    assert devices.device_name(torch.device("cuda", 0)) == "NVIDIA GeForce RTX 4090"
    assert devices.device_name(torch.device("cpu")) == "cpu"


@pytest.mark.parametrize(
    "name, run_precision, matmul, mfu",
    [
        ("NVIDIA H100 PCIe", "bf16", "high", 0.25),  # 1e9 x 378,250 / (2 x 756.5e12)
        ("NVIDIA H100 PCIe", "fp32", "high", 378.25 / 756),  # TF32 allowed: against 378 TFLOPS
        ("NVIDIA H100 PCIe", "fp32", "highest", 378.25 / 102),  # plain fp32: against 51 TFLOPS
        ("NVIDIA GeForce RTX 4090", "bf16", "high", None),
    ],
)
def test_mfu_is_against_the_exact_cards_peak_in_the_runs_precision(monkeypatch, name, run_precision, matmul, mfu):
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)
    monkeypatch.setattr(torch, "get_float32_matmul_precision", lambda: matmul)
    run = SimpleNamespace(
        env=distributed.DistEnv(0, 2, torch.device("cuda", 0)), precision=run_precision, flops_per_token=1e9
    )
    assert TrainingSetup.mfu(run, 378_250.0) == (None if mfu is None else pytest.approx(mfu, rel=1e-12))


def test_no_tf32_off_a_gpu():
    assert precision.tf32_matmuls(torch.device("cpu")) is False
