import dataclasses
import itertools
import math

import pytest
import torch
from fake_model import BOS, EOS, FakeModel

from aiayn.decode import beam
from aiayn.decode.beam import (
    SpecialIds,
    TooLong,
    UncachedDecoding,
    beam_search,
    beam_search_n_best,
    gnmt_length_penalty,
    max_output_length,
    pad_sources,
    translate_sentences,
    translate_sentences_n_best,
)
from aiayn.options import DecodeConfig, ModelConfig

A, B, C = 4, 5, 6
IDS = SpecialIds(pad=0, bos=BOS, eos=EOS)

# Sentence 7: everything starts with c; then [c] (P .4), [c a] (P .36) or [c a b] (P .24).
LENGTH_TABLE = {
    (7, ()): {C: 1.0},
    (7, (C,)): {EOS: 0.4, A: 0.6},
    (7, (C, A)): {EOS: 0.6, B: 0.4},
    (7, (C, A, B)): {EOS: 1.0},
}
# Sentence 8: [] (P .52) finishes first, but [a a a] (P .48 * .95^2) wins with alpha 1.
LONG_TABLE = {
    (8, ()): {EOS: 0.52, A: 0.48},
    (8, (A,)): {A: 0.95, EOS: 0.05},
    (8, (A, A)): {A: 0.95, EOS: 0.05},
    (8, (A, A, A)): {EOS: 1.0},
}
# Sentence 9: never ends; stopped at its length limit.
NO_EOS_TABLE = {(9, p): {A: 0.9, B: 0.1} for n in range(7) for p in itertools.product((A, B), repeat=n)}


def search(model, sources, **kwargs):
    settings = dict(beam_size=2, length_penalty=1.0, max_len_a=1.0, max_len_b=3, early_stop=True)
    settings.update(kwargs)
    return beam_search(model, pad_sources(sources, IDS), [len(s) for s in sources], DecodeConfig(**settings), ids=IDS)


def lp(n, alpha):
    return ((5 + n) / 6) ** alpha


def test_length_penalty_and_max_len_golden():
    assert gnmt_length_penalty(1, 0.6) == 1.0
    assert gnmt_length_penalty(7, 0.6) == pytest.approx(2**0.6)
    assert max_output_length(20, 1, 50) == 70 and max_output_length(10, 1.5, 2) == 17
    assert max_output_length(0, 0, 0) == 1


@pytest.mark.parametrize(
    "alpha, tokens, log_prob, length",
    [
        (0.0, [C], math.log(0.4), 2),  # no penalty: the short, more probable hypothesis
        (1.0, [C, A], math.log(0.36), 3),  # the penalty makes the longer one win
    ],
)
def test_length_penalty_changes_the_winner(alpha, tokens, log_prob, length):
    [hyp] = search(FakeModel(LENGTH_TABLE), [[7, 1]], length_penalty=alpha)
    assert hyp.tokens == tokens
    assert hyp.log_prob == pytest.approx(log_prob, rel=1e-6)
    assert hyp.score == pytest.approx(log_prob / lp(length, alpha), rel=1e-6)  # |Y| counts eos


def test_early_stop_when_no_live_hypothesis_can_win():
    # After step 3 the best live [c a b] has log P ln .24; ln .24 / lp(5) < ln .36 / lp(3): stop.
    stopped, full = FakeModel(LENGTH_TABLE), FakeModel(LENGTH_TABLE)
    assert math.log(0.24) / lp(5, 1.0) < math.log(0.36) / lp(3, 1.0)
    [early] = search(stopped, [[7, 1]])
    [late] = search(full, [[7, 1]], early_stop=False)
    assert stopped.calls == 3 and full.calls == 4
    assert early == late


def test_search_goes_on_while_a_live_hypothesis_can_still_win():
    # Two hypotheses finish by step 2 ([] and [a]), yet ln(.48*.95) / lp(5) beats ln .52: go on.
    model = FakeModel(LONG_TABLE)
    [hyp] = search(model, [[8, 1, 1]], max_len_b=2)
    assert hyp.tokens == [A, A, A] and model.calls == 4
    assert hyp.score == pytest.approx(math.log(0.48 * 0.95**2) / lp(4, 1.0), rel=1e-6)


