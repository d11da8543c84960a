"""Piece lines -> subword ids -> memory-mapped shards (:class:`aiayn.data.shards.ShardWriter`).

Each line of ``--src`` / ``--tgt`` holds the space-separated sentencepiece pieces of one sentence
(:mod:`aiayn.data.bpe` ``encode``); ids come from the model's ``piece_to_id``. Shards hold subword ids
only; the trainer adds bos/eos. Line counts must agree and are checked before any shard is written.
A piece missing from the model becomes ``unk`` and is counted in the log and the manifest.
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import sentencepiece as spm

from aiayn.data.lines import check_aligned, iter_lines
from aiayn.data.shards import ShardWriter, _sha256
from aiayn.io import setup_logging

log = logging.getLogger(__name__)


class PieceVocab:
    """piece -> id lookup of a sentencepiece model; unknown pieces map to its unk id and are counted."""

    def __init__(self, model: str | Path):
        processor = spm.SentencePieceProcessor(model_file=str(model))
        self.size = processor.get_piece_size()
        self.unk_id = processor.unk_id()
        self._ids = {processor.id_to_piece(i): i for i in range(self.size)}
        self.unknown = 0

    def ids(self, line: str) -> list[int]:
        """``"▁The ▁cat"`` -> ``[id(▁The), id(▁cat)]`` (an empty line -> ``[]``)."""
        ids = [self._ids.get(piece, -1) for piece in line.split()]
        if -1 in ids:
            self.unknown += ids.count(-1)
            ids = [self.unk_id if i == -1 else i for i in ids]
        return ids


def binarize(model: str, src: str, tgt: str, out_dir: str, max_shard_mb: float = 1024) -> dict:
    """Write the (src, tgt) id sequences of two aligned piece files as shards; returns the manifest."""
    count = check_aligned([src, tgt])
    vocab = PieceVocab(model)
    extra = {"spm_model": str(model), "spm_model_sha256": _sha256(model),
             "spm_pieces": vocab.size, "src_file": str(src), "tgt_file": str(tgt)}
    writer = ShardWriter(out_dir, vocab.size, max_shard_mb)
    try:
        for src_line, tgt_line in zip(iter_lines(src), iter_lines(tgt)):
            writer.add(vocab.ids(src_line), vocab.ids(tgt_line))
    except BaseException:
        writer.abort()
        raise
    log.info("%d aligned lines read", count)
    return writer.close({**extra, "unknown_pieces": vocab.unknown})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="sentencepiece .model")
    parser.add_argument("--src", required=True)
    parser.add_argument("--tgt", required=True)
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--max-shard-mb", type=float, default=1024)
    parser.add_argument("--log")
    args = parser.parse_args(argv)
    setup_logging(args.log)
    start = time.perf_counter()
    manifest = binarize(args.model, args.src, args.tgt, args.out_dir, args.max_shard_mb)
    log.info("%s: %d sentences, %d src + %d tgt tokens, %d shard(s), %d unknown pieces, %.1f s",
             args.out_dir, manifest["sentences"], manifest["src_tokens"], manifest["tgt_tokens"],
             len(manifest["shards"]), manifest["unknown_pieces"], time.perf_counter() - start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
