"""Separate source and target vocabularies for the parser, measured against the shared one.

    PYTHONPATH=src python benchmarks/studies/parser_vocabularies.py --data-dir DATA --task wsj \
        [--source-size 4000] [--target-size 512]

``DATA`` is a workflow's ``data_dir`` after its ``bpe_learn`` rule ran for the parsing ``--task``:
``tok/<task>/{train,dev}.{words,tree}`` and the shared model ``bpe/<task>/spm.model``. Learns a
sentencepiece BPE model on the training words alone (``--source-size``) and one on the training trees
alone (``--target-size``; tensorflow/tensor2tensor's ``wsj_parsing_tokens_16k`` had 2^14 and 2^9,
``data_generators/problem_hparams.py`` at 006ecb50) with sentencepiece's defaults, and prints the
pieces per line of each split and side under the shared model and under the separate one, beside the
tokens per line. Deterministic; seconds.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import sentencepiece as spm


def per_line(model: str, path: Path) -> float:
    """Mean sentencepiece pieces per line of ``path`` under ``model``."""
    processor = spm.SentencePieceProcessor(model_file=model)
    lines = path.read_text(encoding="utf-8").splitlines()
    return sum(len(processor.encode(line)) for line in lines) / len(lines)


def tokens_per_line(path: Path) -> float:
    lines = path.read_text(encoding="utf-8").splitlines()
    return sum(len(line.split()) for line in lines) / len(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--task", default="wsj")
    parser.add_argument("--source-size", type=int, default=4000)
    parser.add_argument("--target-size", type=int, default=512)
    args = parser.parse_args(argv)
    tok, shared = args.data_dir / "tok" / args.task, str(args.data_dir / "bpe" / args.task / "spm.model")
    print("| side | split | tokens per line | pieces, shared | pieces, separate (size) |")
    print("|---|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for side, size in (("words", args.source_size), ("tree", args.target_size)):
            prefix = f"{tmp}/{side}"
            spm.SentencePieceTrainer.train(
                input=str(tok / f"train.{side}"),
                model_prefix=prefix,
                vocab_size=size,
                model_type="bpe",
                character_coverage=1.0,
                hard_vocab_limit=False,
                bos_id=-1,
                eos_id=-1,
                unk_id=0,
                pad_id=-1,
                minloglevel=2,
            )
            for split in ("train", "dev"):
                path = tok / f"{split}.{side}"
                print(
                    f"| {side} | {split} | {tokens_per_line(path):.2f} | {per_line(shared, path):.2f} | "
                    f"{per_line(prefix + '.model', path):.2f} ({size}) |"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
