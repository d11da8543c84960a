import json

import pytest
import sentencepiece as spm

from aiayn.data import bpe
from aiayn.data.bpe import sample_lines

TEXT_EN = [
    "the cat sat on the mat .",
    "a well @-@ known fact is known well .",
    "",
    "the dog sat on the log .",
    "cats and dogs are known to sit .",
    "the mat is on the log , the cat is on the mat .",
]
TEXT_DE = [
    "die Katze sitzt auf der Matte .",
    "eine bekannte Tatsache .",
    "der Hund sitzt .",
    "",
    "Katzen und Hunde sitzen .",
    "die Matte liegt auf dem Holz .",
]


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def _learn(tmp_path, name, vocab_size=60, seed=1, threads=1, log=None):
    inputs = [_write(tmp_path / "t.en", TEXT_EN * 5), _write(tmp_path / "t.de", TEXT_DE * 5)]
    prefix = tmp_path / name / "spm"
    settings = tmp_path / f"{name}.json"
    settings.write_text(json.dumps({"vocab_size": vocab_size, "seed": seed}))
    assert (
        bpe.main(
            [
                "learn",
                "--inputs",
                *inputs,
                "--model-prefix",
                str(prefix),
                "--settings",
                str(settings),
                "--threads",
                str(threads),
                *(["--log", str(log)] if log else []),
            ]
        )
        == 0
    )
    return prefix


def test_special_ids_and_byte_identical_rerun(tmp_path):
    first, second, threaded = _learn(tmp_path, "a"), _learn(tmp_path, "b"), _learn(tmp_path, "c", threads=2)
    assert first.with_suffix(".model").read_bytes() == second.with_suffix(".model").read_bytes()
    # The trainer spec inside the model records num_threads; the pieces and scores do not depend on it.
    assert first.with_suffix(".vocab").read_bytes() == threaded.with_suffix(".vocab").read_bytes()
    sp = spm.SentencePieceProcessor(model_file=str(first) + ".model")
    assert (sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id()) == (0, 1, 2, 3)
    assert [sp.id_to_piece(i) for i in range(4)] == ["<pad>", "<unk>", "<s>", "</s>"]
    vocab = first.with_suffix(".vocab").read_text(encoding="utf-8").split("\n")
    assert vocab[:2] == ["<pad>\t0", "<unk>\t0"] and len(vocab) == sp.get_piece_size() + 1


def test_tiny_corpus_shrinks_vocabulary_with_warning(tmp_path):
    prefix = _learn(tmp_path, "tiny", vocab_size=37000, log=tmp_path / "learn.log")
    size = spm.SentencePieceProcessor(model_file=str(prefix) + ".model").get_piece_size()
    assert 4 < size < 37000
    log = (tmp_path / "learn.log").read_text()
    assert f"WARNING aiayn.data.bpe: vocabulary shrank to {size} pieces (asked for 37000)" in log


def test_text_pieces_ids_text_round_trip(tmp_path):
    prefix = _learn(tmp_path, "m")
    text = TEXT_EN + TEXT_DE + ["an unseen sentence with Zebras ."]
    src = _write(tmp_path / "in.txt", text)
    for threads in (1, 2):
        assert (
            bpe.main(
                [
                    "encode",
                    "--model",
                    f"{prefix}.model",
                    "--input",
                    src,
                    "--output",
                    str(tmp_path / f"out{threads}"),
                    "--threads",
                    str(threads),
                    "--chunk-lines",
                    "3",
                ]
            )
            == 0
        )
    pieces = (tmp_path / "out1").read_text(encoding="utf-8")
    assert pieces == (tmp_path / "out2").read_text(encoding="utf-8")
    lines = pieces.split("\n")[:-1]
    assert len(lines) == len(text) and lines[2] == "" and lines[len(TEXT_EN) + 3] == ""
    sp = spm.SentencePieceProcessor(model_file=f"{prefix}.model")
    for original, line in zip(text, lines):
        ids = [sp.piece_to_id(p) for p in line.split()]
        assert sp.decode(ids) == original or sp.unk_id() in ids
    assert sp.decode([sp.piece_to_id(p) for p in lines[0].split()]) == TEXT_EN[0]


def test_sample_is_seeded_uniform_and_bounded(tmp_path):
    path = _write(tmp_path / "n.txt", [str(i) for i in range(1000)])
    out = tmp_path / "s.txt"
    with open(out, "w") as handle:
        assert sample_lines([path], 100, 7, handle) == {"lines": 1000, "sampled": 100, "empty_sampled": 0}
    first = out.read_text().split()
    with open(out, "w") as handle:
        sample_lines([path], 100, 7, handle)
    assert out.read_text().split() == first
    numbers = [int(x) for x in first]
    assert numbers == sorted(set(numbers)) and min(numbers) < 100 and max(numbers) > 900
    with open(out, "w") as handle:
        assert sample_lines([path], 5000, 7, handle)["sampled"] == 1000


TREES = ["(S (NP XX XX )NP (VP XX (NP XX )NP )VP XX )S", "(S (NP XX )NP (VP XX (SBAR (S (NP XX )NP )S )SBAR )VP )S"]


def _learn_trees(tmp_path, name, *symbols):
    words, trees = _write(tmp_path / "w.txt", TEXT_EN * 5), _write(tmp_path / "t.txt", TREES * 15)
    prefix = tmp_path / name / "spm"
    assert bpe.main(["learn", "--inputs", words, trees, "--model-prefix", str(prefix), "--symbols", *symbols]) == 0
    return spm.SentencePieceProcessor(model_file=str(prefix) + ".model")


def test_symbols_stay_one_piece_each_and_decode_back(tmp_path):
    symbols = _write(tmp_path / "symbols", ["(S", ")S", "(NP", ")NP", "(VP", ")VP", "(SBAR", ")SBAR"])
    sp, plain = _learn_trees(tmp_path, "whole", symbols), _learn_trees(tmp_path, "plain")
    for tree in TREES:
        pieces = sp.encode(tree, out_type=str)
        assert pieces == ["\u2581" + token for token in tree.split()]
        assert sp.decode(pieces) == tree
        assert len(plain.encode(tree)) > len(pieces)  # plain BPE never keeps a bracket with its label
    assert sp.encode("the cat (NP", out_type=str)[-1] == "\u2581(NP"


def test_symbols_file_dedups_and_a_symbol_with_whitespace_names_file_and_line(tmp_path):
    assert bpe.read_symbols([_write(tmp_path / "ok", ["(NP", "", ")NP", "(NP"])]) == ["(NP", ")NP"]
    path = _write(tmp_path / "bad", ["(NP", "(V P"])
    with pytest.raises(ValueError, match=f"{path}:2"):
        bpe.read_symbols([path])
