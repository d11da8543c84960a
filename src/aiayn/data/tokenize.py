"""Moses tokenization (sacremoses), optionally after punctuation normalization and non-printing removal.

The paper (section 5.1) says only that EN-DE was encoded with byte-pair encoding, a shared
source-target vocabulary of about 37000 tokens, and EN-FR with 32000 word-pieces. What its code
trained on:

- EN-DE: tensor2tensor's problem ``wmt_ende_bpe32k`` (tensorflow/tensor2tensor 2017,
  ``tensor2tensor/data_generators/problem_hparams.py`` at 414cee3e) reads ``vocab.bpe.32000`` from the
  data directory into a ``TokenTextEncoder`` shared by inputs and targets, over text BPE-encoded
  beforehand: ``ende_bpe_token_generator`` (``tensor2tensor/data_generators/wmt.py`` at b9f4754e)
  reads ``train.tok.clean.bpe.32000.{en,de}`` and ``newstest2013.tok.bpe.32000.*`` from
  ``wmt16_en_de.tar.gz``. Those are the outputs of google/seq2seq ``bin/data/wmt16_en_de.sh`` (commit
  d5bb7a1a): Europarl v7, CommonCrawl and News Commentary v11 (WMT16's); newstest sets from the sgm
  files; ``tokenizer.perl -q -l LANG -threads 8``; ``clean-corpus-n.perl ... 1 80`` (1 to 80 tokens a
  side and, without ``-ratio``, the script's default length ratio 9; :mod:`aiayn.data.clean`);
  subword-nmt ``learn_bpe.py -s 32000`` on the tokenized, cleaned German and English training text
  together (one shared BPE; :mod:`aiayn.data.bpe`).
- EN-FR: ``enfr_wordpiece_token_generator`` (the same ``wmt.py``) encodes the raw training text with
  tensor2tensor's own ``SubwordTextEncoder``: no Moses step, no cleaning. Its vocabulary
  (``get_or_generate_vocab``, ``generator_utils.py`` at b9f4754e) is built from the first lines, about
  350,000 characters, of each file of a fixed list, ``_DATA_FILE_URLS``: News Commentary v11 DE-EN,
  CommonCrawl and Europarl DE-EN and FR-EN, Giga FR-EN and UN FR-EN, English, German and French files
  alike (the budget is 700,000 for a path without "en", but every path there has one).
  Deviation from paper: EN-FR goes through the same Moses tokenization, cleaning and sentencepiece
  model as EN-DE; no key restores tensor2tensor's subword encoder.

For comparison, fairseq's ``examples/translation/prepare-wmt14en2de.sh`` (facebookresearch/fairseq at
v0.12.2) runs ``normalize-punctuation.perl``, ``remove-non-printing-char.perl`` and
``tokenizer.perl -a``, and cleans after BPE with ``-ratio 1.5 ... 1 250``.

The keys of ``config.yaml`` ``data.tokenize`` (:class:`TokenizeConfig`, read from ``--settings FILE``)
default to ``wmt16_en_de.sh``'s choices except where a measurement favours another
(``benchmarks/studies/preprocessing_effect.py``, ``benchmarks/RESULTS.md``: the newstest2014 sides through
tokenize, an 8k sentencepiece BPE learned on the shared training samples, and detokenize; sacreBLEU
against the raw text and pieces per sentence). Every setting gives the same round trip (DE target
99.79, FR 99.56 to 99.58); only escaping changes the length:

- ``normalize_punctuation`` (off, as the paper's data; a bool for both sides or ``{source: bool,
  target: bool}``, resolved per task and language by :func:`normalizes`): ``normalize-punctuation.perl``
  (unify quotes, dashes and spacing). Never for a target: the German and French newstest2014
  references use „ “ « », which normalized targets could never produce (their round trip loses 3.4 and
  2.0 sacreBLEU, ``benchmarks/studies/normalization_effect.py``). On a source it moves the piece count by at
  most 0.01 per sentence.
- ``remove_non_printing`` (off, as the paper's data): ``remove-non-printing-char.perl``: every
  character of Unicode category C (control, format, unassigned, private use) becomes a space.
- ``aggressive_dash_splits`` (off, as the paper's data): ``tokenizer.perl -a``: ``well-known`` becomes
  ``well @-@ known`` (0.5% fewer pieces on the DE target, no other difference); the detokenizer undoes it.
- ``escape`` (off): ``tokenizer.perl``'s default escaping turns ``& < > ' " [ ] |`` into ``&amp; &lt;
  &gt; &apos; &quot; &#91; &#93; &#124;``; the detokenizer (:mod:`aiayn.data.detokenize`, reading the
  same settings file) turns them back, so hypotheses come out as plain text either way.

  Deviation from paper: its data was escaped; here it is not, because the entities only lengthen
  sequences: with escaping the newstest2014 targets take 1.0% (DE) and 7.3% (FR, whose elided
  articles ``l'`` become ``l&apos;``) more pieces, the English sources 3.7-3.8%, for the same round trip.
  ``data.tokenize.escape: true`` restores the paper's escaped text.

Lines are processed in chunks of ``chunk_lines`` by ``--threads`` worker processes, output in input
order; memory does not grow with the input (see :func:`aiayn.data.lines.ordered_map`).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import time

import regex
from sacremoses import MosesPunctNormalizer, MosesTokenizer
from sacremoses.corpus import NonbreakingPrefixes

from aiayn import settings
from aiayn.cli import add_log, add_settings
from aiayn.data.lines import PART_HELP, DataError, map_file
from aiayn.io import log_resources
from aiayn.options import TokenizeConfig

log = logging.getLogger(__name__)

_NON_PRINTING = regex.compile(r"\p{C}")


def moses_languages() -> list[str]:
    """Language codes with Moses non-breaking prefixes in sacremoses (the languages it really supports)."""
    return sorted(set(NonbreakingPrefixes().available_langs.values()))


def check_language(lang: str) -> str:
    """Return ``lang`` or raise: sacremoses silently falls back to no prefixes for an unknown code."""
    known = moses_languages()
    if lang not in known:
        raise DataError(f"language {lang!r} is not supported by the Moses tokenizer (sacremoses); known: {known}")
    return lang


@dataclasses.dataclass
class MosesPipeline:
    """normalize-punctuation -> remove-non-printing-char -> tokenizer, on a list of lines.

    Picklable: the sacremoses objects are built lazily in whichever process runs the job.
    """

    lang: str
    normalize_punctuation: bool = False
    remove_non_printing: bool = False
    aggressive_dash_splits: bool = False
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
        return tokenizer.tokenize(
            text, aggressive_dash_splits=self.aggressive_dash_splits, escape=self.escape, return_str=True
        ).strip()

    def __call__(self, lines: list[str]) -> list[str]:
        return [self.line(text) for text in lines]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m aiayn.data.tokenize", description=__doc__.split("\n")[0])
    parser.add_argument("--lang", required=True, help="language code (en, de, fr, ...)")
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--threads", type=int, default=1, help="worker processes")
    parser.add_argument("--part", metavar="I-N", help=PART_HELP)
    add_settings(parser, "data.tokenize as JSON (default: the steps above as listed)")
    add_log(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    opts = settings.start(args, TokenizeConfig, "data.tokenize")
    steps = {key: value for key, value in dataclasses.asdict(opts).items() if key != "chunk_lines"}
    pipeline = MosesPipeline(lang=args.lang, **steps)
    log.info("tokenize %s -> %s: %s, %d process(es)", args.input, args.output, pipeline, args.threads)
    start = time.perf_counter()
    count = map_file(pipeline, args.input, args.output, args.threads, opts.chunk_lines, args.part)
    seconds = time.perf_counter() - start
    log.info("%d lines in %.1f s (%.0f lines/s)", count, seconds, count / max(seconds, 1e-9))
    log_resources()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