def test_the_beam_finished_rule_stops_once_k_hypotheses_have_finished():
    """fairseq's and CTranslate2's rule (decode.early_stop_rule: beam_finished): [] and [a] have
    finished after step 2, two of beam 2, so the search ends there and misses [a a a]."""
    model = FakeModel(LONG_TABLE)
    [hyp] = search(model, [[8, 1, 1]], max_len_b=2, min_length=0, early_stop_rule="beam_finished")
    assert model.calls == 2 and hyp.tokens == [] and hyp.log_prob == pytest.approx(math.log(0.52))
    [bound] = search(FakeModel(LONG_TABLE), [[8, 1, 1]], max_len_b=2, min_length=0)
    assert bound.tokens == [A, A, A]
    with pytest.raises(ValueError, match="early_stop_rule"):
        search(FakeModel(LONG_TABLE), [[8, 1, 1]], early_stop_rule="soon")


# Sentence 11 (alpha 0, beam 2): after step 2 the finished set is [a] (P .45) and [] (P .15), the best
# live [b b] has P .24: above the lowest finished, below the best. At step 3 [b b] finishes and
# displaces [].
LOWEST_TABLE = {
    (11, ()): {A: 0.5, B: 0.3, EOS: 0.15, C: 0.05},
    (11, (A,)): {EOS: 0.9, A: 0.1},
    (11, (B,)): {EOS: 0.2, B: 0.8},
}


def test_early_stop_waits_until_the_lowest_finished_beats_every_live_hypothesis():
    """tensor2tensor's rule (utils/beam_search.py at 3d9c62f2, _is_finished): comparing the best
    finished score would have stopped after step 2 with the n-best list [a], []."""
    model = FakeModel(LOWEST_TABLE)
    opts = DecodeConfig(beam_size=2, length_penalty=0.0, max_len_b=3, early_stop=True)
    [hyps] = beam_search_n_best(model, pad_sources([[11]], IDS), [1], opts, n_best=2, ids=IDS)
    assert [h.tokens for h in hyps] == [[A], [B, B]] and model.calls == 3
    assert [h.log_prob for h in hyps] == pytest.approx([math.log(0.45), math.log(0.24)], rel=1e-6)
    opts = dataclasses.replace(opts, early_stop=False)
    [full] = beam_search_n_best(FakeModel(LOWEST_TABLE), pad_sources([[11]], IDS), [1], opts, n_best=2, ids=IDS)
    assert full == hyps


def test_one_best_stops_when_the_best_finished_beats_every_live_hypothesis():
    """The same sentence with one hypothesis asked for: after step 2 the best finished [a] (P .45)
    beats the best live [b b] (P .24), so the search ends a step sooner with the same best."""
    model = FakeModel(LOWEST_TABLE)
    opts = DecodeConfig(beam_size=2, length_penalty=0.0, max_len_b=3, early_stop=True)
    [[best]] = beam_search_n_best(model, pad_sources([[11]], IDS), [1], opts, n_best=1, ids=IDS)
    [[full, _]] = beam_search_n_best(FakeModel(LOWEST_TABLE), pad_sources([[11]], IDS), [1], opts, n_best=2, ids=IDS)
    assert model.calls == 2 and best == full and best.tokens == [A]


class RandomTable(FakeModel):
    """P(y_t | y_<t, x) drawn once per (x, prefix) from a seeded generator over a, b, c and eos, the end
    more likely as the prefix grows: searches of many shapes, finished sets filling at every pace."""

    def __init__(self, seed: int):
        super().__init__({})
        self.seed = seed

    def log_probs(self, key, prefix):
        generator = torch.Generator().manual_seed(hash((self.seed, key, prefix)) % 2**31)
        logits = torch.full((8,), -math.inf)
        logits[[A, B, C, EOS]] = torch.randn(4, generator=generator) * 2
        logits[EOS] += 0.5 * len(prefix) - 1
        return logits.log_softmax(0)


