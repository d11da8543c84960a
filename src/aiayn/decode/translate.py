"""Translate a test set with a trained (or averaged) checkpoint: beam search, then sentencepiece decoding.

CLI::

    python -m aiayn.decode.translate --checkpoint C --spm M --input F --output F [--settings FILE]
        [--threads N] [--device D] [--gpu-lock-dir D] [--log F]

The input holds sentencepiece pieces, space separated, one sentence per line (the encode stage). The
output holds ``sp.decode(ids)`` of the best hypothesis, one line per input line; an empty input line
gives an empty output line. A batch that does not fit in memory is searched a sentence at a time; a line
that does not fit alone stops the stage, naming it (:class:`~aiayn.decode.beam.TooLong`). ``--settings``
is the run's ``decode`` section (:class:`~aiayn.options.DecodeConfig`; default: the paper's beam 4,
alpha 0.6, input + 50).
Only the checkpoint's weights are read (onto the CPU, then the device): the model runs in an
inference session (:func:`aiayn.runtime.session.inference_session`).

``--device auto`` claims a free GPU as training does (:func:`aiayn.runtime.devices.resolve_device`).
``decode.precision``: ``auto`` decodes in bf16 autocast on GPUs with bf16 tensor cores and in fp32
elsewhere (:mod:`aiayn.runtime.precision`); the log-probabilities that rank hypotheses are always
computed in fp32 from the logits. ``decode.cpu_matmul: onednn`` (default) computes a CPU's float32
products through oneDNN (:mod:`aiayn.model.functional`), ``mkl`` through torch's default.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import time
from dataclasses import asdict, dataclass
from typing import Any

import sentencepiece as spm
import torch

from aiayn import settings
from aiayn.cli import add_log, add_settings
from aiayn.data.bpe import load_processor
from aiayn.data.lines import iter_lines
from aiayn.decode.beam import Hypothesis, SpecialIds, TooLong, max_output_length, translate_sentences
from aiayn.io import atomic_output, progress
from aiayn.options import DecodeConfig, ModelConfig
from aiayn.runtime.session import inference_session

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sources:
    """Source sentences as ids (no eos), and how many pieces were not in the vocabulary."""

    ids: list[list[int]]
    unknown_pieces: int


def piece_ids(line: str, sp: spm.SentencePieceProcessor) -> tuple[list[int], int]:
    """The ids of a line's space-separated pieces (unknown pieces become unk), and how many were unknown."""
    unk_id = sp.unk_id()
    unk_piece = sp.id_to_piece(unk_id)
    pieces = line.split()
    sentence = [sp.piece_to_id(piece) for piece in pieces]
    return sentence, sum(1 for p, i in zip(pieces, sentence) if i == unk_id and p != unk_piece)


def read_sources(path: str, sp: spm.SentencePieceProcessor) -> Sources:
    """Map each line's space-separated pieces to ids; unknown pieces become unk and are counted."""
    ids, unknown = [], 0
    for line in iter_lines(path):  # a line that is not UTF-8 is named
        sentence, n_unknown = piece_ids(line, sp)
        ids.append(sentence)
        unknown += n_unknown
    return Sources(ids, unknown)


def check_vocabulary(checkpoint_path: str, vocab: dict, spm_path: str, sp: spm.SentencePieceProcessor) -> SpecialIds:
    """The checkpoint's special ids, after checking they and the size agree with the sentencepiece model."""
    ours = {
        "size": sp.get_piece_size(),
        "pad_id": sp.pad_id(),
        "unk_id": sp.unk_id(),
        "bos_id": sp.bos_id(),
        "eos_id": sp.eos_id(),
    }
    theirs = {key: vocab.get(key) for key in ours}
    if ours != theirs:
        raise ValueError(f"vocabulary of {checkpoint_path} {theirs} does not match {spm_path} {ours}")
    return SpecialIds(pad=vocab["pad_id"], bos=vocab["bos_id"], eos=vocab["eos_id"])


def longest_source(cfg: ModelConfig, opts: DecodeConfig) -> int:
    """The most source subwords a sentence may have to be decoded: ``decode.max_source_length`` (null:
    the model's ``model.max_positions``, what it was built to hold); with learned positions at most
    as many as leave room in ``cfg.position_limit`` for the source with its eos and for the longest
    output ``max_output_length(|x|)`` with its bos. Longer sources get empty outputs: a sentence of
    50,000 subwords (a missing newline) would otherwise take a beam's memory for |x| + 50 steps.

    Deviation from paper: the paper decoded every sentence; a larger ``decode.max_source_length``
    decodes longer ones (``docs/deviations.md``, "Source length limit")."""
    longest = opts.max_source_length or cfg.max_positions
    limit = cfg.position_limit
    if limit is None:
        return longest
    candidates = range(min(longest, limit - 1), 0, -1)
    return next((n for n in candidates if max_output_length(n, opts.max_len_a, opts.max_len_b) <= limit), 0)


