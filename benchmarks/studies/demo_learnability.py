"""Is the demo corpus learnable in the demo's budget? Train a tiny Transformer for a fixed time, compare.

Translation (``--pair en-de`` or ``en-fr``): generates a demo training set and a disjoint test set,
tokenizes both with sacremoses (as the workflow does: punctuation normalization, aggressive dash
splitting, no escaping), trains a small ``torch.nn.Transformer`` on one CPU thread for ``--seconds``,
decodes the test set greedily and prints the sacreBLEU of the model and of copying the source.

Parsing (``--pair wsj``): demo trees, cleaned as for WSJ (no empty elements, no function tags) and
linearized as in Vinyals et al. (2015) with XX for POS tags; prints labeled bracket F1 (punctuation
ignored, EVALB-style) of the model and of the flat tree ``(S XX ... XX )S``.

Word-level vocabulary (the lexicon is small, so this is what a few-thousand-piece BPE amounts to).

    PYTHONPATH=src python benchmarks/studies/demo_learnability.py --pair en-de --seconds 45
    PYTHONPATH=src python benchmarks/studies/demo_learnability.py --pair wsj --seconds 60

Measured 2026-11-22 on the shared development machine (2 cores, load average 5-7 from other jobs,
Python 3.11, torch 2.13 CPU, 1 thread), defaults d_model 64, 2+2 layers, 4 heads, d_ff 256, 600
target tokens per step, peak lr 3e-3 after 100 warmup steps, seed 1:

    --pair en-de --train-pairs 8000              345 steps, BLEU 52.9, copy-source 0.4
    --pair en-fr --train-pairs 8000              407 steps, BLEU 66.9, copy-source 0.9
    --pair wsj --train-pairs 2100 --seconds 60   744 steps, F1 69.2, flat trees 21.3

Steps in 45 s vary with the machine's load (300-420 here); with 20000 pairs and 301 steps, en-de
reached BLEU 43.9 (fewer passes over more varied data).
"""

from __future__ import annotations

import argparse
import collections
import logging
import math
import time

import sacrebleu
import torch
from sacremoses import MosesDetokenizer, MosesPunctNormalizer, MosesTokenizer
from torch import nn

from aiayn.demo.grammar import LANGUAGES
from aiayn.demo.mirror import rng_for, sample
from aiayn.io import setup_logging
from aiayn.parsing.clean import clean_tree
from aiayn.parsing.linearize import linearize

log = logging.getLogger("demo_learnability")
PAD, BOS, EOS = 0, 1, 2
PUNCT = {",", ".", "?", ":", "``", "''"}


def spans(tokens: list[str], words: list[str]) -> collections.Counter:
    """Labeled spans (label, start, end) over non-punctuation words of a linearized tree, repaired.

    Unmatched brackets are closed or ignored; a missing XX is added at the root's end, extra XX dropped.
    """
    out, stack, position, leaves = collections.Counter(), [], 0, 0
    for token in tokens:
        if token.startswith("(") and len(token) > 1:
            stack.append((token[1:], position))
        elif token.startswith(")") and stack:
            label, start = stack.pop()
            out[label, start, position] += 1
        elif token == "XX" and leaves < len(words):
            position += words[leaves] not in PUNCT
            leaves += 1
    while stack:
        label, start = stack.pop()
        out[label, start, position + sum(w not in PUNCT for w in words[leaves:])] += 1
    return out


def bracket_f1(hyps: list[list[str]], golds: list[list[str]], words: list[list[str]]) -> float:
    match = hyp_total = gold_total = 0
    for hyp, gold, sentence in zip(hyps, golds, words):
        h, g = spans(hyp, sentence), spans(gold, sentence)
        match += sum((h & g).values())
        hyp_total += sum(h.values())
        gold_total += sum(g.values())
    return 200 * match / (hyp_total + gold_total)


def tokenize(lines: list[str], lang: str) -> list[list[str]]:
    normalizer, tokenizer = MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang)
    return [tokenizer.tokenize(normalizer.normalize(line), aggressive_dash_splits=True, escape=False) for line in lines]


class TinyTransformer(nn.Module):
    """Shared embeddings (scaled by sqrt(d_model)) + sinusoidal positions + ``nn.Transformer`` (post-norm)."""

    def __init__(self, vocab: int, d_model: int, layers: int, heads: int, d_ff: int, dropout: float):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model, padding_idx=PAD)
        nn.init.normal_(self.embed.weight, 0, d_model**-0.5)
        self.core = nn.Transformer(d_model, heads, layers, layers, d_ff, dropout, batch_first=True)
        position = torch.arange(256).unsqueeze(1)
        scale = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(256, d_model)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(position * scale), torch.cos(position * scale)
        self.register_buffer("pe", pe)
        self.d_model = d_model

    def _in(self, ids: torch.Tensor) -> torch.Tensor:
        return self.embed(ids) * self.d_model**0.5 + self.pe[: ids.size(1)]

    def encode(self, src: torch.Tensor) -> torch.Tensor:
        return self.core.encoder(self._in(src), src_key_padding_mask=src == PAD)

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        """Logits (B, T, V) for every prefix of ``tgt`` (B, T)."""
        mask = self.core.generate_square_subsequent_mask(tgt.size(1))
        out = self.core.decoder(
            self._in(tgt), memory, tgt_mask=mask, tgt_is_causal=True, memory_key_padding_mask=src == PAD
        )
        return out @ self.embed.weight.T


def pad(seqs: list[list[int]]) -> torch.Tensor:
    width = max(len(s) for s in seqs)
    return torch.tensor([s + [PAD] * (width - len(s)) for s in seqs])


