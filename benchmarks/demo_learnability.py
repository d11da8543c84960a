"""Is the demo corpus learnable in the demo's budget? Train a tiny Transformer for a fixed time, compare BLEU.

Generates a demo training set and a disjoint test set, tokenizes both with sacremoses (as the
workflow does: punctuation normalization, aggressive dash splitting, no escaping), trains a small
``torch.nn.Transformer`` on one CPU thread for ``--seconds``, decodes the test set greedily and prints
the sacreBLEU of the model and of copying the source. Word-level vocabulary (the lexicon is small,
so this is what a few-thousand-piece BPE vocabulary amounts to).

    PYTHONPATH=src python benchmarks/demo_learnability.py --pair en-de --seconds 45
"""

from __future__ import annotations

import argparse
import logging
import math
import time

import sacrebleu
import torch
from sacremoses import MosesDetokenizer, MosesPunctNormalizer, MosesTokenizer
from torch import nn

from aiayn.data.demo.corpus import rng_for, sample, translate
from aiayn.io import setup_logging

log = logging.getLogger("demo_learnability")
PAD, BOS, EOS = 0, 1, 2


def tokenize(lines: list[str], lang: str) -> list[list[str]]:
    normalizer, tokenizer = MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang)
    return [tokenizer.tokenize(normalizer.normalize(line), aggressive_dash_splits=True, escape=False)
            for line in lines]


class TinyTransformer(nn.Module):
    """Shared embeddings (scaled by sqrt(d_model)) + sinusoidal positions + ``nn.Transformer`` (post-norm)."""

    def __init__(self, vocab: int, d_model: int, layers: int, heads: int, d_ff: int, dropout: float):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model, padding_idx=PAD)
        nn.init.normal_(self.embed.weight, 0, d_model ** -0.5)
        self.core = nn.Transformer(d_model, heads, layers, layers, d_ff, dropout, batch_first=True)
        position = torch.arange(256).unsqueeze(1)
        scale = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(256, d_model)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(position * scale), torch.cos(position * scale)
        self.register_buffer("pe", pe)
        self.d_model = d_model

    def _in(self, ids: torch.Tensor) -> torch.Tensor:
        return self.embed(ids) * self.d_model ** 0.5 + self.pe[: ids.size(1)]

    def encode(self, src: torch.Tensor) -> torch.Tensor:
        return self.core.encoder(self._in(src), src_key_padding_mask=src == PAD)

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        """Logits (B, T, V) for every prefix of ``tgt`` (B, T)."""
        mask = self.core.generate_square_subsequent_mask(tgt.size(1))
        out = self.core.decoder(self._in(tgt), memory, tgt_mask=mask, tgt_is_causal=True,
                                memory_key_padding_mask=src == PAD)
        return out @ self.embed.weight.T


def pad(seqs: list[list[int]]) -> torch.Tensor:
    width = max(len(s) for s in seqs)
    return torch.tensor([s + [PAD] * (width - len(s)) for s in seqs])


def batches(pairs: list[tuple[list[int], list[int]]], max_tokens: int, gen: torch.Generator):
    """Length-sorted buckets of about ``max_tokens`` target tokens, shuffled, forever."""
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][1]))
    chunks, chunk, size = [], [], 0
    for i in order:
        chunk.append(i)
        size += len(pairs[i][1]) + 1
        if size >= max_tokens:
            chunks.append(chunk)
            chunk, size = [], 0
    chunks += [chunk] if chunk else []
    while True:
        for k in torch.randperm(len(chunks), generator=gen).tolist():
            yield chunks[k]


