"""Filter tokenized parallel training corpora by length and length ratio (Moses ``clean-corpus-n.perl``).

Rules, applied in this order to each pair after collapsing whitespace (tokens = whitespace split):

1. ``empty``: either side has no token;
2. ``too_short``: either side has fewer than ``min_len`` tokens;
3. ``too_long``: either side has more than ``max_len`` tokens (``None``: no limit);
4. ``ratio``: ``max(n_src, n_tgt) / min(n_src, n_tgt) > max_ratio`` (``None``: no limit).

Kept pairs of every corpus are concatenated, in order, into ``OUT.<src>`` / ``OUT.<tgt>``; the counts
(read, kept, dropped per reason) of each corpus go to a JSON file and the log. A corpus that is empty,
or of which no pair survives, is an error naming it and the rule that removed its pairs (with its
``data.clean`` key): nothing is written, and BPE and training never see an empty corpus.

The defaults are those of the paper's EN-DE data: google/seq2seq ``bin/data/wmt16_en_de.sh`` (commit
d5bb7a1a; see :mod:`aiayn.data.tokenize`) runs ``clean-corpus-n.perl CORPUS de en OUT 1 80`` on the
Moses-tokenized text, which keeps 1 to 80 tokens a side and, without ``-ratio``, drops pairs whose
length ratio exceeds 9 (moses-smt/mosesdecoder ``scripts/training/clean-corpus-n.perl`` at 1f82a438
hard-codes 9 unless ``-ignore-ratio``; later versions keep 9 as ``-ratio``'s default). fairseq's
``prepare-wmt14en2de.sh`` (facebookresearch/fairseq at v0.12.2) instead keeps 1 to 250 BPE pieces with
``-ratio 1.5``: ``data.clean: {max_len: 250, max_ratio: 1.5}`` comes close (it counts Moses tokens).

Deviation from paper: clean-corpus-n.perl also drops pairs with a token longer than 1000 characters and
deletes ``|`` from unfactored text (the paper's escaped text had none); neither is done here and no
key does it.

``--settings FILE`` holds ``data.clean`` (the fields of :class:`CleanConfig`); without it, the defaults.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
from pathlib import Path
from typing import Iterable, Iterator

from aiayn import settings
from aiayn.cli import add_log, add_settings
from aiayn.data import parts
from aiayn.data.lines import PART_HELP, DataError, check_aligned, iter_lines
from aiayn.io import atomic_output, log_resources, read_json, write_json
from aiayn.options import CleanConfig

log = logging.getLogger(__name__)

REASONS = ("empty", "too_short", "too_long", "ratio")
# The config key behind each rule: what a user changes to keep the pairs a rule drops.
REASON_KEYS = {
    "empty": "an empty side, always dropped",
    "too_short": "data.clean.min_len",
    "too_long": "data.clean.max_len",
    "ratio": "data.clean.max_ratio",
}


def filter_pairs(
    pairs: Iterable[tuple[str, str]], rules: CleanConfig, counts: dict[str, int]
) -> Iterator[tuple[str, str]]:
    """Yield the kept pairs, whitespace-collapsed; ``counts`` gets read, kept and each drop reason."""
    for src, tgt in pairs:
        counts["read"] += 1
        src_tokens, tgt_tokens = src.split(), tgt.split()
        why = rules.reason(len(src_tokens), len(tgt_tokens))
        if why is None:
            counts["kept"] += 1
            yield " ".join(src_tokens), " ".join(tgt_tokens)
        else:
            counts[why] += 1


def new_counts() -> dict[str, int]:
    return {"read": 0, "kept": 0, **{reason: 0 for reason in REASONS}}


def clean_corpora(
    prefixes: list[str],
    src_lang: str,
    tgt_lang: str,
    out_prefix: str,
    rules: CleanConfig,
    part: str | None = None,
    part_dir: str | None = None,
) -> dict:
    """Filter every ``PREFIX.<src>``/``PREFIX.<tgt>`` pair into ``OUT.<src>``/``OUT.<tgt>``.

    All line counts are checked before anything is written. Returns the statistics dict. With ``part``
    (``I-N``: that range of every corpus, :func:`aiayn.data.lines.part_range`) each corpus's kept pairs go
    to ``part_dir/<its name>.<lang>`` instead, and a corpus part may lose every pair: :func:`gather`
    checks the whole corpora.
    """
    for prefix in prefixes:
        check_aligned([f"{prefix}.{src_lang}", f"{prefix}.{tgt_lang}"])
    stats = {"rules": dataclasses.asdict(rules), "corpora": {}, "total": new_counts()}
    outputs = [f"{part_dir}/{Path(p).name}" for p in prefixes] if part else [out_prefix] * len(prefixes)
    if part and len(set(outputs)) < len(outputs):
        raise DataError(f"--part: the corpora's names must differ (each part writes DIR/<name>): {prefixes}")
    with contextlib.ExitStack() as stack:
        files: dict[str, tuple] = {}
        for prefix, out in zip(prefixes, outputs):
            if out not in files:
                files[out] = tuple(stack.enter_context(atomic_output(f"{out}.{lang}")) for lang in (src_lang, tgt_lang))
            out_src, out_tgt = files[out]
            counts = new_counts()
            pairs = zip(iter_lines(f"{prefix}.{src_lang}", part=part), iter_lines(f"{prefix}.{tgt_lang}", part=part))
            for src, tgt in filter_pairs(pairs, rules, counts):
                out_src.write(src + "\n")
                out_tgt.write(tgt + "\n")
            _add(stats, prefix, counts)
            log.info("%s%s: %s", prefix, f" (part {part})" if part else "", _describe(counts))
        log.info("total: %s", _describe(stats["total"]))
        if not part:
            check_kept(stats["corpora"], src_lang, tgt_lang)
    return stats


def _add(stats: dict, prefix: str, counts: dict[str, int]) -> None:
    """Count a corpus's (or a corpus part's) pairs in ``stats``, per corpus and in total."""
    corpus = stats["corpora"].setdefault(prefix, new_counts())
    for key, value in counts.items():
        corpus[key] += value
        stats["total"][key] += value


def gather(
    prefixes: list[str], part_dirs: list[str], src_lang: str, tgt_lang: str, out_prefix: str, rules: CleanConfig
) -> dict:
    """The output of :func:`clean_corpora` over the whole corpora, from its parts in ``part_dirs`` (in
    order; each with its ``stats.json``): every corpus's parts one after the other, the counts added up."""
    stats = {"rules": dataclasses.asdict(rules), "corpora": {}, "total": new_counts()}
    for folder in part_dirs:
        for prefix, counts in read_json(Path(folder) / "stats.json")["corpora"].items():
            _add(stats, prefix, counts)
    check_kept(stats["corpora"], src_lang, tgt_lang)
    for lang in (src_lang, tgt_lang):
        parts.gather(
            [f"{folder}/{Path(p).name}.{lang}" for p in prefixes for folder in part_dirs], f"{out_prefix}.{lang}"
        )
    log.info("total: %s", _describe(stats["total"]))
    return stats


