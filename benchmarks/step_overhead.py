"""What a training step costs besides its arithmetic, measured on a CPU: batch shapes per epoch, operations
per step, host time with the compute removed, and the loss's memory traffic; beside fairseq-train's step.

    PYTHONPATH=src python benchmarks/step_overhead.py --fairseq-python /work/venvs/fairseq/bin/python

Sections (``--sections``, all by default):

- ``shapes``: real lengths: the shared WMT EN-DE training sample and newstest 2012-2014 (about 19,000
  pairs after the workflow's default tokenization and cleaning) in subwords of a sentencepiece BPE of
  ``--vocab-size`` pieces learned on them, and that joint (source, target) distribution resampled to
  450,000 and 4.5 million pairs (WMT14 EN-DE's size). For budgets of 25,000 tokens a pass (one GPU,
  one pass a step), 12,500 (two passes) and 3,125 (each of the paper's 8 GPUs): batches per epoch,
  distinct (rows, S, T), and the padding share of each side, greedy packing (``train.batch_shapes:
  0``) against the ladder (``64``, :mod:`aiayn.runtime.shapes`). Also tensor2tensor's batches at
  3d9c62f2 (``utils/data_reader.py``: a pair's bucket by its longer side with eos, boundaries
  8, 12, 16, 24, ... for ``batching_mantissa_bits=1`` of ``basic_params1`` in ``models/common_hparams.py``,
  ``batch_size // boundary`` rows for transformer_base's 4,096 per GPU, each batch padded to its own
  longest pair, batches filled in the shuffled order pairs arrive in): the real tokens a GPU's batch
  and an 8-GPU step held, beside ours at 25,000 tokens a step, on the 4.5 million pairs.
- ``ops``: aten operations of one optimizer step of the base and big models at 25,000 target tokens
  on one GPU, in one pass and in two (bf16 autocast, the paper's vocabulary of 37,000), counted by a
  ``TorchDispatchMode`` on the CPU; ``launching`` leaves out what starts no GPU kernel (views,
  ``detach``, ``empty``). Where the CPU's code path differs from the GPU's it is set to the GPU's for
  the count: dropout as one ``native_dropout`` (CUDA's fused kernel; our CPU's draws uniforms), the
  loss's blocks as large as on a GPU. fairseq-train's step on the same batch (its ``transformer``
  model, ``label_smoothed_cross_entropy`` criterion and Adam, the gradients scaled and their norm
  taken as its trainer does), fp32 both, with ``--fairseq-python``.
- ``host``: milliseconds per optimizer step at the paper's depth with the compute removed (width 16,
  a vocabulary of 64, 8 sentences of 10 tokens, one thread, attention stood in for by two cheap
  operations: :func:`gpu_code_paths`): ours eager, ours compiled (``train.compile``), fairseq's eager
  step; median of ``--steps`` after a warm-up, twice, alternating.
- ``loss``: bytes of memory read and written per logit by the loss, forward and backward, bf16
  logits: the eager blocked loss (every tensor an operation reads or writes, counted per call) and
  the compiled fused loss (the kernels inductor generates, from its scheduler's buffer sizes).

Prints markdown tables; ``--output F.json`` writes the figures too. Not a test.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import logging
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

log = logging.getLogger("step_overhead")
PAPER_VOCAB = 37000
STEP_TOKENS = 25000
BUDGETS = (25000, 12500, 3125)
SIZES = (450_000, 4_500_000)
MODELS = {"base": {"d_model": 512, "d_ff": 2048, "n_heads": 8}, "big": {"d_model": 1024, "d_ff": 4096, "n_heads": 16}}
# Operations that start no kernel on a GPU (views and aliases are told by their schema)
NO_KERNEL = {
    "detach",
    "empty",
    "empty_like",
    "empty_strided",
    "new_empty",
    "new_empty_strided",
    "lift_fresh",
    "_local_scalar_dense",
    "_unsafe_view",
    "set_",
}


# ---- shapes -------------------------------------------------------------------------------------


def real_lengths(work: Path, vocab_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Source and target lengths in subwords (without eos) of the shared EN-DE pairs (module docstring)."""
    cache = work / f"lengths-{vocab_size}.npz"
    if cache.exists():
        saved = np.load(cache)
        return saved["src"], saved["tgt"]
    import sentencepiece as spm
    from studies.preprocessing_effect import WMT, training_text

    from aiayn.data.bpe import learn
    from aiayn.data.clean import filter_pairs, new_counts
    from aiayn.data.lines import read_lines
    from aiayn.data.tokenize import MosesPipeline
    from aiayn.options import BpeConfig, CleanConfig, TokenizeConfig

    sides = {lang: training_text(WMT, "train_sample/onmt-wmt-ende-10k.tok", lang, True) for lang in ("en", "de")}
    for name in ("newstest2012", "newstest2013"):
        for lang in ("en", "de"):
            sides[lang] += read_lines(str(WMT / "plain" / f"{name}.{lang}"))
    for lang in ("en", "de"):
        sides[lang] += read_lines(str(WMT / "plain" / f"newstest2014-full.en-de.{lang}"))
    d = TokenizeConfig()
    tokenized = [
        MosesPipeline(
            lang,
            normalize_punctuation=False,
            remove_non_printing=d.remove_non_printing,
            aggressive_dash_splits=d.aggressive_dash_splits,
            escape=d.escape,
        )(sides[lang])
        for lang in ("en", "de")
    ]
    pairs = list(filter_pairs(list(zip(*tokenized)), CleanConfig(), new_counts()))
    for i, lang in enumerate(("en", "de")):
        (work / f"pairs.{lang}").write_text("".join(p[i] + "\n" for p in pairs), encoding="utf-8")
    learn(
        [str(work / "pairs.en"), str(work / "pairs.de")],
        str(work / f"bpe-{vocab_size}"),
        BpeConfig(vocab_size=vocab_size),
    )
    model = spm.SentencePieceProcessor(model_file=str(work / f"bpe-{vocab_size}.model"))
    src = np.array([len(model.encode(s)) for s, _ in pairs])
    tgt = np.array([len(model.encode(t)) for _, t in pairs])
    np.savez(cache, src=src, tgt=tgt)
    return src, tgt


