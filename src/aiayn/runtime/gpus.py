"""GPU models by exact name and their peak FLOP/s: the one table behind MFU and Table 2's training cost.

A card is found by a regular expression that must match the whole of ``torch.cuda.get_device_name``
(less its ``NVIDIA `` or ``Tesla `` prefix), so "L4" is not "L40", "A40" is not "RTX A4000" and an
H100 SXM is told from an H100 PCIe and an H100 NVL. A name no pattern matches has no peak: MFU and
Table 2's cost are then left empty rather than computed against another card.

Peaks are dense (no 2:4 sparsity) TFLOPS from the vendor's data sheet named in each row; where a sheet
prints only the sparse figure (marked ``*`` there) the dense one is half of it. ``bf16``: tensor cores;
``tf32``: tensor cores on fp32 inputs, what float32 matrix products run at while TF32 is allowed;
``fp32``: the CUDA cores without tensor cores. For the paper's GPUs the fp32 column is the paper's own
"sustained single-precision" estimate (section 6.1, footnote 5: K80 2.8, K40 3.7, M40 6.0, P100 9.5).
Each row's source gives the sheet's figures as printed, bf16 / tf32 / fp32.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Card:
    """One GPU model: the names it reports, its dense peaks in TFLOPS (None: the source gives none)."""

    names: str
    bf16: float | None
    tf32: float | None
    fp32: float | None
    source: str


H100_SHEET = "NVIDIA H100 Tensor Core GPU datasheet"
H200_SHEET = "NVIDIA H200 Tensor Core GPU datasheet"
PAPER = "Vaswani et al. 2017, section 6.1, footnote 5"

CARDS = {
    "H100 SXM": Card(r"H100( SXM5?)? \d+GB HBM3", 989.5, 494.5, 67.0, f"{H100_SHEET}, H100 SXM: 1,979* / 989* / 67"),
    "H100 PCIe": Card(r"H100 PCIe", 756.5, 378.0, 51.0, f"{H100_SHEET} (2022 edition), H100 PCIe: 1,513* / 756* / 51"),
    "H100 NVL": Card(r"H100 NVL", 835.5, 417.5, 60.0, f"{H100_SHEET}, H100 NVL: 1,671* / 835* / 60"),
    "H200": Card(r"H200( SXM)?( \d+GB HBM3e)?", 989.5, 494.5, 67.0, f"{H200_SHEET}, H200 SXM: 1,979* / 989* / 67"),
    "H200 NVL": Card(r"H200 NVL", 835.5, 417.5, 60.0, f"{H200_SHEET}, H200 NVL: 1,671* / 835* / 60"),
    "GH200": Card(
        r"GH200( .+)?", 989.5, 494.5, 67.0, "NVIDIA GH200 Grace Hopper Superchip datasheet: 1,979* / 989* / 67"
    ),
    "A100": Card(
        r"A100[- ](SXM4?-\d+GB|PCIE-\d+GB|\d+GB PCIe)",
        312.0,
        156.0,
        19.5,
        "NVIDIA A100 Tensor Core GPU datasheet, SXM and PCIe alike: 312 / 156 / 19.5",
    ),
    "L40S": Card(r"L40S", 362.05, 183.0, 91.6, "NVIDIA L40S datasheet: 362.05 / 183 / 91.6"),
    "L40": Card(r"L40", 181.05, 90.5, 90.5, "NVIDIA L40 datasheet: 181.05 / 90.5 / 90.5"),
    "L4": Card(r"L4", 121.0, 60.0, 30.3, "NVIDIA L4 Tensor Core GPU datasheet: 242* / 120* / 30.3"),
    "A40": Card(r"A40", 149.7, 74.8, 37.4, "NVIDIA A40 datasheet: 149.7 / 74.8 / 37.4"),
    "A10": Card(r"A10", 125.0, 62.5, 31.2, "NVIDIA A10 Tensor Core GPU datasheet: 125 / 62.5 / 31.2"),
    # The RTX sheets print one "Tensor performance" figure without its precision or sparsity: fp32 only.
    "RTX A6000": Card(r"RTX A6000", None, None, 38.7, "NVIDIA RTX A6000 datasheet: single-precision 38.7"),
    "RTX A4000": Card(r"RTX A4000", None, None, 19.2, "NVIDIA RTX A4000 datasheet: single-precision 19.2"),
    "V100 SXM2": Card(r"V100-SXM2-\d+GB", None, None, 15.7, "NVIDIA Tesla V100 GPU datasheet, SXM2: 15.7"),
    "V100 PCIe": Card(r"V100-PCIE-\d+GB", None, None, 14.0, "NVIDIA Tesla V100 GPU datasheet, PCIe: 14"),
    "V100S PCIe": Card(r"V100S-PCIE-\d+GB", None, None, 16.4, "NVIDIA V100S datasheet, PCIe: 16.4"),
    "T4": Card(r"T4", None, None, 8.1, "NVIDIA T4 Tensor Core GPU datasheet: single-precision 8.1"),
    "P100": Card(r"P100-(PCIE|SXM2)-\d+GB", None, None, 9.5, PAPER),
    "M40": Card(r"M40( 24GB)?", None, None, 6.0, PAPER),
    "K40": Card(r"K40[cmst]?", None, None, 3.7, PAPER),
    "K80": Card(r"K80", None, None, 2.8, PAPER),
}


def card_of(device_name: str) -> str | None:
    """The table's name for ``torch.cuda.get_device_name`` output, or None for a card not in it."""
    bare = re.sub(r"^(NVIDIA|Tesla) ", "", device_name.strip())
    found = [name for name, card in CARDS.items() if re.fullmatch(card.names, bare)]
    return found[0] if len(found) == 1 else None


def peak_tflops(card: str, precision: str, tf32: bool = False) -> float | None:
    """Dense peak TFLOPS of ``card`` (a :data:`CARDS` name) for a run in ``precision`` (``bf16`` or
    ``fp32``); an fp32 run whose matrix products ran as TF32 (``tf32``) is measured against the TF32
    tensor-core peak. None for a card or precision the table has no figure for."""
    entry = CARDS.get(card)
    if entry is None:
        return None
    return {"bf16": entry.bf16, "fp32": entry.tf32 if tf32 else entry.fp32}.get(precision)
