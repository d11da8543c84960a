"""The attention figures (aiayn.report.attention): word merging, head choice, the layer, and the CLI on a tiny model."""

import json

import numpy as np
import pytest
import sentencepiece as spm
import torch
import yaml
from report_fixtures import ROOT
from tiny_checkpoint import write_tiny

from aiayn import config as aiayn_config
from aiayn import runs as aiayn_runs
from aiayn.options.figures import FiguresConfig, Layer
from aiayn.report import attention
from aiayn.settings import read

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
MODEL = {"n_layers": 3, "d_model": 16, "d_ff": 32, "n_heads": 4, "d_k": 8, "d_v": 8, "dropout": 0.0}


def test_pieces_merge_into_words_rows_still_sum_to_one():
    """A[w, u] = mean over w's pieces of the sum over u's pieces, by hand."""
    word_of, words = attention.words_of(["\u2581The", "\u2581Law", "\u2581mak", "ing", "<EOS>"])
    assert words == ["The", "Law", "making", "<EOS>"] and word_of == [0, 1, 2, 2, 3]
    probs = np.array(
        [
            [
                [0.1, 0.2, 0.3, 0.4, 0.0],
                [0.0, 0.5, 0.0, 0.5, 0.0],
                [0.6, 0.0, 0.2, 0.0, 0.2],
                [0.0, 0.8, 0.1, 0.1, 0.0],
                [0.25, 0.25, 0.25, 0.0, 0.25],
            ]
        ]
    )  # (h=1, P=5, P=5)
    want = np.array(
        [
            [
                [0.1, 0.2, 0.7, 0.0],
                [0.0, 0.5, 0.5, 0.0],
                [0.3, 0.4, 0.2, 0.1],  # making: rows of "mak" and "ing" summed over keys, averaged
                [0.25, 0.25, 0.25, 0.25],
            ]
        ]
    )
    got = attention.word_attention(probs, word_of)
    np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_allclose(got.sum(-1), 1.0)


def test_a_lone_word_mark_starts_a_word_with_the_pieces_after_it():
    assert attention.words_of(["\u2581in", "\u2581", "2", "00", "9", "<EOS>"]) == (
        [0, 1, 1, 1, 1, 2],
        ["in", "2009", "<EOS>"],
    )


def word_table() -> np.ndarray:
    """Word attention (h=3, W=5, W=5), the last word <EOS>; rows are what each head does from word 1."""
    attn = np.full((3, 5, 5), 0.2)
    attn[0, 1] = [0.0, 0.1, 0.1, 0.8, 0.0]  # far (distance 2) and sharp: 0.8
    attn[1, 1] = [0.0, 0.0, 0.0, 0.1, 0.9]  # all on <EOS>: neither far nor sharp among words
    attn[2, 1] = [0.6, 0.3, 0.0, 0.0, 0.1]  # near (distance 1), sharp 0.6
    return attn


def test_heads_chosen_by_reach_and_by_sharpness_leave_out_eos_and_the_word_itself():
    attn = word_table()
    assert attention.reach_heads(attn, 1, 2) == [0, 2]  # reach: 1.7, 0.2, 0.6 (head 1: 0.1 x 2)
    assert attention.sharp_heads(attn, 1, 2) == [0, 2]  # peaks: 0.8, 0.1, 0.6
    assert attention.reach_heads(attn, 1, 1) == [0]


def test_distinct_heads_are_the_pair_that_differs_most_then_the_furthest_from_both():
    eye, flat = np.eye(4), np.full((4, 4), 0.25)
    shifted = np.roll(np.eye(4), 1, axis=1)
    attn = np.stack([flat, eye, eye * 0.9 + flat * 0.1, shifted])  # heads 1 and 3: total variation 1 apart
    assert attention.distinct_heads(attn, 2) == [1, 3]
    assert attention.distinct_heads(attn, 3) == [1, 3, 0]  # flat: 0.75 from both; head 2 is 0.075 from head 1
    assert attention.distinct_heads(attn[:1], 2) == [0]


@pytest.mark.parametrize("n_layers, layer", [(6, 5), (2, 2), (4, 3), (8, 7), (1, 1), (12, 10), (3, 3)])
def test_layer_5_of_6_scales_to_the_model_depth(n_layers, layer):
    assert Layer(5, 6).of_model(n_layers) == layer


def test_config_yaml_figures_are_the_papers_defaults():
    assert set(yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))["figures"]) == {"task", "experiment"}
    config = aiayn_config.load(ROOT / "config.yaml")
    assert FiguresConfig.from_dict(aiayn_runs.figure_settings(config)) == FiguresConfig()
    assert FiguresConfig().figure3.word == "making" and FiguresConfig().figure4.word == "its"


@pytest.mark.parametrize(
    "overlay, message",
    [
        ({"figure3": {"word": "makes"}}, "figures.figure3: word 'makes' is not a word of the sentence"),
        ({"figure4": {"heads": [5, 9]}}, r"figures.figure4.heads: \[5, 9\], but experiments.base has 8 heads"),
        ({"figure5": {"heads": "all"}}, "figures.figure5.heads"),
        ({"task": "wsj"}, "figures.task: 'wsj' is not a translation task"),
        ({"experiment": "C9"}, "figures.experiment: unknown experiment 'C9'"),
        ({"layer": {"index": 7}}, "figures.layer: index must be between 1 and of"),
    ],
)
def test_bad_figures_settings_are_refused_naming_the_key(tmp_path, overlay, message):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"figures": overlay}), encoding="utf-8")
    with pytest.raises(aiayn_config.ConfigError, match=message):
        aiayn_config.load(ROOT / "config.yaml", path)


