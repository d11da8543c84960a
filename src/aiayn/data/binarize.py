"""Piece lines -> subword ids -> memory-mapped shards (:class:`aiayn.data.shards.ShardWriter`).

Each line of ``--src`` / ``--tgt`` holds the space-separated sentencepiece pieces of one sentence
(:mod:`aiayn.data.bpe` ``encode``); ids come from the model's ``piece_to_id``. Shards hold subword ids
only; the trainer adds bos/eos. Line counts must agree and are checked before any shard is written.
A piece missing from the model becomes ``unk`` and is counted in the log and the manifest.
``--settings FILE`` holds ``data.shards`` (:class:`ShardsConfig`).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import time
from pathlib import Path

import numpy as np

from aiayn import settings
from aiayn.cli import add_log, add_settings
from aiayn.data.bpe import load_processor
from aiayn.data.lines import (
    CHUNK_HELP,
    CHUNK_LINES,
    PART_HELP,
    check_aligned,
    chunked,
    iter_lines,
    ordered_map,
    part_range,
)
from aiayn.data.shards import ShardedCorpus, ShardWriter, _sha256
from aiayn.io import log_resources, progress
from aiayn.options import ShardsConfig

log = logging.getLogger(__name__)


class PieceVocab:
    """piece -> id lookup of a sentencepiece model; unknown pieces map to its unk id."""

    def __init__(self, model: str | Path):
        processor = load_processor(model)
        self.size = processor.get_piece_size()
        self.unk_id = processor.unk_id()
        self._ids = {processor.id_to_piece(i): i for i in range(self.size)}

    def ids(self, line: str) -> tuple[list[int], int]:
        """``"▁The ▁cat"`` -> (``[id(▁The), id(▁cat)]``, number of unknown pieces)."""
        ids = [self._ids.get(piece, -1) for piece in line.split()]
        if -1 not in ids:
            return ids, 0
        return [self.unk_id if i == -1 else i for i in ids], ids.count(-1)


@dataclasses.dataclass
class PairIds:
    """Chunk of (src, tgt) piece lines -> (((src ids, lengths), (tgt ids, lengths)), unknown pieces).

    Each side comes back as one flat int64 array plus the sentence lengths: one array per chunk
    pickles about ten times faster than a list (or an array) per sentence.
    """

    model: str

    def __post_init__(self) -> None:
        self._vocab: PieceVocab | None = None

    def __getstate__(self) -> dict:
        return {"model": self.model, "_vocab": None}

    def __call__(self, pairs: list[tuple[str, str]]) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        if self._vocab is None:
            self._vocab = PieceVocab(self.model)
        sides: tuple[list[int], list[int]] = ([], [])
        lengths: tuple[list[int], list[int]] = ([], [])
        unknown = 0
        for pair in pairs:
            for side, line in enumerate(pair):
                ids, missing = self._vocab.ids(line)
                sides[side].extend(ids)
                lengths[side].append(len(ids))
                unknown += missing
        return tuple((np.array(flat, dtype=np.int64), np.array(n)) for flat, n in zip(sides, lengths)), unknown


def binarize(
    model: str,
    src: str,
    tgt: str,
    out_dir: str,
    max_shard_mb: float = 1024,
    threads: int = 1,
    chunk_lines: int = CHUNK_LINES,
    part: str | None = None,
) -> dict:
    """Write the (src, tgt) id sequences of two aligned piece files (their lines of ``part``: ``I-N``,
    :func:`aiayn.data.lines.iter_lines`) as shards; returns the manifest.

    ``threads`` worker processes look the pieces up; this process appends them to the shards in order.
    """
    count = check_aligned([src, tgt])
    extra = _provenance(model, src, tgt)
    writer, unknown = ShardWriter(out_dir, extra["spm_pieces"], max_shard_mb), 0
    chunks = chunked(zip(iter_lines(src, part=part), iter_lines(tgt, part=part)), chunk_lines)
    lines = part_range(count, part) if part else (0, count)
    try:
        with progress(lines[1] - lines[0], Path(src).name, "pairs") as bar:
            for (src_ids, tgt_ids), chunk_unknown in ordered_map(PairIds(str(model)), chunks, threads):
                writer.add_chunk(*src_ids, *tgt_ids)
                unknown += chunk_unknown
                bar.update(len(src_ids[1]))
    except BaseException:
        writer.abort()
        raise
    return writer.close({**extra, "unknown_pieces": unknown, **({"part": part} if part else {})})


def _provenance(model: str, src: str, tgt: str) -> dict:
    """What the manifest records of the model and the piece files."""
    pieces = load_processor(model).get_piece_size()
    return {
        "spm_model": str(model),
        "spm_model_sha256": _sha256(model),
        "spm_pieces": pieces,
        "src_file": str(src),
        "tgt_file": str(tgt),
    }


def gather(
    model: str,
    src: str,
    tgt: str,
    part_dirs: list[str],
    out_dir: str,
    max_shard_mb: float = 1024,
    chunk_lines: int = CHUNK_LINES,
) -> dict:
    """The shards :func:`binarize` writes of ``src`` and ``tgt``, from the shards of their parts in order
    (``binarize --part``): byte for byte the same, the pairs handed to the writer ``chunk_lines`` at a
    time as one job does; read as they are written, a chunk at a time."""
    extra = _provenance(model, src, tgt)
    writer, unknown = ShardWriter(out_dir, extra["spm_pieces"], max_shard_mb), 0
    pending: list[tuple[np.ndarray, ...]] = []  # blocks of the next chunk: (src, src lengths, tgt, tgt lengths)
    held = 0  # pairs in pending
    try:
        for folder in part_dirs:
            part = ShardedCorpus(folder)
            if part.manifest.get("spm_model_sha256") != extra["spm_model_sha256"]:
                raise ValueError(f"{folder}: binarized with another model than {model}")
            unknown += int(part.manifest["unknown_pieces"])
            start = 0
            while start < len(part):
                block = part.block(start, min(start + chunk_lines - held, len(part)))
                pending.append(block)
                held += len(block[1])
                start += len(block[1])
                if held == chunk_lines:
                    writer.add_chunk(*_join(pending))
                    pending, held = [], 0
        if pending:
            writer.add_chunk(*_join(pending))
    except BaseException:
        writer.abort()
        raise
    return writer.close({**extra, "unknown_pieces": unknown})


def _join(blocks: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    return tuple(np.concatenate([block[i] for block in blocks]) for i in range(4))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aiayn.data.binarize", description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="sentencepiece .model")
    parser.add_argument("--src", required=True)
    parser.add_argument("--tgt", required=True)
    parser.add_argument("--out-dir", required=True, help="the shards' directory")
    add_settings(parser, "data.shards as JSON (default: max_shard_mb 1024)")
    parser.add_argument("--threads", type=int, default=1, help="worker processes for the piece lookup")
    parser.add_argument("--chunk-lines", type=int, default=CHUNK_LINES, help=CHUNK_HELP)
    parser.add_argument("--part", metavar="I-N", help=PART_HELP + ": its shards, for --gather")
    parser.add_argument(
        "--gather",
        nargs="+",
        metavar="DIR",
        help="every part's --out-dir, in order: the shards of --src and --tgt from theirs",
    )
    add_log(parser)
    args = parser.parse_args(argv)
    opts = settings.start(args, ShardsConfig, "data.shards")
    start = time.perf_counter()
    if args.gather:
        manifest = gather(
            args.model, args.src, args.tgt, args.gather, args.out_dir, opts.max_shard_mb, args.chunk_lines
        )
    else:
        manifest = binarize(
            args.model,
            args.src,
            args.tgt,
            args.out_dir,
            opts.max_shard_mb,
            args.threads,
            args.chunk_lines,
            args.part,
        )
    log.info(
        "%s: %d sentences, %d src + %d tgt tokens, %d shard(s), %d unknown pieces, %.1f s",
        args.out_dir,
        manifest["sentences"],
        manifest["src_tokens"],
        manifest["tgt_tokens"],
        len(manifest["shards"]),
        manifest["unknown_pieces"],
        time.perf_counter() - start,
    )
    log_resources()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
