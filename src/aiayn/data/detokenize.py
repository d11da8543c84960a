"""Moses detokenization (sacremoses ``MosesDetokenizer``) of decoded hypotheses, line for line.

Undoes :mod:`aiayn.data.tokenize`: joins tokens, re-attaches punctuation and quotes by the language's
rules and turns ``@-@`` back into ``-``. ``--settings FILE`` is the target language's ``data.tokenize``
(:class:`aiayn.options.TokenizeConfig`): when it escapes (``escape: true``, tokenizer.perl's
default), ``&amp; &apos; &quot; &lt; &gt; &#91; &#93; &#124;`` are turned back into characters, so
that the hypotheses come out as plain text for BLEU; when it does not, an ``&amp;`` in the text is the
text and stays. The line count is preserved: an empty hypothesis stays an empty line.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging

from sacremoses import MosesDetokenizer

from aiayn import settings
from aiayn.cli import add_log, add_settings
from aiayn.data.lines import map_file
from aiayn.data.tokenize import check_language
from aiayn.options import TokenizeConfig

log = logging.getLogger(__name__)


@dataclasses.dataclass
class MosesDetok:
    """Detokenize a list of space-separated token lines (picklable job for :func:`map_file`)."""

    lang: str
    unescape: bool = False

    def __post_init__(self) -> None:
        check_language(self.lang)
        self._detok = MosesDetokenizer(lang=self.lang)

    def line(self, text: str) -> str:
        return self._detok.detokenize(text.split(), return_str=True, unescape=self.unescape).strip()

    def __call__(self, lines: list[str]) -> list[str]:
        return [self.line(text) for text in lines]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aiayn.data.detokenize", description=__doc__.split("\n")[0])
    parser.add_argument("--lang", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    add_settings(
        parser, "the language's data.tokenize as JSON: unescape when it escapes (default: the TokenizeConfig defaults)"
    )
    add_log(parser)
    args = parser.parse_args(argv)
    unescape = settings.start(args, TokenizeConfig, "data.tokenize").escape
    count = map_file(MosesDetok(args.lang, unescape), args.input, args.output)
    log.info(
        "detokenized %d lines (entities %s): %s -> %s",
        count,
        "unescaped" if unescape else "kept",
        args.input,
        args.output,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
