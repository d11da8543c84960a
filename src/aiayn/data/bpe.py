"""One shared sentencepiece subword model per task: ``learn`` it, ``encode`` text into pieces.

Paper section 5.1: EN-DE uses a shared source-target byte-pair encoding of about 37000 tokens, EN-FR
a 32000 word-piece vocabulary. ``learn`` trains sentencepiece (``model_type: bpe`` by default) on
both sides together, so source, target and the pre-softmax layer can share one embedding matrix.

``learn --settings FILE`` reads :class:`BpeConfig`: ``config.yaml``'s ``data.bpe`` and the task's
``vocab_size``. ``learn --symbols FILE...`` names tokens (one per line) that are never split: a parsing
task's brackets ``(NP`` and ``)NP`` (:mod:`aiayn.parsing.prepare` writes them), each one piece and one
embedding, where plain BPE learns ``▁(`` and ``NP`` apart and a constituent costs four pieces, not two.

Training reads a seeded uniform sample of at most ``sample_sentences`` lines (selection sampling,
Knuth's Algorithm S, over all inputs together): memory stays bounded on WMT14 EN-FR, and the same
inputs and seed give a byte-identical model. Special ids are fixed: pad 0, unk 1, bos 2, eos 3.

The text is already Moses-tokenized, so sentencepiece's own normalization is off
(``normalization_rule_name=identity``): decoding the pieces gives back exactly the tokenized text.

Deviation from paper: the paper's EN-DE pieces come from subword-nmt (google/seq2seq
``bin/data/wmt16_en_de.sh`` at d5bb7a1a: ``learn_bpe.py -s 32000``, 32000 merge operations on the
German and English tokenized text together, applied with ``apply_bpe.py``; ``vocab.bpe.32000``
lists the pieces of the encoded training text, ``get_vocab.py``). Here sentencepiece learns BPE to a
vocabulary of ``vocab_size`` pieces (37000, the paper's "about 37000 tokens") over the same kind
of text, marking word starts with ``▁``; the segmentations differ in detail, and no key restores
subword-nmt.

Deviation from paper: the vocabulary is learned on a sample of ``data.bpe.sample_sentences`` lines
(10M: all of EN-DE's 9M lines, about an eighth of EN-FR's) so that learning fits in memory; a value
above the corpus size (e.g. ``data.bpe.sample_sentences: 100000000``) learns on every line. The
paper's EN-FR vocabulary is word-piece (Wu et al., 2016), which sentencepiece does not implement;
``data.bpe.model_type: unigram`` is its closest likelihood-based relative, ``bpe`` the default.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import logging
import os
import random
import tempfile
from pathlib import Path
from typing import IO, Iterable, Sequence

import sentencepiece as spm

from aiayn import settings
from aiayn.cli import add_log, add_settings
from aiayn.data.lines import CHUNK_HELP, CHUNK_LINES, PART_HELP, count_lines, iter_lines, map_file
from aiayn.io import atomic_output, log_resources, setup_logging
from aiayn.options import BpeConfig

log = logging.getLogger(__name__)

PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
WORD_START = "\u2581"  # sentencepiece's "▁": the space before a token, part of the token's piece


def sample_lines(paths: Iterable[str | os.PathLike], size: int, seed: int, out: IO[str]) -> dict:
    """Write a uniform random sample of ``size`` lines of ``paths`` (concatenated) to ``out``.

    Algorithm S: line ``t`` of ``N`` is taken with probability ``(size - taken) / (N - t)``, which
    gives every ``size``-subset the same probability; one pass after a line count, O(1) memory.
    Empty lines are counted but not written (sentencepiece cannot learn from them).
    """
    paths = list(paths)
    total = sum(count_lines(p) for p in paths)
    rng = random.Random(seed)
    needed, seen, written, empty = min(size, total), 0, 0, 0
    for path in paths:
        for line in iter_lines(path):
            if rng.random() * (total - seen) < needed:
                needed -= 1
                if line.strip():
                    out.write(line + "\n")
                    written += 1
                else:
                    empty += 1
            seen += 1
    return {"lines": total, "sampled": written, "empty_sampled": empty}


def read_symbols(paths: Iterable[str | os.PathLike]) -> list[str]:
    """The tokens to keep whole: one per non-blank line of each file, first occurrence first.

    A symbol holding whitespace could never be one token of space-separated text: an error naming
    the file and line.
    """
    symbols: dict[str, None] = {}
    for path in paths:
        for number, line in enumerate(iter_lines(path), start=1):
            symbol = line.strip()
            if symbol and len(symbol.split()) > 1:
                raise ValueError(f"{path}:{number}: symbol {symbol!r} holds whitespace")
            if symbol:
                symbols[symbol] = None
    return list(symbols)


def whole_tokens(symbols: Iterable[str]) -> list[str]:
    """sentencepiece ``user_defined_symbols`` that keep each space-separated token in one piece.

    sentencepiece matches these on its normalized text, where the space before a token is already
    ``▁``: a bare ``(NP`` becomes two pieces ``▁`` ``(NP`` (measured with sentencepiece 0.2.3), while
    ``▁(NP`` is one, as every other word-initial piece. A line's first token gets the ``▁`` too
    (sentencepiece's dummy prefix).
    """
    return [WORD_START + symbol for symbol in symbols]


def train_model(sample: Path, opts: BpeConfig, symbols: Iterable[str] = ()) -> bytes:
    """Run the sentencepiece trainer on a sample file; returns the serialized model.

    ``symbols`` (tokens of the text) each become one piece, never split nor merged (:func:`whole_tokens`).
    The sentences go in through an iterator and the model comes back as bytes, so no temporary path
    is recorded in the model's trainer spec: same sample and seed, byte-identical model.
    """
    spm.set_random_generator_seed(opts.seed)
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter_lines(sample),
        model_writer=model,
        vocab_size=opts.vocab_size,
        model_type=opts.model_type,
        character_coverage=opts.character_coverage,
        pad_id=PAD_ID,
        unk_id=UNK_ID,
        bos_id=BOS_ID,
        eos_id=EOS_ID,
        user_defined_symbols=whole_tokens(symbols),
        # A tiny corpus (demo, tests) cannot fill a WMT-sized vocabulary: shrink instead of failing.
        hard_vocab_limit=False,
        input_sentence_size=0,
        shuffle_input_sentence=False,
        normalization_rule_name="identity",
        num_threads=opts.threads,
        minloglevel=1,
    )
    return model.getvalue()


def vocab_lines(processor: spm.SentencePieceProcessor) -> Iterable[str]:
    """``piece<TAB>score`` per id, as sentencepiece's own ``.vocab`` file."""
    for index in range(processor.get_piece_size()):
        yield f"{processor.id_to_piece(index)}\t{processor.get_score(index):g}\n"


def learn(inputs: list[str], model_prefix: str, opts: BpeConfig, symbols: Sequence[str] = ()) -> int:
    """Sample, train, publish ``model_prefix.model`` and ``.vocab`` atomically; returns the vocabulary size.

    ``symbols``: tokens kept whole (:func:`train_model`).
    """
    final = Path(model_prefix)
    final.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{final.name}.", dir=final.parent) as tmp:
        sample = Path(tmp) / "sample.txt"
        with open(sample, "w", encoding="utf-8", newline="\n") as handle:
            counts = sample_lines(inputs, opts.sample_sentences, opts.seed, handle)
        log.info("sampled %(sampled)d non-empty of %(lines)d lines (%(empty_sampled)d empty skipped)", counts)
        if counts["sampled"] == 0:
            raise ValueError(f"no non-empty line to learn a vocabulary from in {inputs}")
        model = train_model(sample, opts, symbols)
    processor = spm.SentencePieceProcessor(model_proto=model)
    with atomic_output(f"{final}.vocab") as handle:
        handle.writelines(vocab_lines(processor))
    with atomic_output(f"{final}.model", "wb") as handle:
        handle.write(model)
    size = processor.get_piece_size()
    if size < opts.vocab_size:
        log.warning(
            "vocabulary shrank to %d pieces (asked for %d): the data has too few distinct symbols",
            size,
            opts.vocab_size,
        )
    log.info(
        "wrote %s.model and %s.vocab (%d pieces, %s, %d of them symbols kept whole)",
        final,
        final,
        size,
        opts.model_type,
        len(symbols),
    )
    return size


@dataclasses.dataclass
class SpmEncode:
    """Encode lines into space-separated pieces (picklable job for :func:`map_file`)."""

    model: str

    def __post_init__(self) -> None:
        self._sp: spm.SentencePieceProcessor | None = None

    def __getstate__(self) -> dict:
        return {"model": self.model, "_sp": None}

    def __call__(self, lines: list[str]) -> list[str]:
        if self._sp is None:
            self._sp = load_processor(self.model)
        return [" ".join(pieces) for pieces in self._sp.encode(lines, out_type=str)]


def load_processor(path: str | os.PathLike) -> spm.SentencePieceProcessor:
    """The sentencepiece model in ``path``; a missing file or one that is not a model is a ValueError
    naming it. sentencepiece's loader fails with an InternalError "could not parse ModelProto from ..."
    that its binding raises as RuntimeError, a kNotFound as IOError (google/sentencepiece at 27344904,
    ``src/sentencepiece_processor.cc``, ``python/src/sentencepiece/sentencepiece.i`` ``ToSwigError``);
    the installed 0.2.3 raises RuntimeError for a missing file too, so both are caught."""
    try:
        return spm.SentencePieceProcessor(model_file=str(path))
    except (RuntimeError, OSError) as error:
        raise ValueError(f"{path}: not a readable sentencepiece model ({error})") from None


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m aiayn.data.bpe", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    learn_p = commands.add_parser("learn", help="train one shared model on all inputs")
    learn_p.add_argument("--inputs", nargs="+", required=True)
    learn_p.add_argument("--model-prefix", required=True)
    add_settings(learn_p, "data.bpe and vocab_size as JSON (default: the paper's EN-DE)")
    learn_p.add_argument("--symbols", nargs="*", default=[], help="files of tokens to keep whole, one per line")
    encode_p = commands.add_parser("encode", help="text lines -> space-separated pieces")
    encode_p.add_argument("--model", required=True)
    encode_p.add_argument("--input", required=True)
    encode_p.add_argument("--output", required=True)
    encode_p.add_argument("--chunk-lines", type=int, default=CHUNK_LINES, help=CHUNK_HELP)
    encode_p.add_argument("--part", metavar="I-N", help=PART_HELP)
    for sub in (learn_p, encode_p):
        sub.add_argument("--threads", type=int, default=1)
        add_log(sub)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_logging(args.log)
    if args.command == "learn":
        opts = settings.read(args.settings, BpeConfig, "data.bpe")
        opts = dataclasses.replace(opts, threads=args.threads)
        learn(args.inputs, args.model_prefix, opts, read_symbols(args.symbols))
    else:
        count = map_file(SpmEncode(args.model), args.input, args.output, args.threads, args.chunk_lines, args.part)
        log.info("encoded %d lines: %s -> %s", count, args.input, args.output)
    log_resources()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
