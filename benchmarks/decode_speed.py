"""Beam-search speed on CPU, side by side with fairseq-generate or CTranslate2 (and, optionally, without the cache).

Model: d_model 256, 3 + 3 layers, 4 heads (d_k = d_v = 64), d_ff 1024, shared embeddings, word-level
synthetic vocabulary; sources of 10-40 random words. The same 500 sentences are decoded with beam 4,
alpha 0.6, early stop, batches of 64, products as ``aiayn.decode.translate`` computes them
(``--cpu-matmul``, ``decode.cpu_matmul``). ``--rounds N`` alternates ours and fairseq-generate N times
(ours, fairseq, ours, fairseq, ...) so that load from other jobs hits both alike, and reports each
round's ratio and their median, with the load average before and after. ``--uncached`` also decodes
once recomputing the prefix every step (the reference the cache must match: same hypotheses).
``--ctranslate2`` exports the same weights (:mod:`aiayn.export.ct2`) and decodes the same sentences
with CTranslate2 in each round (float32, the same threads, beam 4, batches of ``--batch``, its
length penalty 0.6 in its own form, log P / |Y|^0.6, and at least 0 tokens): the same model on the
same machine, so the ratio is the decoder's alone; ``same_hypotheses_ctranslate2`` counts the
sentences where both give the same output. CTranslate2's translator is made anew for each round and
released after it (load time not counted): a live translator's worker threads kept a core busy
after its run, and our next decode ran at a one-thread pace (seen: ours 44 to 46 sentences/s before
CTranslate2's first run, 31 to 36 after it, with a pause between the two or not).
``--profile N`` adds where our decoding's CPU time goes: one
more decode under torch's profiler, the N operators of most self CPU time, each with its share.

Output length: a randomly initialised model (``--train-steps 0``, the default) almost never ends a
sentence, so the limit is |x| + 0: every hypothesis has the source's length, as a trained model's
would. With ``--train-steps N`` the model is first trained on a copy task (target = source) so that it
ends sentences itself, and the limit is the paper's |x| + 50 (about 400 steps; minutes on an idle
machine).

    PYTHONPATH=src python benchmarks/decode_speed.py --threads 2 --rounds 2 \
        --fairseq-python /work/venvs/fairseq/bin/python [--uncached] [--train-steps 400 --trained F.pt]

Prints one JSON object; numbers depend on the machine and on other jobs running beside it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import time
from pathlib import Path
from types import SimpleNamespace

import torch
import torch.nn.functional as F

from aiayn.decode.beam import SpecialIds, UncachedDecoding, translate_sentences
from aiayn.io import setup_logging
from aiayn.model import Transformer
from aiayn.options import DecodeConfig, ModelConfig
from aiayn.runtime.precision import use_onednn

log = logging.getLogger("decode_speed")
IDS = SpecialIds(pad=0, bos=2, eos=3)
MIN_LENGTH = DecodeConfig.min_length  # every side asks for the project's minimum output length
FIRST_WORD = 4
SHAPE = {"n_layers": 3, "d_model": 256, "d_ff": 1024, "n_heads": 4, "d_k": 64, "d_v": 64, "dropout": 0.0}


def random_sentences(n: int, vocab: int, generator: torch.Generator, lengths=(10, 40)) -> list[list[int]]:
    """``n`` sentences of uniformly random words, lengths uniform in ``lengths`` (inclusive)."""
    sizes = torch.randint(lengths[0], lengths[1] + 1, (n,), generator=generator).tolist()
    return [torch.randint(FIRST_WORD, vocab, (size,), generator=generator).tolist() for size in sizes]


def copy_batch(sentences: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(src, tgt_in, tgt_out), each (B, T): src = x + eos, tgt_in = bos + x, tgt_out = x + eos."""
    width = max(map(len, sentences)) + 1
    src = torch.full((len(sentences), width), IDS.pad)
    tgt_in, tgt_out = src.clone(), src.clone()
    for row, words in enumerate(sentences):
        words = torch.tensor(words)
        src[row, : len(words) + 1] = torch.cat([words, torch.tensor([IDS.eos])])
        tgt_out[row, : len(words) + 1] = src[row, : len(words) + 1]
        tgt_in[row, : len(words) + 1] = torch.cat([torch.tensor([IDS.bos]), words])
    return src, tgt_in, tgt_out


