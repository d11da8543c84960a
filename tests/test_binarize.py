import json

import pytest
import sentencepiece as spm

from aiayn.data import binarize, bpe
from aiayn.data.lines import DataError
from aiayn.data.shards import ShardedCorpus

EN = ["the cat sat on the mat .", "", "a dog , a log and a frog .", "on the mat sat the cat ."] * 10
DE = ["die Katze sitzt auf der Matte .", "der Hund .", "", "auf der Matte sitzt die Katze ."] * 10


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def pieces(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bin")
    inputs = [_write(tmp / "t.en", EN), _write(tmp / "t.de", DE)]
    prefix = tmp / "spm"
    (tmp / "bpe.json").write_text(json.dumps({"vocab_size": 40}))
    bpe.main(["learn", "--inputs", *inputs, "--model-prefix", str(prefix), "--settings", str(tmp / "bpe.json")])
    for lang, src in zip(("en", "de"), inputs):
        bpe.main(["encode", "--model", f"{prefix}.model", "--input", src, "--output", str(tmp / f"p.{lang}")])
    return tmp, f"{prefix}.model"


def test_shards_hold_every_sentence_exactly_once(pieces):
    tmp, model = pieces
    out = tmp / "train"
    (tmp / "shards.json").write_text(json.dumps({"max_shard_mb": 0.0002}))
    assert (
        binarize.main(
            [
                "--model",
                model,
                "--src",
                str(tmp / "p.en"),
                "--tgt",
                str(tmp / "p.de"),
                "--out-dir",
                str(out),
                "--settings",
                str(tmp / "shards.json"),
                "--chunk-lines",
                "5",
            ]
        )
        == 0
    )
    corpus = ShardedCorpus(out, verify=True)
    sp = spm.SentencePieceProcessor(model_file=model)
    assert len(corpus) == len(EN) and len(corpus.manifest["shards"]) > 1
    assert corpus.vocab_size == sp.get_piece_size() and corpus.manifest["unknown_pieces"] == 0
    for i, (en, de) in enumerate(zip(EN, DE)):
        src, tgt = corpus.pair(i)
        assert sp.decode(src.tolist()) == en and sp.decode(tgt.tolist()) == de
    assert corpus.src_lengths[1] == 0 and corpus.tgt_lengths[2] == 0


def test_worker_processes_give_identical_shards(pieces, tmp_path):
    tmp, model = pieces
    for threads in (1, 2):
        binarize.binarize(
            model, str(tmp / "p.en"), str(tmp / "p.de"), str(tmp_path / f"t{threads}"), threads=threads, chunk_lines=3
        )
    one, two = ShardedCorpus(tmp_path / "t1"), ShardedCorpus(tmp_path / "t2")
    assert one.manifest["shards"] == two.manifest["shards"]  # sha256 of every file


def test_unknown_piece_becomes_unk_and_is_counted(pieces, tmp_path):
    tmp, model = pieces
    piece = spm.SentencePieceProcessor(model_file=model).id_to_piece(10)
    src, tgt = _write(tmp_path / "s", [f"{piece} NOT_A_PIECE"]), _write(tmp_path / "t", [piece])
    manifest = binarize.binarize(model, src, tgt, str(tmp_path / "out"))
    assert manifest["unknown_pieces"] == 1
    assert ShardedCorpus(tmp_path / "out").src(0).tolist()[1] == 1
    written = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert written["spm_pieces"] == spm.SentencePieceProcessor(model_file=model).get_piece_size()
    assert written["sentences"] == 1 and written["src_tokens"] == 2


def test_misaligned_files_name_both(pieces, tmp_path):
    tmp, model = pieces
    src, tgt = _write(tmp_path / "s", ["▁the", "▁cat"]), _write(tmp_path / "t", ["▁die"])
    with pytest.raises(DataError, match=r"s: 2 lines, .*t: 1 lines"):
        binarize.main(["--model", model, "--src", src, "--tgt", tgt, "--out-dir", str(tmp_path / "o")])
    assert not (tmp_path / "o").exists()
