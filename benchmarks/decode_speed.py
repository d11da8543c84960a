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

A real model (``--run``): a translation run the workflow trained (its averaged model, sentencepiece
model, tokenizer and decode settings), its raw test set (``--source``) and reference
(``--reference``). The source is tokenized and encoded once, untimed, and both engines decode the
same subwords with the run's beam, alpha and minimum output length and |x| + ``decode.max_len_b``
tokens at most (ours per sentence, CTranslate2's for the longest source: a trained model ends its
sentences long before), batches of ``decode.max_sentences``, for each of ``--threads`` (one or more
counts), ``--rounds`` alternating rounds: ours with the run's early stop (the paper's: no live
hypothesis can still win) and with fairseq's and CTranslate2's (``decode.early_stop_rule:
beam_finished``: K hypotheses finished), CTranslate2, and with ``--int8`` both engines' int8 products
(``decode.cpu_matmul: int8``; CTranslate2's ``compute_type="int8"``). Per engine and round:
sentences/s, target subwords/s, ours' decoder steps per sentence; per engine: BLEU (sacreBLEU and the
paper's method, as the bleu rule scores), outputs equal to ours in float32 and to CTranslate2's.
``--profile-steps`` times each part of our decoder step instead (``docs/studies/cpu-decoding.md``).
The model and the test set of RESULTS.md: ``--prepare W`` writes them (the learning-parity corpus
through ``configs/own-corpus.yaml``, see :func:`prepare`).

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
import dataclasses
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
    opts = DecodeConfig(
        max_sentences=batch,
        beam_size=4,
        length_penalty=0.6,
        max_len_a=1.0,
        max_len_b=int(max_len_b),
        early_stop=True,
        min_length=MIN_LENGTH,
    )
    hyps = translate_sentences(model, sources, opts, ids=IDS)
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


# --- a real model (--run) -------------------------------------------------------------------------

PREPARE_OVERLAY = """\
# decode_speed.py --prepare: the learning-parity corpus through configs/own-corpus.yaml, on this CPU
data_dir: {work}/data
results_dir: {work}/results
threads: {{data: 2, train: 2, decode: 2}}
sources:
  my_train: {{files: {{en: {work}/corpus/train.en, de: {work}/corpus/train.de}}}}
  my_dev: {{files: {{en: {work}/corpus/dev.en, de: {work}/corpus/dev.de}}}}
  my_test: {{files: {{en: {work}/corpus/test.en, de: {work}/corpus/test.de}}}}
defaults:
  train: {{gpus: 0, train_steps: 2400, warmup_steps: 400, tokens_per_step: 4000, tokens_per_pass: 4000,
          checkpoint_steps: 200, dev_every_steps: 800}}
"""


def prepare(work: Path, wmt: Path) -> Path:
    """The benchmark's model: the learning-parity study's real EN-DE text (``parity_data.raw_corpora``:
    the WMT training sample, newstest2012 and 2014, newstest2013 but its last 1,500 lines) as a corpus
    of ``configs/own-corpus.yaml`` (its 3+3 x 256 model, vocabulary 8,000), 2,400 steps of 4,000 tokens
    on this CPU (about 30 minutes on two idle cores), the last 5 checkpoints averaged; dev the first
    500 of the held-out lines, test their last 1,000. Returns the run directory (kept: not retrained)."""
    import subprocess

    from parity_data import _write_lines, raw_corpora

    from aiayn.data.lines import iter_lines

    corpus = work / "corpus"
    if not (corpus / "test.de").exists():
        train, held = raw_corpora(wmt, corpus / "raw", 1500)
        for lang in ("en", "de"):
            _write_lines(corpus / f"train.{lang}", [line for p in train for line in iter_lines(f"{p}.{lang}")])
            held_out = list(iter_lines(f"{held}.{lang}"))
            _write_lines(corpus / f"dev.{lang}", held_out[:500])
            _write_lines(corpus / f"test.{lang}", held_out[500:])
    overlay = work / "overlay.yaml"
    overlay.write_text(PREPARE_OVERLAY.format(work=work.resolve()))
    root = Path(__file__).resolve().parents[1]
    subprocess.run(
        ["snakemake", "--cores", "2", "--configfile", "configs/own-corpus.yaml", str(overlay.resolve())],
        cwd=root,
        check=True,
    )
    return work / "results" / "mine" / "base"


class StepCounter:
    """A model seen through the beam-search protocol that counts decoder steps: ``sentence_steps`` adds,
    at every step, the sentences still searched (a sentence's decoder steps, summed)."""

    def __init__(self, model):
        self.model, self.sentence_steps, self.steps = model, 0, 0

    def encode(self, src, padded=None):
        return self.model.encode(src, padded)

    def new_cache(self, enc, beam_size=1, max_len=None):
        return self.model.new_cache(enc, beam_size, max_len)

    def decode(self, tgt_in, enc, cache=None):
        self.steps += 1
        self.sentence_steps += enc.memory.size(0)
        return self.model.decode(tgt_in, enc, cache)


def run_sources(run: Path, source: Path) -> tuple:
    """(model files, decode settings, sentencepiece model, the source's subword ids): the raw lines
    through the run's tokenizer and sentencepiece model, as ``aiayn-translate`` prepares them."""
    from aiayn import settings
    from aiayn.data.bpe import SpmEncode, load_processor
    from aiayn.data.lines import read_lines
    from aiayn.decode.manifest import read_run
    from aiayn.decode.translate import piece_ids
    from aiayn.decode.translate_text import translation_pipeline

    files = read_run(run)
    decode = settings.read(files.decode, DecodeConfig, "decode")
    sp = load_processor(files.spm)
    pipeline, encode = translation_pipeline(files), SpmEncode(str(files.spm))
    lines = [pipeline.prepare(line) for line in read_lines(str(source))]
    sources = [piece_ids(pieces, sp)[0] for pieces in encode(lines)]
    if any(not s for s in sources):
        raise ValueError(f"{source}: empty lines; the benchmark decodes every line")
    return files, decode, sp, sources


def ours_engine(files, decode: DecodeConfig, cpu_matmul: str, rule: str | None = None):
    """Our search on the run's averaged model with ``decode.cpu_matmul`` = ``cpu_matmul`` and
    ``decode.early_stop_rule`` = ``rule`` (None: the run's): a function of the sources returning
    (outputs, seconds, decoder steps per sentence)."""
    from aiayn.runtime.precision import set_up_arithmetic
    from aiayn.runtime.session import load_model

    model, _ = load_model(files.checkpoint)
    set_up_arithmetic(model, "fp32", cpu_matmul, torch.device("cpu"), key="decode.cpu_matmul")

    def run(sources):
        counter = StepCounter(model)
        start = time.perf_counter()
        opts = dataclasses.replace(decode, early_stop_rule=rule or decode.early_stop_rule)
        hyps = translate_sentences(counter, sources, opts, ids=IDS)
        return [h.tokens for h in hyps], time.perf_counter() - start, counter.sentence_steps / len(sources)

    return run


def ctranslate2_engine(export_dir: Path, pieces: list[str], decode: DecodeConfig, compute_type: str, threads: int):
    """CTranslate2 on the exported weights (a translator made for each call, released after it, load
    not timed: see the module docstring): a function like :func:`ours_engine`'s (no step count)."""
    import ctranslate2

    index = {piece: i for i, piece in enumerate(pieces)}

    def run(sources):
        translator = ctranslate2.Translator(
            str(export_dir), device="cpu", compute_type=compute_type, intra_threads=threads, inter_threads=1
        )
        tokens = [[pieces[i] for i in s] for s in sources]
        start = time.perf_counter()
        results = translator.translate_batch(
            tokens,
            max_batch_size=decode.max_sentences,
            beam_size=decode.beam_size,
            length_penalty=decode.length_penalty,
            min_decoding_length=decode.min_length,
            suppress_sequences=[["<pad>"], ["<s>"]],
            max_decoding_length=int(decode.max_len_a * max(map(len, sources)) + decode.max_len_b),
        )
        seconds = time.perf_counter() - start
        translator.unload_model()
        del translator
        return [[index[p] for p in r.hypotheses[0]] for r in results], seconds, None

    return run


def real_model(args) -> dict:
    """The side-by-side rounds of the module docstring on ``args.run``."""
    from aiayn.data.detokenize import MosesDetok
    from aiayn.data.lines import read_lines
    from aiayn.evaluate.bleu import score
    from aiayn.export.run import export

    files, decode, sp, sources = run_sources(args.run, args.source)
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    export_dir = Path(args.work) / "ctranslate2"
    if not export_dir.exists():
        export(args.run, "ctranslate2", export_dir)
    # (engine, products, our stop rule): the run's rule, then fairseq's and CTranslate2's
    kinds = [("aiayn", "fp32", None), ("aiayn", "fp32", "beam_finished"), ("ctranslate2", "fp32", None)]
    if args.int8:
        kinds += [("aiayn", "int8", None), ("ctranslate2", "int8", None)]
    outputs: dict[str, list] = {}
    result = {"sentences": len(sources), "source_subwords": sum(map(len, sources)), "threads": {}}
    for threads in args.threads:
        torch.set_num_threads(threads)
        engines = {
            " ".join(filter(None, (name, kind, rule))): (
                ours_engine(files, decode, "int8" if kind == "int8" else args.cpu_matmul, rule)
                if name == "aiayn"
                else ctranslate2_engine(export_dir, pieces, decode, "int8" if kind == "int8" else "float32", threads)
            )
            for name, kind, rule in kinds
        }
        rounds = []
        load_before = os.getloadavg()
        for _ in range(args.rounds):
            entry = {}
            for name, engine in engines.items():
                hyps, seconds, steps = engine(sources)
                if outputs.setdefault(name, hyps) != hyps:
                    log.warning("%s: other outputs than in its first round", name)
                tokens = sum(map(len, hyps))
                entry[name] = {
                    "seconds": round(seconds, 2),
                    "sentences_per_s": round(len(sources) / seconds, 1),
                    "target_subwords_per_s": round(tokens / seconds, 1),
                    **({"decoder_steps_per_sentence": round(steps, 2)} if steps is not None else {}),
                }
            for name in [n for n in engines if n.startswith("aiayn")]:
                theirs = entry["ctranslate2 " + name.split()[1]]
                entry[f"{name} / ctranslate2"] = round(entry[name]["sentences_per_s"] / theirs["sentences_per_s"], 3)
            rounds.append(entry)
            log.info("threads %d: %s", threads, json.dumps(entry))
        result["threads"][threads] = {
            "rounds": rounds,
            "load_average_before": load_before,
            "load_average_after": os.getloadavg(),
        }
    detok, references = MosesDetok(files.target_lang), read_lines(str(args.reference))
    result["engines"] = {}
    for name, hyps in outputs.items():
        text = [detok.line(sp.decode(h)) for h in hyps]
        bleu = score(text, references, files.target_lang)
        result["engines"][name] = {
            "sacrebleu": round(bleu["sacrebleu"], 2),
            "paper_bleu": round(bleu["paper_bleu"], 2),
            "mean_output_subwords": round(sum(map(len, hyps)) / len(hyps), 2),
            "equal_to_aiayn_fp32": sum(a == b for a, b in zip(hyps, outputs["aiayn fp32"])),
            "equal_to_ctranslate2_fp32": sum(a == b for a, b in zip(hyps, outputs["ctranslate2 fp32"])),
        }
    return result


class SectionTimer:
    """Wall time of named parts of a decode, each part's own (a part called inside another is the
    inner one's, not counted twice), by patching the functions and methods that do them; the parts in
    ``whole`` count what they call as theirs. No profiler: a wrapper costs well under a microsecond."""

    def __init__(self, parts: dict[str, list[tuple[object, str]]], whole: tuple[str, ...] = ()):
        self.parts, self.whole = parts, set(whole)
        self.seconds = dict.fromkeys(parts, 0.0)
        self._stack: list[list] = []  # [part, start, time of the parts inside it]
        self._saved: list[tuple[object, str, object]] = []

    def _wrap(self, part: str, function):
        def timed(*args, **kwargs):
            if self._stack and self._stack[-1][0] in self.whole:
                return function(*args, **kwargs)
            frame = [part, time.perf_counter(), 0.0]
            self._stack.append(frame)
            try:
                return function(*args, **kwargs)
            finally:
                self._stack.pop()
                elapsed = time.perf_counter() - frame[1]
                self.seconds[part] += elapsed - frame[2]
                if self._stack:
                    self._stack[-1][2] += elapsed

        return timed

    def __enter__(self) -> "SectionTimer":
        for part, places in self.parts.items():
            for owner, name in places:
                self._saved.append((owner, name, owner.__dict__[name]))
                setattr(owner, name, self._wrap(part, owner.__dict__[name]))
        return self

    def __exit__(self, *exc) -> None:
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)


