import json

import numpy as np
import pytest

from aiayn.data.shards import ShardWriter, ShardedCorpus, read_index, smallest_dtype


def test_smallest_dtype():
    assert smallest_dtype(256) == np.uint8
    assert smallest_dtype(257) == np.uint16
    assert smallest_dtype(37000) == np.uint16
    assert smallest_dtype(70000) == np.uint32


def test_round_trip_across_shards(tmp_path):
    rng = np.random.default_rng(0)
    pairs = [(rng.integers(0, 300, rng.integers(0, 20)), rng.integers(0, 300, rng.integers(1, 20)))
             for _ in range(500)]
    out = tmp_path / "train"
    with ShardWriter(out, vocab_size=300, max_shard_mb=0.002) as writer:
        for src, tgt in pairs:
            writer.add(src, tgt)
    corpus = ShardedCorpus(out, verify=True)
    assert len(corpus.manifest["shards"]) > 1
    assert len(corpus) == 500
    for i, (src, tgt) in enumerate(pairs):
        got_src, got_tgt = corpus.pair(i)
        assert got_src.tolist() == list(src) and got_tgt.tolist() == list(tgt)
    assert corpus.src_lengths.tolist() == [len(s) for s, _ in pairs]
    assert corpus.manifest["dtype"] == "uint16"
    assert not list(tmp_path.glob(".train.*")), "temporary directory left behind"


def test_out_of_range_id_is_refused_and_nothing_published(tmp_path):
    with pytest.raises(ValueError, match="out of range"):
        with ShardWriter(tmp_path / "dev", vocab_size=10) as writer:
            writer.add([1, 2], [10])
    assert not (tmp_path / "dev").exists()
    assert not list(tmp_path.iterdir())


def test_bad_magic_and_checksum(tmp_path):
    with ShardWriter(tmp_path / "t", vocab_size=50) as writer:
        writer.add([1, 2, 3], [4, 5])
    idx = tmp_path / "t" / "src.000.idx"
    offsets, dtype = read_index(idx)
    assert offsets.tolist() == [0, 3] and dtype == np.uint8
    (tmp_path / "t" / "tgt.000.bin").write_bytes(b"\x09\x09")
    with pytest.raises(ValueError, match="checksum"):
        ShardedCorpus(tmp_path / "t", verify=True)
    idx.write_bytes(b"NOTMAGIC" + idx.read_bytes()[8:])
    with pytest.raises(ValueError, match="not an aiayn index"):
        ShardedCorpus(tmp_path / "t")
    manifest = json.loads((tmp_path / "t" / "manifest.json").read_text())
    assert manifest["sentences"] == 1 and manifest["src_tokens"] == 3