def batches(pairs: list[tuple[list[int], list[int]]], tokens_per_step: int, gen: torch.Generator):
    """Length-sorted buckets of about ``tokens_per_step`` target tokens, shuffled, forever."""
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][1]))
    chunks, chunk, size = [], [], 0
    for i in order:
        chunk.append(i)
        size += len(pairs[i][1]) + 1
        if size >= tokens_per_step:
            chunks.append(chunk)
            chunk, size = [], 0
    chunks += [chunk] if chunk else []
    while True:
        for k in torch.randperm(len(chunks), generator=gen).tolist():
            yield chunks[k]


def train(model: TinyTransformer, pairs, seconds: float, tokens_per_step: int, lr: float, warmup: int) -> int:
    """Adam (0.9, 0.98), inverse-sqrt schedule with warmup, label smoothing 0.1, until ``seconds`` pass."""
    opt = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9)
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=0.1)
    gen = torch.Generator().manual_seed(1)
    start, step = time.time(), 0
    model.train()
    for chunk in batches(pairs, tokens_per_step, gen):
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
        src = pad([s + [EOS] for s in srcs[i : i + 100]])
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


def parsing_data(seed: int, n_train: int, n_test: int):
    """(train sources, train targets, test sources, test targets) as token lists."""
    train_set = sample(rng_for(seed, "wsj:train"), n_train)
    test_set = sample(rng_for(seed, "wsj:test"), n_test, exclude={s.en for s in train_set}, unique=True)
    src = lambda sents: [clean_tree(s.tree).words() for s in sents]  # noqa: E731
    tgt = lambda sents: [linearize(clean_tree(s.tree)) for s in sents]  # noqa: E731
    return src(train_set), tgt(train_set), src(test_set), tgt(test_set)


def translate(sentences, lang: str) -> list[str]:
    """The demo's sentences in ``lang``, as the mirror writes its target side."""
    language = LANGUAGES[lang]()
    return [language.sentence(s.clause) for s in sentences]


def translation_data(pair: str, seed: int, n_train: int, n_test: int):
    """(train sources, train targets, test sources, raw test sources, raw test references)."""
    tgt_lang = pair.split("-")[1]
    train_set = sample(rng_for(seed, f"{pair}:train"), n_train)
    test_set = sample(rng_for(seed, f"{pair}:test"), n_test, exclude={s.en for s in train_set}, unique=True)
    train_src, train_tgt = tokenize([s.en for s in train_set], "en"), tokenize(translate(train_set, tgt_lang), tgt_lang)
    return (
        train_src,
        train_tgt,
        tokenize([s.en for s in test_set], "en"),
        [s.en for s in test_set],
        translate(test_set, tgt_lang),
    )


def score(pair: str, hyp_words: list[list[str]], test: tuple) -> str:
    """The comparison line: BLEU of model vs copying the source, or bracket F1 of model vs flat trees."""
    if pair == "wsj":
        test_src, test_gold = test
        flat = [["(S", *["XX"] * len(s), ")S"] for s in test_src]
        return (
            f"model F1 {bracket_f1(hyp_words, test_gold, test_src):.1f}, "
            f"flat-tree F1 {bracket_f1(flat, test_gold, test_src):.1f}"
        )
    _, test_raw, test_ref = test
    detok = MosesDetokenizer(lang=pair.split("-")[1])
    hyps = [detok.detokenize(h) for h in hyp_words]
    for h, r in list(zip(hyps, test_ref))[:3]:
        log.info("hyp: %s | ref: %s", h, r)
    return (
        f"model BLEU {sacrebleu.corpus_bleu(hyps, [test_ref]).score:.1f}, "
        f"copy-source BLEU {sacrebleu.corpus_bleu(test_raw, [test_ref]).score:.1f}"
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", default="en-de", choices=["en-de", "en-fr", "wsj"])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--train-pairs", type=int, default=20000)
    parser.add_argument("--test-pairs", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=45)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--d-ff", type=int, default=256)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--tokens-per-step", type=int, default=600, help="target tokens per step")
    parser.add_argument("--lr", type=float, default=3e-3, help="peak learning rate")
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--log")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_logging(args.log)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    start = time.time()
    if args.pair == "wsj":
        train_src, train_tgt, test_src, test_gold = parsing_data(args.seed, args.train_pairs, args.test_pairs)
        test = (test_src, test_gold)
    else:
        train_src, train_tgt, *test = translation_data(args.pair, args.seed, args.train_pairs, args.test_pairs)
        test_src = test[0]
    vocab = {w: i + 3 for i, w in enumerate(sorted({w for s in train_src + train_tgt for w in s}))}
    log.info(
        "data: %d train, %d test pairs, %d word types, %.1f s",
        len(train_src),
        len(test_src),
        len(vocab),
        time.time() - start,
    )
    ids = lambda words: [vocab[w] for w in words if w in vocab]  # noqa: E731
    model = TinyTransformer(len(vocab) + 3, args.d_model, args.layers, args.heads, args.d_ff, args.dropout)
    steps = train(
        model,
        [(ids(s), ids(t)) for s, t in zip(train_src, train_tgt)],
        args.seconds,
        args.tokens_per_step,
        args.lr,
        args.warmup,
    )
    words = {i: w for w, i in vocab.items()}
    hyps = greedy(model, [ids(s) for s in test_src], 70 if args.pair == "wsj" else 10)
    result = score(args.pair, [[words[i] for i in h if i in words] for h in hyps], test)
    params = sum(p.numel() for p in model.parameters())
    print(
        f"{args.pair}: params {params}, steps {steps} in {args.seconds:.0f} s, {result}, "
        f"total {time.time() - start:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