def train(model: TinyTransformer, pairs, seconds: float, max_tokens: int, lr: float, warmup: int) -> int:
    """Adam (0.9, 0.98), inverse-sqrt schedule with warmup, label smoothing 0.1, until ``seconds`` pass."""
    opt = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9)
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=0.1)
    gen = torch.Generator().manual_seed(1)
    start, step = time.time(), 0
    model.train()
    for chunk in batches(pairs, max_tokens, gen):
        if time.time() - start > seconds:
            break
        step += 1
        for group in opt.param_groups:
            group["lr"] = lr * min(step / warmup, (warmup / step) ** 0.5)
        src = pad([pairs[i][0] + [EOS] for i in chunk])
        tgt = pad([[BOS] + pairs[i][1] + [EOS] for i in chunk])
        logits = model.decode(tgt[:, :-1], model.encode(src), src)
        loss = loss_fn(logits.reshape(-1, logits.size(-1)), tgt[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            log.info("step %d loss %.3f (%.0f s)", step, loss.item(), time.time() - start)
    return step


@torch.no_grad()
def greedy(model: TinyTransformer, srcs: list[list[int]], extra: int = 10) -> list[list[int]]:
    model.eval()
    out = []
    for i in range(0, len(srcs), 100):
        src = pad([s + [EOS] for s in srcs[i:i + 100]])
        memory = model.encode(src)
        ys = torch.full((src.size(0), 1), BOS)
        for _ in range(src.size(1) + extra):
            nxt = model.decode(ys, memory, src)[:, -1].argmax(-1, keepdim=True)
            ys = torch.cat([ys, nxt], 1)
            if (ys == EOS).any(1).all():
                break
        for row in ys[:, 1:].tolist():
            out.append(row[: row.index(EOS)] if EOS in row else row)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", default="en-de", choices=["en-de", "en-fr"])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--train-pairs", type=int, default=20000)
    parser.add_argument("--test-pairs", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=45)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--d-ff", type=int, default=256)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--max-tokens", type=int, default=1500)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--log")
    args = parser.parse_args(argv)
    setup_logging(args.log)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    tgt_lang = args.pair.split("-")[1]
    start = time.time()
    train_set = sample(rng_for(args.seed, f"{args.pair}:train"), args.train_pairs)
    test_set = sample(rng_for(args.seed, f"{args.pair}:test"), args.test_pairs, exclude={s.en for s in train_set})
    train_src, train_tgt = tokenize([s.en for s in train_set], "en"), tokenize(translate(train_set, tgt_lang), tgt_lang)
    test_src, test_ref = tokenize([s.en for s in test_set], "en"), translate(test_set, tgt_lang)
    vocab = {w: i + 3 for i, w in enumerate(sorted({w for s in train_src + train_tgt for w in s}))}
    log.info("data: %d train, %d test pairs, %d word types, %.1f s", len(train_set), len(test_set), len(vocab),
             time.time() - start)
    ids = lambda words: [vocab[w] for w in words if w in vocab]  # noqa: E731
    pairs = [(ids(s), ids(t)) for s, t in zip(train_src, train_tgt)]
    model = TinyTransformer(len(vocab) + 3, args.d_model, args.layers, args.heads, args.d_ff, args.dropout)
    params = sum(p.numel() for p in model.parameters())
    steps = train(model, pairs, args.seconds, args.max_tokens, args.lr, args.warmup)
    words = {i: w for w, i in vocab.items()}
    hyps_ids = greedy(model, [ids(s) for s in test_src])
    detok = MosesDetokenizer(lang=tgt_lang)
    hyps = [detok.detokenize([words[i] for i in h if i in words]) for h in hyps_ids]
    model_bleu = sacrebleu.corpus_bleu(hyps, [test_ref])
    copy_bleu = sacrebleu.corpus_bleu([s.en for s in test_set], [test_ref])
    for h, r in list(zip(hyps, test_ref))[:3]:
        log.info("hyp: %s | ref: %s", h, r)
    print(f"{args.pair}: params {params}, steps {steps} in {args.seconds:.0f} s, "
          f"model BLEU {model_bleu.score:.1f}, copy-source BLEU {copy_bleu.score:.1f}, "
          f"total {time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
