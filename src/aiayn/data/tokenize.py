"""Moses punctuation normalization, non-printing character removal and tokenization (sacremoses).

The paper (section 5.1) gives no preprocessing beyond byte-pair / word-piece vocabularies; the
systems it compares with (tensor2tensor's WMT data, fairseq's ``prepare-wmt14en2de.sh``) run the Moses
scripts below, in this order, before subword segmentation. Each step is a key of ``config.yaml``
``data.tokenize`` (:class:`TokenizeConfig`, read from ``--settings FILE``):

- ``normalize_punctuation`` (per side: ``{source: true, target: false}``; the workflow resolves it
  to one bool per task and language, :func:`normalizes`): ``normalize-punctuation.perl``: unify quotes, dashes and spacing
  around punctuation, so that one symbol is not learned under five spellings. Measured on the real
  newstest sets (``benchmarks/normalization_effect.py``, ``benchmarks/RESULTS.md``): on the German and
  French newstest2014 references it rewrites 368 and 439 of 3003 lines (665 and 708 quotes: „ “ ” and
  « » become ``"``; 101 and 83 dashes), so a model trained on normalized targets cannot write the
  reference's quotes: the reference itself, normalized, tokenized and detokenized, scores sacreBLEU
  96.36 (DE) and 97.58 (FR) instead of 99.79 and 99.58 without normalization. On the English
  sources it only reorders quotes and punctuation (69 and 75 lines), and the source is never scored.
  (newstest2013, the dev set, is already normalized: 0 and 1 lines change, so it cannot show this.)
  So targets keep their punctuation, sources are normalized.

  Deviation from paper: tensor2tensor trained on raw text; the source side is Moses-normalized here
  (one spelling of each quote, dash and space for the encoder, the same in training and test input).
  ``data.tokenize.normalize_punctuation: false`` (or ``{source: false, target: false}``) restores
  the paper's raw text on both sides.
- ``remove_non_printing`` (on): ``remove-non-printing-char.perl``:
  every character of Unicode category C (control, format, unassigned, private use) becomes a space.
  Zero-width and control characters in CommonCrawl would otherwise become vocabulary entries.
- ``aggressive_dash_splits`` (on): ``tokenizer.perl -a``:
  ``well-known`` becomes ``well @-@ known``, as in fairseq's and tensor2tensor-era WMT14 data; the
  Moses detokenizer undoes it (:mod:`aiayn.data.detokenize`).
- ``escape`` (off): tokenizer.perl escapes ``&'"<>[]|`` as ``&amp;``,
  ``&apos;`` ... for the Moses decoder's XML input. Sentencepiece follows this step, and escapes
  would only spend vocabulary on entity pieces and make the detokenized output differ from the text.

Lines are processed in chunks of ``chunk_lines`` by ``--threads`` worker processes, output in input
order; memory does not grow with the input (see :func:`aiayn.data.lines.ordered_map`).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import time
from typing import Mapping

import regex
from sacremoses import MosesPunctNormalizer, MosesTokenizer
from sacremoses.corpus import NonbreakingPrefixes

from aiayn import settings
from aiayn.data.lines import DataError, map_file
from aiayn.io import atomic_output, setup_logging

log = logging.getLogger(__name__)

_NON_PRINTING = regex.compile(r"\p{C}")


SIDES = ("source", "target")


def normalizes(setting: bool | Mapping[str, bool], side: str) -> bool:
    """Whether ``data.tokenize.normalize_punctuation`` (a bool for both sides, or
    ``{source: bool, target: bool}``) normalizes the ``side`` (``source`` or ``target``) of a task."""
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, got {side!r}")
    if isinstance(setting, bool):
        return setting
    if not isinstance(setting, Mapping) or set(setting) != set(SIDES) or \
            not all(isinstance(v, bool) for v in setting.values()):
        raise DataError(f"data.tokenize.normalize_punctuation must be true, false or {{source: bool, target: bool}}, "
                        f"got {setting!r}")
    return setting[side]


def moses_languages() -> list[str]:
    """Language codes with Moses non-breaking prefixes in sacremoses (the languages it really supports)."""
    return sorted(set(NonbreakingPrefixes().available_langs.values()))


def check_language(lang: str) -> str:
    """Return ``lang`` or raise: sacremoses silently falls back to no prefixes for an unknown code."""
    known = moses_languages()
    if lang not in known:
        raise DataError(f"language {lang!r} is not supported by the Moses tokenizer (sacremoses); known: {known}")
    return lang


@dataclasses.dataclass(frozen=True)
class TokenizeConfig:
    """The keys of ``data.tokenize`` for one file: the steps above and the lines per work unit.

    ``normalize_punctuation`` is the file's side's value (``aiayn.config.settings_files`` resolves
    the per-side setting with :func:`normalizes`); run by hand without ``--settings``, it is on.
    """

    normalize_punctuation: bool = True
    remove_non_printing: bool = True
    aggressive_dash_splits: bool = True
    escape: bool = False
    chunk_lines: int = 20000


@dataclasses.dataclass
class MosesPipeline:
    """normalize-punctuation -> remove-non-printing-char -> tokenizer, on a list of lines.

    Picklable: the sacremoses objects are built lazily in whichever process runs the job.
    """

    lang: str
    normalize_punctuation: bool = True
    remove_non_printing: bool = True
    aggressive_dash_splits: bool = True
    escape: bool = False

    def __post_init__(self) -> None:
        check_language(self.lang)
        self._tools: tuple | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_tools": None}

    def _get_tools(self) -> tuple:
        if self._tools is None:
            self._tools = (MosesPunctNormalizer(lang=self.lang), MosesTokenizer(lang=self.lang))
        return self._tools

    def line(self, text: str) -> str:
        """One sentence in, its space-separated Moses tokens out (an empty line stays empty)."""
        normalizer, tokenizer = self._get_tools()
        if self.normalize_punctuation:
            text = normalizer.normalize(text)
        if self.remove_non_printing and not text.isprintable():  # isprintable: a C-speed pre-check
            text = _NON_PRINTING.sub(" ", text)
        return tokenizer.tokenize(text, aggressive_dash_splits=self.aggressive_dash_splits,
                                  escape=self.escape, return_str=True).strip()

    def __call__(self, lines: list[str]) -> list[str]:
        return [self.line(text) for text in lines]


def tokenize_file(pipeline: MosesPipeline, input_path: str, output_path: str,
                  threads: int = 1, chunk_lines: int = 20000) -> int:
    """Tokenize ``input_path`` into ``output_path`` (atomically), line for line; returns the line count."""
    with atomic_output(output_path) as out:
        return map_file(pipeline, input_path, out, processes=threads, chunk_lines=chunk_lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lang", required=True, help="language code (en, de, fr, ...)")
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--threads", type=int, default=1, help="worker processes")
    parser.add_argument("--settings", help="data.tokenize as JSON (default: the steps above as listed)")
    parser.add_argument("--log")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_logging(args.log)
    opts = settings.read(args.settings, TokenizeConfig, "data.tokenize")
    steps = {key: value for key, value in dataclasses.asdict(opts).items() if key != "chunk_lines"}
    pipeline = MosesPipeline(lang=args.lang, **steps)
    log.info("tokenize %s -> %s: %s, %d process(es)", args.input, args.output, pipeline, args.threads)
    start = time.perf_counter()
    count = tokenize_file(pipeline, args.input, args.output, args.threads, opts.chunk_lines)
    seconds = time.perf_counter() - start
    log.info("%d lines in %.1f s (%.0f lines/s)", count, seconds, count / max(seconds, 1e-9))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
