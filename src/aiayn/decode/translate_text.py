"""aiayn-translate: translate text with a trained model, each line as soon as it arrives.

    aiayn-translate --run results/demo/en-de/base [--input F] [--output F] [--beam K] [--n-best N]
        [--scores] [--last] [--device auto|cpu|cuda|cuda:N] [--batch-size B] [--threads T] [--log F]
    aiayn-translate --checkpoint C --spm M --settings decode.json --tokenize tokenize.en.json
        --source-lang en --target-lang de ...

Input: raw text, one sentence a line (a file, or standard input). Each line goes through exactly the
workflow's stages: the tokenize rule's Moses normalization and tokenization with the run's source-side
settings (:class:`aiayn.data.tokenize.MosesPipeline`), the bpe_encode rule's sentencepiece pieces
(:class:`aiayn.data.bpe.SpmEncode`), the translate rule's beam search with the run's decode settings,
and the detokenize rule's Moses detokenizer (:class:`aiayn.data.detokenize.MosesDetok`): on a test set
the output equals the workflow's ``<split>-avg.hyp.txt`` line for line (on a file of more than
``decode.max_sentences`` lines the batches are composed differently; beam search makes a sentence's
translation independent of its batch, up to floating-point rounding). ``--run DIR`` finds the
checkpoint (``avg.pt``; ``--last``, or when the run has none, ``train/checkpoint_last.pt``), the
decode settings and, through the run's ``inference.json`` (:mod:`aiayn.decode.manifest`), the
sentencepiece model and the tokenizer settings; an explicit path overrides what the run gives.

Lines are read in batches as they come: a batch is the first line waited for and the lines already
available after it (at most ``--batch-size``, default the run's ``decode.max_sentences``); its output
is written and flushed before the next batch is read, so a pipe gets each answer at once.

Output, one line per input line: the translation, or with ``--scores`` ``score<TAB>translation``
(score = log P(Y|X) / lp(Y), what the beam ranks by). With ``--n-best N`` (N <= the beam size):
up to N lines per input line, ``line<TAB>rank<TAB>translation`` (``line<TAB>rank<TAB>score<TAB>
translation`` with ``--scores``), best first, the line numbered from 1.

Defined outputs for bad input (the command never stops on one): an empty line (or one that is empty
once tokenized) gives an empty output line; a line that is not valid UTF-8, or longer than decoding
takes (:func:`aiayn.decode.translate.longest_source`: ``decode.max_source_length``, null the
model's ``model.max_positions``, and with learned positions room for the longest output), or too long to
decode in the memory there is (a batch that does not fit is decoded a line at a time), gives an empty
output line and a warning on standard error naming its line number. With ``--n-best`` these give no
output lines.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, Iterator

import sentencepiece as spm

from aiayn import settings
from aiayn.cli import add_log, add_option, add_settings, check_options
from aiayn.data.bpe import SpmEncode, load_processor
from aiayn.data.detokenize import MosesDetok
from aiayn.data.tokenize import MosesPipeline
from aiayn.decode.beam import Hypothesis, SpecialIds, TooLong, translate_sentences_n_best
from aiayn.decode.manifest import RunFiles, read_run
from aiayn.decode.stream import LineBatches
from aiayn.decode.translate import check_vocabulary, longest_source, piece_ids
from aiayn.io import atomic_output, setup_logging
from aiayn.options import DecodeConfig, ModelConfig, TokenizeConfig
from aiayn.runtime.session import InferenceSession, inference_session

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TextPipeline:
    """A task's text on either side of the model: ``prepare`` turns a raw line into the text that
    sentencepiece encodes, ``finish`` a decoded hypothesis (and the prepared source) into the output."""

    prepare: Callable[[str], str]
    finish: Callable[[str, str], str]


def translation_pipeline(files: RunFiles) -> TextPipeline:
    """The tokenize rule's steps with the run's source-side settings, and the detokenize rule's."""
    opts = settings.read(files.tokenize, TokenizeConfig, "data.tokenize")
    steps = {key: value for key, value in dataclasses.asdict(opts).items() if key != "chunk_lines"}
    tokenizer, detokenizer = MosesPipeline(lang=files.source_lang, **steps), MosesDetok(files.target_lang)
    return TextPipeline(tokenizer.line, lambda hyp, source: detokenizer.line(hyp))


