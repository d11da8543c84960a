import pytest
import torch
import torch.nn.functional as F

from aiayn.model import Transformer, functional
from aiayn.model.functional import Linear, dropout, linear, onednn_available
from aiayn.options import ModelConfig

needs_onednn = pytest.mark.skipif(not onednn_available(), reason="this torch build has no oneDNN linear operator")


@pytest.fixture
def any_size(monkeypatch):
    """oneDNN for products of every size (the tests' products are far below the thresholds)."""
    monkeypatch.setattr(functional, "ONEDNN_MIN_MACS", 0)
    monkeypatch.setattr(functional, "ONEDNN_MIN_MACS_NO_GRAD", 0)


def grads_of(fn, *tensors):
    """Output and gradients of sum(out * w) for a fixed random w (so every output element matters)."""
    leaves = [t.detach().clone().requires_grad_() for t in tensors]
    out = fn(*leaves)
    weight = torch.randn(out.shape, generator=torch.Generator().manual_seed(9))
    (out * weight).sum().backward()
    return out.detach(), [t.grad for t in leaves]


# 3 x 7 = 21 rows reach oneDNN as they are; 5 x 7 = 35 rows are padded to bucket_rows(35) = 36 when
# the product's input is no wider than its output (16 -> 24), or split into 34 rows as they are and 1
# when it is wider (16 -> 8; the 16 -> 24 product's input gradient, 24 -> 16, too).
LEADING = [(3, 7), (5, 7)]
OUT_FEATURES = [24, 8]


@needs_onednn
@pytest.mark.parametrize("lead", LEADING)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("width", OUT_FEATURES)
def test_onednn_linear_equals_f_linear_values_and_gradients(bias, lead, width, any_size):
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(*lead, 16, generator=g), torch.randn(width, 16, generator=g)
    b = torch.randn(width, generator=g) if bias else None
    args = (x, w) + ((b,) if bias else ())
    out, grads = grads_of(lambda *t: linear(*t[:2], t[2] if bias else None, onednn=True), *args)
    want, want_grads = grads_of(lambda *t: F.linear(*t[:2], t[2] if bias else None), *args)
    assert out.shape == (*lead, w.shape[0])
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    for got, expected in zip(grads, want_grads):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


@needs_onednn
def test_onednn_linear_is_used_for_cpu_float32_only(any_size, monkeypatch):
    x, w = torch.randn(5, 8, requires_grad=True), torch.randn(4, 8, requires_grad=True)
    assert linear(x, w, onednn=True).grad_fn.name() == "_OneDNNLinearBackward"
    assert linear(x, w, onednn=False).grad_fn.name() != "_OneDNNLinearBackward"
    assert linear(x.double(), w.double(), onednn=True).grad_fn.name() != "_OneDNNLinearBackward"
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert linear(x, w, onednn=True).dtype == torch.bfloat16
    calls = []
    product = functional._onednn_product
    monkeypatch.setattr(functional, "_onednn_product", lambda *a: calls.append(a) or product(*a))
    with torch.no_grad():  # decoding: the operator itself, no autograd function
        linear(x, w, onednn=True)
        linear(x, w, onednn=False)
        linear(x.double(), w.double(), onednn=True)
    assert len(calls) == 1


@needs_onednn
@pytest.mark.parametrize("lead", LEADING)
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("width", OUT_FEATURES)
def test_onednn_products_without_gradients_equal_f_linear(relu, bias, lead, width, any_size):
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(*lead, 16, generator=g), torch.randn(width, 16, generator=g)
    b = torch.randn(width, generator=g) if bias else None
    want = F.linear(x, w, b)
    want = F.relu(want) if relu else want
    with torch.inference_mode():
        got = linear(x, w, b, onednn=True, relu=relu)
    assert (got == 0).any() == relu  # the ReLU is applied, inside oneDNN's product
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@needs_onednn
def test_small_products_without_gradients_stay_with_f_linear(monkeypatch):
    x, w = torch.randn(6, 8), torch.randn(4, 8)  # 6 * 8 * 4 = 192 multiply-adds
    calls = []
    product = functional._onednn_product
    monkeypatch.setattr(functional, "_onednn_product", lambda *a: calls.append(a) or product(*a))
    monkeypatch.setattr(functional, "ONEDNN_MIN_MACS_NO_GRAD", 193)
    with torch.no_grad():
        assert torch.equal(linear(x, w, onednn=True), F.linear(x, w))
        assert not calls
        monkeypatch.setattr(functional, "ONEDNN_MIN_MACS_NO_GRAD", 192)
        linear(x, w, onednn=True)
    assert len(calls) == 1


