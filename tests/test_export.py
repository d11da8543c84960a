"""aiayn-export: the exported models compute what ours computes.

Log-probabilities of a forced target, every position and every class, against our teacher-forced
ones: CTranslate2 within 1e-5 (float32 rounding: the same arithmetic in another order), MarianMT
within 1e-4 (its layer norms' epsilon is torch's 1e-5, ours 1e-6: ``aiayn.export.hf``). Greedy outputs
identical to :func:`aiayn.decode.beam.beam_search` with beam 1.
"""

from __future__ import annotations

import json
import os

import pytest
import torch
from tiny_checkpoint import write_tiny

from aiayn.decode import manifest
from aiayn.decode.beam import SpecialIds, beam_search, pad_sources
from aiayn.export import ct2, hf
from aiayn.export.run import check_exportable, main
from aiayn.options import DecodeConfig, ModelConfig
from aiayn.runtime.session import load_model

ctranslate2 = pytest.importorskip("ctranslate2")
transformers = pytest.importorskip("transformers")

LIMIT = 12  # generated tokens, eos included (max_len_a 0, max_len_b 12)


@pytest.fixture(scope="module")
def trained(toy_run):
    """The toy task's trained model (tests/conftest.py: six steps on reversed sequences) and sources."""
    model, _ = load_model(toy_run / "checkpoint_last.pt")
    generator = torch.Generator().manual_seed(3)
    sources = [
        torch.randint(4, model.vocab_size, (int(n),), generator=generator).tolist()
        for n in torch.randint(2, 10, (8,), generator=generator)
    ]
    targets = [list(reversed(s)) for s in sources]
    return model, sources, targets


def our_log_probs(model, source: list[int], target: list[int]) -> torch.Tensor:
    """log P(y_t | y_<t, x) of every class at every position of ``target`` + eos: (T + 1, V)."""
    with torch.no_grad():
        logits = model(torch.tensor([source + [3]]), torch.tensor([[2] + target]))
    return torch.log_softmax(logits.float(), -1)[0]


def our_greedy(model, sources, min_length):
    hyps = beam_search(
        model,
        pad_sources(sources, SpecialIds()),
        [len(s) for s in sources],
        DecodeConfig(beam_size=1, max_len_a=0.0, max_len_b=LIMIT, min_length=min_length),
    )
    return [h.tokens for h in hyps]


@pytest.mark.parametrize("min_length", [0, 1])
def test_ctranslate2_scores_and_greedy_outputs_equal_ours(trained, tmp_path, min_length):
    model, sources, targets = trained
    vocab = ["<pad>", "<unk>", "<s>", "</s>"] + [f"p{i}" for i in range(4, model.vocab_size)]
    ct2.write(model, vocab, tmp_path / "ct2")
    translator = ctranslate2.Translator(str(tmp_path / "ct2"), device="cpu", compute_type="float32")
    scored = translator.score_batch([[vocab[i] for i in s] for s in sources], [[vocab[i] for i in t] for t in targets])
    for source, target, result in zip(sources, targets, scored):
        ours = our_log_probs(model, source, target)[torch.arange(len(target) + 1), torch.tensor(target + [3])]
        torch.testing.assert_close(torch.tensor(result.log_probs), ours, rtol=0, atol=1e-5)
    # decode.min_length is CTranslate2's min_decoding_length (0: an output may end at once)
    greedy = translator.translate_batch(
        [[vocab[i] for i in s] for s in sources],
        beam_size=1,
        max_decoding_length=LIMIT,
        min_decoding_length=min_length,
        suppress_sequences=[["<pad>"], ["<s>"]],
    )
    ours = our_greedy(model, sources, min_length)
    assert [[vocab.index(p) for p in r.hypotheses[0]] for r in greedy] == ours
    assert ([] in ours) == (min_length == 0)  # the toy model ends most outputs at once when allowed


@pytest.mark.parametrize("min_length", [0, 1])
def test_huggingface_marian_log_probs_and_greedy_outputs_equal_ours(trained, tmp_path, min_length):
    model, sources, targets = trained
    vocab = ["<pad>", "<unk>", "<s>", "</s>"] + [f"p{i}" for i in range(4, model.vocab_size)]
    hf.write(model, vocab, tmp_path / "hf")
    marian = transformers.MarianMTModel.from_pretrained(tmp_path / "hf").eval()
    for source, target in zip(sources, targets):
        with torch.no_grad():
            logits = marian(
                input_ids=torch.tensor([source + [3]]), decoder_input_ids=torch.tensor([[2] + target])
            ).logits
        torch.testing.assert_close(
            torch.log_softmax(logits[0].float(), -1), our_log_probs(model, source, target), rtol=0, atol=1e-4
        )
    src = pad_sources(sources, SpecialIds())
    # MarianMT forces eos as token LIMIT + 1: what our search finishes as it is at its limit of LIMIT
    out = marian.generate(
        input_ids=src,
        attention_mask=src.ne(0),
        num_beams=1,
        do_sample=False,
        max_new_tokens=LIMIT + 1,
        min_new_tokens=min_length,
    )
    hyps = [[t for t in row.tolist()[1:] if t not in (0, 3)] for row in out]
    assert hyps == our_greedy(model, sources, min_length)