def drop_long_sources(sources: list[list[int]], longest: int, where: str) -> list[list[int]]:
    """``sources`` with each one longer than ``longest`` subwords emptied (it decodes to an empty line),
    and a warning naming ``where``, how many and their line numbers."""
    long = [i for i, sentence in enumerate(sources) if len(sentence) > longest]
    if long:
        lines = ", ".join(str(i + 1) for i in long[:10]) + (", ..." if len(long) > 10 else "")
        log.warning(
            "%s: %d line(s) of more than %d subwords (decode.max_source_length; null: model.max_positions) "
            "get an empty output: line(s) %s",
            where,
            len(long),
            longest,
            lines,
        )
    dropped = set(long)
    return [[] if i in dropped else sentence for i, sentence in enumerate(sources)]


def translate(
    model: Any, sources: list[list[int]], opts: DecodeConfig, ids: SpecialIds, device: torch.device
) -> list[Hypothesis | None]:
    """Best hypothesis per source in input order; ``None`` for an empty source (no decoding). A source
    that does not fit in memory even alone raises :class:`~aiayn.decode.beam.TooLong` with its
    ``index`` in ``sources``: skipping it would change the score unseen."""
    todo = [i for i, sentence in enumerate(sources) if sentence]
    with progress(len(todo), "beam search", "sent", unit_scale=False, logger=log) as bar:
        try:
            hyps = translate_sentences(
                model, [sources[i] for i in todo], opts, device=device, ids=ids, on_batch=bar.update
            )
        except TooLong as error:
            error.index = todo[error.index]
            raise
    results: list[Hypothesis | None] = [None] * len(sources)
    for i, hyp in zip(todo, hyps):
        results[i] = hyp
    return results


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m aiayn.decode.translate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, help="checkpoint or averaged checkpoint (.pt)")
    parser.add_argument("--spm", required=True, help="the task's sentencepiece model")
    parser.add_argument("--input", required=True, help="source pieces, space separated, one sentence a line")
    parser.add_argument("--output", required=True, help="decoded hypotheses, one line per input line")
    add_settings(parser, "the run's decode section as JSON (default: the paper's)")
    parser.add_argument("--threads", type=int, help="torch CPU threads")
    parser.add_argument("--device", default="auto", help="auto (a free GPU if there is one), cpu, cuda, cuda:1 ...")
    parser.add_argument("--gpu-lock-dir", default=None, help="where GPU claim locks live (as for training)")
    add_log(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    opts = settings.start(args, DecodeConfig, "decode")
    sp = load_processor(args.spm)
    with inference_session(
        args.checkpoint,
        device=args.device,
        precision=opts.precision,
        threads=args.threads,
        cpu_matmul=opts.cpu_matmul,
        lock_dir=args.gpu_lock_dir,
    ) as session:
        ids = check_vocabulary(args.checkpoint, session.checkpoint.vocab, args.spm, sp)
        sources = read_sources(args.input, sp)
        if sources.unknown_pieces:
            log.warning("%s: %d pieces not in %s, read as unk", args.input, sources.unknown_pieces, args.spm)
        longest = longest_source(ModelConfig.from_dict(session.checkpoint.model_settings), opts)
        sources = dataclasses.replace(sources, ids=drop_long_sources(sources.ids, longest, args.input))
        log.info(
            "decoding %d sentences of %s on %s (%s) with %s",
            len(sources.ids),
            args.input,
            session.device,
            session.precision,
            asdict(opts),
        )
        start = time.perf_counter()
        with session.autocast():
            try:
                hyps = translate(session.model, sources.ids, opts, ids, session.device)
            except TooLong as error:
                raise MemoryError(
                    f"{args.input}: line {error.index + 1}: {error}; the test set is not scored "
                    "without it: decode on a device with more memory, or with a smaller "
                    "decode.beam_size"
                ) from None
        seconds = max(time.perf_counter() - start, 1e-9)
    tokens = sum(len(h.tokens) for h in hyps if h is not None)
    log.info(
        "%d sentences, %d target subwords in %.1f s: %.1f sentences/s, %.1f tokens/s (subwords, no eos)",
        len(hyps),
        tokens,
        seconds,
        len(hyps) / seconds,
        tokens / seconds,
    )
    with atomic_output(args.output) as handle:
        for hyp in hyps:
            handle.write(("" if hyp is None else sp.decode(hyp.tokens)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
