"""EVALB parameter files (``COLLINS.prm`` and friends), read the way EVALB reads them.

One setting per line: a keyword, white space, a value. Lines starting with ``#`` and lines shorter
than three characters are ignored; trailing white space is dropped. Keywords: ``DEBUG``,
``MAX_ERROR``, ``CUTOFF_LEN``, ``LABELED`` (integers, read like C's ``atoi``), ``DELETE_LABEL``,
``DELETE_LABEL_FOR_LENGTH``, ``QUOTE_LABEL`` (the rest of the line is one label; repeatable), ``EQ_LABEL`` and
``EQ_WORD`` (two values: an equivalence pair; repeatable). EVALB's complaints (unknown keyword,
empty value, an equivalence without two values) go to ``messages``, which the CLI prints to stderr
as EVALB does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

SPACE = " \t\n\v\f\r"  # C isspace() in the C locale
_ATOI = re.compile(r"[ \t\n\v\f\r]*([+-]?\d+)")


def c_atoi(text: str) -> int:
    """C ``atoi``: leading white space, an optional sign, digits; 0 when there are none."""
    match = _ATOI.match(text)
    return int(match.group(1)) if match else 0


@dataclass
class EvalbConfig:
    """EVALB's settings; the defaults are EVALB's own when no parameter file is given."""

    debug: int = 0
    max_error: int = 10
    cutoff_len: int = 40
    labeled: int = 1
    delete_labels: list[str] = field(default_factory=list)
    delete_labels_for_length: list[str] = field(default_factory=list)
    eq_labels: list[tuple[str, str]] = field(default_factory=list)
    eq_words: list[tuple[str, str]] = field(default_factory=list)
    quote_labels: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)


def default_param_file() -> Path:
    """The packaged ``COLLINS.prm`` (the standard settings; used when ``-p`` is not given)."""
    return Path(str(resources.files("aiayn.resources").joinpath("COLLINS.prm")))


def read_params(path: str | Path, params: EvalbConfig | None = None) -> EvalbConfig:
    """Apply the parameter file ``path`` to ``params`` (EVALB's defaults when None) and return it."""
    params = params if params is not None else EvalbConfig()
    try:
        text = Path(path).read_bytes().decode("latin-1")
    except OSError as error:
        raise FileNotFoundError(f"Can't open parameter file ({path}): {error.strerror}") from None
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw[:1] + raw[1:].rstrip(SPACE)
        if line.startswith("#") or len(line) < 3:
            continue
        keyword = re.split(f"[{SPACE}]", line, maxsplit=1)[0]
        value = line[len(keyword) :].lstrip(SPACE)
        if not value:
            params.messages.append(f"Empty value in parameter file ({number})")
        _set_param(params, line, keyword, value)
    return params


def _set_param(params: EvalbConfig, line: str, keyword: str, value: str) -> None:
    integers = {"DEBUG": "debug", "MAX_ERROR": "max_error", "CUTOFF_LEN": "cutoff_len", "LABELED": "labeled"}
    if keyword in integers:
        setattr(params, integers[keyword], c_atoi(value))
    elif keyword == "DELETE_LABEL":
        params.delete_labels.append(value)
    elif keyword == "DELETE_LABEL_FOR_LENGTH":
        params.delete_labels_for_length.append(value)
    elif keyword in ("EQ_LABEL", "EQ_WORD"):
        pair = value.split()
        if len(pair) != 2:
            params.messages.append(f"{keyword} requires two values")
            return
        (params.eq_labels if keyword == "EQ_LABEL" else params.eq_words).append((pair[0], pair[1]))
    elif keyword == "QUOTE_LABEL":
        params.quote_labels.append(value)
    else:
        params.messages.append(f"Unknown keyword ({line}) in parameter file")