@dataclass
class Decoder:
    """A model in its inference session and what decoding with it needs."""

    session: InferenceSession
    sp: spm.SentencePieceProcessor
    encode: SpmEncode
    ids: SpecialIds
    opts: DecodeConfig
    longest: int

    def search(self, sources: list[list[int]], n_best: int) -> list[list[Hypothesis]]:
        """The ``n_best`` best hypotheses of each non-empty source, in order."""
        with self.session.autocast():
            return translate_sentences_n_best(
                self.session.model, sources, self.opts, n_best=n_best, device=self.session.device, ids=self.ids
            )


def decode_options(files: RunFiles, beam: int | None, cpu_matmul: str | None = None) -> DecodeConfig:
    """The run's decode settings, ``beam`` overriding ``decode.beam_size`` and ``cpu_matmul``
    ``decode.cpu_matmul`` where given."""
    opts = settings.read(files.decode, DecodeConfig, "decode")
    given = {"beam_size": beam, "cpu_matmul": cpu_matmul}
    return dataclasses.replace(opts, **{key: value for key, value in given.items() if value is not None})


def make_decoder(files: RunFiles, session: InferenceSession, opts: DecodeConfig) -> Decoder:
    """The model of ``session`` (``files.checkpoint``) with its sentencepiece model and decode settings."""
    sp = load_processor(files.spm)
    ids = check_vocabulary(str(files.checkpoint), session.checkpoint.vocab, str(files.spm), sp)
    longest = longest_source(ModelConfig.from_dict(session.checkpoint.model_settings), opts)
    log.info(
        "%s on %s (%s), decoding with %s", files.checkpoint, session.device, session.precision, dataclasses.asdict(opts)
    )
    return Decoder(session, sp, SpmEncode(str(files.spm)), ids, opts, longest)


@dataclass(frozen=True)
class Source:
    """One input line, prepared: its number, the prepared text and ids, or why it is skipped."""

    number: int
    text: str = ""
    ids: tuple[int, ...] = ()
    skipped: str | None = None


