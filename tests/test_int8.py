import pytest
import torch
import torch.nn.functional as F

from aiayn.model import Transformer
from aiayn.model.int8 import QMAX, Int8Product, int8_available
from aiayn.options import DecodeConfig, ModelConfig, TrainConfig
from aiayn.runtime.precision import set_up_arithmetic

pytestmark = pytest.mark.skipif(not int8_available(), reason="this torch build has no oneDNN int8 product")

CFG = ModelConfig(n_layers=2, d_model=32, d_ff=64, n_heads=4, d_k=8, d_v=8, dropout=0.0)


def error_bound(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """|x W^T - int8's| at most, per element: each input off by half its step, each weight by half its
    row's step, summed over K (first order)."""
    low, high = x.min().clamp(max=0), x.max().clamp(min=0)
    step_x = (high - low) / 255
    step_w = weight.abs().amax(1) / QMAX  # (M,)
    return 0.5 * step_x * weight.abs().sum(1) + 0.5 * step_w * x.abs().sum(-1, keepdim=True) + 1e-5


@pytest.mark.parametrize("rows", [1, 7, 35, 256])
@pytest.mark.parametrize("bias", [True, False])
def test_int8_product_is_within_its_quantization_error(rows, bias):
    generator = torch.Generator().manual_seed(rows)
    weight = torch.randn(24, 16, generator=generator)
    b = torch.randn(24, generator=generator) if bias else None
    x = torch.randn(rows, 16, generator=generator) - 0.3
    exact = F.linear(x, weight, b)
    y = Int8Product(weight, b)(x)
    assert y.shape == exact.shape and y.dtype == torch.float32
    assert ((y - exact).abs() <= error_bound(x, weight)).all()
    assert (y - exact).abs().max() > 0  # it is int8: not the float product
    torch.testing.assert_close(Int8Product(weight, b)(x, relu=True), y.clamp(min=0))


def test_int8_keeps_leading_dimensions_and_zero_rows():
    weight = torch.randn(8, 16)
    x = torch.randn(3, 5, 16)
    x[1] = 0
    y = Int8Product(weight)(x)
    assert y.shape == (3, 5, 8) and (y[1] == 0).all()  # 0 is exact: the input range always holds it


def test_use_int8_changes_decoding_products_only():
    torch.manual_seed(0)
    model = Transformer(CFG, 40).eval()
    src, tgt = torch.randint(4, 40, (3, 6)), torch.randint(4, 40, (3, 5))
    with torch.no_grad():
        fp32 = model(src, tgt)
    trained = model(src, tgt).detach()  # with gradients, as training computes
    keys = model.state_dict()
    model.use_int8()
    assert list(model.state_dict()) == list(keys)  # nothing new is saved with the model
    with torch.no_grad():
        int8 = model(src, tgt)
    assert not torch.equal(int8, fp32)
    torch.testing.assert_close(int8.log_softmax(-1), fp32.log_softmax(-1), atol=0.1, rtol=0.05)
    assert torch.equal(model(src, tgt).detach(), trained)  # with gradients: float32, as before


def test_decode_cpu_matmul_int8_quantizes_on_a_cpu_only():
    torch.manual_seed(0)
    model = Transformer(CFG, 40).eval()
    set_up_arithmetic(model, "fp32", "int8", torch.device("cpu"), key="decode.cpu_matmul")
    assert model.int8 is not None and model.decoder[0].ffn.w1.int8 is not None
    other = Transformer(CFG, 40).eval()
    set_up_arithmetic(other, "fp32", "onednn", torch.device("cpu"), key="decode.cpu_matmul")
    assert other.int8 is None


def test_int8_is_a_decode_setting_only():
    assert DecodeConfig.from_dict({"cpu_matmul": "int8"}).cpu_matmul == "int8"
    with pytest.raises(ValueError, match="cpu_matmul"):
        TrainConfig.from_dict({"cpu_matmul": "int8"})
