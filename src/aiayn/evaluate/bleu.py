"""BLEU two ways: detokenized sacreBLEU and the paper's tokenized, compound-split BLEU (section 6.1).

The paper's EN-DE numbers come from tensor2tensor's ``utils/get_ende_bleu.sh`` as it stood in 2017
(tensorflow/tensor2tensor, every version from 75f398d8 of 2017-06-29 to e1bde977 of 2017-11-08:
tokenizer.perl on the hypothesis, the ``##AT##`` compound split on both sides, multi-bleu.perl; no
Unicode step, which arrived in fc9335c0 of 2018-04-05, v1.5.6) run against a newstest2014 reference
whose Unicode quotes had been straightened by hand (tensor2tensor issue #317, martinpopel,
2018-04-12: "convert all unicode quotes including „ to \"", which ``tokenizer.perl`` then escapes as
``&quot;``). The paper method here is that procedure, step by step, on hypothesis and reference alike:

1. straighten the double quotation marks „ “ ” « » to ASCII ``"`` (:data:`DOUBLE_QUOTES`). Single
   quotes ‚ ‘ ’ ‹ › are left as they are, our reading of "all unicode quotes": the target named is
   the double quote, ’ is also the apostrophe, and in the EN-DE reference the 7 single quotes (5 ‘,
   one ‹ ›) are one token each either way, so the choice moves at most 7 of its 64,496 tokens;
2. Moses ``tokenizer.perl -l <lang>`` (no ``-a``: no aggressive hyphen splitting; default escaping,
   so ``"`` becomes ``&quot;``, ``&`` becomes ``&amp;`` and so on), run once;
3. ``perl -ple 's{(\\S)-(\\S)}{$1 ##AT##-##AT## $2}g'`` (compound splitting, one left-to-right pass);
4. ``multi-bleu.perl``: case-sensitive, n-grams up to 4, brevity penalty, no smoothing.

sacreBLEU scores the detokenized hypothesis against the untouched reference (its ``13a`` tokenizer,
signature reported). On the same output the paper method runs about 0.7 to 1.5 points higher on
EN-DE. The quotes alone weigh that much: the newstest2014 reference with its quotes straightened,
scored as a hypothesis, gets 100 by the paper method and 96.95 by sacreBLEU.

Deviation from paper: the tweak is documented for the EN-DE reference only; here it also applies to
the hypothesis by default (``bleu.straighten_quotes: both``) and to every target language (EN-FR's
« » included), so that a model trained on targets that keep „ “ « » (``data.tokenize``) is not
charged for writing the reference's own quotes: the raw newstest2014 reference scored as a
hypothesis gets 100 this way and 97.79 with the reference straightened alone (EN-FR: 98.29;
``tests/test_bleu.py``). ``bleu.straighten_quotes: reference`` straightens the reference only, as
the paper; ``none`` is ``get_ende_bleu.sh`` on the raw reference. (From fc9335c0, 2018, the script
also passes the hypothesis through Moses ``replace-unicode-punctuation.perl``; the 2017 script, which
scored the paper, does not. Its last line in 2017 reads ``$decodes_file.tok.atat``, a file it never
writes: the line before writes ``$decodes_file.atat`` (e1bde977); 7d1c9ea3 of 2018-04-05 changed that
line to write ``$decodes_file.tok.atat``, the file the last line reads, which stayed as it was.)

CLI: ``aiayn-bleu --hyp FILE --ref FILE --lang L [--settings F.json] [--straighten-quotes MODE]
[--output F.json] [--log F]`` prints one JSON object (``--settings``: the ``bleu`` section,
:class:`BleuConfig`; ``--straighten-quotes`` overrides its mode by hand); ``paper_bleu_method`` names
the procedure and ``quotes_straightened`` counts the characters it changed on each side.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import re
import sys
from collections import Counter
from dataclasses import dataclass

import sacrebleu
from sacremoses import MosesTokenizer

from aiayn import settings
from aiayn.cli import add_log, add_option, add_settings, overridden
from aiayn.data.lines import read_lines
from aiayn.io import write_json
from aiayn.options import BleuConfig
from aiayn.options.evaluate import STRAIGHTEN_MODES

log = logging.getLogger(__name__)

MAX_ORDER = 4
# The double quotation marks straightened to ASCII '"' before tokenization (step 1 above).
DOUBLE_QUOTES = "\u201e\u201c\u201d\u00ab\u00bb"  # „ “ ” « »
_STRAIGHTEN = str.maketrans({quote: '"' for quote in DOUBLE_QUOTES})
# Perl reads bytes: its \s is ASCII whitespace only, every other byte (UTF-8 included) is \S.
_COMPOUND = re.compile(r"(\S)-(\S)", flags=re.ASCII)
_PERL_SPACE = re.compile(r"[ \t\n\r\f\v]+")


def straighten_quotes(lines: list[str]) -> tuple[list[str], int]:
    """Every double quotation mark of :data:`DOUBLE_QUOTES` as ASCII ``"``; returns (lines, marks changed)."""
    changed = sum(line.count(quote) for line in lines for quote in DOUBLE_QUOTES)
    return [line.translate(_STRAIGHTEN) for line in lines], changed