def shape_rows(src: np.ndarray, tgt: np.ndarray, pairs: int, budget: int) -> list[dict]:
    """Greedy packing and the ladder of :data:`aiayn.options.train.GPU_BATCH_SHAPES` on ``pairs`` pairs."""
    from aiayn.options.train import GPU_BATCH_SHAPES
    from aiayn.runtime.batches import ladder_batches, make_batches
    from aiayn.runtime.shapes import padding_share

    rows = []
    for name, shapes in (("greedy (0)", 0), (f"ladder ({GPU_BATCH_SHAPES})", GPU_BATCH_SHAPES)):
        started = time.perf_counter()
        if shapes:
            batches, sizes, _ = ladder_batches(src, tgt, budget, shapes, 256)
        else:
            (batches, _), sizes = make_batches(src, tgt, budget, 256), None
        seconds = time.perf_counter() - started
        shape_of = sizes or [(len(b), int(src[b].max()) + 1, int(tgt[b].max()) + 1) for b in batches]
        pad_src, pad_tgt = padding_share(batches, sizes, src + 1, tgt + 1)
        rows.append(
            {
                "pairs": pairs,
                "budget": budget,
                "packing": name,
                "batches": len(batches),
                "shapes": len(set(shape_of)),
                "pad_src": round(pad_src, 4),
                "pad_tgt": round(pad_tgt, 4),
                "seconds": round(seconds, 2),
            }
        )
    return rows


def t2t_boundaries(max_length: int = 256, min_length: int = 8, mantissa_bits: int = 1) -> list[int]:
    """``bucket_boundaries`` of tensor2tensor's ``utils/data_reader.py`` at 3d9c62f2."""
    x, boundaries = min_length, []
    while x < max_length:
        boundaries.append(x)
        x += 2 ** max(0, int(np.log2(x)) - mantissa_bits)
    return boundaries