@pytest.mark.parametrize("seed", range(6))
def test_the_n_best_are_those_of_tensor2tensors_rule_in_fewer_steps(seed):
    """Asked for n < K hypotheses, the search stops when the n-th best finished beats every live one;
    with n = K the rule is tensor2tensor's (the lowest of the finished set). The n best are the same
    either way and the same as a search to the length limit; the steps are fewer or as many."""
    sources = [[key] * (1 + key % 5) for key in range(12, 40)]
    for beam_size, alpha in ((4, 0.6), (3, 1.0), (2, 0.6)):
        opts = DecodeConfig(max_sentences=8, beam_size=beam_size, length_penalty=alpha, max_len_b=6, early_stop=True)
        everything = dataclasses.replace(opts, early_stop=False)
        t2t = RandomTable(seed)
        lowest = translate_sentences_n_best(t2t, sources, opts, n_best=beam_size, ids=IDS)
        full = translate_sentences_n_best(RandomTable(seed), sources, everything, n_best=beam_size, ids=IDS)
        for n in range(1, beam_size):
            model = RandomTable(seed)
            found = translate_sentences_n_best(model, sources, opts, n_best=n, ids=IDS)
            for ours, theirs, everything in zip(found, lowest, full):
                assert ours == theirs[:n] == everything[: len(ours)]
            assert model.calls <= t2t.calls
        assert sum(len(h) for h in lowest) <= sum(len(h) for h in full)
    assert t2t.calls > model.calls  # sooner somewhere (beam 2, n 1)


def test_length_limit_finishes_live_hypotheses():
    [hyp] = search(FakeModel(NO_EOS_TABLE), [[9]], max_len_b=2)  # max_len = 1 + 2
    assert hyp.tokens == [A, A, A]
    assert hyp.score == pytest.approx(3 * math.log(0.9) / lp(3, 1.0), rel=1e-6)


def greedy(model, source, max_len, min_length):
    """Argmax decoding; pad and bos are never generated, nor eos before ``min_length`` tokens, as in the
    search."""
    enc = model.encode(pad_sources([source], IDS))
    prefix = [BOS]
    while len(prefix) <= max_len:
        logits = model.decode(torch.tensor([prefix]), enc)[0, -1].clone()
        logits[[IDS.pad, IDS.bos]] = -math.inf
        if len(prefix) - 1 < min_length:
            logits[EOS] = -math.inf
        token = int(logits.argmax())
        if token == EOS:
            break
        prefix.append(token)
    return prefix[1:]


@pytest.mark.parametrize("min_length, second", [(0, []), (1, [A, A, A])])
def test_beam_one_is_greedy(min_length, second):
    model = FakeModel(LENGTH_TABLE | LONG_TABLE | NO_EOS_TABLE)
    sources = [[7, 1], [8, 1, 1], [9]]
    hyps = search(model, sources, beam_size=1, length_penalty=0.6, min_length=min_length)
    assert [h.tokens for h in hyps] == [greedy(model, s, 3 + len(s), min_length) for s in sources]
    assert [h.tokens for h in hyps] == [[C, A], second, [A, A, A, A]]


@pytest.mark.parametrize("max_sentences", [1, 2, 3, 5])
def test_batching_keeps_input_order(max_sentences):
    model = FakeModel(LENGTH_TABLE | LONG_TABLE | NO_EOS_TABLE)
    sources = [[9], [8, 1, 1], [7, 1], [9, 1, 1, 1], [7, 4, 4]]
    opts = DecodeConfig(
        max_sentences=max_sentences, beam_size=2, length_penalty=1.0, max_len_a=1.0, max_len_b=2, early_stop=True
    )
    hyps = translate_sentences(model, sources, opts, ids=IDS)
    alone = [search(FakeModel(model.table), [s], max_len_b=2)[0] for s in sources]
    assert hyps == alone
    assert [h.tokens for h in hyps] == [[A, A, A], [A, A, A], [C, A], [A] * 6, [C, A]]


