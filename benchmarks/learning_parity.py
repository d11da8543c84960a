"""Learning parity with fairseq: the same real BPE'd text, settings and seeds; both learning curves.

    PYTHONPATH=src python benchmarks/learning_parity.py --work /tmp/parity --runs fairseq ours \\
        --fairseq-python /work/venvs/fairseq/bin/python --seeds 1 2 --threads 1

Data (``parity_data.py``): about 16.7k real EN-DE pairs (WMT training sample and newstest2012/2013/
2014) through our tokenize, clean, BPE (shared, ``--vocab-size``) and binarize stages; the last
``--dev-lines`` lines of newstest2013 are the held-out dev set. Then each named run trains:

- ``fairseq``: fairseq-train on the same piece files with the equivalent recipe (``parity_fairseq.py``);
- any name of :data:`VARIANTS`: :class:`aiayn.train.trainer.Trainer` (the real trainer) with that model.

Both: ``--layers``+``--layers`` layers, ``--d-model``, ``--heads`` heads, ``--d-ff``, dropout 0.1,
shared embeddings, label smoothing 0.1, Adam (0.9, 0.98, 1e-9), the paper's schedule with
``--warmup`` steps (peak d_model^-0.5 warmup^-0.5), ``--tokens-per-step`` padded tokens per side per step,
``--steps`` steps, seeds ``--seeds``. Printed side by side: train NLL in nats per target token
(end-of-sentence included, no smoothing, measured in the training forward pass with dropout) as the
mean over the ``--window`` steps ending at each reported step, and dev perplexity (no dropout, per
target token with end-of-sentence) at every ``--dev-every`` steps and the last: each system's mean
and standard deviation over seeds with the [min, max] of its seeds; at the last step, each run against
the first by Welch's t-test and the seeds per run that would resolve the difference
(``seed_stats.py``). Run seeds side by side as separate invocations on one ``--work`` (one thread
each), then once more with every seed to print the tables from the kept runs. Finished runs are kept
under ``--work/runs`` (keyed by every setting, not by the code: each curve records its tree, and the
report says when the runs it compares come from more than one) and not rerun. Curves are deterministic
per seed and tree: they are valid on a loaded machine.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import hashlib
import json
import logging
import math
import statistics
import subprocess
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import parity_decode  # noqa: E402
from parity_data import fairseq_preprocess, prepare  # noqa: E402
from parity_fairseq import run_fairseq  # noqa: E402
from seed_stats import paired, seeds_needed, welch  # noqa: E402

from aiayn.io import read_json, setup_logging, write_json  # noqa: E402
from aiayn.model.attention import MultiHeadAttention  # noqa: E402
from aiayn.model.init import SCHEMES, InitScheme, init_attention, initialize  # noqa: E402
from aiayn.options import ModelConfig  # noqa: E402
from aiayn.train.distributed import DistEnv  # noqa: E402
from aiayn.train.schedule import learning_rate  # noqa: E402
from aiayn.train.trainer import build_trainer  # noqa: E402

log = logging.getLogger("learning_parity")
WMT = Path(__file__).resolve().parents[2] / "shared" / "data" / "wmt"


def _mixed(base: str, **changes) -> InitScheme:
    return SCHEMES[base].replace(**changes)


@dataclasses.dataclass(frozen=True)
class CrossApart:
    """An initialisation whose encoder-decoder attention (q, k, v, W^O) follows ``cross``, the rest ``rest``:
    the two schemes differ there (``t2t``: q alone at the Xavier bound of one d_model x d_model matrix, k|v
    fused; ``fairseq``: each at 1/sqrt(2) of it), so this tells that part's effect from the FFN's."""

    rest: InitScheme
    cross: InitScheme

    def apply(self, model: torch.nn.Module) -> None:
        initialize(model, self.rest)
        for module in model.modules():
            if isinstance(module, MultiHeadAttention) and not module.self_attention:
                init_attention(module, self.cross)


# name: (model settings changed from the defaults, initialisation scheme replacing model.init's, what it is)
VARIANTS: dict[str, tuple[dict, InitScheme | CrossApart | None, str]] = {
    "ours": ({}, None, "this project's defaults (model.init: t2t; before, fairseq: see fairseq-init-nobias)"),
    "xavier": ({"init": "xavier"}, None, "model.init: xavier (Xavier per projection, zero FFN biases)"),
    "t2t": ({"init": "t2t"}, None, "model.init: t2t (tensor2tensor 2017: Xavier over fused projections)"),
    "fairseq-init": ({"init": "fairseq", "attention_bias": True}, None, "model.init: fairseq + attention_bias"),
    "fairseq-init-nobias": ({"init": "fairseq"}, None, "model.init: fairseq, no attention biases"),
    "xavier+ffn-weight": (
        {"init": "xavier"},
        _mixed("xavier", ffn_weight="linear"),
        "xavier, FFN weights as nn.Linear's default",
    ),
    "xavier+ffn-bias": (
        {"init": "xavier"},
        _mixed("xavier", ffn_bias="linear"),
        "xavier, FFN biases as nn.Linear's default",
    ),
    "xavier+qkv-gain": ({"init": "xavier"}, _mixed("xavier", qkv_gain=2**-0.5), "xavier, q/k/v gain 1/sqrt(2)"),
    "xavier+attn-bias": (
        {"init": "xavier", "attention_bias": True},
        _mixed("xavier", attention_bias="linear"),
        "xavier, attention biases as fairseq (q/k/v nn.Linear default, output zero)",
    ),
    "fairseq-init-ffn-weight": (
        {"init": "fairseq"},
        _mixed("fairseq", ffn_weight="xavier"),
        "fairseq init, Xavier FFN weights",
    ),
    "fairseq-init-ffn-bias": ({"init": "fairseq"}, _mixed("fairseq", ffn_bias="zero"), "fairseq init, zero FFN biases"),
    "fairseq-init-qkv-gain": ({"init": "fairseq"}, _mixed("fairseq", qkv_gain=1.0), "fairseq init, q/k/v gain 1"),
    "fairseq-init-out-linear": (
        {"init": "fairseq"},
        _mixed("fairseq", out_weight="linear"),
        "fairseq init, W^O as nn.Linear's default",
    ),
    "t2t+fairseq-ffn": (
        {"init": "t2t"},
        _mixed("t2t", ffn_weight="linear", ffn_bias="linear"),
        "t2t, FFN weights and biases as fairseq (nn.Linear's default)",
    ),
    "t2t+fairseq-cross": (
        {"init": "t2t"},
        CrossApart(SCHEMES["t2t"], SCHEMES["fairseq"]),
        "t2t, encoder-decoder attention as fairseq (q, k, v at 1/sqrt(2) of the Xavier bound)",
    ),
    "ladder": ({}, None, "this project's defaults, batches padded to a GPU's ladder of shapes (train.batch_shapes)"),
}


def spaced(steps: int) -> dict:
    """The checkpoints of a --corpus run: spaced for the averaging before test decoding (parity_decode),
    at most ``CHECKPOINT_STEPS`` apart and the last ``AVERAGED`` within the run."""
    every = max(1, min(parity_decode.CHECKPOINT_STEPS, steps // parity_decode.AVERAGED))
    return {"checkpoint_minutes": 0, "checkpoint_steps": every, "keep_checkpoints": parity_decode.AVERAGED}


# name: train settings a variant changes
TRAIN_CHANGES = {"ladder": {"batch_shapes": 64}}


def settings(args: argparse.Namespace, model_changes: dict, seed: int, train_changes: dict | None = None) -> dict:
    """The run's settings: the model of ``--layers/--d-model/...`` (every key, defaults filled in) and
    the trainer's train section (with ``train_changes``)."""
    model = {
        "n_layers": args.layers,
        "d_model": args.d_model,
        "d_ff": args.d_ff,
        "n_heads": args.heads,
        "d_k": args.d_model // args.heads,
        "d_v": args.d_model // args.heads,
        "dropout": 0.1,
        "share_embeddings": True,
        **model_changes,
    }
    model = ModelConfig.from_dict(model).to_dict()
    train = {
        "train_steps": args.steps,
        "label_smoothing": 0.1,
        "tokens_per_step": args.tokens_per_step,
        "tokens_per_pass": args.tokens_per_step,
        "adam_betas": [0.9, 0.98],
        "adam_eps": 1e-9,
        "warmup_steps": args.warmup,
        "lr_scale": 1.0,
        "seed": seed,
        "precision": "fp32",
        "gpus": 0,
        "checkpoint_minutes": 5,
        "keep_checkpoints": 1,
        "log_every_steps": args.window,
        "dev_every_steps": args.dev_every,
        **(spaced(args.steps) if args.corpus else {}),
        **(train_changes or {}),
    }
    return {"experiment": "learning_parity", "task": "en-de", "model": model, "train": train}