def train_copy_model(
    vocab: int, steps: int, batch: int, seed: int, shape: dict | None = None, device: torch.device | str = "cpu"
) -> Transformer:
    """A model (``shape``, default :data:`SHAPE`) trained with Adam (lr 1e-3 after 50 warm-up steps)
    on the copy task, cross-entropy, on ``device``."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    model = Transformer(ModelConfig.from_dict(shape or SHAPE), vocab).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 50))
    model.train()
    for step in range(1, steps + 1):
        src, tgt_in, tgt_out = (t.to(device) for t in copy_batch(random_sentences(batch, vocab, generator)))
        logits = model(src, tgt_in)
        loss = F.cross_entropy(logits.reshape(-1, vocab), tgt_out.reshape(-1), ignore_index=IDS.pad)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        if step % 50 == 0:
            log.info("copy training step %d: loss %.3f", step, loss.item())
    return model.eval()


def timed_decode(model, sources: list[list[int]], batch: int, max_len_b: float) -> tuple[list, float]:
    start = time.perf_counter()
    hyps = translate_sentences(
        model,
        sources,
        max_sentences=batch,
        ids=IDS,
        beam_size=4,
        length_penalty=0.6,
        max_len_a=1.0,
        max_len_b=max_len_b,
        early_stop=True,
        min_length=MIN_LENGTH,
    )
    return hyps, time.perf_counter() - start


def summary(hyps: list, seconds: float, sources: list[list[int]]) -> dict:
    tokens = sum(len(h.tokens) for h in hyps)
    exact = sum(h.tokens == s for h, s in zip(hyps, sources))
    return {
        "seconds": round(seconds, 2),
        "sentences_per_s": round(len(hyps) / seconds, 2),
        "tokens_per_s": round(tokens / seconds, 1),
        "mean_hyp_len": round(tokens / len(hyps), 2),
        "exact_copies": exact,
    }


def load_or_make_model(args) -> tuple[Transformer, bool]:
    """The benchmark's model (random, trained on the copy task, or loaded) and whether it was trained."""
    trained = args.train_steps > 0 or bool(args.trained and Path(args.trained).exists())
    if args.trained and Path(args.trained).exists():
        model = Transformer(ModelConfig.from_dict(SHAPE), args.vocab)
        model.load_state_dict(torch.load(args.trained, weights_only=True))
        return model.eval(), trained
    if not trained:
        torch.manual_seed(1)
        return Transformer(ModelConfig.from_dict(SHAPE), args.vocab).eval(), trained
    model = train_copy_model(args.vocab, args.train_steps, batch=64, seed=1)
    if args.trained:
        torch.save(model.state_dict(), args.trained)
    return model, trained


def ctranslate2_translator(model, vocab: int, work: Path, threads: int):
    """``model`` exported to CTranslate2 and its pieces; the first returned value makes a translator
    of it (float32 on the CPU, ``threads`` threads)."""
    import ctranslate2

    from aiayn.export.ct2 import write

    pieces = ["<pad>", "<unk>", "<s>", "</s>"] + [f"w{i}" for i in range(4, vocab)]
    write(model, pieces, work / "ct2")
    return (
        lambda: ctranslate2.Translator(
            str(work / "ct2"), device="cpu", compute_type="float32", intra_threads=threads, inter_threads=1
        )
    ), pieces


def ctranslate2_time(make_translator, pieces: list[str], sources: list[list[int]], batch: int, max_len_b: float):
    """CTranslate2's beam-4 outputs (ids) of ``sources`` and the seconds they took (a new translator,
    released afterwards: see the module docstring)."""
    tokens = [[pieces[i] for i in s] for s in sources]
    translator = make_translator()
    start = time.perf_counter()
    results = translator.translate_batch(
        tokens,
        max_batch_size=batch,
        beam_size=4,
        length_penalty=0.6,
        min_decoding_length=MIN_LENGTH,
        suppress_sequences=[["<pad>"], ["<s>"]],
        max_decoding_length=max(len(s) for s in sources) + int(max_len_b),
    )
    seconds = time.perf_counter() - start
    translator.unload_model()
    del translator
    index = {piece: i for i, piece in enumerate(pieces)}
    return [SimpleNamespace(tokens=[index[p] for p in r.hypotheses[0]]) for r in results], seconds


