import math

import pytest
import torch

from aiayn.model import Transformer, count_parameters, flops_per_token
from aiayn.model.positional import sinusoid_table
from aiayn.options import ModelConfig
from aiayn.runtime.checkpoint import Checkpoint, save_checkpoint
from aiayn.runtime.session import load_model

V = 23


def tiny(**overrides) -> ModelConfig:
    values = dict(n_layers=2, d_model=16, d_ff=32, n_heads=2, d_k=8, d_v=6, dropout=0.0)
    values.update(overrides)
    return ModelConfig(**values)


def model_of(cfg: ModelConfig, seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(cfg, V).eval()


def tokens(b: int, t: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(4, V, (b, t), generator=g)


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("positional", ["sinusoid", "learned"])
def test_causal_mask(norm, positional):
    model = model_of(tiny(norm=norm, positional=positional))
    src, tgt = tokens(2, 5, 1), tokens(2, 6, 2)
    changed = tgt.clone()
    changed[:, 4] = (changed[:, 4] + 1 - 4) % (V - 4) + 4
    with torch.no_grad():
        a, b = model(src, tgt), model(src, changed)
    assert torch.equal(a[:, :4], b[:, :4])
    assert not torch.allclose(a[:, 4:], b[:, 4:])


def test_source_padding_invariance():
    model = model_of(tiny())
    src, tgt = tokens(2, 5, 3), tokens(2, 4, 4)
    padded = torch.cat([src, torch.zeros(2, 3, dtype=torch.long)], dim=1)
    with torch.no_grad():
        a, b = model(src, tgt), model(padded, tgt)
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    with torch.no_grad():
        # a row padded inside a batch gives what it gives alone
        short = torch.cat([src[1:, :3], torch.zeros(1, 2, dtype=torch.long)], dim=1)
        batch = torch.cat([src[:1], short])
        alone = model(src[1:, :3], tgt[1:])
        together = model(batch, tgt)
    torch.testing.assert_close(together[1:], alone, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_incremental_decoding_matches_full(norm):
    model = model_of(tiny(norm=norm, share_embeddings=norm == "post"))
    src, tgt = tokens(3, 7, 5), tokens(3, 6, 6)
    with torch.no_grad():
        enc = model.encode(src)
        full = model.decode(tgt, enc)
        cache = model.new_cache(enc)
        steps = [model.decode(tgt[:, t : t + 1], enc, cache) for t in range(tgt.shape[1])]
    assert cache.length == 6 and cache.self_kv[0][0].shape == (3, 2, 6, 8)
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=1e-5, atol=1e-5)


def test_cache_reorder_selects_rows_and_encoder_output():
    model = model_of(tiny())
    src, tgt = tokens(3, 5, 7), tokens(3, 4, 8)
    src[2, 3:] = 0
    index = torch.tensor([2, 2, 0])
    with torch.no_grad():
        enc = model.encode(src)
        cache = model.new_cache(enc)
        for t in range(2):
            model.decode(tgt[:, t : t + 1], enc, cache)
        cache.reorder(index, sentences=index)
        assert torch.equal(cache.enc.src_pad, enc.src_pad[index])
        got = [model.decode(tgt[index, t : t + 1], enc, cache) for t in range(2, 4)]
        want = model(src[index], tgt[index])[:, 2:]
    torch.testing.assert_close(torch.cat(got, dim=1), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("capacity", [2, 16])
def test_beam_rows_share_one_memory_per_sentence(capacity):
    """K rows per sentence query the sentence's encoder keys/values together; the cache grows past capacity."""
    model = model_of(tiny())
    src, beams = tokens(2, 5, 11), 3
    src[1, 3:] = 0
    tgt = tokens(6, 5, 12)
    with torch.no_grad():
        enc = model.encode(src)
        cache = model.new_cache(enc, beam_size=beams, max_len=capacity)
        steps = [model.decode(tgt[:, t : t + 1], cache.enc, cache) for t in range(3)]
        rows = torch.tensor([2, 2, 0, 3, 5, 5])  # beams move within their sentence
        cache.reorder(rows)
        steps += [model.decode(tgt[rows, t : t + 1], cache.enc, cache) for t in range(3, 5)]
        repeated = src.repeat_interleave(beams, dim=0)
        want = model(repeated, tgt)
        want_after = model(repeated[rows], tgt[rows])
    assert cache.cross_kv[0][0].shape[0] == 2 and cache.self_kv[0][0].shape == (6, 2, 5, 8)
    torch.testing.assert_close(torch.cat(steps[:3], dim=1), want[:, :3], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(torch.cat(steps[3:], dim=1), want_after[:, 3:], rtol=1e-5, atol=1e-5)
    with torch.no_grad():  # one sentence leaves: its rows and its memory go
        cache.reorder(torch.tensor([3, 4, 4]), sentences=torch.tensor([1]))
        last = model.decode(tgt[rows][[3, 4, 4], 5 - 1 : 5], cache.enc, cache)
    assert cache.enc.memory.shape[0] == 1 and cache.cross_kv[1][1].shape[0] == 1 and last.shape == (3, 1, V)


def test_no_mask_without_padding_gives_the_same_logits():
    model = model_of(tiny())
    src, tgt = tokens(3, 6, 13), tokens(3, 4, 14)
    with torch.no_grad():
        enc = model.encode(src)
        assert not enc.padded and enc.key_mask() is None
        masked = model(src, tgt, src_padded=True)
        unmasked = model(src, tgt, src_padded=False)
        src[0, 4:] = 0
        assert model.encode(src).padded
    torch.testing.assert_close(masked, unmasked, rtol=1e-5, atol=1e-6)


def test_rows_project_only_the_positions_asked_for():
    model = model_of(tiny())
    src, tgt = tokens(2, 5, 1), tokens(2, 4, 2)
    rows = torch.tensor([0, 1, 2, 4, 7])  # positions of the (2 * 4) flattened target
    with torch.no_grad():
        full, some = model(src, tgt), model(src, tgt, rows=rows)
    assert some.shape == (5, V)
    torch.testing.assert_close(some, full.reshape(8, V)[rows])


def test_shared_embedding_is_projection_and_scaled_on_input():
    model = model_of(tiny(n_layers=1))
    assert not hasattr(model, "out_proj")
    x = torch.randn(1, 2, 16)
    torch.testing.assert_close(model.project(x), x @ model.embed.weight.T)
    emb = model._embed(torch.tensor([[5, 6]]), model.embed, model.src_pos)
    want = model.embed.weight[[5, 6]] * 4.0 + sinusoid_table(2, 16)
    torch.testing.assert_close(emb[0], want)
    assert torch.count_nonzero(model.embed.weight[0]) == 0


def test_unshared_softmax_has_its_own_projection_and_learns_it():
    """share_softmax false (tensor2tensor's parsing preset): logits = h W^T with W not the embedding."""
    model = model_of(tiny(n_layers=1, share_softmax=False))
    x = torch.randn(1, 2, 16)
    torch.testing.assert_close(model.project(x), x @ model.out_proj.weight.T)
    assert not torch.equal(model.out_proj.weight, model.embed.weight)
    src, tgt = torch.tensor([[5, 6, 7]]), torch.tensor([[2, 8, 9]])
    model(src, tgt).logsumexp(-1).sum().backward()
    assert model.out_proj.weight.grad.abs().sum() > 0 and model.embed.weight.grad.abs().sum() > 0
    target = model_of(tiny(n_layers=1, share_embeddings=False))  # target table is the projection
    torch.testing.assert_close(target.project(x), x @ target.tgt_embed.weight.T)


def test_sinusoid_golden_values():
    table = sinusoid_table(3, 4)
    want = torch.tensor(
        [
            [0.0, 1.0, 0.0, 1.0],
            [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)],
            [math.sin(2), math.cos(2), math.sin(0.02), math.cos(0.02)],
        ]
    )
    torch.testing.assert_close(table, want)


def test_parameter_count_of_tiny_model_by_hand():
    cfg = tiny(n_layers=1)
    d, f, h, dk, dv = 16, 32, 2, 8, 6
    attn_self = d * h * (2 * dk + dv) + h * dv * d  # no biases in attention projections
    attn_cross = d * h * dk + d * h * (dk + dv) + h * dv * d
    ffn = d * f + f + f * d + d
    norm = 2 * d
    want = V * d + (attn_self + ffn + 2 * norm) + (attn_self + attn_cross + ffn + 3 * norm)
    assert count_parameters(model_of(cfg)) == want
    assert count_parameters(model_of(tiny(n_layers=1, share_embeddings=False))) == want + V * d
    assert count_parameters(model_of(tiny(n_layers=1, share_softmax=False))) == want + V * d
    assert count_parameters(model_of(tiny(n_layers=1, share_embeddings=False, share_softmax=False))) == want + 2 * V * d
    assert count_parameters(model_of(tiny(n_layers=1, norm="pre"))) == want + 2 * norm


def test_flops_per_token_golden():
    cfg = tiny(n_layers=1)
    s, t = 3, 2
    proj = 16 * 2 * 22 + 2 * 6 * 16 + 2 * 16 * 32  # 704 + 192 + 1024 = 1920
    enc = s * (proj + s * 2 * 14)
    dec = t * (proj + t * 2 * 14 + 16 * 2 * 8 + 2 * 6 * 16 + s * 2 * 14)
    memory = s * 16 * 2 * 14
    out = t * 16 * V
    assert flops_per_token(cfg, s, t, V) == pytest.approx(6 * (enc + dec + memory + out) / t)
    assert flops_per_token(cfg, s, t, V) == pytest.approx(6 * (6012 + 5016 + 1344 + 736) / 2)


def test_learned_positions_limit():
    model = model_of(tiny(positional="learned", max_positions=4))
    with pytest.raises(ValueError, match="max_positions=4"):
        model(tokens(1, 5, 0), tokens(1, 2, 0))


def test_config_rejects_unknown_and_bad_keys():
    with pytest.raises(ValueError, match="unknown model setting"):
        ModelConfig.from_dict({"d_modle": 4})
    with pytest.raises(ValueError, match="model.norm"):
        ModelConfig.from_dict({"norm": "sandwich"})
    assert ModelConfig.from_dict({"n_layers": 2}).n_layers == 2


def test_load_model_round_trip(tmp_path):
    cfg = tiny(positional="learned", max_positions=16)
    model = model_of(cfg)
    path = tmp_path / "c.pt"
    save_checkpoint(
        path,
        Checkpoint(
            model=model.state_dict(),
            settings={"model": cfg.to_dict()},
            vocab={"size": V, "pad_id": 0, "unk_id": 1, "bos_id": 2, "eos_id": 3},
            step=3,
        ),
    )
    loaded, checkpoint = load_model(path)
    assert checkpoint.step == 3 and not loaded.training
    src, tgt = tokens(2, 4, 9), tokens(2, 3, 9)
    with torch.no_grad():
        torch.testing.assert_close(loaded(src, tgt), model(src, tgt))


def test_load_model_reads_the_weights_on_the_cpu_first(tmp_path, monkeypatch):
    cfg = tiny()
    model = model_of(cfg)
    path = tmp_path / "c.pt"
    save_checkpoint(
        path,
        Checkpoint(
            model=model.state_dict(),
            settings={"model": cfg.to_dict()},
            vocab={"size": V},
            optimizer={"state": {0: {"exp_avg": torch.ones(1000)}}},
        ),
    )
    places, real_load = [], torch.load
    monkeypatch.setattr(torch, "load", lambda *a, **k: places.append(k.get("map_location")) or real_load(*a, **k))
    loaded, checkpoint = load_model(path, torch.device("meta"))
    assert [torch.device(p) for p in places] == [torch.device("cpu")]
    assert checkpoint.optimizer is None and next(loaded.parameters()).device.type == "meta"


def test_sinusoids_extend_past_max_positions():
    model = model_of(tiny(max_positions=4))
    src, tgt = tokens(1, 9, 1), tokens(1, 7, 2)
    with torch.no_grad():
        logits = model(src, tgt)
    assert logits.shape == (1, 7, V) and torch.isfinite(logits).all()
    torch.testing.assert_close(model.tgt_pos.sinusoids[:7], sinusoid_table(7, 16))


@pytest.mark.parametrize("queries", [1, 4, 9])
def test_cpu_attention_without_gradients_equals_the_fused_kernel(queries):
    """On a CPU without gradients, attention of several queries runs as two batched products."""
    from aiayn.model.attention import MultiHeadAttention

    torch.manual_seed(0)
    attn = MultiHeadAttention(16, 2, 8, 6, 0.0, self_attention=False).eval()
    q, k, v = torch.randn(3, 2, queries, 8), torch.randn(3, 2, 7, 8), torch.randn(3, 2, 7, 6)
    mask = torch.ones(3, 1, 1, 7, dtype=torch.bool)
    mask[1, ..., 4:] = False
    mask[2, ..., :2] = False
    for m in (mask, None):
        with torch.enable_grad():  # the fused kernel (torch's scaled_dot_product_attention)
            want = attn.attend(q, k, v, m)
        with torch.no_grad():
            got = attn.attend(q, k, v, m)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("grad", [True, False])  # the fused kernel, and the CPU's two batched products
def test_encoder_attention_is_what_each_layer_weighs_its_values_with(norm, grad):
    """Every encoder layer's output, recomputed with probs @ V through W^O in place of its attention,
    is what the layer computed in the encoder's own forward pass."""
    model = model_of(tiny(norm=norm, n_heads=3, d_k=5, d_v=4, n_layers=3))
    src = tokens(2, 7, 7)
    src[1, 4:] = 0  # the second row padded from position 4
    seen = []
    for layer in model.encoder:
        layer.register_forward_hook(lambda module, args, out: seen.append((args[0], out)))
    with torch.set_grad_enabled(grad):
        model.encode(src)
        for i, (layer, (x, out)) in enumerate(zip(model.encoder, seen)):
            probs = model.encoder_attention(src, i)  # (B, h, S, S)
            _, _, v = layer.attn.project_self(layer.res_attn.inner(x))  # v (B, h, S, d_v)
            heads = (probs @ v).transpose(1, 2).reshape(2, 7, 3 * 4)  # (B, S, h d_v)
            y = layer.res_attn.outer(x, layer.attn.out(heads))
            torch.testing.assert_close(
                layer.res_ffn.outer(y, layer.ffn(layer.res_ffn.inner(y))), out, rtol=1e-5, atol=1e-5
            )
            torch.testing.assert_close(probs.sum(-1), torch.ones(2, 3, 7))
            assert probs[1, ..., 4:].abs().max() == 0  # no weight on padding
    with pytest.raises(ValueError, match="encoder layer 3 does not exist"):
        model.encoder_attention(src, 3)


@pytest.mark.parametrize("length", [5, 8, 13])
def test_the_compiled_causal_attention_over_an_aligned_length_gives_the_same_values_and_gradients(length):
    """:func:`aligned_causal_attention` (zero positions appended up to a multiple of 8, then cut off)
    equals causal attention over the positions themselves, forward and backward."""
    from aiayn.model.attention import aligned_causal_attention

    generator = torch.Generator().manual_seed(length)
    q, k, v = (
        torch.randn(2, 3, length, 4, generator=generator, dtype=torch.float64, requires_grad=True) for _ in range(3)
    )
    ours = aligned_causal_attention(q, k, v, 0.0, 0.5)
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.5)
    assert ours.shape == (2, 3, length, 4)
    torch.testing.assert_close(ours, want)
    upstream = torch.randn(ours.shape, generator=generator, dtype=torch.float64)
    torch.testing.assert_close(
        torch.autograd.grad(ours, (q, k, v), upstream), torch.autograd.grad(want, (q, k, v), upstream)
    )