def test_figures_off_when_their_run_is_not_run_or_deleted(tmp_path):
    overlays = {
        "other.yaml": {"figures": {"experiment": "parser"}},  # trains on wsj only
        "alone.yaml": {"run": {"experiments": ["C1"]}},
        "deleted.yaml": {"tasks": {"en-de": None}, "figures": {"task": "en-fr"}, "experiments": {"base": None}},
    }
    for name, overlay in overlays.items():
        (tmp_path / name).write_text(yaml.safe_dump(overlay), encoding="utf-8")
        config = aiayn_config.load(ROOT / "config.yaml", tmp_path / name)
        assert aiayn_runs.figures_run(config) is None, name
        assert not any("attention" in path for path in aiayn_runs.settings_files(config)), name
    fr = tmp_path / "fr.yaml"
    fr.write_text(yaml.safe_dump({"figures": {"task": "en-fr", "experiment": "big"}}), encoding="utf-8")
    assert aiayn_runs.figures_run(aiayn_config.load(ROOT / "config.yaml", fr)) == {
        "task": "en-fr",
        "experiment": "big",
        "checkpoint": "avg",
        "lang": "en",
    }


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A sentencepiece model, a 3-layer checkpoint over it, its tokenizer settings and figure settings."""
    root = tmp_path_factory.mktemp("attention")
    _, model = write_tiny(root, MODEL, 2)
    (root / "tokenize.json").write_text(json.dumps({"normalize_punctuation": True}))
    figures = {
        "layer": {"index": 2, "of": 3},
        "figure3": {"sentence": "the quick brown fox jumps over the lazy dog", "word": "jumps", "count": 3},
        "figure4": {"sentence": "all that glitters is not gold", "word": "glitters", "heads": [4, 2]},
        "figure5": {"sentence": "the early bird catches the worm"},
    }
    (root / "figures.json").write_text(json.dumps(figures))
    return root, model


def run_cli(root, out):
    return attention.main(
        [
            "--checkpoint",
            str(root / "avg.pt"),
            "--spm",
            str(root / "spm.model"),
            "--lang",
            "en",
            "--tokenize-settings",
            str(root / "tokenize.json"),
            "--settings",
            str(root / "figures.json"),
            "--out-dir",
            str(out),
        ]
    )


def test_cli_draws_the_three_figures_with_the_heads_it_records(tiny, tmp_path):
    root, model = tiny
    assert run_cli(root, tmp_path / "out") == 0
    for name in ("figure3", "figure4", "figure5"):
        data = (tmp_path / "out" / f"{name}.png").read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5000
    record = json.loads((tmp_path / "out" / "figures.json").read_text())
    assert record["layer"] == 2 and record["n_layers"] == 3
    figure3, figure4 = record["figures"]["figure3"], record["figures"]["figure4"]
    assert figure4["heads"] == [4, 2] and figure4["chosen"] == "listed in figures.figure4.heads"
    assert figure3["words"] == ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "<EOS>"]
    sp = spm.SentencePieceProcessor(model_file=str(root / "spm.model"))
    ids = [*sp.encode("the quick brown fox jumps over the lazy dog"), 3]
    with torch.no_grad():
        probs = model.encoder_attention(torch.tensor([ids]), 1)[0].double().numpy()  # layer 2, 0-based 1
    word_of, _ = attention.words_of([*sp.encode("the quick brown fox jumps over the lazy dog", out_type=str), "<EOS>"])
    words = attention.word_attention(probs, word_of)
    assert figure3["heads"] == [h + 1 for h in attention.reach_heads(words, 4, 3)]
    for head in figure3["heads"]:
        np.testing.assert_allclose(figure3["attention_from_word"][str(head)], words[head - 1, 4], atol=1e-4)


def test_a_word_missing_after_tokenization_is_named(tiny, tmp_path):
    root, _ = tiny
    settings = json.loads((root / "figures.json").read_text())
    settings["figure3"] = {"sentence": "the dog's bone", "word": "dog"}  # Moses: dog 's
    (tmp_path / "figures.json").write_text(json.dumps(settings))
    opts = read(str(tmp_path / "figures.json"), FiguresConfig, "figures")
    assert opts.figure3.word == "dog"
    settings["figure3"]["word"] = "dog's"
    (tmp_path / "figures.json").write_text(json.dumps(settings))
    with pytest.raises(ValueError, match=r"figures.figure3.word: \"dog's\" is not one of the tokenized"):
        attention.choose(
            "figure3",
            read(str(tmp_path / "figures.json"), FiguresConfig, "figures").figure3,
            ["the", "dog", "'s", "bone", "<EOS>"],
            np.zeros((2, 5, 5)),
        )


def test_settings_file_errors_name_the_file(tmp_path):
    path = tmp_path / "figures.json"
    path.write_text(json.dumps({"figure5": {"colour": "red"}}))
    with pytest.raises(ValueError, match=r"figures.json: unknown figures.figure5 setting\(s\) \['colour'\]"):
        read(str(path), FiguresConfig, "figures")
