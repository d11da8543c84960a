"""Every benchmark script still imports what it uses and parses its arguments: ``--help`` exits 0.

The benchmarks run outside the suite (they take minutes to hours), so a renamed or moved function they
import would otherwise go unnoticed until someone reruns a figure.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from paths import ROOT

# standing benchmarks, and the scripts of finished studies (docs/studies/)
SCRIPTS = sorted(
    path
    for pattern in ("*.py", "studies/*.py")
    for path in (ROOT / "benchmarks").glob(pattern)
    if "def main" in path.read_text()
)


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: str(path.relative_to(ROOT / "benchmarks")))
def test_a_benchmark_answers_help(script):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage:"), done.stdout[:200]


def test_the_benchmarks_with_a_main_are_found():
    names = {str(path.relative_to(ROOT / "benchmarks")) for path in SCRIPTS}
    assert {"learning_parity.py", "studies/demo_learnability.py", "train_memory.py", "step_overhead.py"} <= names


def test_seed_statistics_equal_scipys():
    """Welch's t-test and Student's t tail as scipy.stats 1.17 gives them (values computed there); the
    seeds for 80% power by the normal approximation, 2 (z_0.975 + z_0.8)^2 s^2 / d^2 (+1): here 4.1 + 1."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from seed_stats import paired, seeds_needed, t_two_sided, welch

    test = welch([5.90554, 6.10774, 5.95, 6.02], [5.80, 5.71, 5.93, 5.77])
    assert test.difference == pytest.approx(-0.19332) and test.t == pytest.approx(-3.0180561035736106, rel=1e-12)
    assert test.df == pytest.approx(5.984394034133806, rel=1e-12)
    assert test.p == pytest.approx(0.02353144295048961, rel=1e-9)
    for t, df, p in (
        (2.0, 10, 0.07338803477074037),
        (0.3, 3.2, 0.7826201981900558),
        (8, 5.5, 0.00031310583438347094),
        (-1.5, 40, 0.14146677687914816),
    ):
        assert t_two_sided(t, df) == pytest.approx(p, rel=1e-9)
    assert seeds_needed([5.90554, 6.10774, 5.95, 6.02], [5.80, 5.71, 5.93, 5.77]) == 5
    assert seeds_needed([1.0, 2.0], [1.0, 2.0]) is None
    pairs = paired([5.906, 6.108, 5.750], [5.879, 5.918, 5.599])  # scipy.stats.ttest_rel(b, a)
    assert pairs.t == pytest.approx(-2.496249429777169, rel=1e-9)
    assert pairs.p == pytest.approx(0.12992881359226652, rel=1e-9)


def test_the_cross_attention_ablation_changes_that_attention_alone():
    """learning_parity's ``t2t+fairseq-cross``: every tensor as ``t2t`` draws it, but the encoder-decoder
    attention's q, k, v within fairseq's bound (1/sqrt(2) of one matrix's Xavier bound); its q then lies
    within a bound t2t's q exceeds."""
    import torch

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from learning_parity import VARIANTS

    from aiayn.model import Transformer
    from aiayn.model.init import SCHEMES, initialize, xavier_bound
    from aiayn.options import ModelConfig

    cfg = ModelConfig.from_dict({"n_layers": 2, "d_model": 64, "d_ff": 128, "n_heads": 4, "d_k": 16, "d_v": 16})
    plain, ablated = Transformer(cfg, 50), Transformer(cfg, 50)
    torch.manual_seed(3)
    initialize(plain, SCHEMES["t2t"])
    torch.manual_seed(3)
    VARIANTS["t2t+fairseq-cross"][1].apply(ablated)
    differ = {
        name for (name, a), (_, b) in zip(plain.named_parameters(), ablated.named_parameters()) if not torch.equal(a, b)
    }
    assert differ and all(".cross_attn." in name for name in differ), sorted(differ)
    bound = xavier_bound(64, 64, 2**-0.5)
    for (name, a), (_, b) in zip(plain.named_parameters(), ablated.named_parameters()):
        if name in differ and name.endswith(("q.weight", "kv.weight")):
            assert b.abs().max() <= bound
        if name in differ and name.endswith("q.weight"):
            assert a.abs().max() > bound


def test_the_parity_report_says_when_compared_runs_come_from_two_trees():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from learning_parity import trees

    assert (
        trees({"t2t": [{"tree": "2d50ed8"}] * 2, "fairseq": [{"tree": "2d50ed8"}] * 2})
        == "trees: t2t 2d50ed8; fairseq 2d50ed8"
    )
    mixed = trees({"t2t": [{"tree": "2d50ed8"}, {"tree": "8a947ce"}], "fairseq": [{}]})
    assert mixed.startswith("trees: t2t 2d50ed8, 8a947ce; fairseq unrecorded") and "MORE THAN ONE TREE" in mixed


def test_a_finished_corpus_run_read_back_keeps_its_bleu_and_cuts_its_curves():
    """A cached ``--corpus`` run: the step-keyed curves are cut to ``--steps``, the BLEU (keyed by split) kept."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from learning_parity import truncate

    bleu = {"dev": {"0": {"bleu": 46.6, "empty": 3}, "1": {"bleu": 46.7, "empty": 0}}}
    curve = {"dev_ppl": {"500": 9.1, "1000": 4.8}, "tokens_per_step": 3223.0, "steps": 1000, "bleu": bleu}
    assert truncate(curve, 1000) == curve
    assert truncate(curve, 500) == {"dev_ppl": {"500": 9.1}, "tokens_per_step": 3223.0, "steps": 500, "bleu": bleu}


def test_the_parity_report_pairs_only_our_runs_and_counts_min_length_model_by_model():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from learning_parity import min_length_verdict, pairable

    assert pairable("t2t", "fairseq-init-nobias", [1.0, 2.0], [1.5, 2.5])
    assert not pairable("fairseq", "t2t", [1.0, 2.0], [1.5, 2.5])
    assert not pairable("t2t", "xavier", [1.0, 2.0], [1.5])

    def run(zero, one):
        return {"bleu": {"dev": {"0": {"bleu": zero}, "1": {"bleu": one}}}}

    results = {"t2t": [run(40.0, 40.1), run(41.0, 41.0)], "fairseq": [{"bleu": {"dev": {"1": {"bleu": 45.0}}}}]}
    assert min_length_verdict(results) == (
        "decode.min_length 1 against 0, dev BLEU model by model: higher in 1, equal in 1, lower in 0 of 2 "
        "(from +0.00 to +0.10)"
    )


def test_decode_step_parts_count_each_moment_once(monkeypatch):
    """``decode_speed.py --profile-steps``: a part called inside another is the inner one's time, a
    "whole" part keeps what it calls, and every patched function is restored (on a fake clock)."""
    import types

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import decode_speed

    clock = [0.0]
    monkeypatch.setattr(decode_speed.time, "perf_counter", lambda: clock[0])

    def busy(seconds):
        clock[0] += seconds

    space = types.SimpleNamespace()
    space.inner = lambda: busy(2)
    space.outer = lambda: (busy(1), space.inner(), busy(4))
    space.whole = lambda: (busy(8), space.inner())
    originals = dict(vars(space))
    parts = {"outer": [(space, "outer")], "inner": [(space, "inner")], "whole": [(space, "whole")]}
    with decode_speed.SectionTimer(parts, whole=("whole",)) as timer:
        space.outer()
        space.whole()
        space.inner()
    assert vars(space) == originals
    assert timer.seconds == {"outer": 5, "inner": 4, "whole": 10}
