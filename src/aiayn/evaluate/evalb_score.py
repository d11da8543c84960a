"""EVALB's scoring, sentence by sentence, with EVALB's exact rules (Sekine and Collins, 1997).

A bracketed line is read into terminals ``(word, tag)`` and brackets ``[start, end)`` over word
positions. A preterminal whose tag is a ``DELETE_LABEL`` (``,`` ``.`` ``:`` quotes, ``-NONE-``)
takes its word out of the sentence: later words shift left, so spans never count it. A sentence is
an *error* (status 1) when the two lines have different word counts after deletion, different words,
or broken brackets; *skipped* (status 2) when the test line has no words; both stay out of the
totals. Otherwise brackets are compared after cutting labels at the first ``-`` or ``=`` and
dropping empty spans and deleted labels::

    recall = matched / gold brackets      precision = matched / test brackets
    F1 = 2 P R / (P + R)

matching each gold bracket to the first unmatched test bracket with the same span and an equal
label (``EQ_LABEL`` pairs are equal): a multiset match. Crossing = test brackets that cross at least
one gold bracket. Every error is reported as ``<line> : <message>``; when more than ``MAX_ERROR + 1``
errors have been reported, EVALB stops on the next one without printing totals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from aiayn.evaluate.evalb_params import SPACE, EvalbConfig

_TERMINATORS = SPACE + "()"


class EvalbStopped(Exception):
    """More errors than ``MAX_ERROR`` allows: EVALB exits at this point."""


@dataclass
class Parsed:
    """One line as EVALB reads it. ``length``: words not tagged ``DELETE_LABEL_FOR_LENGTH``."""

    terminals: list[list] = field(default_factory=list)  # [word, tag, result: 0 wrong tag, 1 right, 9 unscored]
    brackets: list[list] = field(default_factory=list)  # [start, end, label, result]
    length: int = 0
    quotes: list["Quote"] = field(default_factory=list)


@dataclass
class Quote:
    """A ``QUOTE_LABEL`` terminal (word ``'``, ``"`` or ``/``): where to put it back if the other side kept it.

    ``index``: terminals before it; ``bracket``: brackets opened before it; ``ends``: brackets open
    around it (their ends move right when it is re-inserted).
    """

    word: str
    label: str
    index: int
    bracket: int
    ends: list[int]


def _read_token(line: str, pos: int) -> tuple[str, int]:
    end = pos
    while end < len(line) and line[end] not in _TERMINATORS:
        end += 1
    return line[pos:end], end


def _char(line: str, pos: int) -> str:
    return line[pos] if pos < len(line) else "\0"


def _terminal(
    line: str,
    pos: int,
    label: str,
    out: Parsed,
    params: EvalbConfig,
    error: Callable[[str], None],
    open_brackets: Callable[[], list[int]],
) -> int | None:
    """After ``(label`` at ``pos``: read ``word)`` as a terminal and return the position after it, or None.

    A deleted tag drops its word; any tag but ``DELETE_LABEL_FOR_LENGTH`` counts toward the length.
    A word followed by anything but ``)`` or ``(`` is EVALB's "More than two elements" error.
    """
    if pos >= len(line) or line[pos] not in SPACE:
        return None
    q = pos + 1
    while q < len(line) and line[q] in SPACE:
        q += 1
    word, q = _read_token(line, q)
    if _char(line, q) == ")":
        if label not in params.delete_labels_for_length:
            out.length += 1
        if label in params.quote_labels and word in ("'", '"', "/"):
            out.quotes.append(Quote(word, label, len(out.terminals), len(out.brackets), open_brackets()))
        if label not in params.delete_labels:
            out.terminals.append([word, label, 9])
        return q + 1
    if _char(line, q) != "(":
        error("More than two elements in a bracket")
    return None


def scan(line: str, params: EvalbConfig, error: Callable[[str], None]) -> Parsed:
    """Read one bracketed line: terminals, brackets (end -1 while unclosed), and the gold length.

    Malformed input is reported through ``error`` exactly where EVALB reports it; a stray word
    outside a preterminal makes EVALB repeat "Reading sentence" until it stops.
    """
    out, stack, top, pos = Parsed(), {}, 0, 0
    while pos < len(line):
        char = line[pos]
        if char in SPACE:
            pos += 1
        elif char == "(":
            label, pos = _read_token(line, pos + 1)
            after = _terminal(
                line, pos, label, out, params, error, lambda: [stack[k] for k in range(top) if k in stack]
            )
            if after is not None:
                pos = after
                continue
            out.brackets.append([len(out.terminals), -1, label, 9])
            stack[top] = len(out.brackets) - 1
            top += 1
        elif char == ")":
            item = stack.get(top - 1)
            if top < 0:
                error("Bracketing unbalance (too many close bracket)")
            top -= 1
            if item is not None:
                out.brackets[item][1] = len(out.terminals)
            pos += 1
        else:
            while True:
                error("Reading sentence")
    if top != 0:
        error("Bracketing is unbalanced (too many open bracket)")
    return out


def _reinsert(quote: Quote, parsed: Parsed) -> None:
    """Put a deleted quote terminal back: later brackets shift right, enclosing ones grow by one."""
    parsed.terminals.insert(quote.index, [quote.word, quote.label, 9])
    for bracket in parsed.brackets[quote.bracket :]:
        bracket[0] += 1
        bracket[1] += 1
    for k in quote.ends:
        parsed.brackets[k][1] += 1


def fix_quotes(gold: Parsed, test: Parsed, params: EvalbConfig) -> None:
    """EVALB's ``QUOTE_LABEL`` rule, tried when the lengths differ.

    A quote word at the same position on both sides with different tags, deleted on one side only
    (``(POS ')`` against ``('' ')``), is put back on the side that deleted it.
    """
    for i, test_quote in enumerate(test.quotes):
        index = test_quote.index
        for j, gold_quote in enumerate(gold.quotes):
            if gold_quote.index != index or gold_quote.label == test_quote.label:
                continue
            gold_deleted = gold_quote.label in params.delete_labels
            test_deleted = test_quote.label in params.delete_labels
            if gold_deleted and not test_deleted:
                _reinsert(gold_quote, gold)
                for later in gold.quotes[j:]:
                    later.index += 1
            elif test_deleted and not gold_deleted:
                _reinsert(test_quote, test)
                for later in test.quotes[i:]:
                    later.index += 1


def label_equal(a: str, b: str, params: EvalbConfig) -> bool:
    return a == b or (a, b) in params.eq_labels or (b, a) in params.eq_labels


def word_equal(a: str, b: str, params: EvalbConfig) -> bool:
    return a == b or (a, b) in params.eq_words or (b, a) in params.eq_words


def modify_label(label: str) -> str:
    """EVALB cuts every bracket label at its first ``-`` or ``=`` (``NP-SBJ=2`` -> ``NP``, ``-NONE-`` -> ``''``)."""
    for i, char in enumerate(label):
        if char in "-=":
            return label[:i]
    return label


def massage(parsed: Parsed, params: EvalbConfig) -> int:
    """Mark empty spans and deleted labels (result 5), others 0; return the brackets that count."""
    for bracket in parsed.brackets:
        bracket[3] = 0
        if bracket[0] == bracket[1]:
            bracket[3] = 5
            continue
        bracket[2] = modify_label(bracket[2])
        if any(label_equal(bracket[2], d, params) for d in params.delete_labels):
            bracket[3] = 5
    return sum(b[3] != 5 for b in parsed.brackets)


def match_brackets(gold: Parsed, test: Parsed, params: EvalbConfig) -> int:
    """Multiset matching: each gold bracket takes the first unmatched test bracket with its span and label."""
    matched = 0
    for g in gold.brackets:
        if g[3] == 5:
            continue
        for t in test.brackets:
            if t[3] == 0 and g[0] == t[0] and g[1] == t[1] and (params.labeled == 0 or label_equal(g[2], t[2], params)):
                g[3] = t[3] = 1
                matched += 1
                break
    return matched


def count_crossing(gold: Parsed, test: Parsed) -> int:
    """Test brackets crossing at least one gold bracket (neither deleted)."""
    crossing = 0
    for t in test.brackets:
        if t[3] == 5:
            continue
        for g in gold.brackets:
            if g[3] != 5 and ((g[0] < t[0] < g[1] < t[1]) or (t[0] < g[0] < t[1] < g[1])):
                crossing += 1
                break
    return crossing


@dataclass
class Row:
    """One sentence's line of EVALB's table (status 0 ok, 1 error, 2 skipped)."""

    line: int
    length: int
    status: int
    match: int = 0
    gold: int = 0
    test: int = 0
    crossing: int = 0
    words: int = 0
    correct_tags: int = 0
    debug: str = ""


@dataclass
class Outcome:
    """Every row in order, EVALB's stderr lines, and whether it stopped at ``MAX_ERROR``."""

    rows: list[Row] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    stopped: bool = False


class _Errors:
    """EVALB's error counter: report ``<line> : <message>``; stop once more than MAX_ERROR + 1 came."""

    def __init__(self, params: EvalbConfig, messages: list[str]):
        self.params, self.messages = params, messages
        self.count, self.line, self.status = 0, 0, 0

    def __call__(self, message: str) -> None:
        self.status = 1
        self.messages.append(f"{self.line} : {message}")
        self.count += 1
        if self.count - 1 > self.params.max_error:
            raise EvalbStopped(message)


def score_sentence(gold_line: str, test_line: str, params: EvalbConfig, errors: _Errors) -> Row:
    """Score one sentence pair; with ``DEBUG`` 1 the row carries EVALB's dump of both sides."""
    errors.status = 0
    gold = scan(gold_line, params, errors)
    test = scan(test_line, params, errors)
    row = _score(gold, test, params, errors)
    if params.debug >= 1:
        row.debug = debug_dump(gold, test)
    return row


def debug_dump(gold: Parsed, test: Parsed) -> str:
    """EVALB's ``DEBUG 1`` listing: terminals, then brackets, gold left and test right."""
    lines = [
        f"-<1>---(wn1={len(gold.terminals):3d}, bn1={len(gold.brackets):3d})-           "
        f"-<2>---(wn2={len(test.terminals):3d}, bn2={len(test.brackets):3d})-\n"
    ]
    for i in range(max(len(gold.terminals), len(test.terminals))):
        left, right = (side[i] if i < len(side) and side[i][0] else None for side in (gold.terminals, test.terminals))
        lines.append(f"{i:3d} : {left[2]:d} : {left[1]:<6s}  {left[0]:<16s}      " if left else " " * 40)
        lines.append(f"{i:3d} : {right[2]:d} : {right[1]:<6s}  {right[0]:<16s}\n" if right else "\n")
    lines.append("\n")
    for i in range(max(len(gold.brackets), len(test.brackets))):
        left, right = (side[i] if i < len(side) else None for side in (gold.brackets, test.brackets))
        lines.append(f"{i:3d} : {left[3]:d} : {left[0]:3d}  {left[1]:3d}  {left[2]:<6s}      " if left else " " * 32)
        lines.append(f"{i:3d} : {right[3]:d} : {right[0]:3d}  {right[1]:3d}  {right[2]:<6s}\n" if right else "\n")
    return "".join(lines) + "\n========\n"


def _score(gold: Parsed, test: Parsed, params: EvalbConfig, errors: _Errors) -> Row:
    """EVALB's checks in EVALB's order (skip, length, words), then brackets, crossing and tags."""
    if not test.terminals:
        errors.status = 2
        return Row(errors.line, gold.length, 2)
    if len(gold.terminals) != len(test.terminals):
        fix_quotes(gold, test, params)
    if len(gold.terminals) != len(test.terminals):
        errors(f"Length unmatch ({len(gold.terminals)}|{len(test.terminals)})")
        return Row(errors.line, gold.length, errors.status)
    for (gold_word, *_), (test_word, *_) in zip(gold.terminals, test.terminals):
        if not word_equal(gold_word, test_word, params):
            errors(f"Words unmatch ({gold_word}|{test_word})")
            return Row(errors.line, gold.length, errors.status)
    n_gold, n_test = massage(gold, params), massage(test, params)
    match = match_brackets(gold, test, params)
    crossing = count_crossing(gold, test)
    for g, t in zip(gold.terminals, test.terminals):
        g[2] = t[2] = int(label_equal(g[1], t[1], params))
    tags = sum(g[2] for g in gold.terminals)
    return Row(errors.line, gold.length, errors.status, match, n_gold, n_test, crossing, len(gold.terminals), tags)


def evaluate_lines(gold_lines: list[str], test_lines: list[str], params: EvalbConfig) -> Outcome:
    """EVALB over two files' lines (each with its newline, as ``fgets`` reads them)."""
    outcome = Outcome()
    errors = _Errors(params, outcome.messages)
    try:
        errors.line = 1
        for errors.line, gold_line in enumerate(gold_lines, start=1):
            if errors.line > len(test_lines):
                errors("Number of lines unmatch (too many lines in gold file)")
                break
            outcome.rows.append(score_sentence(gold_line, test_lines[errors.line - 1], params, errors))
        else:
            errors.line = len(gold_lines) + 1
            if len(test_lines) > len(gold_lines):
                errors("Number of lines unmatch (too many lines in test file)")
    except EvalbStopped:
        outcome.stopped = True
    return outcome