def step_parts() -> dict[str, list[tuple[object, str]]]:
    """The parts of a decoder step that ``--profile-steps`` times, and the code each is."""
    from aiayn.decode import beam
    from aiayn.model import attention, cache, functional, transformer

    return {
        "encoder (once a batch)": [(transformer.Transformer, "encode"), (transformer.Transformer, "new_cache")],
        "products (projections, FFN, output layer)": [
            (functional.Linear, "forward"),
            (transformer.Transformer, "project"),
        ],
        "attention (without its projections)": [(attention.MultiHeadAttention, "attend")],
        "cache writes": [(cache.DecoderCache, "append")],
        "other model work (embedding, layer norms, residuals)": [(transformer.Transformer, "decode")],
        "cache reorders": [(cache.DecoderCache, "reorder")],
        "log-softmax and top-k": [(beam, "_step_candidates")],
        "host: candidates to the host": [(beam, "_to_host")],
        "host: finished hypotheses": [(beam, "_collect_finished"), (beam, "_finish_at_max_len")],
        "host: next beams and stop test": [(beam, "_next_live"), (beam, "_done")],
        "host: next step's rows and tokens": [(beam, "_advance")],
    }


def profile_steps(args) -> dict:
    """Where one decode of the test set spends its time, per decoder step (the module docstring)."""
    files, decode, _, sources = run_sources(args.run, args.source)
    torch.set_num_threads(args.threads[0])
    engine = ours_engine(files, decode, args.cpu_matmul)
    _, plain_seconds, _ = engine(sources)  # warm: first calls allocate
    _, plain_seconds, _ = engine(sources)
    from aiayn.model.transformer import Transformer

    steps = {"n": 0}
    decode_step = Transformer.decode

    def counted(self, *a, **k):
        steps["n"] += 1
        return decode_step(self, *a, **k)

    Transformer.decode = counted
    try:
        with SectionTimer(step_parts(), whole=("encoder (once a batch)",)) as timer:
            _, seconds, per_sentence = engine(sources)
    finally:
        Transformer.decode = decode_step
    n = steps["n"]
    parts = dict(timer.seconds)
    parts["host: the rest (search loop, batching)"] = seconds - sum(parts.values())
    table = {part: {"ms_per_step": round(1e3 * t / n, 3), "share": round(t / seconds, 3)} for part, t in parts.items()}
    return {
        "threads": args.threads[0],
        "cpu_matmul": args.cpu_matmul,
        "decoder_steps": n,
        "decoder_steps_per_sentence": round(per_sentence, 2),
        "seconds_timed": round(seconds, 2),
        "seconds_untimed": round(plain_seconds, 2),
        "ms_per_step": round(1e3 * seconds / n, 3),
        "parts": table,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab", type=int, default=1000, help="words + 4 specials")
    parser.add_argument("--train-steps", type=int, default=0, help="copy-task training first (0: random init)")
    parser.add_argument("--sentences", type=int, default=500)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, nargs="+", default=[2], help="torch threads (with --run: each count)")
    parser.add_argument("--rounds", type=int, default=1, help="alternate ours and fairseq-generate this many times")
    parser.add_argument("--uncached", action="store_true", help="also decode without the cache (the reference)")
    parser.add_argument("--trained", help="reuse (or save) the trained copy model here")
    parser.add_argument("--fairseq-python", help="python of a fairseq virtualenv: add fairseq-generate")
    parser.add_argument("--ctranslate2", action="store_true", help="add CTranslate2 on the same weights")
    parser.add_argument("--profile", type=int, default=0, help="also list our decoding's N costliest operators")
    parser.add_argument("--work", default="/tmp/decode_speed", help="scratch directory for the peers")
    parser.add_argument(
        "--cpu-matmul",
        choices=["onednn", "mkl", "int8"],
        default="onednn",
        help="decode.cpu_matmul: our products through oneDNN (the default) or MKL",
    )
    parser.add_argument("--run", type=Path, help="a real model: a translation run of the workflow (see above)")
    parser.add_argument("--source", type=Path, help="with --run: the raw test set")
    parser.add_argument("--reference", type=Path, help="with --run: its raw reference")
    parser.add_argument("--int8", action="store_true", help="with --run: also both engines' int8 products")
    parser.add_argument("--profile-steps", action="store_true", help="with --run: where a decoder step's time goes")
    parser.add_argument("--prepare", type=Path, help="train the real model of RESULTS.md under this folder first")
    parser.add_argument("--wmt", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data" / "wmt")
    parser.add_argument("--log")
    args = parser.parse_args(argv)
    if args.prepare:
        args.run = prepare(args.prepare, args.wmt)
        args.source, args.reference = args.prepare / "corpus" / "test.en", args.prepare / "corpus" / "test.de"
    if args.run:
        setup_logging(args.log)
        if not (args.source and args.reference):
            parser.error("--run needs --source and --reference")
        result = profile_steps(args) if args.profile_steps else real_model(args)
        print(
            json.dumps(
                {
                    "machine": platform.processor() or platform.machine(),
                    "torch": torch.__version__,
                    "run": str(args.run),
                    **result,
                },
                indent=2,
            )
        )
        return 0
    if len(args.threads) > 1:
        parser.error("one --threads count without --run")
    args.threads = args.threads[0]
    if args.fairseq_python and args.ctranslate2:
        parser.error("one peer at a time: --fairseq-python or --ctranslate2")
    setup_logging(args.log)
    torch.set_num_threads(args.threads)
    model, trained = load_or_make_model(args)
    model.use_onednn(use_onednn(args.cpu_matmul, False, torch.device("cpu"), "decode.cpu_matmul"))  # as translate does
    max_len_b = 50 if trained else 0
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