def t2t_batches(
    src_need: np.ndarray, tgt_need: np.ndarray, batch_size: int = 4096, max_length: int = 256, seed: int = 0
) -> list[np.ndarray]:
    """One epoch of tensor2tensor's training batches on one GPU (module docstring); lengths with eos."""
    boundaries = t2t_boundaries(max_length)
    sizes = [max(1, batch_size // b) for b in [*boundaries, max_length]]
    longest = np.maximum(src_need, tgt_need)
    arrival = np.random.default_rng(seed).permutation(len(longest))
    arrival = arrival[longest[arrival] <= max_length]
    bucket = np.searchsorted(boundaries, longest[arrival], side="left")
    batches = []
    for k, size in enumerate(sizes):
        members = arrival[bucket == k]
        batches += [members[i : i + size] for i in range(0, len(members) - size + 1, size)]
    return batches


def t2t_rows(src: np.ndarray, tgt: np.ndarray) -> list[dict]:
    """Real and padded tokens of tensor2tensor's batches (4,096 per GPU, 8 GPUs a step) and of ours."""
    from aiayn.runtime.batches import ladder_batches, make_batches

    src_need, tgt_need = src + 1, tgt + 1
    rows = []
    t2t = t2t_batches(src_need, tgt_need)
    ours_greedy, _ = make_batches(src, tgt, STEP_TOKENS, 256)
    ours_ladder, shapes, _ = ladder_batches(src, tgt, STEP_TOKENS, 64, 256)
    for name, batches, per_step, sizes in (
        ("tensor2tensor, 4,096 a GPU x 8", t2t, 8, None),
        ("ours greedy, 25,000 a step", ours_greedy, 1, None),
        ("ours ladder, 25,000 a step", ours_ladder, 1, shapes),
    ):
        real_src = np.mean([src_need[b].sum() for b in batches]) * per_step
        real_tgt = np.mean([tgt_need[b].sum() for b in batches]) * per_step
        shape = sizes or [(len(b), src_need[b].max(), tgt_need[b].max()) for b in batches]
        longer = np.mean([r * max(s, t) for r, s, t in shape]) * per_step
        rows.append(
            {
                "batching": name,
                "real_src": round(real_src),
                "real_tgt": round(real_tgt),
                "padded_longer_side": round(longer),
            }
        )
    return rows


# ---- ops ----------------------------------------------------------------------------------------


def launches(func) -> bool:
    """Whether an aten operation starts a kernel on a GPU (not a view, an alias, or an allocation)."""
    if func.__name__.split(".")[0] in NO_KERNEL:
        return False
    returns = func._schema.returns
    return not (returns and all(r.alias_info is not None and not r.alias_info.is_write for r in returns))


class CountOps(TorchDispatchMode):
    """Counts aten operations (and the bytes of the tensors each reads and writes, when ``bytes``)."""

    def __init__(self):
        super().__init__()
        self.ops = collections.Counter()
        self.bytes = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        self.ops[func] += 1
        if launches(func):
            seen = set()
            for t in [*torch.utils._pytree.tree_leaves((args, kwargs)), *torch.utils._pytree.tree_leaves(out)]:
                if isinstance(t, torch.Tensor) and t.dim() and id(t) not in seen:
                    seen.add(id(t))
                    self.bytes += t.numel() * t.element_size()
        return out

    def summary(self) -> dict:
        return {"ops": sum(self.ops.values()), "launching": sum(n for f, n in self.ops.items() if launches(f))}


@contextlib.contextmanager
def gpu_code_paths(attention_stand_in: bool = False):
    """Our CPU code paths set to the GPU's where they differ, for counting (module docstring); with
    ``attention_stand_in``, attention as two cheap operations (a mean and an addition) in place of
    the CPU's flash kernel, which spends 100-250 us a call on its own at the host section's sizes, where
    a GPU's costs a launch."""
    import aiayn.model.attention as attention
    import aiayn.model.functional as functional
    import aiayn.runtime.loss as loss

    dropout, blocks, sdpa = functional.dropout, dict(loss.BLOCK_ELEMENTS), attention.F.scaled_dot_product_attention

    def native(x, p, training):
        return torch.native_dropout(x, p, True)[0] if training and p > 0 else x

    def stand_in(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
        return q + v.mean(dim=-2, keepdim=True)  # (B, h, T, d_v) with d_k = d_v

    functional.dropout = native
    for module in [m for name, m in sys.modules.items() if name.startswith("aiayn.model")]:
        if getattr(module, "dropout", None) is dropout:
            module.dropout = native
    loss.BLOCK_ELEMENTS["cpu"] = loss.BLOCK_ELEMENTS["cuda"]
    if attention_stand_in:
        attention.F.scaled_dot_product_attention = stand_in
    try:
        yield
    finally:
        for module in [m for name, m in sys.modules.items() if name.startswith("aiayn.model")]:
            if getattr(module, "dropout", None) is native:
                module.dropout = dropout
        loss.BLOCK_ELEMENTS.update(blocks)
        attention.F.scaled_dot_product_attention = sdpa


def batch_tensors(rows: int, src_len: int, tgt_len: int, vocab: int, seed: int = 0) -> dict:
    """One batch of random ids, right-padded as collate pads: sources of src_len - 3 .. src_len tokens
    with eos, targets likewise (pad 0, bos 2, eos 3)."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, vocab, (rows, src_len), generator=g)
    tgt = torch.randint(4, vocab, (rows, tgt_len + 1), generator=g)
    s_len = torch.randint(src_len - 3, src_len + 1, (rows,), generator=g)
    t_len = torch.randint(tgt_len - 3, tgt_len + 1, (rows,), generator=g)
    positions = torch.arange(max(src_len, tgt_len + 1))
    src[positions[:src_len] >= s_len[:, None]] = 0
    src[torch.arange(rows), s_len - 1] = 3
    tgt[positions[: tgt_len + 1] > t_len[:, None]] = 0
    tgt[torch.arange(rows), t_len] = 3
    tgt[:, 0] = 2
    return {"src": src, "tgt_in": tgt[:, :-1].clone(), "tgt_out": tgt[:, 1:].clone(), "src_lengths": s_len}


def our_step(model_cfg: dict, vocab: int, batches: list[dict], precision: str, compiled: bool = False):
    """A step function of our trainer's pieces (TrainingLoss, train.step.apply_update) over ``batches``
    (one pass each), as ``Trainer.train_step`` runs them on a GPU: the loss's way is a GPU's."""
    from aiayn.model import Transformer
    from aiayn.options import ModelConfig
    from aiayn.train.compiled import CompiledStep
    from aiayn.train.forward import TrainingLoss, way_for
    from aiayn.train.step import apply_update

    torch.manual_seed(0)
    model = Transformer(ModelConfig(**model_cfg), vocab, 0).train()
    way = way_for(torch.device("cuda"), precision, compiled)
    loss = TrainingLoss(model, 0.1, way, torch.bfloat16 if precision == "bf16" else None)
    forward = CompiledStep(loss) if compiled else loss  # as the trainer compiles it
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9, fused=True)
    prepared = []
    for b in batches:
        gold = b["tgt_out"].reshape(-1).ne(0).nonzero().squeeze(1)
        prepared.append((b["src"], b["tgt_in"], b["tgt_out"], gold, True))

    def step() -> None:
        sums = None
        for args in prepared:
            value, nll, n = forward(*args)
            value.backward()
            stats = torch.stack([value.detach().double(), nll.double(), n.double(), args[0].ne(0).sum().double()])
            sums = stats if sums is None else sums + stats
        stats = torch.cat([sums, torch.zeros(2, dtype=torch.float64)])
        params = [p for p in model.parameters() if p.grad is not None]
        apply_update(params, optimizer, stats, 1, 0.0, 1e-4)

    return step


def fairseq_step(model_cfg: dict, vocab: int, batches: list[dict]):
    """fairseq-train's step on ``batches`` (run under the fairseq environment's python): its model,
    criterion and Adam; gradients scaled by 1 / sample size and their norm taken (trainer.train_step)."""
    from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterion
    from fairseq.data import Dictionary
    from fairseq.models.transformer import TransformerModel, base_architecture
    from fairseq.optim.adam import FairseqAdam, FairseqAdamConfig

    dictionary = Dictionary()
    for i in range(vocab - len(dictionary)):
        dictionary.add_symbol(f"w{i}")

    class Task:
        source_dictionary = target_dictionary = dictionary

    d, ff, heads, layers = model_cfg["d_model"], model_cfg["d_ff"], model_cfg["n_heads"], model_cfg.get("n_layers", 6)
    args = argparse.Namespace(
        encoder_layers=layers,
        decoder_layers=layers,
        encoder_embed_dim=d,
        decoder_embed_dim=d,
        encoder_ffn_embed_dim=ff,
        decoder_ffn_embed_dim=ff,
        encoder_attention_heads=heads,
        decoder_attention_heads=heads,
        share_all_embeddings=True,
        dropout=0.1,
        max_source_positions=1024,
        max_target_positions=1024,
    )
    base_architecture(args)
    torch.manual_seed(0)
    model = TransformerModel.build_model(args, Task()).train()
    criterion = LabelSmoothedCrossEntropyCriterion(Task(), sentence_avg=False, label_smoothing=0.1)
    optimizer = FairseqAdam(
        FairseqAdamConfig(lr=[1e-4], adam_betas="(0.9, 0.98)", adam_eps=1e-9), list(model.parameters())
    )
    samples = [
        {
            "net_input": {"src_tokens": b["src"], "src_lengths": b["src_lengths"], "prev_output_tokens": b["tgt_in"]},
            "target": b["tgt_out"],
            "ntokens": int(b["tgt_out"].ne(0).sum()),
        }
        for b in batches
    ]

    def step() -> None:
        size = 0
        for sample in samples:
            value, sample_size, _ = criterion(model, sample)
            value.backward()
            size += sample_size
        optimizer.multiply_grads(1.0 / size)
        optimizer.clip_grad_norm(0.0)
        optimizer.step()
        optimizer.zero_grad()

    return step


def count_step(step) -> dict:
    step()  # optimizer state and lazy buffers made before the count
    with CountOps() as counter:
        step()
    return counter.summary()


def step_batches(passes: int, vocab: int) -> list[dict]:
    """A step of 25,000 tokens a side in ``passes`` passes: rows of 28 source and 30 target tokens."""
    rows = STEP_TOKENS // passes // 31
    return [batch_tensors(rows, 28, 30, vocab, seed=i) for i in range(passes)]


def tiny(model: str) -> dict:
    """The paper's depth at width 16: what a step costs when its arithmetic costs nothing."""
    return {"n_layers": 6, "d_model": 16, "d_ff": 64, "n_heads": MODELS[model]["n_heads"], "d_k": 2, "d_v": 2}


def ops_rows(args) -> list[dict]:
    rows = []
    for name in ("base", "big"):
        for passes in (1, 2):
            batches = step_batches(passes, PAPER_VOCAB)
            for precision in ("fp32", "bf16"):
                with gpu_code_paths():
                    counts = count_step(our_step(tiny(name), PAPER_VOCAB, batches, precision))
                rows.append({"model": name, "passes": passes, "toolkit": "aiayn", "precision": precision, **counts})
            if args.fairseq_python:
                rows.append(
                    {
                        "model": name,
                        "passes": passes,
                        "toolkit": "fairseq",
                        "precision": "fp32",
                        **peer(args, "count", name, passes),
                    }
                )
    return rows


def peer(args, what: str, model: str, passes: int) -> dict:
    """Run this script's ``--peer`` mode under fairseq's python; its JSON answer."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src"), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [args.fairseq_python, __file__, "--peer", what, model, str(passes)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"fairseq peer failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_peer(what: str, model: str, passes: int) -> dict:
    """The fairseq side of ``ops`` and ``host`` (in fairseq's environment)."""
    import torch.nn.functional as F

    torch.set_num_threads(1)
    if what == "count":
        dropout = F.dropout
        F.dropout = lambda x, p=0.5, training=True, inplace=False: (
            torch.native_dropout(x, p, True)[0] if training and p > 0 else x
        )
        try:
            return count_step(fairseq_step(tiny(model), PAPER_VOCAB, step_batches(passes, PAPER_VOCAB)))
        finally:
            F.dropout = dropout
    sdpa = F.scaled_dot_product_attention
    F.scaled_dot_product_attention = lambda q, k, v, *args, **kwargs: q + v.mean(dim=-2, keepdim=True)
    try:  # attention as our host section stands it in (gpu_code_paths)
        return {"ms": host_ms(fairseq_step(tiny(model), 64, [batch_tensors(8, 10, 10, 64)]), int(passes))}
    finally:
        F.scaled_dot_product_attention = sdpa


# ---- host ---------------------------------------------------------------------------------------


def host_ms(step, steps: int) -> float:
    """Median milliseconds of ``step`` over ``steps`` calls, after as many untimed ones."""
    for _ in range(steps):
        step()
    times = []
    for _ in range(steps):
        started = time.perf_counter()
        step()
        times.append(time.perf_counter() - started)
    return round(1000 * statistics.median(times), 2)


def host_rows(args) -> list[dict]:
    torch.set_num_threads(1)
    rows = []
    for round_ in (1, 2):
        for name in ("base", "big"):
            batch = [batch_tensors(8, 10, 10, 64)]
            row = {"round": round_, "model": name}
            for label, compiled in (("aiayn_eager_ms", False), ("aiayn_compiled_ms", True)):
                with gpu_code_paths(attention_stand_in=True):
                    row[label] = host_ms(our_step(tiny(name), 64, batch, "fp32", compiled=compiled), args.steps)
                torch._dynamo.reset()
            if args.fairseq_python:
                row["fairseq_eager_ms"] = peer(args, "host", name, args.steps)["ms"]
            rows.append(row)
    return rows


# ---- loss ---------------------------------------------------------------------------------------


def compiled_loss_bytes(rows: int, vocab: int, dtype: torch.dtype) -> tuple[float, float]:
    """(forward, backward) bytes per logit that the kernels inductor generates for the compiled
    :func:`aiayn.runtime.loss.fused_label_smoothed_loss` read and write, by its scheduler's sizes of
    each kernel's buffers (each buffer once per kernel), caches off so that every graph is generated."""
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config
    from torch._inductor import scheduler

    from aiayn.runtime.loss import fused_label_smoothed_loss

    seen, original = [], scheduler.Scheduler.codegen

    def codegen(self):
        seen.append(sum(node.get_read_write_buffers_sizes() for node in self.nodes))
        return original(self)

    scheduler.Scheduler.codegen = codegen
    try:
        torch._dynamo.reset()
        with inductor_config.patch(fx_graph_cache=False), functorch_config.patch(enable_autograd_cache=False):
            logits = torch.randn(rows, vocab, dtype=dtype, requires_grad=True)
            target = torch.randint(0, vocab, (rows,))
            loss, _, _ = torch.compile(fused_label_smoothed_loss)(logits, target, 0.1, 0)
            loss.backward()
    finally:
        scheduler.Scheduler.codegen = original
        torch._dynamo.reset()
    forward, backward = seen
    return forward / (rows * vocab), backward / (rows * vocab)


def eager_loss_bytes(rows: int, vocab: int, dtype: torch.dtype) -> tuple[float, float]:
    """(forward, backward) bytes per logit the eager blocked loss's operations read and write (each
    tensor an operation touches counted once for it), with a GPU's block size."""
    from aiayn.runtime.loss import label_smoothed_loss

    logits = torch.randn(rows, vocab, dtype=dtype, requires_grad=True)
    target = torch.randint(0, vocab, (rows,))
    with gpu_code_paths(), CountOps() as forward:
        loss, _, _ = label_smoothed_loss(logits, target, 0.1, 0)
    with CountOps() as backward:
        loss.backward()
    return forward.bytes / (rows * vocab), backward.bytes / (rows * vocab)


def loss_rows() -> list[dict]:
    rows = []
    for name, measure in (
        ("eager blocked (label_smoothed_loss)", eager_loss_bytes),
        ("compiled fused (fused_label_smoothed_loss)", compiled_loss_bytes),
    ):
        forward, backward = measure(8192, 9000, torch.bfloat16)
        rows.append(
            {
                "loss": name,
                "forward": round(forward, 2),
                "backward": round(backward, 2),
                "total": round(forward + backward, 2),
            }
        )
    return rows


# ---- main ---------------------------------------------------------------------------------------


def table(rows: list[dict]) -> str:
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += [
        "| " + " | ".join(f"{r.get(k, ''):,}" if isinstance(r.get(k), int) else str(r.get(k, "")) for k in keys) + " |"
        for r in rows
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/aiayn-step-overhead"))
    parser.add_argument(
        "--sections", nargs="+", default=["shapes", "ops", "host", "loss"], choices=("shapes", "ops", "host", "loss")
    )
    parser.add_argument("--vocab-size", type=int, default=16000, help="the BPE of the real lengths")
    parser.add_argument("--steps", type=int, default=30, help="timed steps of the host section")
    parser.add_argument("--fairseq-python", help="python of a fairseq environment (peers.md): fairseq's figures")
    parser.add_argument("--output", type=Path, help="also write the figures as JSON")
    parser.add_argument("--peer", nargs=3, metavar=("WHAT", "MODEL", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.peer:
        print(json.dumps(run_peer(args.peer[0], args.peer[1], int(args.peer[2]))))
        return 0
    logging.basicConfig(level=logging.WARNING)
    args.work.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    figures = {"torch": torch.__version__}
    if "shapes" in args.sections:
        src, tgt = real_lengths(args.work, args.vocab_size)
        rows = [r for b in BUDGETS for r in shape_rows(src, tgt, len(src), b)]
        for n in SIZES:
            pick = np.random.default_rng(0).integers(0, len(src), n)
            rows += [r for b in BUDGETS for r in shape_rows(src[pick], tgt[pick], n, b)]
        figures["shapes"], figures["tensor2tensor"] = rows, t2t_rows(src[pick], tgt[pick])  # WMT14's size
        print(table(rows), "\n")
        print(table(figures["tensor2tensor"]), "\n")
    for section, rows_of in (("ops", lambda: ops_rows(args)), ("host", lambda: host_rows(args)), ("loss", loss_rows)):
        if section in args.sections:
            figures[section] = rows_of()
            print(table(figures[section]), "\n", flush=True)
    if args.output:
        args.output.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