def split_compounds(line: str) -> str:
    """Rewrite every ``a-b`` as ``a ##AT##-##AT## b`` exactly as Perl's ``s{(\\S)-(\\S)}{...}g``.

    Matches never overlap and the scan resumes after the consumed right character, so ``a-b-c``
    becomes ``a ##AT##-##AT## b-c`` (the ``b`` cannot start a second match), as in tensor2tensor.
    """
    return _COMPOUND.sub(r"\1 ##AT##-##AT## \2", line)


def perl_split(line: str) -> list[str]:
    """Perl's ``split`` with no pattern: fields between runs of ASCII whitespace, none empty."""
    return [token for token in _PERL_SPACE.split(line) if token]


def moses_tokenize(lines: list[str], lang: str) -> list[str]:
    """Moses ``tokenizer.perl -l lang``: no aggressive hyphen splitting, default escaping."""
    tokenizer = MosesTokenizer(lang=lang)
    return [tokenizer.tokenize(line, aggressive_dash_splits=False, return_str=True, escape=True) for line in lines]


def paper_tokenize(lines: list[str], lang: str) -> list[list[str]]:
    """The paper's tokens: Moses tokenization, then compound splitting, then Perl's ``split``."""
    return [perl_split(split_compounds(line)) for line in moses_tokenize(lines, lang)]


@dataclass(frozen=True)
class MultiBleu:
    """multi-bleu.perl's result; ``bleu`` on the 0-100 scale."""

    bleu: float
    precisions: tuple[float, ...]
    brevity_penalty: float
    hyp_len: int
    ref_len: int


def _ngrams(tokens: list[str], n: int) -> Counter:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def multi_bleu(hyps: list[list[str]], refs: list[list[str]]) -> MultiBleu:
    """Corpus BLEU with multi-bleu.perl semantics (one reference per line).

    BLEU = BP * exp(sum_n log p_n / 4), p_n = sum clipped n-gram matches / sum hypothesis n-grams,
    BP = exp(1 - r/c) if c < r else 1 (c, r: corpus hypothesis and reference lengths). No smoothing:
    any p_n = 0 gives BLEU 0; an empty hypothesis corpus gives 0.

    sacreBLEU with ``tokenize="none"`` and no smoothing computes the same on the same tokens (to 1e-13
    on random corpora), but it splits lines on every Unicode space where multi-bleu.perl splits on ASCII
    ones: ``b\u00a0c`` is one token here and two there (``tests/test_bleu.py``). Hence this function.
    """
    correct, total = [0] * MAX_ORDER, [0] * MAX_ORDER
    for hyp, ref in zip(hyps, refs, strict=True):
        for n in range(1, MAX_ORDER + 1):
            hyp_counts, ref_counts = _ngrams(hyp, n), _ngrams(ref, n)
            total[n - 1] += sum(hyp_counts.values())
            correct[n - 1] += sum(min(count, ref_counts[gram]) for gram, count in hyp_counts.items())
    hyp_len, ref_len = sum(map(len, hyps)), sum(map(len, refs))
    precisions = tuple(c / t if t else 0.0 for c, t in zip(correct, total))
    if hyp_len == 0 or min(precisions) == 0.0:
        brevity = 0.0 if hyp_len == 0 else _brevity(hyp_len, ref_len)
        return MultiBleu(0.0, precisions, brevity, hyp_len, ref_len)
    brevity = _brevity(hyp_len, ref_len)
    bleu = brevity * math.exp(sum(math.log(p) for p in precisions) / MAX_ORDER)
    return MultiBleu(100.0 * bleu, precisions, brevity, hyp_len, ref_len)


