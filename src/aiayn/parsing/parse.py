"""aiayn-parse: parse sentences with a trained parser into Penn Treebank trees, each as soon as it arrives.

    aiayn-parse --run results/demo/wsj/parser [--input F] [--output F] [--beam K] [--n-best N]
        [--scores] [--last] [--device auto|cpu|cuda|cuda:N] [--batch-size B] [--threads T] [--log F]
    aiayn-parse --checkpoint C --spm M --settings decode.json ...

Input: one sentence a line, its words separated by spaces and tokenized as the treebank is (the
parser was trained on the treebank's words, which the workflow feeds it as they are: ``don't`` is
``do n't``, a period its own word); a ``(`` or ``)`` becomes the treebank's ``-LRB-`` or ``-RRB-``.
Each line goes through exactly the workflow's stages: the bpe_encode rule's sentencepiece pieces,
the translate rule's beam search with the run's decode settings, and the trees rule's repair
(:func:`aiayn.parsing.repair.repair`: whatever the model writes becomes a ``TOP``-rooted tree over
exactly the input words). Output: one tree a line in Penn Treebank bracketing. The leaves' tags are
the model's (``XX`` under the paper's ``xx`` linearization, the predicted tags under ``pos``); the
workflow's ``<split>-avg.trees`` carry the gold tags instead for EVALB, and are otherwise the same.

Options, batching, ``--scores`` and ``--n-best`` formats, and the defined outputs for bad input are
aiayn-translate's (:mod:`aiayn.decode.interactive`): an empty line gives an empty output line; a line
of invalid UTF-8 or longer than the model's learned positions allow gives an empty output line and a
warning on standard error naming its line number (with ``--n-best``: no output lines).
"""

from __future__ import annotations

from aiayn.decode.interactive import TextPipeline, parse_args, run
from aiayn.decode.manifest import RunFiles
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


def parsing_pipeline(files: RunFiles) -> TextPipeline:
    """Treebank words in, repaired trees out (the parser needs no file beyond the model's)."""
    return TextPipeline(treebank_words, tree_of)


def main(argv: list[str] | None = None) -> int:
    return run(parse_args(argv, "aiayn-parse", __doc__, translation=False), "parsing", parsing_pipeline)


if __name__ == "__main__":
    raise SystemExit(main())
