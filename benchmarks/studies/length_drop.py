"""How many training pairs ``train.max_length`` drops: the shared real training samples through the
workflow's preparation, counted against tensor2tensor's limits (256 subwords for base and big, 512 for
parsing; a side's length with its eos or bos, as the trainer counts it).

For each task's sample (``../shared/data/wmt/train_sample``: EN-DE ``onmt-wmt-ende-10k.tok.*``,
detokenized and unescaped first; EN-FR ``moses-nc-5k.fr-en.*``, raw text): Moses tokenization with the
``data.tokenize`` defaults, then either the ``data.clean`` defaults (1 to 80 tokens a side, ratio 9) or
no cleaning (tensor2tensor's EN-FR had none), a sentencepiece BPE of ``--vocab-size`` learned on the
sample's two sides, and the pairs whose longer side, plus one, exceeds each limit. A vocabulary learned
on 5,000 to 10,000 pairs cuts words into more pieces than the paper's 37,000 learned on millions: the
counts are an upper bound of what the real corpus loses.

    PYTHONPATH=src python benchmarks/studies/length_drop.py [--work /tmp/length] [--vocab-size 8000]

Prints one markdown table; not a test. Deterministic.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import sentencepiece as spm
from preprocessing_effect import TASKS, WMT, print_table, training_text

from aiayn.data.bpe import learn
from aiayn.data.clean import filter_pairs, new_counts
from aiayn.data.tokenize import MosesPipeline
from aiayn.io import setup_logging
from aiayn.options import BpeConfig, CleanConfig, TokenizeConfig

log = logging.getLogger("length_drop")
LIMITS = (256, 512)  # tensor2tensor max_length: transformer_base / _big, transformer_parsing_*


def tokenized_pairs(task: tuple) -> list[tuple[str, str]]:
    """The task's sample pairs after the workflow's default Moses tokenization."""
    _, src, tgt, prefix, tokenized = task
    defaults = TokenizeConfig()
    sides = []
    for lang in (src, tgt):
        pipeline = MosesPipeline(
            lang,
            normalize_punctuation=False,
            remove_non_printing=defaults.remove_non_printing,
            aggressive_dash_splits=defaults.aggressive_dash_splits,
            escape=defaults.escape,
        )
        sides.append(pipeline(training_text(WMT, prefix, lang, tokenized)))
    return list(zip(*sides))


def measure(task: tuple, work: Path, vocab_size: int) -> list[dict]:
    """One row per cleaning setting: pairs, pieces of the longest side, pairs over each limit."""
    name = task[0]
    pairs = tokenized_pairs(task)
    stem = work / name
    for i, lang in enumerate(task[1:3]):
        Path(f"{stem}.{lang}").write_text("".join(p[i] + "\n" for p in pairs), encoding="utf-8")
    learn([f"{stem}.{task[1]}", f"{stem}.{task[2]}"], str(stem), BpeConfig(vocab_size=vocab_size))
    model = spm.SentencePieceProcessor(model_file=f"{stem}.model")
    rows = []
    for cleaning, rules in (
        ("data.clean defaults", CleanConfig()),
        ("none", CleanConfig(min_len=1, max_len=None, max_ratio=None)),
    ):
        kept = list(filter_pairs(pairs, rules, new_counts()))
        longest = [max(len(model.encode(s)), len(model.encode(t))) + 1 for s, t in kept]
        rows.append(
            {
                "task": name,
                "cleaning": cleaning,
                "pairs": len(kept),
                "longest": max(longest),
                **{f"over {limit}": sum(n > limit for n in longest) for limit in LIMITS},
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/aiayn-length-drop"))
    parser.add_argument("--vocab-size", type=int, default=8000)
    args = parser.parse_args(argv)
    setup_logging()
    args.work.mkdir(parents=True, exist_ok=True)
    rows = [row for task in TASKS for row in measure(task, args.work, args.vocab_size)]
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
