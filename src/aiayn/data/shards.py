"""Memory-mapped token shards: ``.bin`` payload plus ``.idx`` index, with a manifest.

Layout of one split directory (``data/bin/<task>/<split>/``)::

    manifest.json            counts, dtype, vocabulary size, sha256 of every file
    src.000.bin  src.000.idx tgt.000.bin  tgt.000.idx   (then .001, ... when a shard fills up)

``.idx`` = magic ``AIAYNIDX`` | version (uint32) | dtype code (uint8) | count (uint64) |
offsets (uint64 x count+1, in tokens). ``.bin`` = all sentences' token ids back to back, in the
smallest unsigned dtype that holds the vocabulary. Sentences hold subword ids only: the trainer
adds end-of-sentence and beginning-of-sentence symbols.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import shutil
import struct
import tempfile
from pathlib import Path
from typing import Iterable

import numpy as np

MAGIC = b"AIAYNIDX"
VERSION = 1
DTYPES = {1: np.uint8, 2: np.uint16, 3: np.uint32}
SIDES = ("src", "tgt")
_HEADER = struct.Struct("<8sIBQ")


def smallest_dtype(vocab_size: int) -> np.dtype:
    """The smallest unsigned integer dtype that can hold ids ``0 .. vocab_size - 1``."""
    for dtype in DTYPES.values():
        if vocab_size - 1 <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    raise ValueError(f"vocabulary of {vocab_size} ids does not fit in uint32")


def _dtype_code(dtype: np.dtype) -> int:
    return next(code for code, value in DTYPES.items() if np.dtype(value) == dtype)


def _sync(handle) -> None:
    """Flush an open file to the disk: the directory is renamed into place only once every file is whole."""
    handle.flush()
    os.fsync(handle.fileno())


class _IndexFile:
    """An ``.idx`` file written as its sentences come: the offsets go to the file a chunk at a time and
    the header's count is written last, so a writer's memory does not grow with its shard."""

    def __init__(self, path: Path, dtype: np.dtype):
        self.handle, self.code = open(path, "wb"), _dtype_code(dtype)
        self.handle.write(_HEADER.pack(MAGIC, VERSION, self.code, 0))
        self.handle.write(np.zeros(1, np.uint64).tobytes())
        self.sentences, self.last = 0, 0

    def extend(self, lengths: np.ndarray) -> None:
        offsets = self.last + np.cumsum(lengths, dtype=np.int64)
        self.handle.write(offsets.astype(np.uint64).tobytes())
        self.sentences += len(offsets)
        self.last = int(offsets[-1]) if len(offsets) else self.last

    def close(self) -> None:
        self.handle.seek(0)
        self.handle.write(_HEADER.pack(MAGIC, VERSION, self.code, self.sentences))
        _sync(self.handle)
        self.handle.close()


def read_index(path: Path) -> tuple[np.ndarray, np.dtype]:
    """Return (offsets, payload dtype) of an ``.idx`` file; a wrong magic or version is an error.

    The offsets are the file itself, mapped read-only as int64 (they are below 2**63): no copy in this
    process, and one copy in the page cache for every process that reads the same shards (the ranks).
    """
    with open(path, "rb") as handle:
        header = handle.read(_HEADER.size)
        size = os.fstat(handle.fileno()).st_size
    if len(header) < _HEADER.size:
        raise ValueError(f"{path}: truncated index header")
    magic, version, code, count = _HEADER.unpack(header)
    if magic != MAGIC:
        raise ValueError(f"{path}: not an aiayn index (magic {magic!r})")
    if version != VERSION:
        raise ValueError(f"{path}: index version {version}, this code reads {VERSION}")
    if size - _HEADER.size < 8 * (count + 1):
        raise ValueError(f"{path}: truncated index ({(size - _HEADER.size) // 8} of {count + 1} offsets)")
    offsets = np.memmap(path, dtype="<i8", mode="r", offset=_HEADER.size, shape=(count + 1,))
    return offsets, np.dtype(DTYPES[code])


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def remove_leftovers(out_dir: Path) -> list[Path]:
    """Delete the temporary directories a killed writer of ``out_dir`` left beside it (``.<name>.*``).
    Only one job writes a split at a time (Snakemake's lock), so none of them is in use."""
    leftovers = sorted(p for p in out_dir.parent.glob(f".{glob.escape(out_dir.name)}.*") if p.is_dir())
    for path in leftovers:
        shutil.rmtree(path, ignore_errors=True)
    return leftovers


class ShardWriter:
    """Append (src, tgt) id sequences; ``close()`` publishes the directory atomically.

    Everything is written to a temporary sibling directory, renamed onto ``out_dir`` at the end,
    so a killed job never leaves a directory with a manifest and missing shards. A failure (a full
    disk) removes the temporary directory and leaves a previous ``out_dir`` as it was.
    """

    def __init__(self, out_dir: str | os.PathLike, vocab_size: int, max_shard_mb: float = 1024):
        self.out_dir = Path(out_dir)
        self.out_dir.parent.mkdir(parents=True, exist_ok=True)
        remove_leftovers(self.out_dir)
        self.tmp_dir = Path(tempfile.mkdtemp(prefix=f".{self.out_dir.name}.", dir=self.out_dir.parent))
        self.vocab_size = vocab_size
        self.dtype = smallest_dtype(vocab_size)
        self.tokens_per_shard = max(1, int(max_shard_mb * 2**20 / self.dtype.itemsize))
        self.shards: list[dict] = []
        self._open_shard()

    def _open_shard(self) -> None:
        k = len(self.shards)
        self._files = {side: open(self.tmp_dir / f"{side}.{k:03d}.bin", "wb") for side in SIDES}
        self._index = {side: _IndexFile(self.tmp_dir / f"{side}.{k:03d}.idx", self.dtype) for side in SIDES}

    def add(self, src: Iterable[int], tgt: Iterable[int]) -> None:
        """Append one (src, tgt) pair."""
        src, tgt = np.asarray(list(src), dtype=np.int64), np.asarray(list(tgt), dtype=np.int64)
        self.add_chunk(src, [src.size], tgt, [tgt.size])

    def add_chunk(self, src_flat, src_lengths, tgt_flat, tgt_lengths) -> None:
        """Append many pairs at once: each side's ids back to back plus per-sentence lengths.

        One range check and one write per side. A shard closes after the chunk that fills it, so a
        shard can exceed ``max_shard_mb`` by at most one chunk.
        """
        sides = {}
        for side, flat, lengths in (("src", src_flat, src_lengths), ("tgt", tgt_flat, tgt_lengths)):
            flat, lengths = np.asarray(flat, dtype=np.int64), np.asarray(lengths, dtype=np.int64)
            if int(lengths.sum()) != flat.size:
                raise ValueError(f"{side}: lengths add up to {int(lengths.sum())}, not {flat.size} ids")
            if flat.size and (flat.min() < 0 or flat.max() >= self.vocab_size):
                raise ValueError(f"token id out of range [0, {self.vocab_size}) in {side}")
            sides[side] = (flat, lengths)
        if len(sides["src"][1]) != len(sides["tgt"][1]):
            raise ValueError(f"{len(sides['src'][1])} source but {len(sides['tgt'][1])} target sentences")
        for side, (flat, lengths) in sides.items():
            self._files[side].write(flat.astype(self.dtype).tobytes())
            self._index[side].extend(lengths)
        if max(index.last for index in self._index.values()) >= self.tokens_per_shard:
            self._close_shard()
            self._open_shard()

    def _close_shard(self) -> None:
        k = len(self.shards)
        shard = {"sentences": self._index["src"].sentences}
        for side in SIDES:
            _sync(self._files[side])
            self._files[side].close()
            self._index[side].close()
            shard[f"{side}_tokens"] = self._index[side].last
        shard["files"] = {
            name: _sha256(self.tmp_dir / name)
            for side in SIDES
            for name in (f"{side}.{k:03d}.bin", f"{side}.{k:03d}.idx")
        }
        self.shards.append(shard)

    def close(self, extra: dict | None = None) -> dict:
        """Finish the last shard, write the manifest, publish; returns the manifest."""
        try:
            manifest = self._finish(extra)
        except BaseException:
            self.abort()
            raise
        self._publish()
        return manifest

    def _finish(self, extra: dict | None) -> dict:
        self._close_shard()
        if len(self.shards) > 1 and self.shards[-1]["sentences"] == 0:
            for name in self.shards.pop()["files"]:
                (self.tmp_dir / name).unlink()
        manifest = {
            "format": "aiayn-shards",
            "version": VERSION,
            "dtype": self.dtype.name,
            "vocab_size": self.vocab_size,
            "shards": self.shards,
            "sentences": sum(s["sentences"] for s in self.shards),
            "src_tokens": sum(s["src_tokens"] for s in self.shards),
            "tgt_tokens": sum(s["tgt_tokens"] for s in self.shards),
            **(extra or {}),
        }
        with open(self.tmp_dir / "manifest.json", "w", encoding="utf-8") as handle:
            handle.write(json.dumps(manifest, indent=2) + "\n")
            _sync(handle)
        return manifest

    def _publish(self) -> None:
        """Rename the finished directory onto ``out_dir``; a previous one is moved aside first and
        deleted after, so that no moment has a mix of old and new shards."""
        old = None
        if self.out_dir.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{self.out_dir.name}.old.", dir=self.out_dir.parent))
            os.replace(self.out_dir, old)
        os.replace(self.tmp_dir, self.out_dir)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

    def abort(self) -> None:
        for handle in [*self._files.values(), *(index.handle for index in self._index.values())]:
            with contextlib.suppress(OSError):  # closing flushes, which fails again on a full disk
                handle.close()
        shutil.rmtree(self.tmp_dir, ignore_errors=True)

    def __enter__(self) -> "ShardWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


class ShardedCorpus:
    """Read-only view of a split directory; sentences are numbered globally across shards."""

    def __init__(self, split_dir: str | os.PathLike, verify: bool = False):
        self.dir = Path(split_dir)
        manifest_path = self.dir / "manifest.json"
        if not manifest_path.exists():
            raise FileNotFoundError(f"{manifest_path}: no shard manifest (run the binarize stage)")
        self.manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if self.manifest.get("format") != "aiayn-shards":
            raise ValueError(f"{manifest_path}: not an aiayn shard manifest")
        if verify:
            self.verify()
        self._data = {side: [] for side in SIDES}
        self._offsets = {side: [] for side in SIDES}
        for k, _ in enumerate(self.manifest["shards"]):
            for side in SIDES:
                offsets, dtype = read_index(self.dir / f"{side}.{k:03d}.idx")
                self._offsets[side].append(offsets)
                bin_path = self.dir / f"{side}.{k:03d}.bin"
                size = offsets[-1]
                self._data[side].append(
                    np.memmap(bin_path, dtype=dtype, mode="r", shape=(size,)) if size else np.zeros(0, dtype)
                )
        counts = [len(o) - 1 for o in self._offsets["src"]]
        self._starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        # int32: 4 bytes a sentence and side, what a rank holds of the corpus beside the mapped files
        self.src_lengths = np.concatenate([np.diff(o).astype(np.int32) for o in self._offsets["src"]])
        self.tgt_lengths = np.concatenate([np.diff(o).astype(np.int32) for o in self._offsets["tgt"]])
        self.vocab_size = int(self.manifest["vocab_size"])

    def verify(self) -> None:
        """Check every file's sha256 against the manifest."""
        for shard in self.manifest["shards"]:
            for name, expected in shard["files"].items():
                if _sha256(self.dir / name) != expected:
                    raise ValueError(f"{self.dir / name}: checksum differs from manifest.json")

    def __len__(self) -> int:
        return int(self._starts[-1])

    def _get(self, side: str, index: int) -> np.ndarray:
        if not 0 <= index < len(self):
            raise IndexError(index)
        k = int(np.searchsorted(self._starts, index, side="right") - 1)
        local = index - self._starts[k]
        offsets = self._offsets[side][k]
        return np.asarray(self._data[side][k][offsets[local] : offsets[local + 1]], dtype=np.int64)

    def block(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Pairs ``start`` up to ``stop`` or to the end of ``start``'s shard, whichever comes first, as
        :meth:`ShardWriter.add_chunk` takes them: (src ids back to back, src lengths, tgt ids, tgt lengths)."""
        if not 0 <= start < stop <= len(self):
            raise IndexError(f"{self.dir}: pairs {start}..{stop} of {len(self)}")
        k = int(np.searchsorted(self._starts, start, side="right") - 1)
        first, last = start - self._starts[k], min(stop, self._starts[k + 1]) - self._starts[k]
        out = []
        for side in SIDES:
            offsets = self._offsets[side][k][first : last + 1]
            out += [np.asarray(self._data[side][k][offsets[0] : offsets[-1]]), np.diff(offsets)]
        return tuple(out)

    def src(self, index: int) -> np.ndarray:
        return self._get("src", index)

    def tgt(self, index: int) -> np.ndarray:
        return self._get("tgt", index)

    def pair(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        return self.src(index), self.tgt(index)

    def padded(self, side: str, indices, pad: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Sentences ``indices`` of one side as rows: (ids (n, longest) int64, ``pad`` after each
        sentence's end; lengths (n,)). Vectorised: one 2-D read per shard touched."""
        indices = np.asarray(indices, dtype=np.int64)
        if indices.size and (indices.min() < 0 or indices.max() >= len(self)):
            raise IndexError(f"{self.dir}: sentence index out of range 0..{len(self) - 1}")
        single = len(self._offsets[side]) == 1
        shard = np.zeros_like(indices) if single else np.searchsorted(self._starts, indices, side="right") - 1
        touched = [0] if single else np.unique(shard).tolist()
        begins, lengths = np.empty_like(indices), np.empty_like(indices)
        for k in touched:
            rows = slice(None) if single else shard == k
            offsets, local = self._offsets[side][k], indices[rows] - self._starts[k]
            begins[rows], lengths[rows] = offsets[local], offsets[local + 1] - offsets[local]
        columns = np.arange(int(lengths.max()) if indices.size else 0)
        ids = np.full((len(indices), len(columns)), pad, dtype=np.int64)
        inside = columns < lengths[:, None]  # (n, longest)
        for k in touched:
            rows = slice(None) if single else shard == k
            data = self._data[side][k]
            window = np.minimum(begins[rows, None] + columns, max(len(data) - 1, 0))  # (n_k, longest)
            ids[rows] = np.where(inside[rows], np.asarray(data)[window] if len(data) else pad, pad)
        return ids, lengths