def prepare_line(number: int, raw: bytes, decoder: Decoder, pipeline: TextPipeline) -> Source:
    """Decode, tokenize and encode one line; a line the model cannot take is skipped, saying why."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return Source(number, skipped=f"invalid UTF-8 ({error.reason} at byte {error.start})")
    prepared = pipeline.prepare(text)
    ids, unknown = piece_ids(decoder.encode([prepared])[0], decoder.sp)
    if unknown:
        log.warning("line %d: %d pieces not in the vocabulary, read as unk", number, unknown)
    if len(ids) > decoder.longest:
        return Source(
            number,
            skipped=f"{len(ids)} subwords, more than the {decoder.longest} decoded "
            "(decode.max_source_length; null: the model's max_positions)",
        )
    return Source(number, prepared, tuple(ids))


def search_within_memory(decoder: Decoder, sources: list[Source], n_best: int) -> dict[int, list[Hypothesis] | str]:
    """The hypotheses of each source by line number; a line that does not fit in memory even alone gets
    why (:class:`~aiayn.decode.beam.TooLong`), and the others are searched again without it."""
    try:
        return dict(zip((s.number for s in sources), decoder.search([list(s.ids) for s in sources], n_best)))
    except TooLong as error:
        too_long, why = sources[error.index], str(error)
    # out of the except block before searching again: the error's traceback holds the failed batch's tensors
    rest = [source for source in sources if source is not too_long]
    return {too_long.number: why, **(search_within_memory(decoder, rest, n_best) if rest else {})}


def decode_batch(
    batch: list[tuple[int, bytes]], decoder: Decoder, pipeline: TextPipeline, n_best: int
) -> list[tuple[int, list[tuple[float, str]] | None]]:
    """``(line number, [(score, output)] best first)`` per input line; ``[]`` for an empty source,
    None for a skipped line (a warning names it)."""
    sources = [prepare_line(number, raw, decoder, pipeline) for number, raw in batch]
    todo = [s for s in sources if s.ids and not s.skipped]
    found = search_within_memory(decoder, todo, n_best) if todo else {}
    results: list = []
    for source in sources:
        hyps = found.get(source.number, [])
        skipped = source.skipped or (hyps if isinstance(hyps, str) else None)
        if skipped:
            log.warning("line %d: %s; its output is empty", source.number, skipped)
            results.append((source.number, None))
            continue
        outputs = [(h.score, pipeline.finish(decoder.sp.decode(h.tokens), source.text)) for h in hyps]
        results.append((source.number, outputs))
    return results


def format_result(number: int, outputs: list[tuple[float, str]] | None, n_best: int, scores: bool) -> list[str]:
    """The output lines of one input line (see the module docstring)."""
    if n_best == 1:
        if not outputs:
            return [""]
        score, text = outputs[0]
        return [f"{score:.4f}\t{text}" if scores else text]
    return [
        f"{number}\t{rank}\t{score:.4f}\t{text}" if scores else f"{number}\t{rank}\t{text}"
        for rank, (score, text) in enumerate(outputs or [], start=1)
    ]


def add_arguments(parser: argparse.ArgumentParser, translation: bool) -> None:
    """The options aiayn-translate and aiayn-parse share (and, for translation, the tokenizer's)."""
    parser.add_argument("--run", help="a run directory, results/<task>/<experiment>: finds the files below")
    parser.add_argument("--last", action="store_true", help="the run's last checkpoint, not the averaged one")
    parser.add_argument("--checkpoint", help="a checkpoint (.pt); overrides the run's")
    parser.add_argument("--spm", help="the task's sentencepiece model; overrides the run's")
    add_settings(parser, "decode settings as JSON (a run's decode settings file)")
    if translation:
        parser.add_argument("--tokenize", help="the source side's data.tokenize settings as JSON")
        parser.add_argument("--source-lang", help="source language code (Moses tokenizer)")
        parser.add_argument("--target-lang", help="target language code (Moses detokenizer)")
    else:
        parser.add_argument(
            "--tokenized",
            action="store_true",
            help="the input is already split into treebank words (default: raw text)",
        )
    parser.add_argument("--input", help="one sentence a line (default: standard input)")
    parser.add_argument("--output", help="written atomically at the end (default: standard output, as it goes)")
    add_option(parser, "--beam", DecodeConfig, "beam_size")
    parser.add_argument("--n-best", type=int, default=1, help="hypotheses per input line (<= the beam size)")
    parser.add_argument("--scores", action="store_true", help="print each hypothesis's score log P / lp")
    add_option(parser, "--batch-size", DecodeConfig, "max_sentences")
    add_option(parser, "--cpu-matmul", DecodeConfig, "cpu_matmul")
    parser.add_argument("--device", default="auto", help="auto (a free GPU if there is one), cpu, cuda, cuda:1 ...")
    parser.add_argument("--threads", type=int, help="torch CPU threads")
    add_log(parser)


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse what cannot work before anything is loaded."""
    if args.run is None and (args.checkpoint is None or args.spm is None):
        parser.error("give --run DIR, or --checkpoint and --spm")
    check_options(parser, args, DecodeConfig)
    if args.n_best < 1 or (args.beam_size is not None and args.n_best > args.beam_size):
        parser.error(f"--n-best must be between 1 and the beam size, got {args.n_best}")


def run_files(args: argparse.Namespace, kind: str) -> RunFiles:
    """The files to decode with: the run's (``--run``), each overridden by an explicit path."""
    if args.run is not None:
        try:
            files = read_run(args.run, "last" if args.last else "avg")
        except ValueError as error:
            raise ValueError(f"{error}; or give --checkpoint, --spm and --settings") from None
        if files.kind != kind:
            raise ValueError(
                f"{args.run} is a {files.kind} run: use "
                f"{'aiayn-parse' if files.kind == 'parsing' else 'aiayn-translate'}"
            )
    else:
        files = RunFiles(kind, "words", "tree", Path(args.checkpoint), Path(args.spm), None, None)
    explicit = {
        "checkpoint": args.checkpoint,
        "spm": args.spm,
        "decode": args.settings,
        "tokenize": getattr(args, "tokenize", None),
    }
    files = dataclasses.replace(files, **{k: Path(v) for k, v in explicit.items() if v is not None})
    for key in ("source_lang", "target_lang"):
        files = dataclasses.replace(files, **{key: getattr(args, key, None) or getattr(files, key)})
    if kind == "translation" and args.run is None and not (args.source_lang and args.target_lang):
        raise ValueError(
            "without --run, give --source-lang and --target-lang (and --tokenize for the run's "
            "tokenizer settings; default: data.tokenize's defaults)"
        )
    return files


@contextmanager
def output_stream(path: str | None) -> Iterator[IO[str]]:
    """``path`` (atomically) or standard output as UTF-8 whatever the locale."""
    if path is not None:
        with atomic_output(path) as handle:
            yield handle
        return
    stdout = open(sys.stdout.fileno(), "w", encoding="utf-8", newline="\n", closefd=False)
    try:
        yield stdout
    finally:
        stdout.flush()


def decode_stream(args: argparse.Namespace, decoder: Decoder, pipeline: TextPipeline) -> tuple[int, int]:
    """Read, decode and write every batch of the input; returns (lines, lines skipped)."""
    lines = skipped = 0
    with ExitStack() as stack:
        source = stack.enter_context(open(args.input, "rb")) if args.input else sys.stdin.buffer
        out = stack.enter_context(output_stream(args.output))
        for batch in LineBatches(source.fileno(), args.max_sentences or decoder.opts.max_sentences):
            for number, outputs in decode_batch(batch, decoder, pipeline, args.n_best):
                out.writelines(line + "\n" for line in format_result(number, outputs, args.n_best, args.scores))
                skipped += outputs is None
            out.flush()
            lines += len(batch)
    return lines, skipped


def run(args: argparse.Namespace, kind: str, make_pipeline: Callable[[RunFiles], TextPipeline]) -> int:
    """Decode the input with the files ``args`` name: the body of aiayn-translate and aiayn-parse."""
    setup_logging(args.log)
    files = run_files(args, kind)
    pipeline = make_pipeline(files)
    opts = decode_options(files, args.beam_size, args.cpu_matmul)
    try:
        with inference_session(
            files.checkpoint,
            device=args.device,
            precision=opts.precision,
            threads=args.threads,
            cpu_matmul=opts.cpu_matmul,
        ) as session:
            decoder = make_decoder(files, session, opts)
            if args.n_best > decoder.opts.beam_size:
                raise ValueError(f"--n-best {args.n_best} is more than the beam size {decoder.opts.beam_size}")
            lines, skipped = decode_stream(args, decoder, pipeline)
    except KeyboardInterrupt:  # Ctrl-C ends an interactive session: what was answered stays answered
        log.info("interrupted")
        return 130
    log.info("%d lines, %d skipped (see the warnings above)", lines, skipped)
    return 0


def parse_args(
    argv: list[str] | None, prog: str = "aiayn-translate", doc: str = __doc__, translation: bool = True
) -> argparse.Namespace:
    """The command line of aiayn-translate (or, with ``translation=False``, aiayn-parse), checked; the
    help shows ``doc``: its first paragraph above the options, from its third on below them."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=doc.split("\n\n")[0],
        epilog=doc.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser, translation)
    args = parser.parse_args(argv)
    check_arguments(parser, args)
    return args


def main(argv: list[str] | None = None) -> int:
    return run(parse_args(argv), "translation", translation_pipeline)


if __name__ == "__main__":
    raise SystemExit(main())
