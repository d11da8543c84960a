"""Initialisation schemes (``model.init``): every parameter's distribution, per scheme and layer.

Each parameter is pinned to its law: U(-a, a) with an exact bound a (no value beyond it, the largest
within a fraction 10/n of it, std within five standard errors of a / sqrt(3)), exact zeros and ones,
or N(0, s) (std within five standard errors); a parameter the table does not name fails the test, so
a new parameter cannot escape it. The seed is fixed: these are exact checks of fixed draws, whose
margins a correct scheme misses with probability below 1e-4.
"""

import dataclasses
import math

import pytest
import torch

from aiayn import config as aiayn_config
from aiayn.model import Transformer
from aiayn.model.init import SCHEMES, InitScheme, initialize, linear_bound, xavier_bound
from aiayn.options import ModelConfig
from aiayn.options.core import spec

D, F, H, DK, DV, V = 64, 256, 4, 16, 12, 300
QK, VV = H * DK, H * DV


def model_of(init: str, attention_bias: bool = False, seed: int = 0, **overrides) -> Transformer:
    torch.manual_seed(seed)
    cfg = ModelConfig(
        n_layers=2, d_model=D, d_ff=F, n_heads=H, d_k=DK, d_v=DV, init=init, attention_bias=attention_bias, **overrides
    )
    return Transformer(cfg, V)


def uniform(bound: float) -> tuple:
    return ("uniform", bound)


ZERO, ONE = ("zero",), ("one",)


def expected_laws(init: str) -> dict[str, tuple | list[tuple]]:
    """Parameter-name suffix -> law (a list of laws: consecutive row blocks of a fused weight)."""
    qkv_gain = 2**-0.5 if init == "fairseq" else 1.0
    if init == "t2t":  # Xavier of the fused matrices
        qkv = uniform(xavier_bound(D, 2 * QK + VV))
        self_qkv, cross_q, cross_kv = qkv, uniform(xavier_bound(D, QK)), uniform(xavier_bound(D, QK + VV))
    else:
        q, v = uniform(xavier_bound(D, QK, qkv_gain)), uniform(xavier_bound(D, VV, qkv_gain))
        self_qkv, cross_q, cross_kv = [q, q, v], q, [q, v]
    linear = init == "fairseq"
    ffn1 = uniform(linear_bound(D) if linear else xavier_bound(D, F))
    ffn2 = uniform(linear_bound(F) if linear else xavier_bound(F, D))
    qkv_bias = uniform(linear_bound(D)) if linear else ZERO
    return {
        "embed.weight": ("normal", D**-0.5),
        "attn.qkv.weight": self_qkv,
        "self_attn.qkv.weight": self_qkv,
        "cross_attn.q.weight": cross_q,
        "cross_attn.kv.weight": cross_kv,
        "out.weight": uniform(xavier_bound(VV, D)),
        "qkv.bias": qkv_bias,
        "q.bias": qkv_bias,
        "kv.bias": qkv_bias,
        "out.bias": ZERO,
        "ffn.w1.weight": ffn1,
        "ffn.w2.weight": ffn2,
        "ffn.w1.bias": uniform(linear_bound(D)) if linear else ZERO,
        "ffn.w2.bias": uniform(linear_bound(F)) if linear else ZERO,
        "norm.weight": ONE,
        "norm.bias": ZERO,
    }


def law_of(name: str, laws: dict) -> tuple | list[tuple]:
    matches = [suffix for suffix in laws if name.endswith(suffix)]
    assert matches, f"parameter {name} has no law in the test table"
    return laws[max(matches, key=len)]


def check(name: str, values: torch.Tensor, law: tuple) -> None:
    values = values.detach().double().flatten()
    n = values.numel()
    if law == ZERO:
        assert torch.count_nonzero(values) == 0, name
    elif law == ONE:
        assert torch.equal(values, torch.ones_like(values)), name
    elif law[0] == "uniform":
        bound = law[1]
        assert values.abs().max() <= bound * (1 + 1e-6), f"{name}: {values.abs().max()} beyond bound {bound}"
        assert values.abs().max() >= (1 - 10 / n) * bound, f"{name}: largest {values.abs().max()} inside {bound}"
        assert values.std() == pytest.approx(bound / math.sqrt(3), rel=5 * math.sqrt(0.2 / n)), name
    else:
        assert values.std() == pytest.approx(law[1], rel=5 / math.sqrt(2 * n)), name
        assert values.mean().abs() < 5 * law[1] / math.sqrt(n), name


