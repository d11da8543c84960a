"""fairseq-generate on the shape and sentences of ``decode_speed.py``, for a side-by-side figure.

Needs fairseq in its own virtual environment (see benchmarks/peers.md: ``fairseq-fixed
0.12.3.1``); its python is passed as ``--fairseq-python``. The model is fairseq's own ``transformer``
with the same shape (post-norm, sinusoidal positions, all embeddings shared), trained for one update
on the benchmark sentences so that a checkpoint exists: its output lengths come from the length limit,
as with the randomly initialised model of ``decode_speed.py``.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from pathlib import Path

log = logging.getLogger("fairseq_peer")

ARCH = [
    "--arch",
    "transformer",
    "--share-all-embeddings",
    "--encoder-layers",
    "3",
    "--decoder-layers",
    "3",
    "--encoder-embed-dim",
    "256",
    "--decoder-embed-dim",
    "256",
    "--encoder-ffn-embed-dim",
    "1024",
    "--decoder-ffn-embed-dim",
    "1024",
    "--encoder-attention-heads",
    "4",
    "--decoder-attention-heads",
    "4",
]
TRANSLATED = re.compile(
    r"Translated ([\d,]+) sentences \(([\d,]+) tokens\) in ([\d.]+)s "
    r"\(([\d.]+) sentences/s, ([\d.]+) tokens/s\)"
)


def write_corpus(work: Path, sources: list[list[int]], vocab: int) -> None:
    """Word-level text (``w<id>``) for the copy pairs, and one shared dictionary of every word."""
    work.mkdir(parents=True, exist_ok=True)
    text = "".join(" ".join(f"w{i}" for i in s) + "\n" for s in sources)
    for side in ("src", "tgt"):
        (work / f"test.{side}").write_text(text, encoding="utf-8")
    (work / "dict.txt").write_text("".join(f"w{i} 1\n" for i in range(4, vocab)), encoding="utf-8")


def _run(python: str, module: str, args: list[str], threads: int) -> str:
    # fairseq 0.12 pickles argparse.Namespace into its checkpoints, which torch >= 2.6 refuses to
    # unpickle by default; the checkpoint is the one made just before, in this run.
    env = {
        **os.environ,
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1",
    }
    done = subprocess.run([python, "-m", module, *args], capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        raise RuntimeError(f"{module} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout + done.stderr


def fairseq_prepare(python: str, work: Path, sources: list[list[int]], vocab: int, threads: int) -> Path:
    """Preprocess the sentences and make a one-update checkpoint; returns the binarized data directory.

    Any earlier checkpoint in ``work`` is removed first: fairseq-train would resume from it, and each
    rerun would time a different model (one that ends every sentence at once after a few)."""
    shutil.rmtree(work / "ckpt", ignore_errors=True)
    write_corpus(work, sources, vocab)
    data = work / "bin"
    _run(
        python,
        "fairseq_cli.preprocess",
        [
            "--source-lang",
            "src",
            "--target-lang",
            "tgt",
            "--trainpref",
            str(work / "test"),
            "--validpref",
            str(work / "test"),
            "--testpref",
            str(work / "test"),
            "--srcdict",
            str(work / "dict.txt"),
            "--tgtdict",
            str(work / "dict.txt"),
            "--destdir",
            str(data),
            "--workers",
            "1",
        ],
        threads,
    )
    _run(
        python,
        "fairseq_cli.train",
        [
            str(data),
            *ARCH,
            "--optimizer",
            "adam",
            "--lr",
            "1e-4",
            "--max-tokens",
            "4096",
            "--max-update",
            "1",
            "--save-dir",
            str(work / "ckpt"),
            "--cpu",
            "--disable-validation",
            "--no-progress-bar",
            "--no-epoch-checkpoints",
            "--seed",
            "1",
        ],
        threads,
    )
    return data


def fairseq_time(python: str, work: Path, batch: int, threads: int, max_len_b: int) -> dict:
    """Time beam-4 generation of the prepared sentences (fairseq-generate's own timer)."""
    # Ours generates at most |x| + b tokens, eos included (a model that never ends a sentence: |x| + b
    # words, |x| + b decoder steps). fairseq counts the source eos in |x| and forces an eos after
    # max_len words: b - 2 gives |x| + b - 1 words and the eos, the same |x| + b steps. (fairseq's |x|
    # is the longest source of the batch, ours each sentence's own.)
    output = _run(
        python,
        "fairseq_cli.generate",
        [
            str(work / "bin"),
            "--path",
            str(work / "ckpt" / "checkpoint_last.pt"),
            "--gen-subset",
            "test",
            "--beam",
            "4",
            "--lenpen",
            "0.6",
            "--max-len-a",
            "1",
            "--max-len-b",
            str(max_len_b - 2),
            "--batch-size",
            str(batch),
            "--required-batch-size-multiple",
            "1",
            "--cpu",
            "--quiet",
        ],
        threads,
    )
    match = TRANSLATED.search(output)
    if match is None:
        raise RuntimeError(f"no 'Translated ...' line in fairseq-generate's output:\n{output[-2000:]}")
    sentences, tokens, seconds, per_s, tok_per_s = match.groups()
    log.info("fairseq-generate: %s", match.group(0))
    return {
        "seconds": float(seconds),
        "sentences": int(sentences.replace(",", "")),
        "sentences_per_s": float(per_s),
        "tokens_per_s": float(tok_per_s),
        "mean_hyp_len_with_eos": round(int(tokens.replace(",", "")) / int(sentences.replace(",", "")), 2),
    }