def test_cached_and_uncached_decoding_agree_on_fake_model():
    model = FakeModel(LENGTH_TABLE | LONG_TABLE | NO_EOS_TABLE)
    sources = [[9, 1], [8, 1, 1], [7, 1]]
    assert search(model, sources, beam_size=3) == search(UncachedDecoding(model), sources, beam_size=3)


def test_n_best_lists_the_finished_hypotheses_best_first():
    # alpha 0: [c] (P .4) and [c a] (P .36) finish, [c a b] (P .24) is still live when the search stops.
    opts = DecodeConfig(beam_size=2, length_penalty=0.0, max_len_b=3)
    [hyps] = beam_search_n_best(FakeModel(LENGTH_TABLE), pad_sources([[7, 1]], IDS), [2], opts, n_best=2, ids=IDS)
    assert [h.tokens for h in hyps] == [[C], [C, A]]
    assert [h.log_prob for h in hyps] == pytest.approx([math.log(0.4), math.log(0.36)], rel=1e-6)
    [best] = search(FakeModel(LENGTH_TABLE), [[7, 1]], length_penalty=0.0)
    assert best == hyps[0]


def test_n_best_of_a_corpus_keeps_input_order_and_the_best_first():
    model = FakeModel(LENGTH_TABLE | LONG_TABLE | NO_EOS_TABLE)
    sources = [[9], [7, 1], [8, 1, 1]]
    opts = DecodeConfig(
        max_sentences=2, beam_size=2, length_penalty=1.0, max_len_a=1.0, max_len_b=2, early_stop=True, min_length=0
    )
    lists = translate_sentences_n_best(model, sources, opts, n_best=2, ids=IDS)
    assert [hyps[0] for hyps in lists] == translate_sentences(model, sources, opts, ids=IDS)
    assert [[h.tokens for h in hyps] for hyps in lists] == [[[A, A, A], [A, A, B]], [[C, A], [C]], [[A, A, A], []]]
    assert all(hyps[0].score >= hyps[1].score for hyps in lists)


CPU_OOM = (
    "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you tried "
    "to allocate 640006400016 bytes. Error code 12 (Cannot allocate memory)"
)


def memory_for(monkeypatch, fits: int) -> list[list[int]]:
    """Searches fail as the CPU allocator does when their batch holds more than ``fits`` source subwords;
    returns the lengths of each batch tried."""
    search, tried = beam.beam_search_n_best, []

    def tight(model, src, lengths, opts, **options):
        tried.append(list(lengths))
        if sum(lengths) > fits:
            raise RuntimeError(CPU_OOM)
        return search(model, src, lengths, opts, **options)

    monkeypatch.setattr(beam, "beam_search_n_best", tight)
    return tried


def test_a_batch_that_does_not_fit_is_searched_a_sentence_at_a_time(monkeypatch, caplog):
    model = FakeModel(LENGTH_TABLE | LONG_TABLE | NO_EOS_TABLE)
    sources = [[9], [8, 1, 1], [7, 1], [9, 1, 1, 1], [7, 4, 4]]
    opts = DecodeConfig(max_sentences=2, beam_size=2, length_penalty=1.0, max_len_a=1.0, max_len_b=2, early_stop=True)
    expected = translate_sentences(model, sources, opts, ids=IDS)
    tried = memory_for(monkeypatch, fits=5)
    assert translate_sentences(model, sources, opts, ids=IDS) == expected
    assert tried == [[4, 3], [4], [3], [3, 2], [1]]  # longest first: the first batch alone does not fit
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        "2 sentences of up to 4 subwords do not fit in memory together: searched one at a time"
    ]


def test_a_sentence_that_does_not_fit_alone_is_named_by_its_index(monkeypatch):
    model = FakeModel(LENGTH_TABLE | LONG_TABLE | NO_EOS_TABLE)
    memory_for(monkeypatch, fits=3)
    too_long = r"^4 subwords, too long to decode in the memory there is \(\[enforce fail"
    with pytest.raises(TooLong, match=too_long) as error:
        translate_sentences(model, [[9], [8, 1, 1], [9, 1, 1, 1]], DecodeConfig(max_sentences=2, beam_size=2), ids=IDS)
    assert (error.value.index, error.value.length) == (2, 4)


