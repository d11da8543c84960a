"""What the tokenizer settings cost: this project's former defaults against the paper's data preparation.

The paper's EN-DE data is google/seq2seq ``bin/data/wmt16_en_de.sh`` (see ``src/aiayn/data/tokenize.py``):
``tokenizer.perl`` without ``-a``, escaping on, no punctuation normalization, no non-printing
removal. For each task, each setting of :data:`SETTINGS` and both newstest2014 sides
(``../shared/data/wmt/plain``), the round trip a perfect model's output takes through the workflow:

    text -> tokenize (:class:`aiayn.data.tokenize.MosesPipeline`) -> sentencepiece BPE encode
         -> decode -> detokenize (:class:`aiayn.data.detokenize.MosesDetok`, unescaping when the
            setting escapes)

scored against the raw text with sacreBLEU (13a), with the lines that come back identical and the
pieces per sentence. The BPE model (``--vocab-size``, :func:`aiayn.data.bpe.learn`) is learned per
task and setting on the shared training sample tokenized the same way, both sides: EN-DE
``train_sample/onmt-wmt-ende-10k.tok.*`` (Moses-tokenized with escapes: detokenized and unescaped
first, as ``parity_data.py`` does), EN-FR ``train_sample/moses-nc-5k.fr-en.*`` (raw text). Only the
target side is ever scored; the source rows show what the encoder reads.

    PYTHONPATH=src python benchmarks/studies/preprocessing_effect.py [--work /tmp/prep] [--vocab-size 8000]

Prints one markdown table; not a test. Deterministic (no timing): the figures do not depend on load.
"""

from __future__ import annotations

import argparse
import logging
import re
from pathlib import Path

import sacrebleu
import sentencepiece as spm

from aiayn.data.bpe import learn
from aiayn.data.detokenize import MosesDetok
from aiayn.data.lines import read_lines
from aiayn.data.tokenize import MosesPipeline
from aiayn.io import setup_logging
from aiayn.options import BpeConfig

log = logging.getLogger("preprocessing_effect")
WMT = Path(__file__).resolve().parents[3] / "shared" / "data" / "wmt"
# (task, source language, target language, training sample prefix, whether the sample is tokenized)
TASKS = (
    ("en-de", "en", "de", "train_sample/onmt-wmt-ende-10k.tok", True),
    ("en-fr", "en", "fr", "train_sample/moses-nc-5k.fr-en", False),
)
PAPER = {"normalize_source": False, "remove_non_printing": False, "aggressive_dash_splits": False, "escape": True}
# name: the data.tokenize flags (targets are never normalized: normalize_source is the source side's)
SETTINGS = {
    "former defaults": {
        "normalize_source": True,
        "remove_non_printing": True,
        "aggressive_dash_splits": True,
        "escape": False,
    },
    "paper (wmt16_en_de.sh)": PAPER,
    "paper + -a": PAPER | {"aggressive_dash_splits": True},
    "paper, no escaping": PAPER | {"escape": False},
    "paper + source normalization": PAPER | {"normalize_source": True},
}


def print_table(rows: list[dict]) -> None:
    """``rows`` (dicts with the same keys) as one markdown table, the keys as its header."""
    columns = list(rows[0])
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(row[c]) for c in columns) + " |")


def pipeline(lang: str, flags: dict, source: bool) -> MosesPipeline:
    steps = {key: value for key, value in flags.items() if key != "normalize_source"}
    return MosesPipeline(lang, normalize_punctuation=source and flags["normalize_source"], **steps)


def training_text(wmt: Path, prefix: str, lang: str, tokenized: bool) -> list[str]:
    """One side of a training sample as raw text (a tokenized sample detokenized, entities unescaped)."""
    lines = read_lines(str(wmt / f"{prefix}.{lang}"))
    return MosesDetok(lang, unescape=True)(lines) if tokenized else lines


def learn_model(wmt: Path, work: Path, vocab_size: int, task: tuple, name: str) -> str:
    """The setting's BPE model learned on the task's training sample (kept under ``work`` and reused)."""
    task_name, src, tgt, prefix, tokenized = task
    stem = work / f"{task_name}.{re.sub(r'[^a-z0-9]+', '_', name)}"
    if not Path(f"{stem}.model").exists():
        inputs = []
        for lang in (src, tgt):
            tokens = pipeline(lang, SETTINGS[name], lang == src)(training_text(wmt, prefix, lang, tokenized))
            Path(f"{stem}.{lang}").write_text("".join(line + "\n" for line in tokens), encoding="utf-8")
            inputs.append(f"{stem}.{lang}")
        learn(inputs, str(stem), BpeConfig(vocab_size=vocab_size))
    return f"{stem}.model"


def round_trip(text: list[str], lang: str, tokenizer: MosesPipeline, model: str) -> dict:
    """sacreBLEU, identical lines and pieces per sentence of ``text`` through the round trip."""
    processor = spm.SentencePieceProcessor(model_file=model)
    pieces = processor.encode(tokenizer(text), out_type=str)
    back = MosesDetok(lang, unescape=tokenizer.escape)(processor.decode(pieces))
    return {
        "bleu": sacrebleu.metrics.BLEU(tokenize="13a").corpus_score(back, [text]).score,
        "identical": sum(a == b for a, b in zip(back, text)),
        "lines": len(text),
        "pieces": sum(map(len, pieces)) / len(pieces),
    }


def measure(wmt: Path, work: Path, vocab_size: int, task: tuple, name: str) -> list[dict]:
    """One row per side of the task's newstest2014 under setting ``name``."""
    model = learn_model(wmt, work, vocab_size, task, name)
    task_name, src, tgt = task[:3]
    rows = []
    for lang in (tgt, src):
        text = read_lines(str(wmt / "plain" / f"newstest2014-full.{task_name}.{lang}"))
        figures = round_trip(text, lang, pipeline(lang, SETTINGS[name], lang == src), model)
        rows.append(
            {"task": task_name, "side": f"{lang} ({'source' if lang == src else 'target'})", "setting": name, **figures}
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--wmt", type=Path, default=WMT, help="the shared data/wmt folder")
    parser.add_argument("--work", type=Path, default=Path("/tmp/preprocessing_effect"))
    parser.add_argument("--vocab-size", type=int, default=8000)
    args = parser.parse_args(argv)
    setup_logging()
    args.work.mkdir(parents=True, exist_ok=True)
    rows = [
        row for task in TASKS for name in SETTINGS for row in measure(args.wmt, args.work, args.vocab_size, task, name)
    ]
    print("| task | newstest2014 side | setting | round-trip sacreBLEU | identical lines | pieces per sentence |")
    print("|---|---|---|---:|---:|---:|")
    for row in sorted(rows, key=lambda r: (r["task"], "source" in r["side"])):
        print(
            f"| {row['task']} | {row['side']} | {row['setting']} | {row['bleu']:.2f} "
            f"| {row['identical']} of {row['lines']} | {row['pieces']:.2f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