@needs_onednn
def test_small_products_stay_with_f_linear(monkeypatch):
    x, w = torch.randn(6, 8, requires_grad=True), torch.randn(4, 8, requires_grad=True)  # 6 * 8 * 4 = 192
    monkeypatch.setattr(functional, "ONEDNN_MIN_MACS", 193)
    assert linear(x, w, onednn=True).grad_fn.name() != "_OneDNNLinearBackward"
    monkeypatch.setattr(functional, "ONEDNN_MIN_MACS", 192)
    assert linear(x, w, onednn=True).grad_fn.name() == "_OneDNNLinearBackward"


def test_use_onednn_reaches_every_product_and_keeps_the_state_dict():
    cfg = ModelConfig(n_layers=2, d_model=16, d_ff=32, n_heads=2, d_k=8, d_v=8, dropout=0.0)
    torch.manual_seed(0)
    model = Transformer(cfg, 30)
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert linears and all(isinstance(m, Linear) for m in linears)
    keys = list(model.state_dict())
    model.use_onednn(True)
    assert model.onednn and all(m.onednn for m in linears)
    assert list(model.state_dict()) == keys and not any("onednn" in k for k in keys)
    model.use_onednn(False)
    assert not model.onednn and not any(m.onednn for m in linears)


@needs_onednn
def test_training_loss_and_gradients_agree_with_and_without_onednn(any_size):
    cfg = ModelConfig(n_layers=2, d_model=16, d_ff=32, n_heads=2, d_k=8, d_v=8, dropout=0.1)
    torch.manual_seed(0)
    model = Transformer(cfg, 30).train()
    src, tgt = torch.randint(4, 30, (3, 6)), torch.randint(4, 30, (3, 5))
    results = []
    for on in (False, True):
        model.use_onednn(on)
        model.zero_grad()
        torch.manual_seed(1)  # the same dropout masks
        loss = F.cross_entropy(model(src, tgt).reshape(-1, 30), src[:, :5].reshape(-1))
        loss.backward()
        results.append((loss.detach(), [p.grad.clone() for p in model.parameters()]))
    (loss_a, grads_a), (loss_b, grads_b) = results
    torch.testing.assert_close(loss_a, loss_b, rtol=1e-5, atol=1e-6)
    for a, b in zip(grads_a, grads_b):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_dropout_is_the_identity_when_off():
    x = torch.randn(4, 5)
    assert dropout(x, 0.1, training=False) is x
    assert dropout(x, 0.0, training=True) is x
    assert torch.equal(dropout(x, 1.0, training=True), torch.zeros_like(x))


def test_dropout_drops_p_of_the_elements_and_scales_the_rest():
    torch.manual_seed(0)
    x = torch.rand(1000, 1000) + 1.0  # no zeros of its own
    out = dropout(x, 0.1, training=True)
    dropped = (out == 0).float().mean().item()
    assert abs(dropped - 0.1) < 4 * (0.1 * 0.9 / x.numel()) ** 0.5  # within 4 standard deviations
    kept = out != 0
    torch.testing.assert_close(out[kept], x[kept] / 0.9)


def test_dropout_gradient_follows_the_mask_and_the_seed_fixes_the_mask():
    x = torch.rand(50, 40, requires_grad=True)
    torch.manual_seed(3)
    out = dropout(x, 0.3, training=True)
    out.backward(torch.ones_like(out))
    kept = out.detach() != 0
    torch.testing.assert_close(x.grad, kept.float() / 0.7)
    torch.manual_seed(3)
    assert torch.equal(dropout(x.detach(), 0.3, training=True), out.detach())


@pytest.mark.parametrize(
    "n, rows",
    [
        (1, 1),
        (31, 31),
        (32, 32),
        (33, 34),
        (100, 100),
        (1000, 1024),
        (3001, 3072),
        (4096, 4096),
        (4100, 4352),
        (70000, 73728),
    ],
)
def test_bucket_rows_golden(n, rows):
    assert functional.bucket_rows(n) == rows
    assert functional.bucket_rows(3 * 7) == 21 and functional.bucket_rows(5 * 7) == 36  # LEADING's cases


def test_bucket_rows_pads_at_most_one_sixteenth_and_keeps_sixteen_values_an_octave():
    for n in range(1, 20000):
        rows = functional.bucket_rows(n)
        assert n <= rows <= n + n // 16 and functional.bucket_rows(rows) == rows
    for octave in range(5, 14):
        values = {functional.bucket_rows(n) for n in range(2**octave + 1, 2 ** (octave + 1) + 1)}
        assert len(values) == functional.ROW_BUCKETS_PER_OCTAVE