def check_parameter(name: str, param: torch.Tensor, law: tuple | list[tuple]) -> None:
    """One parameter against its law; a fused projection block by block, the padding row zero."""
    if name.endswith("embed.weight"):
        assert torch.count_nonzero(param[0]) == 0  # padding row
        check(name, param[1:], law)
    elif isinstance(law, list):  # row blocks of a fused projection
        sizes = [QK] * (len(law) - 1) + [VV]
        assert sum(sizes) == param.shape[0]
        for block, block_law in zip(param.split(sizes), law):
            check(name, block, block_law)
    else:
        check(name, param, law)


@pytest.mark.parametrize("attention_bias", [False, True])
@pytest.mark.parametrize("init", sorted(SCHEMES))
def test_every_parameter_follows_its_scheme(init, attention_bias):
    model = model_of(init, attention_bias)
    laws = expected_laws(init)
    for name, param in model.named_parameters():
        check_parameter(name, param, law_of(name, laws))


def test_bounds_golden():
    """The bounds the table above relies on, by hand for d_model 512, d_ff 2048, h d_k = 512."""
    assert xavier_bound(512, 512) == pytest.approx(math.sqrt(6 / 1024))  # 0.0765
    assert xavier_bound(512, 1536) == pytest.approx(math.sqrt(6 / 1024) / math.sqrt(2))  # t2t's fused q|k|v
    assert xavier_bound(512, 1024) == pytest.approx(math.sqrt(6 / 1024) * math.sqrt(2 / 3))  # fused k|v
    assert xavier_bound(512, 512, 2**-0.5) == pytest.approx(0.0541266)  # fairseq's q, k, v
    assert linear_bound(2048) == pytest.approx(1 / 45.254834)  # fairseq's W2 and b2


def test_learned_positions_and_unshared_tables():
    model = model_of("fairseq", positional="learned", max_positions=600, share_embeddings=False, share_softmax=False)
    assert len(model.token_tables()) == 3
    for table in model.token_tables():
        assert torch.count_nonzero(table.weight[0]) == 0
        check("token table", table.weight[1:], ("normal", D**-0.5))
    for pos in (model.src_pos, model.tgt_pos):
        check("positions", pos.table.weight, ("normal", D**-0.5))  # no padding row


def test_initialize_is_deterministic_and_replaces_every_value():
    a, b = model_of("t2t", seed=3), model_of("t2t", seed=3)
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        assert torch.equal(p, q), name
    torch.manual_seed(4)
    initialize(b, SCHEMES["t2t"])
    changed = [name for (name, p), q in zip(a.named_parameters(), b.parameters()) if not torch.equal(p, q)]
    assert "encoder.0.attn.qkv.weight" in changed and "embed.weight" in changed


def test_attention_bias_adds_one_bias_per_projection():
    plain, biased = model_of("xavier"), model_of("xavier", attention_bias=True)
    extra = sum(p.numel() for p in biased.parameters()) - sum(p.numel() for p in plain.parameters())
    per_layer_self, per_layer_cross = (2 * QK + VV) + D, QK + (QK + VV) + D
    assert extra == 2 * per_layer_self + 2 * (per_layer_self + per_layer_cross)


def test_scheme_and_config_errors():
    with pytest.raises(ValueError, match="model.init"):
        ModelConfig(init="kaiming")
    with pytest.raises(ValueError, match="InitScheme.ffn_bias"):
        InitScheme(ffn_bias="normal")
    assert ModelConfig.from_dict({"init": "fairseq", "attention_bias": True}).attention_bias


def test_mixed_scheme_changes_only_its_field():
    """An ablation's scheme (fairseq's, W^O as nn.Linear's default) moves W^O and nothing else."""
    model = model_of("fairseq")
    torch.manual_seed(5)
    initialize(model, SCHEMES["fairseq"].replace(out_weight="linear"))
    laws = expected_laws("fairseq") | {"out.weight": uniform(linear_bound(VV))}
    for name, param in model.named_parameters():
        check_parameter(name, param, law_of(name, laws))


def test_the_options_choices_and_the_schemes_name_the_same_schemes():
    init = {f.name: f for f in dataclasses.fields(ModelConfig)}["init"]
    assert set(SCHEMES) == set(spec(init).choices)


def test_the_default_is_the_papers_code_scheme():
    """model.init defaults to tensor2tensor's scheme in the definition and so in config.yaml's setup."""
    from pathlib import Path

    config = aiayn_config.load(Path(__file__).resolve().parents[1] / "config.yaml")
    assert ModelConfig().init == config["defaults"]["model"]["init"] == "t2t"