def test_marian_order_puts_the_sines_first():
    """The permutation turns the paper's interleaved table into MarianMT's halves, column for column."""
    from transformers.models.marian.modeling_marian import MarianSinusoidalPositionalEmbedding

    from aiayn.model.positional import sinusoid_table

    ours = sinusoid_table(50, 16)[:, hf.marian_order(16)]
    theirs = MarianSinusoidalPositionalEmbedding(50, 16).create_weight()
    torch.testing.assert_close(ours, theirs.float(), rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    "settings, engine, message",
    [
        (
            {"d_k": 4, "d_v": 4},
            "ctranslate2",
            r"model\.d_k=4, d_v=4 with n_heads=2: ctranslate2 needs d_k = d_v = "
            r"d_model / n_heads = 8",
        ),
        ({"norm": "pre"}, "huggingface", r"model\.norm=pre: MarianMT is post-norm"),
        ({"positional": "learned"}, "huggingface", r"model\.positional=learned"),
    ],
)
def test_an_architecture_the_engine_cannot_hold_is_refused_naming_the_key(settings, engine, message):
    cfg = ModelConfig.from_dict({"n_layers": 1, "d_model": 16, "d_ff": 32, "n_heads": 2, "d_k": 8, "d_v": 8} | settings)
    with pytest.raises(ValueError, match=message):
        check_exportable(cfg, engine)
    if engine == "huggingface":
        check_exportable(cfg, "ctranslate2")  # CTranslate2 holds pre-norm and learned positions


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A translation run as the workflow leaves it: manifest, averaged checkpoint, settings, data."""
    root = tmp_path_factory.mktemp("export")
    run, data = root / "run", root / "data"
    run.mkdir()
    data.mkdir()
    write_tiny(
        data, {"n_layers": 1, "d_model": 16, "d_ff": 32, "n_heads": 2, "d_k": 8, "d_v": 8, "dropout": 0.0}, seed=1
    )
    (data / "avg.pt").rename(run / "avg.pt")
    (data / "tokenize.en.json").write_text(json.dumps({"aggressive_dash_splits": True}))
    (run / "settings").mkdir()
    (run / "settings/decode.json").write_text(json.dumps({"beam_size": 4, "length_penalty": 0.6}))
    manifest.write_manifest(
        str(run / "inference.json"), "translation", "en", "de", str(data / "spm.model"), str(data / "tokenize.en.json")
    )
    return run


HF_FILES = {"config.json", "model.safetensors", "vocab.json", "source.spm", "tokenizer_config.json"}


@pytest.mark.parametrize(
    "engine, files", [("ctranslate2", {"model.bin", "shared_vocabulary.json"}), ("huggingface", HF_FILES)]
)
def test_export_cli_writes_the_model_its_pieces_and_its_text_processing(run_dir, tmp_path, engine, files):
    out = tmp_path / engine
    assert main(["--run", str(run_dir), "--to", engine, str(out)]) == 0
    assert files | {"spm.model", "preprocessing.json"} <= {p.name for p in out.iterdir()}
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o777 & ~umask  # as mkdir makes it, not mkdtemp's 0700
    assert (out / "spm.model").read_bytes() == (run_dir.parent / "data/spm.model").read_bytes()
    pre = json.loads((out / "preprocessing.json").read_text())
    assert pre["source_lang"] == "en" and pre["target_lang"] == "de" and pre["add_source_eos"] is True
    assert pre["moses_tokenize"] == {
        "normalize_punctuation": False,
        "remove_non_printing": False,
        "aggressive_dash_splits": True,
        "escape": False,
    }
    assert pre["decode"]["beam_size"] == 4 and pre["decode"]["length_penalty"] == 0.6
    if engine == "huggingface":  # its MarianTokenizer gives the workflow's pieces, then </s>
        import sentencepiece

        tokenizer = transformers.MarianTokenizer.from_pretrained(out)
        sp = sentencepiece.SentencePieceProcessor(model_file=str(out / "spm.model"))
        assert tokenizer("a stitch in time")["input_ids"] == sp.encode("a stitch in time") + [3]
    with pytest.raises(SystemExit) as refused:  # never over an existing directory
        main(["--run", str(run_dir), "--to", engine, str(out)])
    assert refused.value.code == 1
    assert [p.name for p in tmp_path.iterdir()] == [engine]  # and no half-written directory beside it