def side_by_side(args, model, sources: list[list[int]], max_len_b: float) -> dict:
    """``--rounds`` alternations of our cached beam search and fairseq-generate or CTranslate2 (if given)."""
    if args.fairseq_python:
        from fairseq_peer import fairseq_prepare, fairseq_time

        fairseq_prepare(args.fairseq_python, Path(args.work), sources, args.vocab, args.threads)
    if args.ctranslate2:
        translator, pieces = ctranslate2_translator(model, args.vocab, Path(args.work), args.threads)
    load_before, rounds, ratios, peer = os.getloadavg(), [], [], None
    for _ in range(args.rounds):
        hyps, seconds = timed_decode(model, sources, args.batch, max_len_b)
        entry = {"aiayn": summary(hyps, seconds, sources)}
        if args.fairseq_python:
            peer = "fairseq"
            entry[peer] = fairseq_time(args.fairseq_python, Path(args.work), args.batch, args.threads, int(max_len_b))
        if args.ctranslate2:
            peer = "ctranslate2"
            theirs, their_seconds = ctranslate2_time(translator, pieces, sources, args.batch, max_len_b)
            entry[peer] = summary(theirs, their_seconds, sources)
            entry["same_hypotheses_ctranslate2"] = sum(a.tokens == b.tokens for a, b in zip(hyps, theirs))
        if peer:
            ratios.append(entry["aiayn"]["sentences_per_s"] / entry[peer]["sentences_per_s"])
        rounds.append(entry)
    result = {
        "rounds": rounds,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "hypotheses": hyps,
    }
    if ratios:
        result |= {
            f"aiayn_vs_{peer}_per_round": [round(r, 3) for r in ratios],
            f"aiayn_vs_{peer}_median": round(statistics.median(ratios), 3),
        }
    return result


def profile_ours(model, sources: list[list[int]], batch: int, max_len_b: float, top: int) -> list[dict]:
    """The ``top`` operators by self CPU time of one decode of ``sources``, with their share of it."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        timed_decode(model, sources, batch, max_len_b)
    rows = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in rows)
    return [
        {"op": e.key, "self_cpu_share": round(e.self_cpu_time_total / total, 3), "calls": e.count} for e in rows[:top]
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab", type=int, default=1000, help="words + 4 specials")
    parser.add_argument("--train-steps", type=int, default=0, help="copy-task training first (0: random init)")
    parser.add_argument("--sentences", type=int, default=500)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1, help="alternate ours and fairseq-generate this many times")
    parser.add_argument("--uncached", action="store_true", help="also decode without the cache (the reference)")
    parser.add_argument("--trained", help="reuse (or save) the trained copy model here")
    parser.add_argument("--fairseq-python", help="python of a fairseq virtualenv: add fairseq-generate")
    parser.add_argument("--ctranslate2", action="store_true", help="add CTranslate2 on the same weights")
    parser.add_argument("--profile", type=int, default=0, help="also list our decoding's N costliest operators")
    parser.add_argument("--work", default="/tmp/decode_speed", help="scratch directory for the peers")
    parser.add_argument(
        "--cpu-matmul",
        choices=["onednn", "mkl"],
        default="onednn",
        help="decode.cpu_matmul: our products through oneDNN (the default) or MKL",
    )
    parser.add_argument("--log")
    args = parser.parse_args(argv)
    if args.fairseq_python and args.ctranslate2:
        parser.error("one peer at a time: --fairseq-python or --ctranslate2")
    setup_logging(args.log)
    torch.set_num_threads(args.threads)
    model, trained = load_or_make_model(args)
    model.use_onednn(use_onednn(args.cpu_matmul, False, torch.device("cpu"), "decode.cpu_matmul"))  # as translate does
    max_len_b = 50.0 if trained else 0.0
    sources = random_sentences(args.sentences, args.vocab, torch.Generator().manual_seed(1234))
    runs = side_by_side(args, model, sources, max_len_b)
    cached = runs.pop("hypotheses")
    result = {
        "machine": f"{platform.processor() or platform.machine()}, torch threads {args.threads}",
        "torch": torch.__version__,
        "shape": SHAPE,
        "vocab": args.vocab,
        "sentences": args.sentences,
        "batch": args.batch,
        "cpu_matmul": args.cpu_matmul,
        "trained_steps": args.train_steps,
        "max_len": f"|x| + {max_len_b:g}",
        **runs,
    }
    if args.profile:
        result["profile_ours"] = profile_ours(model, sources, args.batch, max_len_b, args.profile)
    if args.uncached:
        uncached, uncached_s = timed_decode(UncachedDecoding(model), sources, args.batch, max_len_b)
        result["uncached"] = summary(uncached, uncached_s, sources)
        result["same_hypotheses_uncached"] = sum(a.tokens == b.tokens for a, b in zip(cached, uncached))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
