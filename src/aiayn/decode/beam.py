"""Beam search with the GNMT length penalty and tensor2tensor's early stop (paper section 6.1).

"We used beam search with a beam size of 4 and length penalty alpha = 0.6 [...] We set the maximum
output length during inference to input length + 50, but terminate early when possible."

Scoring (tensor2tensor ``utils/beam_search.py`` at 3d9c62f2, 2017, ``grow_topk``; Wu et al. 2016):

    score(Y) = log P(Y | X) / lp(Y),   lp(Y) = ((5 + |Y|) / 6) ** alpha

|Y| counts every generated token *including* the end-of-sentence symbol (not the beginning-of-sentence
symbol), as tensor2tensor's ``lp(i + 1)`` at decoding step ``i``.

One step, per sentence: the K live hypotheses are extended by every token; of the K*V candidates the
2K best by log-probability are kept (2K guarantee K that do not end). Candidates ending in eos join the
finished set (the K best finished are kept); the K best that do not end become the live hypotheses.
Beam size 1 keeps one candidate per step, which is greedy decoding (tensor2tensor switches to greedy
decoding for beam size 1): a sentence ends when its most probable next token is eos.

Maximum output length: ``max_len = int(a * |x| + b)`` generated tokens including eos, |x| the number
of source subwords (without the source eos), per sentence, as the paper states it (tensor2tensor
takes the padded length of the whole batch, source eos included, so its limit depends on the batch;
ours does not, and a translation never depends on how sentences were batched). When a sentence reaches
its limit with nothing finished, its live hypotheses are finished as they are, scored with lp(max_len)
(tensor2tensor returns the live hypotheses then; the ranking is the same).

Early stop (tensor2tensor ``stop_early``, ``_is_finished`` in ``utils/beam_search.py`` at 3d9c62f2 and
still at v1.3.0): a sentence is done when the *lowest* score in its finished set (of at most K) beats
the best live log-probability divided by lp(max_len). Log-probabilities only fall as a hypothesis
grows and lp grows with length (alpha >= 0), so this bound is optimistic: no live hypothesis can
still enter the finished set. Here a sentence whose n best hypotheses are asked for (n = 1 for a
translation, ``--n-best`` for lists) is done as soon as the *n-th best* finished score beats that
bound (or, while fewer than n have finished, the lowest does, as tensor2tensor's): no live
hypothesis can then enter the n best, so the n best are tensor2tensor's, found in fewer decoder
steps (lower-ranked finished hypotheses, which are not returned, could still change; with n = K the
rule is tensor2tensor's). tensor2tensor stops the whole batch when every sentence is done; here
each sentence leaves when it is, so a result does not depend on its batch.

``early_stop_rule="beam_finished"`` (``decode.early_stop_rule``, not the paper's) ends a sentence once
its finished set holds K hypotheses instead, as fairseq and CTranslate2 do (``is_finished`` in
fairseq's ``sequence_generator.py`` at v0.12.2; ``BeamSearch::search`` in CTranslate2's
``src/decoding.cc`` at 0d8bcd36, v4.8.1, with a length penalty and patience 1; both count only the end symbols
among the K best candidates of a step, here among the 2K): fewer decoder steps, and a hypothesis
that would have beaten the finished ones may be missed.

pad and bos are never generated: they mean nothing inside an output (tensor2tensor has no bos symbol
and leaves pad, which a trained model never predicts, unmasked).

Where tensor2tensor's search differed: there eos could come first, so an output could be empty; here
eos waits for ``decode.min_length`` tokens (default 1), and ``decode.min_length: 0`` restores that
search (docs/deviations.md, "Where the paper's code did otherwise").

:func:`beam_search` returns the best finished hypothesis, :func:`beam_search_n_best` the n <= K best
(the finished set holds K). Sentences leave the batch (and the cache) when done.
The first step runs one row per sentence (K rows would all hold the same prefix, bos); from the
second step on each sentence has K rows.

Device traffic per step: one device-to-host copy (the 2K candidates of every sentence: the host
keeps the finished sets and decides what is done) and one asynchronous host-to-device copy (the
surviving rows and their tokens); log-probabilities stay on the device.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Protocol, Sequence

import torch
import torch.nn.functional as F

from aiayn.io import first_line, out_of_memory
from aiayn.options import DecodeConfig

log = logging.getLogger(__name__)


class DecoderCache(Protocol):
    """Incremental decoder state of N rows, N / B adjacent rows per sentence; ``enc`` is the encoder
    output of its B sentences. ``reorder(rows, sentences)`` continues old row ``rows[r]`` in row r and
    keeps the sentences ``sentences`` (None: all); the number of rows per sentence may change."""

    enc: Any

    def reorder(self, rows: torch.Tensor, sentences: torch.Tensor | None = None) -> Any: ...


class IncrementalModel(Protocol):
    """What beam search needs of a model (``aiayn.model.Transformer`` provides it)."""

    def encode(self, src: torch.Tensor, padded: bool | None = None) -> Any: ...
    def new_cache(self, enc: Any, beam_size: int = 1, max_len: int | None = None) -> DecoderCache: ...
    def decode(self, tgt_in: torch.Tensor, enc: Any, cache: DecoderCache | None = None) -> torch.Tensor: ...


@dataclass(frozen=True)
class Hypothesis:
    """A translation: subword ids without bos/eos, its score log P / lp and its log P."""

    tokens: list[int]
    score: float
    log_prob: float


@dataclass(frozen=True)
class SpecialIds:
    pad: int = 0
    bos: int = 2
    eos: int = 3


def gnmt_length_penalty(length: int | torch.Tensor, alpha: float):
    """GNMT length penalty lp = ((5 + length) / 6) ** alpha (Wu et al. 2016, eq. 14)."""
    return ((5.0 + length) / 6.0) ** alpha


def max_output_length(src_len: int, a: float, b: float) -> int:
    """Maximum generated tokens (eos included) for a source of ``src_len`` subwords: int(a|x| + b)."""
    return max(1, int(a * src_len + b))


class _Finished:
    """The K best finished hypotheses of every sentence of the batch, by original position, and the
    score the early stop compares (the module docstring): the ``n_best``-th best, or the lowest while
    fewer have finished; -inf while none has."""

    def __init__(self, n_sentences: int, beam_size: int, n_best: int = 1):
        self.hyps: list[list[Hypothesis]] = [[] for _ in range(n_sentences)]
        self.stop_score = torch.full((n_sentences,), -math.inf)
        self.full = torch.zeros(n_sentences, dtype=torch.bool)  # K finished
        self.beam_size, self.n_best = beam_size, n_best

    def add(self, sentence: int, hyp: Hypothesis) -> None:
        kept = sorted([*self.hyps[sentence], hyp], key=lambda h: -h.score)[: self.beam_size]
        self.hyps[sentence] = kept
        self.stop_score[sentence] = kept[min(self.n_best, len(kept)) - 1].score
        self.full[sentence] = len(kept) == self.beam_size

    def result(self, sentence: int, n_best: int = 1) -> list[Hypothesis]:
        """The ``n_best`` best finished hypotheses of ``sentence``, best first (fewer if fewer finished)."""
        if not self.hyps[sentence]:
            raise RuntimeError(f"sentence {sentence} of the batch has no hypothesis: every token has P = 0")
        return self.hyps[sentence][:n_best]


@dataclass
class _Beams:
    """Live state: ``active`` (n,) original sentence ids, ``log_probs`` (n, w), ``tokens`` (n*w, t),
    w the live hypotheses per sentence (1 before the first step, K after).

    Only ``log_probs`` lives on the model's device; the bookkeeping stays on the CPU.
    """

    active: torch.Tensor
    log_probs: torch.Tensor
    tokens: torch.Tensor
    max_len: torch.Tensor  # (n,) per active sentence
    max_lp: torch.Tensor  # (n,) lp(max_len), the early-stop bound's denominator

    def select(self, keep: torch.Tensor, log_probs: torch.Tensor, tokens: torch.Tensor) -> "_Beams":
        """The sentences ``keep`` (bool (n,)) with their new log-probabilities and tokens."""
        return _Beams(self.active[keep], log_probs, tokens, self.max_len[keep], self.max_lp[keep])


def _step_candidates(logits: torch.Tensor, log_probs: torch.Tensor, beam_size: int, ids: SpecialIds, end: bool = True):
    """Top 2K continuations per sentence, on the device: (log P (n, 2K), beam * V + token (n, 2K)).

    logits (n*w, V) of the newest position, log_probs (n, w) of the live hypotheses; pad and bos
    can never be generated, nor eos unless ``end`` (``decode.min_length`` tokens not generated yet).
    A sentence's best 2K continuations are among the 2K most probable tokens of each of its rows
    (log P adds one number per row), so each row's are found first and only those are added to the
    row's log P and ranked across the rows: the same values as adding log P to every token, without
    forming and ranking the (n, w V) sums.
    """
    log_p = F.log_softmax(logits.float(), dim=-1)
    log_p[:, ids.pad] = -math.inf  # slice fills: no index tensor to copy to the device
    log_p[:, ids.bos] = -math.inf
    if not end:
        log_p[:, ids.eos] = -math.inf
    (n, width), vocab = log_probs.shape, log_p.size(-1)
    wanted = 2 * beam_size if beam_size > 1 else 1
    per_row = min(wanted, vocab)
    row_top, row_token = log_p.topk(per_row, dim=1)  # (n*w, W)
    total = (log_probs.reshape(-1, 1) + row_top).reshape(n, width * per_row)
    top_lp, pos = total.topk(min(wanted, total.size(1)), dim=1)  # (n, 2K), sorted
    token = row_token.reshape(n, width * per_row).gather(1, pos)
    return top_lp, torch.div(pos, per_row, rounding_mode="floor") * vocab + token


class _Candidates(NamedTuple):
    """Continuations of the live hypotheses, per sentence and candidate, on the host: each (n, W)."""

    log_prob: torch.Tensor  # the continued hypothesis's log P
    beam: torch.Tensor  # the live hypothesis it continues (0..w-1)
    token: torch.Tensor  # the token it adds


def _to_host(top_lp: torch.Tensor, top_idx: torch.Tensor, vocab: int) -> _Candidates:
    """The candidates on the CPU, in one copy from another device (already there on a CPU)."""
    if top_lp.device.type == "cpu":
        lp, idx = top_lp, top_idx
    else:
        width = top_lp.size(1)
        both = torch.cat([top_lp.double(), top_idx.double()], dim=1).cpu()  # indices < 2^53: exact
        lp, idx = both[:, :width].float(), both[:, width:].long()
    return _Candidates(lp, torch.div(idx, vocab, rounding_mode="floor"), idx % vocab)


def _to_device(parts: list[torch.Tensor], device: torch.device) -> list[torch.Tensor]:
    """LongTensors to ``device`` in one copy (asynchronous, from pinned memory, on CUDA)."""
    packed = torch.cat(parts)
    if device.type == "cuda":
        packed = packed.pin_memory().to(device, non_blocking=True)
    else:
        packed = packed.to(device)
    return list(packed.split([p.numel() for p in parts]))


def _collect_finished(
    cand: _Candidates, beams: _Beams, finished: _Finished, length: int, alpha: float, eos: int
) -> None:
    """Move candidates ending in eos (with finite log P) into the finished sets."""
    hits = ((cand.token == eos) & torch.isfinite(cand.log_prob)).nonzero().tolist()
    lp, width = gnmt_length_penalty(length, alpha), beams.log_probs.size(1)
    for i, j in hits:
        log_prob = cand.log_prob[i, j].item()
        row = i * width + cand.beam[i, j].item()
        finished.add(int(beams.active[i]), Hypothesis(beams.tokens[row].tolist(), log_prob / lp, log_prob))


def _next_live(cand: _Candidates, eos: int, beam_size: int) -> tuple[_Candidates, torch.Tensor]:
    """The K best candidates that do not end (each (n, K)), and their positions among the candidates (n, K)."""
    width = min(beam_size, cand.log_prob.size(1))
    live_lp, pos = cand.log_prob.masked_fill(cand.token == eos, -math.inf).topk(width, dim=1)
    return _Candidates(live_lp, cand.beam.gather(1, pos), cand.token.gather(1, pos)), pos


def _finish_at_max_len(
    at_max: torch.Tensor, beams: _Beams, live: _Candidates, finished: _Finished, length: int, alpha: float
) -> None:
    """Sentences at their length limit with nothing finished: their live hypotheses finish as they are."""
    lp, width = gnmt_length_penalty(length, alpha), beams.log_probs.size(1)
    for i in at_max.nonzero().flatten().tolist():
        sentence = int(beams.active[i])
        if finished.hyps[sentence]:
            continue
        for j in range(live.log_prob.size(1)):
            log_prob = live.log_prob[i, j].item()
            if math.isfinite(log_prob):
                prefix = beams.tokens[i * width + live.beam[i, j].item()].tolist()
                finished.add(sentence, Hypothesis(prefix + [live.token[i, j].item()], log_prob / lp, log_prob))


def _done(
    beams: _Beams, live_lp: torch.Tensor, finished: _Finished, length: int, early_stop: bool, rule: str = "bound"
) -> tuple[torch.Tensor, torch.Tensor]:
    """(at_max, done) masks over active sentences after a step that generated ``length`` tokens.

    Done: at the length limit, or no live hypothesis left (all log P = -inf), or (early stop) the
    finished score it compares (:class:`_Finished`) beats the best live log P / lp(max_len), or, under
    the rule ``beam_finished``, K hypotheses have finished.
    """
    best_live = live_lp[:, 0]
    at_max = beams.max_len <= length
    done = at_max | ~torch.isfinite(best_live)
    if early_stop and rule == "beam_finished":
        done |= finished.full[beams.active]
    elif early_stop:
        done |= finished.stop_score[beams.active] > best_live / beams.max_lp
    return at_max, done


def beam_search(
    model: IncrementalModel,
    src: torch.Tensor,
    src_lengths: Sequence[int],
    opts: DecodeConfig = DecodeConfig(),
    *,
    ids: SpecialIds = SpecialIds(),
) -> list[Hypothesis]:
    """Best hypothesis of each source sentence: :func:`beam_search_n_best` with ``n_best=1``."""
    return [hyps[0] for hyps in beam_search_n_best(model, src, src_lengths, opts, n_best=1, ids=ids)]


@torch.inference_mode()
def beam_search_n_best(
    model: IncrementalModel,
    src: torch.Tensor,
    src_lengths: Sequence[int],
    opts: DecodeConfig = DecodeConfig(),
    *,
    n_best: int = 1,
    ids: SpecialIds = SpecialIds(),
) -> list[list[Hypothesis]]:
    """The ``n_best`` best hypotheses of each source sentence, best first (``n_best <= opts.beam_size``:
    the finished set holds K; fewer when fewer finished); ``src`` (B,S) holds ids + eos, right-padded with
    pad. ``opts`` (the ``decode`` settings) sets the beam size, length penalty and limit, and the stop.

    ``src_lengths[b]`` is |x| of sentence b in subwords (without eos), for the length limit; an output
    ends no earlier than after ``min_length`` tokens (but at the length limit, as it stands). The
    encoder runs once; each step feeds only the newest token (B*K, 1; B at the first step) to
    ``model.decode`` with the cache, and ``cache.reorder`` keeps the rows of surviving beams (their
    self-attention keys and values) and, when sentences finish, the remaining sentences' encoder
    output and keys/values.
    """
    beam_size, length_penalty = opts.beam_size, opts.length_penalty
    if not 1 <= n_best <= beam_size:
        raise ValueError(f"n_best must be between 1 and the beam size {beam_size}, got {n_best}")
    batch, device = src.size(0), src.device
    max_len = torch.tensor([max_output_length(n, opts.max_len_a, opts.max_len_b) for n in src_lengths])
    padded = min(src_lengths) != max(src_lengths)  # known on the host: the encoder need not read it back
    cache = model.new_cache(model.encode(src, padded), 1, int(max_len.max()))  # one row per sentence at first
    beams = _Beams(
        torch.arange(batch),
        torch.zeros(batch, 1, device=device),
        torch.empty(batch, 0, dtype=torch.long),
        max_len,
        gnmt_length_penalty(max_len.double(), length_penalty).float(),
    )
    finished = _Finished(batch, beam_size, n_best)
    prev = torch.full((batch, 1), ids.bos, dtype=torch.long, device=device)
    length = 0
    while beams.active.numel():
        length += 1
        logits = model.decode(prev, cache.enc, cache)[:, -1]
        top_lp, top_idx = _step_candidates(logits, beams.log_probs, beam_size, ids, end=length > opts.min_length)
        cand = _to_host(top_lp, top_idx, logits.size(-1))
        _collect_finished(cand, beams, finished, length, length_penalty, ids.eos)
        live, pos = _next_live(cand, ids.eos, beam_size)
        at_max, done = _done(beams, live.log_prob, finished, length, opts.early_stop, opts.early_stop_rule)
        _finish_at_max_len(at_max, beams, live, finished, length, length_penalty)
        prev, beams = _advance(cache, beams, ~done, live, pos, top_lp, device)
    return [finished.result(b, n_best) for b in range(batch)]


def _advance(
    cache: DecoderCache,
    beams: _Beams,
    keep: torch.Tensor,
    live: _Candidates,
    pos: torch.Tensor,
    top_lp: torch.Tensor,
    device: torch.device,
) -> tuple[torch.Tensor, _Beams]:
    """Keep the live hypotheses of the sentences ``keep`` (bool (n,)): reorder the cache, and return
    the next step's input tokens (n' K, 1) and beams. log P stays on the device (``top_lp`` (n, W))."""
    beam_size, width = live.beam.size(1), beams.log_probs.size(1)
    kept = keep.nonzero().flatten()
    rows = (kept[:, None] * width + live.beam[kept]).reshape(-1)
    tokens = live.token[kept].reshape(-1)
    chosen = (kept[:, None] * top_lp.size(1) + pos[kept]).reshape(-1)  # into top_lp, flattened
    shrinks = kept.numel() < keep.numel()
    rows_d, tokens_d, chosen_d, *kept_d = _to_device([rows, tokens, chosen] + ([kept] if shrinks else []), device)
    cache.reorder(rows_d, kept_d[0] if shrinks else None)
    log_probs = top_lp.reshape(-1)[chosen_d].view(-1, beam_size)
    return tokens_d.view(-1, 1), beams.select(keep, log_probs, torch.cat([beams.tokens[rows], tokens[:, None]], dim=1))


def pad_sources(sources: Sequence[Sequence[int]], ids: SpecialIds, device: torch.device | str = "cpu"):
    """(B, S) tensor of ``ids + [eos]`` right-padded with pad, as the trainer's collate builds ``src``
    (copied onto a CUDA device from pinned memory without waiting, as :func:`_to_device`)."""
    width = max(len(s) for s in sources) + 1
    src = torch.full((len(sources), width), ids.pad, dtype=torch.long)
    for row, sentence in enumerate(sources):
        src[row, : len(sentence)] = torch.as_tensor(list(sentence), dtype=torch.long)
        src[row, len(sentence)] = ids.eos
    [src] = _to_device([src.view(-1)], torch.device(device))
    return src.view(len(sources), width)


def translate_sentences(
    model: IncrementalModel, sources: Sequence[Sequence[int]], opts: DecodeConfig = DecodeConfig(), **kwargs: Any
) -> list[Hypothesis]:
    """Best hypothesis per source: :func:`translate_sentences_n_best` with ``n_best=1``."""
    return [hyps[0] for hyps in translate_sentences_n_best(model, sources, opts, n_best=1, **kwargs)]


def translate_sentences_n_best(
    model: IncrementalModel,
    sources: Sequence[Sequence[int]],
    opts: DecodeConfig = DecodeConfig(),
    *,
    n_best: int = 1,
    device: torch.device | str = "cpu",
    ids: SpecialIds = SpecialIds(),
    on_batch: Callable[[int], None] | None = None,
) -> list[list[Hypothesis]]:
    """Beam search over a corpus in batches of similar length; results in the order of ``sources``.

    Sentences are sorted by length (longest first) into batches of at most ``opts.max_sentences``, each
    searched by :func:`beam_search_n_best` with ``opts``; ``on_batch(n)`` is called after each batch.
    Every source must be non-empty. A batch that does not fit in memory is searched a sentence at a time
    (a warning says so); a sentence that does not fit alone raises :class:`TooLong`.
    """
    if any(len(s) == 0 for s in sources):
        raise ValueError("empty source sentence: translate it as an empty line instead")
    order = sorted(range(len(sources)), key=lambda i: -len(sources[i]))
    results: list[list[Hypothesis]] = [[] for _ in sources]
    search = _Search(opts, n_best, ids, device)
    for start in range(0, len(order), opts.max_sentences):
        chunk = order[start : start + opts.max_sentences]
        for i, best in zip(chunk, _search_within_memory(model, sources, chunk, search)):
            results[i] = best
        if on_batch is not None:
            on_batch(len(chunk))
    return results


class TooLong(MemoryError):
    """A source sentence that does not fit in memory even searched alone (sinusoids set no length limit;
    memory does): ``index`` among the sources searched, ``length`` its subwords."""

    def __init__(self, index: int, length: int, cause: BaseException):
        super().__init__(f"{length} subwords, too long to decode in the memory there is ({first_line(cause)})")
        self.index, self.length = index, length


@dataclass(frozen=True)
class _Search:
    """What every batch of a corpus is searched with."""

    opts: DecodeConfig
    n_best: int
    ids: SpecialIds
    device: torch.device | str


def _search_within_memory(
    model: IncrementalModel, sources: Sequence[Sequence[int]], chunk: list[int], search: _Search
) -> list[list[Hypothesis]]:
    """The hypotheses of the sources ``chunk`` searched together, or one at a time when they do not fit."""
    batch, ids = [sources[i] for i in chunk], search.ids
    try:
        src = pad_sources(batch, ids, search.device)
        return beam_search_n_best(model, src, [len(s) for s in batch], search.opts, n_best=search.n_best, ids=ids)
    except RuntimeError as error:
        if not out_of_memory(error):
            raise
        if len(chunk) == 1:
            raise TooLong(chunk[0], len(batch[0]), error) from None
        # out of the except block before searching again: the error's traceback holds the failed batch's tensors
    log.warning(
        "%d sentences of up to %d subwords do not fit in memory together: searched one at a time",
        len(chunk),
        len(batch[0]),
    )
    return [_search_within_memory(model, sources, [i], search)[0] for i in chunk]


class _PrefixCache:
    """The "cache" of :class:`UncachedDecoding`: the encoder output and the target prefix of every row."""

    def __init__(self, enc: Any, beam_size: int):
        rows = torch.arange(enc.memory.size(0), device=enc.memory.device).repeat_interleave(beam_size)
        self.enc = enc.index_select(rows)
        self.prefix = torch.empty(rows.numel(), 0, dtype=torch.long, device=enc.memory.device)

    def reorder(self, rows: torch.Tensor, sentences: torch.Tensor | None = None) -> "_PrefixCache":
        self.enc = self.enc.index_select(rows)
        self.prefix = self.prefix.index_select(0, rows)
        return self


class UncachedDecoding:
    """A model seen through the beam-search protocol without incremental state.

    Every step recomputes the decoder over the whole prefix, ``model.decode(prefix (N, t), enc)``
    with the encoder output repeated for every row: O(t^2) work per sentence instead of O(t). The
    reference that cached decoding must match, and a baseline of ``benchmarks/decode_speed.py``.
    """

    def __init__(self, model: IncrementalModel):
        self.model = model

    def encode(self, src: torch.Tensor, padded: bool | None = None) -> Any:
        return self.model.encode(src, padded)

    def new_cache(self, enc: Any, beam_size: int = 1, max_len: int | None = None) -> _PrefixCache:
        return _PrefixCache(enc, beam_size)

    def decode(self, tgt_in: torch.Tensor, enc: Any, cache: _PrefixCache) -> torch.Tensor:
        """tgt_in (N, 1) newest token -> logits (N, 1, V) of the newest position."""
        cache.prefix = torch.cat([cache.prefix, tgt_in], dim=1)
        return self.model.decode(cache.prefix, cache.enc)[:, -1:]