def test_an_error_that_is_not_memory_is_not_retried(monkeypatch):
    tried = []

    def broken(model, src, lengths, opts, **options):
        tried.append(list(lengths))
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(beam, "beam_search_n_best", broken)
    with pytest.raises(RuntimeError, match="illegal memory access"):
        translate_sentences(FakeModel(LENGTH_TABLE), [[7, 1], [7]], DecodeConfig(max_sentences=2, beam_size=2), ids=IDS)
    assert tried == [[2, 1]]


@pytest.mark.parametrize("n_best", [0, 3])
def test_n_best_beyond_the_beam_refused(n_best):
    with pytest.raises(ValueError, match=r"n_best must be between 1 and the beam size 2"):
        beam_search_n_best(
            FakeModel(LENGTH_TABLE), pad_sources([[7]], IDS), [1], DecodeConfig(beam_size=2), n_best=n_best, ids=IDS
        )


def test_negative_alpha_refused_before_a_search():
    with pytest.raises(ValueError, match="decode.length_penalty: -0.5 is less than the minimum"):
        search(FakeModel({}), [[7]], length_penalty=-0.5)


class EosBias:
    """A model with ``bias`` added to the eos logit: random models rarely end on their own."""

    def __init__(self, model, bias):
        self.model, self.bias = model, bias

    def encode(self, src, padded=None):
        return self.model.encode(src, padded)

    def new_cache(self, enc, beam_size=1, max_len=None):
        return self.model.new_cache(enc, beam_size, max_len)

    def decode(self, tgt_in, enc, cache=None):
        logits = self.model.decode(tgt_in, enc, cache)
        logits[..., EOS] += self.bias
        return logits


def real_model(seed):
    model_module = pytest.importorskip("aiayn.model", reason="aiayn.model (branch model) is not merged here")
    # The eos bias below is sized for this initialisation's logit scale: a few hypotheses end early, most
    # run to the length limit (an init of its own, not the config default, so the default may change).
    cfg = ModelConfig(n_layers=2, d_model=32, d_ff=64, n_heads=4, d_k=8, d_v=8, dropout=0.0, init="fairseq")
    torch.manual_seed(seed)
    return EosBias(model_module.Transformer(cfg, vocab_size=24, pad_id=0).eval(), bias=2.0)


REAL_SOURCES = [[5, 6, 7, 8, 9], [10, 11], [12, 13, 14, 15, 16, 17, 18, 19], [20]]


