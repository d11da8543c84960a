"""A data stage run in parts (``--part I-N``, ``data.chunks``) and gathered gives the bytes one job gives."""

import gzip
import json

import pytest

from aiayn.data import binarize, bpe, clean, lines, parts, tokenize
from aiayn.data.lines import DataError, iter_lines, map_file, parse_part, part_range
from aiayn.data.shards import ShardedCorpus
from aiayn.options import CleanConfig

TEXT = ["Zürich — 3 €.", "", "naïve café", "a", "日本語 の 文", "last line"] * 7


def _write(path, lines_, end="\n"):
    path.write_text(end.join(lines_) + end, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 50])
@pytest.mark.parametrize("block", [1 << 22, 5])
def test_parts_in_order_are_the_file(tmp_path, monkeypatch, n, block):
    monkeypatch.setattr(lines, "_BLOCK", block)  # 5 bytes: a part starts mid-block and mid-character
    for name, end in (("t.txt", "\n"), ("u.txt", "")):  # u: no newline at the end
        path = _write(tmp_path / name, TEXT, end)
        got = [line for i in range(n) for line in iter_lines(path, part=f"{i}-{n}")]
        assert got == list(iter_lines(path))
    with gzip.open(tmp_path / "t.gz", "wt", encoding="utf-8") as out:
        out.write("\n".join(TEXT) + "\n")
    assert [x for i in range(n) for x in iter_lines(tmp_path / "t.gz", part=f"{i}-{n}")] == TEXT


def test_part_ranges_cover_every_line_once():
    assert [part_range(10, f"{i}-4") for i in range(4)] == [(0, 2), (2, 5), (5, 7), (7, 10)]
    assert [part_range(2, f"{i}-3") for i in range(3)] == [(0, 0), (0, 1), (1, 2)]


def test_a_bad_line_is_named_by_its_line_in_the_whole_file(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"a\nb\nc\n\xff\ne\n")
    with pytest.raises(lines.DataError, match="line 4"):
        list(iter_lines(path, part="1-2"))


@pytest.mark.parametrize("bad", ["2", "3-3", "-1-2", "a-b", "1-2-3"])
def test_a_bad_part_is_refused(bad):
    with pytest.raises(ValueError, match="I-N"):
        parse_part(bad)


def test_tokenize_and_encode_parts_gather_to_the_whole(tmp_path):
    raw = _write(tmp_path / "raw.en", ["Hello, world!", "It's 3.5 km.", "", "Don't stop."] * 5)
    pipeline = tokenize.MosesPipeline(lang="en")
    map_file(pipeline, raw, str(tmp_path / "whole"), chunk_lines=3)
    names = [str(tmp_path / f"tok.{i}") for i in range(3)]
    for i, name in enumerate(names):
        map_file(pipeline, raw, name, chunk_lines=3, part=f"{i}-3")
    assert parts.main(["--inputs", *names, "--output", str(tmp_path / "gathered")]) == 0
    assert (tmp_path / "gathered").read_bytes() == (tmp_path / "whole").read_bytes()

    (tmp_path / "bpe.json").write_text(json.dumps({"vocab_size": 30}))
    prefix = str(tmp_path / "spm")
    bpe.main(
        [
            "learn",
            "--inputs",
            str(tmp_path / "whole"),
            "--model-prefix",
            prefix,
            "--settings",
            str(tmp_path / "bpe.json"),
        ]
    )
    map_file(bpe.SpmEncode(f"{prefix}.model"), str(tmp_path / "whole"), str(tmp_path / "bpe.whole"))
    for i in range(2):
        bpe.main(
            [
                "encode",
                "--model",
                f"{prefix}.model",
                "--input",
                str(tmp_path / "whole"),
                "--output",
                str(tmp_path / f"bpe.{i}"),
                "--part",
                f"{i}-2",
            ]
        )
    parts.gather([str(tmp_path / f"bpe.{i}") for i in range(2)], str(tmp_path / "bpe.gathered"))
    assert (tmp_path / "bpe.gathered").read_bytes() == (tmp_path / "bpe.whole").read_bytes()


CORPUS_A = [("a b c", "x y z"), ("", "x y"), ("a", "x"), ("a b c d e f", "u v"), ("p q", "r s")] * 3
CORPUS_B = [("p q", "r s"), ("p q r s t", "r s t u"), ("p q r", "r")]


def _corpus(prefix, pairs):
    for index, lang in enumerate(("en", "de")):
        _write(prefix.with_name(f"{prefix.name}.{lang}"), [pair[index] for pair in pairs])
    return str(prefix)


def test_clean_parts_gather_to_the_whole(tmp_path):
    corpora = [_corpus(tmp_path / "a", CORPUS_A), _corpus(tmp_path / "b", CORPUS_B)]
    rules = CleanConfig(min_len=2, max_len=5, max_ratio=2)
    whole = clean.clean_corpora(corpora, "en", "de", str(tmp_path / "whole"), rules)
    (tmp_path / "clean.json").write_text(json.dumps({"min_len": 2, "max_len": 5, "max_ratio": 2}))
    args = ["--src-lang", "en", "--tgt-lang", "de", "--corpora", *corpora, "--settings", str(tmp_path / "clean.json")]
    folders = []
    for i in range(4):  # 4 parts of 3 pairs: one part of b is empty, one keeps nothing
        folder = tmp_path / f"part{i}"
        assert (
            clean.main([*args, "--part", f"{i}-4", "--part-dir", str(folder), "--stats", f"{folder}/stats.json"]) == 0
        )
        folders.append(str(folder))
    stats = tmp_path / "gathered.json"
    assert (
        clean.main([*args, "--gather", *folders, "--out-prefix", str(tmp_path / "gathered"), "--stats", str(stats)])
        == 0
    )
    for lang in ("en", "de"):
        assert (tmp_path / f"gathered.{lang}").read_bytes() == (tmp_path / f"whole.{lang}").read_bytes()
    assert json.loads(stats.read_text()) == json.loads(json.dumps(whole))


