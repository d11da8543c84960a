"""Surface details shared by the realizers: number formats, quotes, commas, capitals, spacing.

Realizers produce token lists; quotes are the markers :data:`OPEN_QUOTE` and :data:`CLOSE_QUOTE`
and French elided words end with an apostrophe ("l'"). :func:`detokenize` turns a token list into
the raw text a news corpus would hold.
"""

from __future__ import annotations

OPEN_QUOTE = "<q"
CLOSE_QUOTE = "q>"
_NO_SPACE_BEFORE = {",", ".", "?", ":", CLOSE_QUOTE}
_PUNCT = {",", ".", "?", ":"}


def format_number(value: float, lang: str) -> str:
    """Write ``value`` as a newspaper of ``lang`` would.

    English 1,200 and 3.5; German 1.200 and 3,5; French 1 200 and 3,5 (decimal comma). Integers
    below 1000 and years have no separator.
    """
    if value != int(value):
        text = f"{value:.1f}"
        return text if lang == "en" else text.replace(".", ",")
    digits = str(int(value))
    if len(digits) < 4:
        return digits
    groups = []
    while digits:
        groups.insert(0, digits[-3:])
        digits = digits[:-3]
    return {"en": ",", "de": ".", "fr": " "}[lang].join(groups)


def tidy(tokens: list[str]) -> list[str]:
    """Drop a comma that would stand before other punctuation (a relative clause closing a sentence)."""
    out: list[str] = []
    for i, token in enumerate(tokens):
        if token == ",":
            following = [t for t in tokens[i + 1:i + 3]]
            if following and (following[0] in _PUNCT or
                              (following[0] == CLOSE_QUOTE and len(following) > 1 and following[1] in _PUNCT)):
                continue
        out.append(token)
    return out


def capitalize_first(tokens: list[str]) -> list[str]:
    """Capitalize the sentence's first word and the first word of every quotation."""
    out = list(tokens)
    start = True
    for i, token in enumerate(out):
        if token == OPEN_QUOTE:
            start = True
        elif start and token not in _PUNCT:
            out[i] = token[:1].upper() + token[1:]
            start = False
    return out


def detokenize(tokens: list[str]) -> str:
    """Join tokens: no space before punctuation or a closing quote, none after "<q" or an apostrophe."""
    text = ""
    glue = True
    for token in tokens:
        if not glue and token not in _NO_SPACE_BEFORE:
            text += " "
        text += '"' if token in (OPEN_QUOTE, CLOSE_QUOTE) else token
        glue = token == OPEN_QUOTE or token.endswith("'")
    return text


def finish(tokens: list[str]) -> str:
    """The raw sentence of a realizer's tokens: tidy commas, capitalize, join."""
    return detokenize(capitalize_first(tidy(tokens)))
