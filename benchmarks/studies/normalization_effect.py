"""What Moses punctuation normalization changes in real WMT test sets, and what it costs a target side.

For each file (the shared newstest2013/2014 sets, ``../shared/data/wmt/plain``) and its language:

1. which of ``normalize-punctuation.perl``'s rules fire, how often (sacremoses' rules, applied in order
   and counted one by one: ``re.subn``), and how many lines change;
2. the ceiling it puts on a target side: a perfect model trained on text tokenized by
   :class:`aiayn.data.tokenize.MosesPipeline` outputs exactly the tokenized reference; detokenized
   (:class:`aiayn.data.detokenize.MosesDetok`) and scored against the raw reference, it gets
   sacreBLEU and paper-method BLEU below 100 by whatever the round trip loses, with normalization on
   and off.

    PYTHONPATH=src python benchmarks/studies/normalization_effect.py [--files newstest2014-full.en-de.de ...]

Prints two tables; not a test. The figures are deterministic (no timing): they do not depend on load.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

from sacremoses import MosesPunctNormalizer

from aiayn.data.detokenize import MosesDetok
from aiayn.data.lines import read_lines
from aiayn.data.tokenize import MosesPipeline
from aiayn.evaluate import bleu

PLAIN = Path(__file__).resolve().parents[3] / "shared" / "data" / "wmt" / "plain"
FILES = (
    "newstest2014-full.en-de.en",
    "newstest2014-full.en-de.de",
    "newstest2014-full.en-fr.en",
    "newstest2014-full.en-fr.fr",
    "newstest2013.en",
    "newstest2013.de",
    "newstest2013.fr",
)
# sacremoses' rule lists, named by what they do; the normalizer applies them in this order.
GROUPS = {
    "EXTRA_WHITESPACE": "spacing",
    "NORMALIZE_UNICODE_IF_NOT_PENN": "quotes",
    "NORMALIZE_UNICODE": "quotes",
    "FRENCH_QUOTES": "quotes",
    "HANDLE_PSEUDO_SPACES": "non-breaking spaces",
    "EN_QUOTATION_FOLLOWED_BY_COMMA": "quote/punctuation order",
    "DE_ES_FR_QUOTATION_FOLLOWED_BY_COMMA": "quote/punctuation order",
    "DE_ES_CZ_CS_FR": "digit groups",
    "OTHER": "digit groups",
}
# NORMALIZE_UNICODE mixes kinds: its dash, spacing and ellipsis rules get their own names.
SPECIAL = {"–": "dashes", "—": "dashes", " +": "spacing", "…": "ellipsis"}


def rule_labels(normalizer: MosesPunctNormalizer) -> list[str]:
    """The label of each of ``normalizer.substitutions``, in order."""
    by_rule = {}
    for attr, label in GROUPS.items():
        for pattern, replacement in getattr(normalizer, attr):
            by_rule.setdefault((pattern, replacement), SPECIAL.get(pattern, label))
    return [by_rule[tuple(rule)] for rule in normalizer.substitutions]


def rule_counts(lines: list[str], lang: str) -> tuple[Counter, int]:
    """(substitutions made per rule group, lines changed) when normalizing ``lines``.

    Counts what the rules rewrite, the idempotent spacing ones included (``" +" -> " "`` matches every
    single space), so the spacing group counts matches, not changes; the other groups change text.
    """
    normalizer = MosesPunctNormalizer(lang=lang)
    labels, counts, changed = rule_labels(normalizer), Counter(), 0
    for line in lines:
        text = line
        for (pattern, replacement), label in zip(normalizer.substitutions, labels):
            text, n = re.subn(pattern, replacement, text)
            if label != "spacing":
                counts[label] += n
        changed += text.strip() != line.strip()
    return counts, changed


def ceiling(lines: list[str], lang: str, normalize: bool) -> dict:
    """Both BLEUs of the detokenized tokenization of ``lines`` against ``lines`` themselves (the other
    steps as ``RESULTS.md`` measured them: non-printing removal, ``-a``, no escaping)."""
    pipeline = MosesPipeline(
        lang, normalize_punctuation=normalize, remove_non_printing=True, aggressive_dash_splits=True, escape=False
    )
    round_trip = MosesDetok(lang)(pipeline(lines))
    result = bleu.score(round_trip, lines, lang)
    result["identical"] = sum(a == b for a, b in zip(round_trip, lines))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", nargs="+", default=list(FILES), help=f"file names under {PLAIN}")
    args = parser.parse_args(argv)
    rows = []
    for name in args.files:
        lines = read_lines(str(PLAIN / name))
        lang = name.rsplit(".", 1)[1]
        counts, changed = rule_counts(lines, lang)
        rows.append((name, lang, len(lines), changed, counts, ceiling(lines, lang, True), ceiling(lines, lang, False)))
    labels = sorted({label for row in rows for label in row[4]})
    print("| file | lines | lines changed | " + " | ".join(labels) + " |")
    print("|---|---:|---:|" + "---:|" * len(labels))
    for name, _, n, changed, counts, _, _ in rows:
        print(f"| {name} | {n} | {changed} | " + " | ".join(str(counts[label]) for label in labels) + " |")
    print("\nA perfect model's output (the reference tokenized, then detokenized) scored against the raw reference:\n")
    print(
        "| file | normalized: sacreBLEU | paper BLEU | identical lines | not normalized: sacreBLEU | paper BLEU "
        "| identical lines |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, _, _, _, _, on, off in rows:
        print(
            f"| {name} | {on['sacrebleu']:.2f} | {on['paper_bleu']:.2f} | {on['identical']} "
            f"| {off['sacrebleu']:.2f} | {off['paper_bleu']:.2f} | {off['identical']} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
