"""A/B of one training step, ours against fairseq's, alternating in one process (robust to load).

    PYTHONPATH=src /path/to/fairseq-venv/bin/python benchmarks/studies/ab_fairseq_step.py --steps 12

Both models: 3+3 layers, d_model 256, 4 heads, d_ff 1024, shared embeddings, dropout 0.1, a
10,000-symbol vocabulary; the same batch of 128 x 32 target tokens (4096), label smoothing 0.1 and
fused Adam. Steps alternate (ABBA) so that whatever else runs on the machine hits both alike;
prints the median target tokens/s (real target tokens) from the third step on. Ours runs as the
Trainer runs it on a CPU: MKL's products (``train.cpu_matmul``; ``--cpu-matmul onednn``: oneDNN's), logits
of the gold positions only, formed in blocks by the loss (:func:`aiayn.runtime.loss.projected_label_smoothed_loss`).

``--padded``: the batch is padded as a length-sorted training batch is (128 sentences, source
lengths 25-32, each target within 20% of its source, padding on the right), so both models mask.
``--profile``: after the timed steps, ``torch.profiler`` over 4 more steps of each; prints each
model's operators by self CPU time side by side (where the step's time goes, op by op).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from aiayn.model import Transformer
from aiayn.model.functional import onednn_available
from aiayn.options import ModelConfig
from aiayn.runtime.loss import projected_label_smoothed_loss


def fairseq_model(vocab: int):
    """fairseq's ``transformer`` architecture at the benchmark shape, and its dictionary."""
    from fairseq.data import Dictionary
    from fairseq.models.transformer import TransformerModel, base_architecture

    dictionary = Dictionary()
    for i in range(vocab - len(dictionary)):
        dictionary.add_symbol(f"w{i}")

    class Task:
        source_dictionary = target_dictionary = dictionary

    args = argparse.Namespace(
        encoder_layers=3,
        decoder_layers=3,
        encoder_embed_dim=256,
        decoder_embed_dim=256,
        encoder_ffn_embed_dim=1024,
        decoder_ffn_embed_dim=1024,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        share_all_embeddings=True,
        dropout=0.1,
        max_source_positions=1024,
        max_target_positions=1024,
    )
    base_architecture(args)
    return TransformerModel.build_model(args, Task()).train(), dictionary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--padded", action="store_true", help="a padded batch of varied lengths")
    parser.add_argument("--profile", action="store_true", help="then print both models' operator times")
    parser.add_argument(
        "--cpu-matmul",
        choices=("mkl", "onednn"),
        default="mkl",
        help="our model's float32 products, as train.cpu_matmul",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    from fairseq.criterions.label_smoothed_cross_entropy import label_smoothed_nll_loss

    theirs, dictionary = fairseq_model(10000)
    shape = ModelConfig(n_layers=3, d_model=256, d_ff=1024, n_heads=4, d_k=64, d_v=64)
    ours = Transformer(shape, len(dictionary), dictionary.pad()).train()
    ours.use_onednn(args.cpu_matmul == "onednn" and onednn_available())  # as the Trainer does (train.cpu_matmul)
    g = torch.Generator().manual_seed(0)
    src, tgt = (torch.randint(4, len(dictionary), (128, 32), generator=g) for _ in range(2))
    lengths = torch.full((128,), 32)
    if args.padded:
        src_len = torch.randint(25, 33, (128,), generator=g)
        tgt_len = (src_len * (0.8 + 0.4 * torch.rand(128, generator=g))).long().clamp(1, 32)
        positions = torch.arange(32)
        src[positions >= src_len[:, None]] = dictionary.pad()
        tgt[positions >= tgt_len[:, None]] = dictionary.pad()
        lengths, tgt = src_len, tgt[:, : int(tgt_len.max())]
    tokens = int(tgt.ne(dictionary.pad()).sum())
    optimizers = {
        name: torch.optim.Adam(m.parameters(), lr=1e-4, fused=True)
        for name, m in (("fairseq", theirs), ("aiayn", ours))
    }

    def loss_fairseq():
        logits, _ = theirs(src, lengths, tgt)
        lprobs = F.log_softmax(logits.float(), dim=-1).view(-1, logits.shape[-1])
        return label_smoothed_nll_loss(lprobs, tgt.view(-1), 0.1, ignore_index=dictionary.pad(), reduce=True)[0]

    gold_rows = tgt.view(-1).ne(dictionary.pad()).nonzero().squeeze(1)  # as collate lists them

    def loss_aiayn():  # as the Trainer's on a CPU in float32: the loss forms the gold rows' logits in blocks
        hidden = ours.states(src, tgt, args.padded, gold_rows)
        return projected_label_smoothed_loss(
            hidden, ours.output_matrix(), tgt.view(-1)[gold_rows], 0.1, dictionary.pad()
        )[0]

    def step(name: str) -> None:
        losses[name]().backward()
        optimizers[name].step()
        optimizers[name].zero_grad(set_to_none=True)

    losses, rates = {"fairseq": loss_fairseq, "aiayn": loss_aiayn}, {"fairseq": [], "aiayn": []}
    for i in range(args.steps):
        for name in ("aiayn", "fairseq") if i % 2 == 0 else ("fairseq", "aiayn"):
            start = time.perf_counter()
            step(name)
            rates[name].append(tokens / (time.perf_counter() - start))
    for name, values in rates.items():
        print(f"{name}: median {statistics.median(values[2:]):.0f} target tokens/s (steps 3-{args.steps})")
    if args.profile:
        print(operator_table({name: profile_steps(lambda: step(name)) for name in ("aiayn", "fairseq")}))
    return 0


def profile_steps(step, steps: int = 4) -> dict[str, tuple[float, int]]:
    """Operator -> (self CPU seconds per step, calls per step) over ``steps`` steps."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
    return {e.key: (e.self_cpu_time_total / 1e6 / steps, e.count // steps) for e in prof.key_averages()}


def operator_table(profiles: dict[str, dict[str, tuple[float, int]]], rows: int = 25) -> str:
    """The operators that take most time in either model: seconds and calls per step, each model."""
    names = list(profiles)
    keys = sorted(
        {k for p in profiles.values() for k in p}, key=lambda k: -max(p.get(k, (0.0, 0))[0] for p in profiles.values())
    )
    lines = [f"{'operator (self CPU per step)':44s}" + "".join(f"{n:>22s}" for n in names)]
    for key in keys[:rows]:
        cells = "".join(
            f"{seconds:14.4f} s {calls:5d}x" for seconds, calls in (profiles[n].get(key, (0.0, 0)) for n in names)
        )
        lines.append(f"{key[:44]:44s}{cells}")
    totals = "".join(f"{sum(v[0] for v in profiles[n].values()):14.4f} s       " for n in names)
    return "\n".join(lines + [f"{'total':44s}{totals}"])


if __name__ == "__main__":
    raise SystemExit(main())
