import json

import numpy as np
import pytest

from aiayn.data.shards import ShardedCorpus, ShardWriter, read_index, smallest_dtype


def test_smallest_dtype():
    assert smallest_dtype(256) == np.uint8
    assert smallest_dtype(257) == np.uint16
    assert smallest_dtype(37000) == np.uint16
    assert smallest_dtype(70000) == np.uint32


def test_round_trip_across_shards(tmp_path):
    rng = np.random.default_rng(0)
    pairs = [(rng.integers(0, 300, rng.integers(0, 20)), rng.integers(0, 300, rng.integers(1, 20))) for _ in range(500)]
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


def test_add_chunk_equals_one_by_one(tmp_path):
    rng = np.random.default_rng(1)
    pairs = [(rng.integers(0, 90, rng.integers(0, 9)), rng.integers(0, 90, rng.integers(1, 9))) for _ in range(60)]
    with ShardWriter(tmp_path / "one", vocab_size=90) as writer:
        for src, tgt in pairs:
            writer.add(src, tgt)
    with ShardWriter(tmp_path / "chunk", vocab_size=90) as writer:
        for start in range(0, 60, 25):
            part = pairs[start : start + 25]
            writer.add_chunk(
                np.concatenate([s for s, _ in part]),
                [len(s) for s, _ in part],
                np.concatenate([t for _, t in part]),
                [len(t) for _, t in part],
            )
    for name in ("src.000.bin", "src.000.idx", "tgt.000.bin", "tgt.000.idx"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "chunk" / name).read_bytes()


def test_add_chunk_refuses_inconsistent_lengths(tmp_path):
    with pytest.raises(ValueError, match="lengths add up to 3, not 2"):
        with ShardWriter(tmp_path / "x", vocab_size=9) as writer:
            writer.add_chunk([1, 2], [3], [1], [1])
    with pytest.raises(ValueError, match="1 source but 2 target"):
        with ShardWriter(tmp_path / "y", vocab_size=9) as writer:
            writer.add_chunk([1, 2], [2], [1, 1], [1, 1])


def test_a_writers_memory_does_not_grow_with_its_shard(tmp_path):
    """Two million pairs in one shard: the index goes to its file a chunk at a time (an index held in
    memory until the shard closes took 16 bytes a pair, and a copy of them)."""
    import tracemalloc

    ones = np.ones(20_000, dtype=np.int64)
    tracemalloc.start()
    try:
        with ShardWriter(tmp_path / "train", vocab_size=50) as writer:
            for _ in range(100):
                writer.add_chunk(ones * 7, ones, ones * 9, ones)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    corpus = ShardedCorpus(tmp_path / "train")
    assert len(corpus) == 2_000_000 and corpus.block(1_999_999, 2_000_000)[0].tolist() == [7]
    assert peak < 4 * 2**20, f"{peak / 2**20:.1f} MiB"


def test_a_reader_maps_the_index_and_keeps_lengths_in_four_bytes(tmp_path):
    """What a training rank holds of a corpus of 40.8M pairs: the indexes mapped (one copy in the page
    cache for every rank), and the lengths, 4 bytes a pair and side; a truncated index is refused."""
    with ShardWriter(tmp_path / "t", vocab_size=50) as writer:
        writer.add_chunk(np.full(7, 4), [3, 0, 4], np.full(6, 5), [1, 2, 3])
    corpus = ShardedCorpus(tmp_path / "t")
    assert all(isinstance(o, np.memmap) for side in ("src", "tgt") for o in corpus._offsets[side])
    assert corpus.src_lengths.dtype == corpus.tgt_lengths.dtype == np.int32
    assert corpus.src_lengths.tolist() == [3, 0, 4] and corpus.tgt_lengths.tolist() == [1, 2, 3]
    assert corpus.padded("src", [2, 0])[1].tolist() == [4, 3]
    del corpus  # its mapping would outlive the truncation below
    idx = tmp_path / "t" / "tgt.000.idx"
    idx.write_bytes(idx.read_bytes()[:-8])
    with pytest.raises(ValueError, match="truncated index"):
        ShardedCorpus(tmp_path / "t")
