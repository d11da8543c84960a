import argparse
import io

import pytest
import sentencepiece as spm
import torch

from aiayn.decode import translate
from aiayn.decode.beam import SpecialIds, beam_search, pad_sources
from aiayn.model import ModelConfig, Transformer

TEXT = ["the quick brown fox jumps over the lazy dog", "a stitch in time saves nine",
        "all that glitters is not gold", "the early bird catches the worm"] * 20
DECODE = {"beam_size": 3, "length_penalty": 0.6, "max_len_a": 1, "max_len_b": 5, "early_stop": True,
          "max_sentences": 2}
MODEL = {"n_layers": 1, "d_model": 16, "d_ff": 32, "n_heads": 2, "d_k": 8, "d_v": 8, "dropout": 0.0}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("translate")
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(TEXT), model_writer=buffer, vocab_size=40,
                                   model_type="bpe", pad_id=0, unk_id=1, bos_id=2, eos_id=3)
    (root / "spm.model").write_bytes(buffer.getvalue())
    sp = spm.SentencePieceProcessor(model_file=str(root / "spm.model"))
    torch.manual_seed(1)
    model = Transformer(ModelConfig.from_dict(MODEL), sp.get_piece_size()).eval()
    vocab = {"size": sp.get_piece_size(), "pad_id": 0, "unk_id": 1, "bos_id": 2, "eos_id": 3}
    torch.save({"model": model.state_dict(), "settings": {"model": MODEL, "decode": DECODE}, "vocab": vocab,
                "step": 1, "averaged_steps": [1]}, root / "avg.pt")
    lines = [" ".join(sp.encode(t, out_type=str)) for t in TEXT[:4]]
    (root / "test.en").write_text("\n".join([lines[0], "", lines[1], lines[2] + " ▁Zzyzx", lines[3]]) + "\n",
                                  encoding="utf-8")
    return root, sp, model


def test_translate_cli_keeps_lines_and_matches_beam_search(setup):
    root, sp, model = setup
    out = root / "test.hyp.tok"
    assert translate.main(["--checkpoint", str(root / "avg.pt"), "--spm", str(root / "spm.model"),
                           "--input", str(root / "test.en"), "--output", str(out), "--threads", "1",
                           "--device", "cpu"]) == 0
    got = out.read_text(encoding="utf-8").split("\n")
    assert len(got) == 6 and got[1] == "" and got[5] == ""
    assert all(got[i] for i in (0, 2, 3, 4)), got
    sources = translate.read_sources(str(root / "test.en"), sp)
    assert sources.unknown_pieces == 1 and sources.ids[1] == []
    for line, ids in zip(got, sources.ids):
        if ids:
            [hyp] = beam_search(model, pad_sources([ids], SpecialIds()), [len(ids)], beam_size=3,
                                length_penalty_alpha=0.6, max_len_a=1, max_len_b=5, early_stop=True)
            assert line == sp.decode(hyp.tokens)


def test_flags_override_checkpoint_settings():
    args = argparse.Namespace(beam_size=5, length_penalty=None, max_len_a=None, max_len_b=200.0,
                              max_sentences=None, early_stop=False, precision=None, checkpoint="c.pt")
    assert translate.decode_settings({"decode": DECODE}, args) == DECODE | {
        "beam_size": 5, "max_len_b": 200.0, "early_stop": False, "precision": "auto"}
    assert translate.decode_settings({"decode": DECODE | {"precision": "fp32"}}, args)["precision"] == "fp32"
    assert translate.decode_settings({"decode": DECODE}, argparse.Namespace(**vars(args) | {"precision": "bf16"}))[
        "precision"] == "bf16"
    with pytest.raises(ValueError, match=r"c\.pt: settings\['decode'\] lacks \['beam_size'"):
        translate.decode_settings({"decode": {}}, argparse.Namespace(**vars(args) | {"beam_size": None}))
    everything = argparse.Namespace(beam_size=4, length_penalty=0.6, max_len_a=1, max_len_b=50,
                                    max_sentences=8, early_stop=True, precision=None, checkpoint="c.pt")
    assert translate.decode_settings({}, everything)["early_stop"] is True


def test_vocabulary_mismatch_refused(setup):
    root, sp, _ = setup
    vocab = {"size": sp.get_piece_size() + 1, "pad_id": 0, "unk_id": 1, "bos_id": 2, "eos_id": 3}
    with pytest.raises(ValueError, match=r"vocabulary of avg\.pt .* does not match spm\.model"):
        translate.check_vocabulary("avg.pt", vocab, "spm.model", sp)
    assert translate.check_vocabulary("avg.pt", vocab | {"size": sp.get_piece_size()}, "spm.model", sp) == SpecialIds()


def test_a_gpu_that_cannot_be_used_is_a_clear_error_not_a_cpu_run(setup, monkeypatch):
    from aiayn.train.distributed import GpuUnavailableError

    root, _, _ = setup
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(GpuUnavailableError, match=r"--device cuda:1 but"):
        translate.main(["--checkpoint", str(root / "avg.pt"), "--spm", str(root / "spm.model"), "--input",
                        str(root / "test.en"), "--output", str(root / "never.txt"), "--device", "cuda:1"])
    assert not (root / "never.txt").exists()


def test_bf16_decoding_runs_and_keeps_the_lines(setup):
    root, _, _ = setup
    out = root / "bf16.hyp.tok"
    assert translate.main(["--checkpoint", str(root / "avg.pt"), "--spm", str(root / "spm.model"), "--input",
                           str(root / "test.en"), "--output", str(out), "--threads", "1", "--device", "cpu",
                           "--precision", "bf16"]) == 0
    got = out.read_text(encoding="utf-8").split("\n")
    assert len(got) == 6 and got[1] == "" and all(got[i] for i in (0, 2, 3, 4))