def check_kept(corpora: dict[str, dict[str, int]], src_lang: str, tgt_lang: str) -> None:
    """Raise :class:`DataError` (nothing is published) if a corpus is empty or loses every pair,
    naming the corpus and the rule (and its ``data.clean`` key) that dropped the most pairs."""
    problems = []
    for prefix, counts in corpora.items():
        if counts["read"] == 0:
            problems.append(f"{prefix}.{src_lang}/.{tgt_lang} are empty (check their extraction)")
        elif counts["kept"] == 0:
            worst = max(REASONS, key=lambda reason: counts[reason])
            problems.append(
                f"{prefix}: all {counts['read']} pairs were dropped, {counts[worst]} by the "
                f"{worst!r} rule ({REASON_KEYS[worst]}; {_describe(counts)})"
            )
    if problems:
        dropped = any(counts["read"] and not counts["kept"] for counts in corpora.values())
        advice = "Fix the corpus or loosen that data.clean setting (null: no limit)" if dropped else "Fix the corpus"
        raise DataError("no training pairs left after cleaning: " + "; ".join(problems) + f". {advice}")


def _describe(counts: dict[str, int]) -> str:
    dropped = ", ".join(f"{reason} {counts[reason]}" for reason in REASONS)
    return f"read {counts['read']}, kept {counts['kept']}, dropped: {dropped}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aiayn.data.clean", description=__doc__.split("\n")[0])
    parser.add_argument("--src-lang", required=True)
    parser.add_argument("--tgt-lang", required=True)
    parser.add_argument("--corpora", nargs="+", required=True, help="PREFIX: reads PREFIX.<src>, PREFIX.<tgt>")
    parser.add_argument("--out-prefix", help="writes OUT.<src>, OUT.<tgt> (the whole corpora, or --gather's)")
    parser.add_argument("--stats", required=True, help="JSON file of per-corpus counts")
    parser.add_argument("--part", metavar="I-N", help=PART_HELP + ": its outputs go to --part-dir")
    parser.add_argument(
        "--part-dir",
        help="with --part: writes DIR/<corpus name>.<src>, .<tgt> (and, for --gather, --stats DIR/stats.json)",
    )
    parser.add_argument(
        "--gather",
        nargs="+",
        metavar="DIR",
        help="every part's --part-dir, in order: their outputs and statistics make --out-prefix's and --stats",
    )
    add_settings(parser, "data.clean as JSON: min_len, max_len, max_ratio")
    add_log(parser)
    args = parser.parse_args(argv)
    if bool(args.part) != bool(args.part_dir) or (not args.part and not args.out_prefix):
        parser.error("give --out-prefix, or --part with --part-dir")
    rules = settings.start(args, CleanConfig, "data.clean")
    if args.gather:
        stats = gather(args.corpora, args.gather, args.src_lang, args.tgt_lang, args.out_prefix, rules)
    else:
        stats = clean_corpora(
            args.corpora, args.src_lang, args.tgt_lang, args.out_prefix, rules, args.part, args.part_dir
        )
    write_json(args.stats, stats)
    log_resources()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