def run_key(name: str, args: argparse.Namespace, seed: int) -> str:
    """Directory name of one run: a hash of everything that shapes its curve except the step count (two
    names that resolve to the same settings, e.g. ``ours`` and the variant equal to the defaults, share
    one run). Neither schedule depends on the step count, so a longer run's curve serves a shorter one;
    checkpoints leave the curve as it is (a resumed run repeats the uninterrupted one bit for bit:
    tests/test_torchrun.py), so an interrupted run continues from its last one under the same key."""
    changes, scheme = VARIANTS[name][:2] if name in VARIANTS else ({}, None)
    config = settings(args, changes, seed, TRAIN_CHANGES.get(name))
    for key in ("train_steps", "checkpoint_minutes", "checkpoint_steps", "keep_checkpoints"):
        config["train"].pop(key, None)  # what the curve does not depend on
    if name == "fairseq":  # fairseq builds its own model: only the settings it is given count
        config["model"] = {key: config["model"][key] for key in ("n_layers", "d_model", "d_ff", "n_heads", "dropout")}
    shape = ["fairseq" if name == "fairseq" else "aiayn", config, repr(scheme), args.vocab_size, args.dev_lines]
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:16]


def run_ours(work: Path, name: str, args: argparse.Namespace, seed: int, out: Path) -> dict:
    """Train with our Trainer; returns its curve from ``log.csv`` (nll window means, dev_ppl rows)."""
    changes, scheme, _ = VARIANTS[name]
    torch.set_num_threads(args.threads)
    trainer = build_trainer(
        settings(args, changes, seed, TRAIN_CHANGES.get(name)), work / "bin", out, DistEnv(0, 1, torch.device("cpu"))
    )
    if scheme is not None:
        torch.manual_seed(seed)
        if isinstance(scheme, CrossApart):
            scheme.apply(trainer.setup.raw_model)
        else:
            initialize(trainer.setup.raw_model, scheme)
    if trainer.run():
        raise RuntimeError(f"{name} seed {seed}: training stopped early")
    curve: dict = {"train_nll": {}, "lr": {}, "dev_ppl": {}}
    with open(out / "log.csv", encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            step = int(row["step"])
            if row["nll"]:
                curve["train_nll"][step] = float(row["nll"])
                curve["lr"][step] = learning_rate(step + 1, args.d_model, args.warmup)
            if row["dev_ppl"]:
                curve["dev_ppl"][step] = float(row["dev_ppl"])
    summary = read_json(out / "summary.json")
    curve["tokens_per_step"] = summary["tokens_tgt"] / summary["steps"]
    return curve


def tree() -> str:
    """The commit of this checkout (with ``+changes`` when it differs from it), or ``unknown``."""

    def git(*command: str) -> str:
        done = subprocess.run(["git", *command], cwd=Path(__file__).parent, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD")
    return (commit + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")) or "unknown"


def trees(results: dict[str, list[dict]]) -> str:
    """Which tree each run's seeds were trained on. The run key leaves the code out, so a kept run serves
    a later tree; two trees whose arithmetic differs in the last digits part by step 300 by more than the
    schemes do (benchmarks/RESULTS.md), so runs compared seed by seed should share one tree."""
    used = {name: sorted({c.get("tree", "unrecorded") for c in curves}) for name, curves in results.items()}
    text = "trees: " + "; ".join(f"{name} {', '.join(found)}" for name, found in used.items())
    if len({tree for found in used.values() for tree in found}) > 1:
        text += " -- MORE THAN ONE TREE: rerun in a fresh --work to compare seed by seed"
    return text


def run(work: Path, name: str, args: argparse.Namespace, seed: int) -> dict:
    """One run's curve up to ``--steps``, trained now unless ``runs/<key>/curve.json`` holds at least as
    many steps (then cut to ``--steps``; the run's last dev perplexity is only kept at ``--steps``)."""
    folder = work / "runs" / run_key(name, args, seed)
    if (folder / "curve.json").exists():
        curve = read_json(folder / "curve.json")
        if curve["steps"] == args.steps and args.corpus and "bleu" not in curve:
            curve["bleu"] = decode(work, name, folder, args)
            write_json(folder / "curve.json", curve)
        if curve["steps"] >= args.steps:
            return truncate(curve, args.steps)
    folder.mkdir(parents=True, exist_ok=True)
    log.info("training %s, seed %d, %d steps -> %s", name, seed, args.steps, folder)
    if name == "fairseq":
        data = fairseq_preprocess(args.fairseq_python, work)
        config = settings(args, {}, seed)
        curve = run_fairseq(
            args.fairseq_python,
            data,
            config["model"],
            config["train"],
            args.steps,
            args.window,
            args.dev_every,
            seed,
            args.threads,
            folder / "fairseq.log",
            save_dir=folder / "fairseq-ckpt" if args.corpus else None,
        )
    else:
        curve = run_ours(work, name, args, seed, folder / f"train-{args.steps}")
    curve = {
        key: {str(k): v for k, v in values.items()} if isinstance(values, dict) else values
        for key, values in curve.items()
    }
    curve["steps"] = args.steps
    curve["tree"] = tree()
    if args.corpus:
        curve["bleu"] = decode(work, name, folder, args)
    write_json(folder / "curve.json", curve)
    return curve


def decode(work: Path, name: str, folder: Path, args: argparse.Namespace) -> dict:
    """Dev and test BLEU of a finished ``--corpus`` run, and its empty outputs (:mod:`parity_decode`)."""
    if name == "fairseq":
        data = fairseq_preprocess(args.fairseq_python, work)
        return parity_decode.fairseq(args.fairseq_python, work, folder / "fairseq-ckpt", data, args.threads)
    return parity_decode.ours(work, folder / f"train-{args.steps}", args.threads)


def truncate(curve: dict, steps: int) -> dict:
    """The curve up to ``steps``: per-step entries beyond it dropped (``tokens_per_step`` is the full run's;
    ``bleu``, keyed by split, is the full run's)."""
    return {
        key: {k: v for k, v in values.items() if int(k) <= steps}
        if isinstance(values, dict) and key != "bleu"
        else values
        for key, values in curve.items()
    } | {"steps": steps}


def values_at(curves: list[dict], key: str, step: int) -> list[float] | None:
    """Each seed's value of one curve at ``step``; None when a seed lacks it."""
    values = [c[key].get(str(step)) for c in curves]
    return None if not values or any(v is None for v in values) else values


def summarize(curves: list[dict], key: str, step: int) -> tuple[float, float, float, float] | None:
    """(mean, sd, min, max) over seeds of one curve's value at ``step`` (sd 0 for one seed); None when a
    seed lacks it."""
    values = values_at(curves, key, step)
    if values is None:
        return None
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return statistics.fmean(values), sd, min(values), max(values)


def cell(stats: tuple[float, float, float, float] | None, digits: int) -> str:
    if stats is None:
        return "-"
    mean, sd, low, high = stats
    return f"{mean:.{digits}f} ± {sd:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def table(results: dict[str, list[dict]], key: str, steps: list[int], digits: int) -> str:
    """A markdown table: one row per step, one column per run name (mean ± sd [min, max] over seeds)."""
    names = list(results)
    lines = ["| step | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for step in steps:
        lines.append(f"| {step} | " + " | ".join(cell(summarize(results[n], key, step), digits) for n in names) + " |")
    return "\n".join(lines)


def verdict(results: dict[str, list[dict]], steps: list[int]) -> str:
    """Each run against the first: differences of the seed means, and whether the [min, max] ranges over
    seeds overlap (the first run's spread is the yardstick)."""
    names = list(results)
    lines = [
        f"| run | step | train NLL - {names[0]} | dev PPL - {names[0]} | seed ranges overlap (NLL, PPL) |",
        "|---|---|---|---|---|",
    ]
    for name in names[1:]:
        for step in steps:
            cells, overlaps = [], []
            for key, digits in (("train_nll", 3), ("dev_ppl", 2)):
                ref, own = summarize(results[names[0]], key, step), summarize(results[name], key, step)
                if ref is None or own is None:
                    cells.append("-")
                    overlaps.append("-")
                    continue
                cells.append(f"{own[0] - ref[0]:+.{digits}f}")
                overlaps.append("yes" if own[2] <= ref[3] and ref[2] <= own[3] else "no")
            lines.append(f"| {name} | {step} | {cells[0]} | {cells[1]} | {', '.join(overlaps)} |")
    return "\n".join(lines)


def pairable(first: str, name: str, ref: list[float], own: list[float]) -> bool:
    """Whether two runs' seeds pair: both ours (one seed, one batch order and dropout masks), as many
    of each. fairseq-train draws its own, so it pairs with nothing."""
    return "fairseq" not in (first, name) and len(ref) == len(own)


def tests_at(results: dict[str, list[dict]], step: int) -> str:
    """Each run against the first at ``step``: Welch's t-test over seeds (two-sided), the seeds per run that
    would find the observed difference of means at 5% with 80% power, and the paired t-test seed by seed
    where the seeds pair (:func:`pairable`)."""
    names = list(results)
    lines = [
        f"| run | measure | difference to {names[0]} | Welch t | df | p | seeds per run for 80% power | "
        "paired t | paired p |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in names[1:]:
        for key, label, digits in (("train_nll", "train NLL", 3), ("dev_ppl", "dev PPL", 2)):
            ref, own = values_at(results[names[0]], key, step), values_at(results[name], key, step)
            if ref is None or own is None or len(ref) < 2 or len(own) < 2:
                lines.append(f"| {name} | {label} | - | - | - | - | - | - | - |")
                continue
            test, needed = welch(ref, own), seeds_needed(ref, own)
            pairs = paired(ref, own) if pairable(names[0], name, ref, own) else None
            lines.append(
                f"| {name} | {label} | {test.difference:+.{digits}f} | {test.t:+.2f} | {test.df:.1f} | "
                f"{test.p:.3f} | {needed if needed is not None else '-'} | "
                f"{f'{pairs.t:+.2f} | {pairs.p:.3f}' if pairs else '- | -'} |"
            )
    return "\n".join(lines)


def bleu_values(curves: list[dict], split: str, min_length: str, field: str = "bleu") -> list[float] | None:
    """Each seed's dev or test score (``field``: bleu, empty) at one ``decode.min_length``; None when absent."""
    values = [c.get("bleu", {}).get(split, {}).get(min_length, {}).get(field) for c in curves]
    return None if not values or any(v is None for v in values) else values


def bleu_report(results: dict[str, list[dict]]) -> str:
    """sacreBLEU of each run's averaged model on dev and test, and its empty outputs, with each
    ``decode.min_length`` it was decoded with (fairseq: its default, 1); then each run against the first
    on test BLEU at min_length 1: Welch's t over seeds, the paired t seed by seed, and whether its seed
    range overlaps the first run's."""
    names = list(results)
    lines = [
        "| run | min_length | dev BLEU | test BLEU | dev empty outputs | test empty outputs |",
        "|---|---|---|---|---|---|",
    ]
    for name in names:
        for min_length in ("0", "1"):
            dev, test = bleu_values(results[name], "dev", min_length), bleu_values(results[name], "test", min_length)
            if test is None:
                continue
            empty = [bleu_values(results[name], split, min_length, "empty") for split in ("dev", "test")]
            lines.append(
                f"| {name} | {min_length} | {cell(spread(dev), 2)} | {cell(spread(test), 2)} | "
                f"{cell(spread(empty[0]), 1)} | {cell(spread(empty[1]), 1)} |"
            )
    lines += ["", min_length_verdict(results)]
    lines += [
        "",
        f"| run | test BLEU - {names[0]} | Welch t | p | paired t | paired p | ranges overlap |",
        "|---|---|---|---|---|---|---|",
    ]
    ref = bleu_values(results[names[0]], "test", "1")
    for name in names[1:]:
        own = bleu_values(results[name], "test", "1")
        if ref is None or own is None or len(ref) < 2 or len(own) < 2:
            continue
        test, pairs = welch(ref, own), paired(ref, own) if pairable(names[0], name, ref, own) else None
        overlap = max(min(ref), min(own)) <= min(max(ref), max(own))
        lines.append(
            f"| {name} | {test.difference:+.2f} | {test.t:+.2f} | {test.p:.3f} | "
            f"{f'{pairs.t:+.2f} | {pairs.p:.3f}' if pairs else '- | -'} | {'yes' if overlap else 'no'} |"
        )
    return "\n".join(lines)


def min_length_verdict(results: dict[str, list[dict]]) -> str:
    """How dev BLEU changes from ``decode.min_length`` 0 to 1, model by model (the models decoded both ways)."""
    changes = [
        one - zero
        for curves in results.values()
        for zero, one in zip(bleu_values(curves, "dev", "0") or [], bleu_values(curves, "dev", "1") or [])
    ]
    if not changes:
        return "decode.min_length 1 against 0: no model decoded both ways"
    up, same = sum(c > 0 for c in changes), sum(c == 0 for c in changes)
    return (
        f"decode.min_length 1 against 0, dev BLEU model by model: higher in {up}, equal in {same}, lower in "
        f"{len(changes) - up - same} of {len(changes)} (from {min(changes):+.2f} to {max(changes):+.2f})"
    )


def spread(values: list[float] | None) -> tuple[float, float, float, float] | None:
    """(mean, sd, min, max) of ``values`` (sd 0 for one); None for none."""
    if not values:
        return None
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0, min(values), max(values)


def report(results: dict[str, list[dict]], args: argparse.Namespace) -> str:
    train_steps = list(range(args.window, args.steps + 1, args.window))
    dev_steps = sorted({*range(args.dev_every, args.steps + 1, args.dev_every), args.steps})
    lr_steps = sorted({s for s in (1, args.warmup // 2, args.warmup, args.steps) if s in train_steps})
    tokens = "; ".join(
        f"{name} {sum(c['tokens_per_step'] for c in curves) / len(curves):.0f}" for name, curves in results.items()
    )
    return "\n\n".join(
        [
            f"target tokens per step (end-of-sentence included), mean over the run and seeds: {tokens}",
            trees(results),
            f"train NLL (nats per target token, mean of the {args.window} steps up to each step), "
            "mean ± sd [min, max] over seeds",
            table(results, "train_nll", train_steps, 3),
            "dev perplexity (per target token, end-of-sentence included), mean ± sd [min, max] over seeds",
            table(results, "dev_ppl", dev_steps, 2),
            "learning rate of the update after each step (fairseq: as logged)",
            table(results, "lr", lr_steps, 7),
            "against the first run at the dev steps",
            verdict(results, dev_steps),
            f"against the first run at step {args.steps} (the last), over seeds",
            tests_at(results, args.steps),
            *(
                [
                    "averaged model (the last 5 spaced checkpoints), beam 4, alpha 0.6, sacreBLEU on "
                    "Moses-detokenized output",
                    bleu_report(results),
                ]
                if args.corpus
                else []
            ),
        ]
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True, help="data, runs and results go here")
    parser.add_argument(
        "--runs", nargs="+", default=["fairseq", "ours"], help=f"fairseq and/or model variants: {', '.join(VARIANTS)}"
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--fairseq-python", default="/work/venvs/fairseq/bin/python")
    parser.add_argument("--wmt", type=Path, default=WMT, help="the shared data/wmt folder")
    parser.add_argument(
        "--corpus",
        type=Path,
        default=None,
        help="a tab-separated English-German corpus file "
        "instead of the WMT text (split by parity_data.split_tab_corpus; --dev-lines dev and test)",
    )
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--dev-lines", type=int, default=1000, help="last lines of newstest2013 held out as dev")
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--d-ff", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--tokens-per-step", type=int, default=3500, help="padded tokens per side per step")
    parser.add_argument("--warmup", type=int, default=400)
    parser.add_argument("--window", type=int, default=50, help="steps averaged into each train NLL figure")
    parser.add_argument("--dev-every", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--output", type=Path, default=None, help="also write the tables here (markdown)")
    args = parser.parse_args(argv)
    unknown = [name for name in args.runs if name != "fairseq" and name not in VARIANTS]
    if unknown:
        parser.error(f"unknown run name(s) {unknown}: use fairseq or one of {', '.join(VARIANTS)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_logging()
    args.work.mkdir(parents=True, exist_ok=True)
    data = prepare(args.corpus or args.wmt, args.work, args.vocab_size, args.dev_lines)
    log.info("data: %s", data)
    results = {name: [run(args.work, name, args, seed) for seed in args.seeds] for name in args.runs}
    text = report(results, args)
    print(text)
    if args.output:
        args.output.write_text(text + "\n", encoding="utf-8")
    return 0 if all(math.isfinite(v) for c in results.values() for s in c for v in s["train_nll"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
