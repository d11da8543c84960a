"""aiayn-parse: parse sentences with a trained parser into Penn Treebank trees, each as soon as it arrives.

    aiayn-parse --run results/demo/wsj/parser [--input F] [--output F] [--tokenized] [--beam K] [--n-best N]
        [--scores] [--last] [--device auto|cpu|cuda|cuda:N] [--batch-size B] [--threads T] [--log F]
    aiayn-parse --checkpoint C --spm M --settings decode.json ...

Input: one sentence of raw English text a line, split into words as the Penn Treebank splits them
(:func:`aiayn.parsing.ptb_tokenize.ptb_words`: ``don't`` is ``do n't``, a final period its own word,
``(`` is ``-LRB-``), since the parser was trained on the treebank's words; with ``--tokenized`` the
input is such words already, separated by spaces (as the workflow feeds its test words), and only
brackets are escaped. Each line goes through exactly the workflow's stages: the bpe_encode rule's
sentencepiece pieces, the translate rule's beam search with the run's decode settings, and the trees rule's repair
(:func:`aiayn.parsing.repair.repair`: whatever the model writes becomes a ``TOP``-rooted tree over
exactly the input words). Output: one tree a line in Penn Treebank bracketing. The leaves' tags are
the model's (``XX`` under the ``xx`` linearization, the predicted tags under ``pos`` and ``t2t``); the
workflow's ``<split>-avg.trees`` carry the gold tags instead for EVALB, and are otherwise the same.

Options, batching, ``--scores`` and ``--n-best`` formats, and the defined outputs for bad input are
aiayn-translate's (:mod:`aiayn.decode.translate_text`): an empty line gives an empty output line; a line
of invalid UTF-8 or longer than the model's learned positions allow gives an empty output line and a
warning on standard error naming its line number (with ``--n-best``: no output lines).
"""

from __future__ import annotations

from aiayn.decode.translate_text import TextPipeline, parse_args, run
from aiayn.parsing.ptb_tokenize import ptb_words
from aiayn.parsing.repair import repair

BRACKETS = {"(": "-LRB-", ")": "-RRB-"}


def treebank_words(line: str) -> str:
    """The words of a line, space separated, with brackets as the treebank writes them."""
    words = line.split()
    for bracket, escaped in BRACKETS.items():
        words = [word.replace(bracket, escaped) for word in words]
    return " ".join(words)


def tree_of(hypothesis: str, words: str) -> str:
    """The repaired one-line tree of a decoded linearization over ``words`` (as the trees rule, less
    the gold tags)."""
    tree, _ = repair(hypothesis.split(), words.split())
    return str(tree)


def raw_words(line: str) -> str:
    """The treebank words of a line of raw text, space separated."""
    return " ".join(ptb_words(line))


def parsing_pipeline(tokenized: bool) -> TextPipeline:
    """Raw text (or, ``tokenized``, treebank words) in, repaired trees out (the parser needs no file
    beyond the model's)."""
    return TextPipeline(treebank_words if tokenized else raw_words, tree_of)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv, "aiayn-parse", __doc__, translation=False)
    return run(args, "parsing", lambda files: parsing_pipeline(args.tokenized))


if __name__ == "__main__":
    raise SystemExit(main())