def test_cached_logits_equal_uncached_on_real_model():
    model = real_model(seed=0).model
    src = pad_sources(REAL_SOURCES, IDS)
    prefix = torch.tensor([[BOS, 7, 9, 11, 4, 5]] * len(REAL_SOURCES))
    with torch.no_grad():
        full = model.decode(prefix, model.encode(src))
        cache = model.new_cache(model.encode(src))
        steps = torch.cat([model.decode(prefix[:, t : t + 1], cache.enc, cache) for t in range(prefix.size(1))], 1)
    torch.testing.assert_close(steps, full, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("beam_size", [1, 4])
def test_cached_beam_equals_uncached_on_real_model(beam_size):
    model = real_model(seed=0)
    settings = dict(beam_size=beam_size, length_penalty=0.6, max_len_b=8)
    with torch.no_grad():
        cached = search(model, REAL_SOURCES, **settings)
        uncached = search(UncachedDecoding(model), REAL_SOURCES, **settings)
    assert [h.tokens for h in cached] == [h.tokens for h in uncached]
    assert [h.score for h in cached] == pytest.approx([h.score for h in uncached], abs=1e-5)
    # the eos path is exercised (the length limit is, on the fake model)
    assert any(len(h.tokens) < len(s) + 8 for h, s in zip(cached, REAL_SOURCES))


@pytest.mark.parametrize("min_length", [0, 1])
def test_beam_one_is_greedy_on_real_model(min_length):
    model = real_model(seed=4)
    with torch.no_grad():
        hyps = search(model, REAL_SOURCES, beam_size=1, length_penalty=0.6, max_len_b=8, min_length=min_length)
        expected = [greedy(model, s, len(s) + 8, min_length) for s in REAL_SOURCES]
    assert [h.tokens for h in hyps] == expected
    assert ([] in expected) == (min_length == 0)
    assert any(len(tokens) == len(s) + 8 for tokens, s in zip(expected, REAL_SOURCES))


def test_onednn_products_give_the_same_hypotheses_on_real_model(monkeypatch):
    """decode.cpu_matmul: onednn (every product through oneDNN here) against torch's own products."""
    from aiayn.model import functional

    if not functional.onednn_available():
        pytest.skip("this torch build has no oneDNN linear operator")
    monkeypatch.setattr(functional, "ONEDNN_MIN_MACS_NO_GRAD", 0)
    model = real_model(seed=0)
    settings = dict(beam_size=4, length_penalty=0.6, max_len_b=8)
    plain = search(model, REAL_SOURCES, **settings)
    model.model.use_onednn(True)
    fast = search(model, REAL_SOURCES, **settings)
    assert [h.tokens for h in fast] == [h.tokens for h in plain]
    assert [h.score for h in fast] == pytest.approx([h.score for h in plain], abs=1e-5)


def test_first_step_runs_one_row_per_sentence():
    """All K beams of a sentence start from bos: the first step decodes one row per sentence, the next K."""
    model = real_model(seed=1)
    rows = []
    decode = model.decode
    model.decode = lambda tgt_in, enc, cache=None: rows.append(tgt_in.size(0)) or decode(tgt_in, enc, cache)
    with torch.no_grad():
        hyps = search(model, REAL_SOURCES, beam_size=3, length_penalty=0.6, max_len_b=8)
    n = len(REAL_SOURCES)
    assert rows[0] == n and rows[1] > n and all(r % 3 == 0 for r in rows[1:])  # sentences leave when done
    assert [h.tokens for h in hyps] == [
        h.tokens for h in search(UncachedDecoding(model), REAL_SOURCES, beam_size=3, length_penalty=0.6, max_len_b=8)
    ]


# Sentence 12 (alpha 0): the empty output (P .6) beats [a] (P .4) unless a minimum length forbids ending at once.
EMPTY_TABLE = {(12, ()): {EOS: 0.6, A: 0.4}, (12, (A,)): {EOS: 1.0}}


@pytest.mark.parametrize("min_length, tokens, log_prob", [(0, [], math.log(0.6)), (1, [A], math.log(0.4))])
def test_a_minimum_length_keeps_the_end_symbol_from_coming_first(min_length, tokens, log_prob):
    """decode.min_length: eos is not a candidate before that many tokens (fairseq's min_len); the other
    candidates keep their log-probabilities (no renormalisation, as fairseq)."""
    [hyp] = search(FakeModel(EMPTY_TABLE), [[12, 1]], length_penalty=0.0, min_length=min_length)
    assert hyp.tokens == tokens and hyp.log_prob == pytest.approx(log_prob, rel=1e-6)


@pytest.mark.parametrize("beam_size, width", [(4, 4), (4, 1), (1, 1), (3, 3)])
def test_candidates_ranked_per_row_are_those_of_every_sum(beam_size, width):
    """The 2K best continuations per sentence, found among each row's 2K best tokens, are the ones
    (values bitwise, tokens and beams) of ranking every log P + log p(token) of the sentence."""
    generator = torch.Generator().manual_seed(beam_size * 10 + width)
    n, vocab = 6, 50
    logits = torch.randn(n * width, vocab, generator=generator) * 3
    log_probs = -torch.rand(n, width, generator=generator) * 5
    top_lp, top_idx = beam._step_candidates(logits.clone(), log_probs, beam_size, IDS, end=False)
    log_p = torch.log_softmax(logits, -1)
    log_p[:, [IDS.pad, IDS.bos, IDS.eos]] = -math.inf
    every = (log_probs.reshape(-1, 1) + log_p).reshape(n, width * vocab)
    want_lp, want_idx = every.topk(2 * beam_size if beam_size > 1 else 1, dim=1)
    assert torch.equal(top_lp, want_lp) and torch.equal(top_idx, want_idx)