def _brevity(hyp_len: int, ref_len: int) -> float:
    return math.exp(1.0 - ref_len / hyp_len) if hyp_len < ref_len else 1.0


def paper_method(straighten: str) -> str:
    """One line naming the paper-method procedure, for the JSON output and the tables' footnotes."""
    sides = {"both": "hypothesis and reference", "reference": "the reference", "none": None}[straighten]
    quotes = (
        f'double quotes {DOUBLE_QUOTES} straightened to " in {sides} (tensor2tensor issue #317), '
        if sides
        else "quotes as they are, "
    )
    return (
        quotes + "Moses tokenizer.perl (escaped), a-b split as a ##AT##-##AT## b, multi-bleu.perl "
        "(tensor2tensor get_ende_bleu.sh)"
    )


def score(hyp_lines: list[str], ref_lines: list[str], lang: str, straighten: str = "both") -> dict:
    """Both BLEUs of detokenized ``hyp_lines`` against ``ref_lines`` (same length, one per line).

    sacreBLEU sees the lines as they are; the paper method first straightens double quotes on the
    sides ``straighten`` names (``both``, ``reference`` or ``none``), see the module docstring.
    """
    if straighten not in STRAIGHTEN_MODES:
        raise ValueError(f"straighten must be one of {STRAIGHTEN_MODES}, got {straighten!r}")
    metric = sacrebleu.metrics.BLEU(tokenize="13a")
    sacre = metric.corpus_score(hyp_lines, [ref_lines])
    paper_hyps, hyp_changed = straighten_quotes(hyp_lines) if straighten == "both" else (hyp_lines, 0)
    paper_refs, ref_changed = straighten_quotes(ref_lines) if straighten != "none" else (ref_lines, 0)
    paper = multi_bleu(paper_tokenize(paper_hyps, lang), paper_tokenize(paper_refs, lang))
    return {
        "sacrebleu": sacre.score,
        "sacrebleu_signature": str(metric.get_signature()),
        "paper_bleu": paper.bleu,
        "paper_bleu_method": paper_method(straighten),
        "quotes_straightened": {"hypothesis": hyp_changed, "reference": ref_changed},
        "paper_precisions": [100.0 * p for p in paper.precisions],
        "paper_brevity_penalty": paper.brevity_penalty,
        "sys_len": sacre.sys_len,
        "ref_len_13a": sacre.ref_len,
        "sys_len_paper": paper.hyp_len,
        "ref_len_paper": paper.ref_len,
        "lines": len(hyp_lines),
        "empty_hypotheses": sum(1 for line in hyp_lines if not line.strip()),
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="aiayn-bleu", description=__doc__.split("\n\n")[0])
    parser.add_argument("--hyp", required=True, help="detokenized hypotheses, one per line")
    parser.add_argument("--ref", required=True, help="detokenized references, one per line")
    parser.add_argument("--lang", required=True, help="target language code for the Moses tokenizer")
    add_settings(parser, "the bleu section as JSON (default: straighten_quotes both)")
    add_option(parser, "--straighten-quotes", BleuConfig, "straighten_quotes")
    parser.add_argument("--output", help="also write the JSON object here (atomically)")
    add_log(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    straighten = overridden(settings.start(args, BleuConfig, "bleu"), args).straighten_quotes
    hyp_lines, ref_lines = read_lines(args.hyp), read_lines(args.ref)
    if len(hyp_lines) != len(ref_lines):
        raise SystemExit(f"line counts differ: {args.hyp} has {len(hyp_lines)} lines, {args.ref} has {len(ref_lines)}")
    if not hyp_lines:
        raise SystemExit(f"{args.hyp} and {args.ref} are empty: no line to score")
    result = score(hyp_lines, ref_lines, args.lang, straighten) | {"hyp": args.hyp, "ref": args.ref}
    log.info(
        "%s vs %s: sacreBLEU %.2f (%s), paper BLEU %.2f (%s; %d hypothesis and %d reference quotes "
        "straightened), %d lines, %d of them empty hypotheses (a source over decode.max_source_length, "
        "or empty)",
        args.hyp,
        args.ref,
        result["sacrebleu"],
        result["sacrebleu_signature"],
        result["paper_bleu"],
        result["paper_bleu_method"],
        result["quotes_straightened"]["hypothesis"],
        result["quotes_straightened"]["reference"],
        result["lines"],
        result["empty_hypotheses"],
    )
    if args.output:
        write_json(args.output, result)
    json.dump(result, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
