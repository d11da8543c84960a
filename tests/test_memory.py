"""A CPU training's memory stays flat: oneDNN products of ever new row counts once grew it by about
1 MB per new count (``benchmarks/train_memory.py`` measures whole trainings)."""

import csv
import json
import subprocess
import sys

import numpy as np
import pytest
from train_helpers import settings

from aiayn.data.shards import ShardWriter
from aiayn.model.functional import onednn_available

pytestmark = pytest.mark.skipif(not onednn_available(), reason="this torch build has no oneDNN linear operator")

# 600 forward and backward products of 64 x 64 weights on 200-2000 rows: before row counts were
# bucketed RSS grew by 450 MB from the 100th product to the 600th; since then by 15-25 MB.
PRODUCTS = """
import random, psutil, torch
from aiayn.model.functional import _OneDNNLinear
torch.set_num_threads(1)
random.seed(0)
w = torch.randn(64, 64, requires_grad=True)
for i in range(601):
    x = torch.randn(random.randint(200, 2000), 64, requires_grad=True)
    _OneDNNLinear.apply(x, w, None).sum().backward()
    if i in (100, 600):
        print(psutil.Process().memory_info().rss / 2**20)
"""


@pytest.mark.slow  # a fresh process of 600 products: 3.5 s
def test_onednn_products_of_many_row_counts_do_not_grow_memory():
    # A fresh process: freed memory of earlier tests in this one could hide a growth.
    out = subprocess.run([sys.executable, "-c", PRODUCTS], capture_output=True, text=True, check=True).stdout
    before, after = map(float, out.split())
    assert after - before < 150, f"RSS grew from {before:.0f} MB to {after:.0f} MB over 500 products"


def wide_task(root, n_train=20000, seed=0):
    """A copy task whose sentences are 2-120 tokens long, so that batches have many different shapes
    (and 400 steps of 1,200 tokens never see a batch twice: later epochs would repeat shapes)."""
    rng = np.random.default_rng(seed)
    for split, n in (("train", n_train), ("dev", 8)):
        with ShardWriter(root / split, vocab_size=40) as writer:
            for _ in range(n):
                src = rng.integers(4, 40, rng.integers(2, 121))
                writer.add(src, src)
    return root


TRAIN = """
import sys
from aiayn.model import functional
functional.ONEDNN_MIN_MACS = 0  # the tiny model's products through oneDNN, as a real model's are
from aiayn.train.__main__ import main
raise SystemExit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_a_cpu_training_with_onednn_products_keeps_its_memory_flat(tmp_path):
    # Before row counts were bucketed RSS grew by 166 MB from step 50 to step 400; since then by 8 MB.
    data = wide_task(tmp_path / "data")
    run = settings(
        train_steps=400,
        tokens_per_step=1200,
        tokens_per_pass=1200,
        log_every_steps=50,
        checkpoint_steps=0,
        keep_checkpoints=1,
        dev_every_steps=0,
        cpu_matmul="onednn",
        precision="fp32",
    )
    run["model"]["max_positions"] = 256
    (tmp_path / "settings.json").write_text(json.dumps(run))
    subprocess.run(
        [
            sys.executable,
            "-c",
            TRAIN,
            "--data",
            str(data),
            "--settings",
            str(tmp_path / "settings.json"),
            "--out-dir",
            str(tmp_path / "out"),
            "--threads",
            "1",
        ],
        check=True,
        capture_output=True,
    )
    with open(tmp_path / "out" / "log.csv", encoding="utf-8") as handle:
        rss = {int(r["step"]): float(r["rss_mb"]) for r in csv.DictReader(handle) if r["rss_mb"]}
    assert sorted(rss)[-1] == 400
    assert rss[400] - rss[50] < 60, f"RSS grew from {rss[50]:.0f} MB at step 50 to {rss[400]:.0f} MB at 400"