def test_clean_gather_checks_the_whole_corpora(tmp_path):
    corpora = [_corpus(tmp_path / "a", CORPUS_A), _corpus(tmp_path / "none", [("a", "b")] * 4)]
    folder = tmp_path / "p"
    (tmp_path / "clean.json").write_text(json.dumps({"min_len": 2}))
    args = ["--src-lang", "en", "--tgt-lang", "de", "--corpora", *corpora, "--settings", str(tmp_path / "clean.json")]
    stats = ["--stats", f"{folder}/stats.json"]
    assert clean.main([*args, *stats, "--part", "0-1", "--part-dir", str(folder)]) == 0  # a part may lose everything
    with pytest.raises(DataError, match="none"):
        clean.main(
            [*args, "--gather", str(folder), "--out-prefix", str(tmp_path / "o"), "--stats", str(tmp_path / "s.json")]
        )
    assert not (tmp_path / "o.en").exists()


@pytest.fixture(scope="module")
def pieces(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("parts")
    en = _write(tmp / "t.en", ["the cat sat on the mat .", "", "a dog , a log ."] * 9)
    de = _write(tmp / "t.de", ["die Katze sitzt .", "der Hund .", ""] * 9)
    (tmp / "bpe.json").write_text(json.dumps({"vocab_size": 40}))
    bpe.main(["learn", "--inputs", en, de, "--model-prefix", str(tmp / "spm"), "--settings", str(tmp / "bpe.json")])
    for lang, src in (("en", en), ("de", de)):
        map_file(bpe.SpmEncode(str(tmp / "spm.model")), src, str(tmp / f"p.{lang}"))
    return tmp


@pytest.mark.parametrize("n", [1, 4])
def test_binarize_parts_gather_to_the_same_shards(pieces, tmp_path, n):
    model, src, tgt = str(pieces / "spm.model"), str(pieces / "p.en"), str(pieces / "p.de")
    whole = binarize.binarize(model, src, tgt, str(tmp_path / "whole"), max_shard_mb=0.00003, chunk_lines=5)
    folders = [str(tmp_path / f"part{i}") for i in range(n)]
    (tmp_path / "shards.json").write_text(json.dumps({"max_shard_mb": 0.00002}))  # parts of several shards
    for i, folder in enumerate(folders):
        args = ["--model", model, "--src", src, "--tgt", tgt, "--part", f"{i}-{n}", "--out-dir", folder]
        assert binarize.main([*args, "--chunk-lines", "4", "--settings", str(tmp_path / "shards.json")]) == 0
    gathered = binarize.gather(
        model, src, tgt, folders, str(tmp_path / "gathered"), max_shard_mb=0.00003, chunk_lines=5
    )
    assert len(whole["shards"]) > 2 and gathered == whole  # the manifest holds every file's sha256
    for path in (tmp_path / "whole").iterdir():
        assert (tmp_path / "gathered" / path.name).read_bytes() == path.read_bytes()
    assert len(ShardedCorpus(tmp_path / "gathered", verify=True)) == 27


def test_binarize_gather_refuses_parts_of_another_model(pieces, tmp_path):
    model, src, tgt = str(pieces / "spm.model"), str(pieces / "p.en"), str(pieces / "p.de")
    binarize.binarize(model, src, tgt, str(tmp_path / "part"), part="0-1")
    manifest = json.loads((tmp_path / "part/manifest.json").read_text())
    (tmp_path / "part/manifest.json").write_text(json.dumps({**manifest, "spm_model_sha256": "0" * 64}))
    with pytest.raises(ValueError, match="another model"):
        binarize.gather(model, src, tgt, [str(tmp_path / "part")], str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_a_block_of_pairs_stops_at_its_shard(pieces, tmp_path):
    model, src, tgt = str(pieces / "spm.model"), str(pieces / "p.en"), str(pieces / "p.de")
    binarize.binarize(model, src, tgt, str(tmp_path / "b"), max_shard_mb=0.00003, chunk_lines=5)
    corpus = ShardedCorpus(tmp_path / "b")
    start = 0
    while start < len(corpus):
        src_ids, src_lengths, tgt_ids, tgt_lengths = corpus.block(start, len(corpus))
        assert 0 < len(src_lengths) < len(corpus)  # several shards: no block holds them all
        pairs = [corpus.pair(i) for i in range(start, start + len(src_lengths))]
        assert src_lengths.tolist() == [len(s) for s, _ in pairs] and tgt_lengths.tolist() == [len(t) for _, t in pairs]
        assert src_ids.tolist() == [x for s, _ in pairs for x in s.tolist()]
        assert tgt_ids.tolist() == [x for _, t in pairs for x in t.tolist()]
        start += len(src_lengths)
    with pytest.raises(IndexError):
        corpus.block(3, 3)
