"""Real EN-DE text through this project's data stages, for ``learning_parity.py``.

Sources (``../shared/data/wmt``, see its PROVENANCE.md):

- ``train_sample/onmt-wmt-ende-10k.tok.*``: 10,000 WMT training pairs, already Moses-tokenized with
  ``&apos;``-style escapes. They are detokenized (sacremoses, entities unescaped, through
  :mod:`aiayn.data.detokenize`) so that every corpus enters our tokenizer as raw text, as the
  workflow's downloads do.
- ``plain/newstest2012.*`` and ``plain/newstest2014-full.en-de.*``: raw text, used as training pairs.
- ``plain/newstest2013.*``: its first lines are training pairs, its last ``dev_lines`` the held-out dev
  set (a contiguous block, so whole news documents stay on one side).

Stages, all this project's code, with the settings every figure of ``RESULTS.md`` was measured with
(:data:`TOKENIZE`, :data:`CLEAN`: the project's defaults before they became the paper's data
preparation): :mod:`aiayn.data.tokenize` (Moses normalization and tokenization),
:mod:`aiayn.data.clean` (training pairs only, 1-250 tokens, ratio 1.5), :mod:`aiayn.data.bpe` (one shared
sentencepiece BPE model learned on the cleaned training
text, both sides), :mod:`aiayn.data.binarize`. fairseq gets the very same piece files and, as its
joined dictionary, our vocabulary (ids 4.. in our order), so both softmaxes span the same symbols.
"""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

from aiayn.data.binarize import binarize
from aiayn.data.bpe import SpmEncode, learn
from aiayn.data.clean import clean_corpora
from aiayn.data.detokenize import MosesDetok
from aiayn.data.lines import count_lines, iter_lines, map_file
from aiayn.data.tokenize import MosesPipeline
from aiayn.io import atomic_output, read_json, write_json
from aiayn.options import BpeConfig, CleanConfig

log = logging.getLogger("learning_parity")
LANGS = ("en", "de")
TOKENIZE = {"normalize_punctuation": True, "remove_non_printing": True, "aggressive_dash_splits": True, "escape": False}
CLEAN = CleanConfig(min_len=1, max_len=250, max_ratio=1.5)


def raw_corpora(wmt: Path, raw: Path, dev_lines: int) -> tuple[list[str], str]:
    """Write raw-text training corpora and the dev set under ``raw``; returns (train prefixes, dev prefix)."""
    raw.mkdir(parents=True, exist_ok=True)
    for lang in LANGS:
        map_file(
            MosesDetok(lang, unescape=True),
            str(wmt / f"train_sample/onmt-wmt-ende-10k.tok.{lang}"),
            str(raw / f"onmt.{lang}"),
        )
        for name, source in (("nt2012", f"newstest2012.{lang}"), ("nt2014", f"newstest2014-full.en-de.{lang}")):
            lines = list(iter_lines(wmt / "plain" / source))
            _write_lines(raw / f"{name}.{lang}", lines)
        lines = list(iter_lines(wmt / "plain" / f"newstest2013.{lang}"))
        if not 0 < dev_lines < len(lines):
            raise ValueError(f"--dev-lines must be in 1..{len(lines) - 1} (newstest2013 has {len(lines)} lines)")
        _write_lines(raw / f"nt2013train.{lang}", lines[:-dev_lines])
        _write_lines(raw / f"dev.{lang}", lines[-dev_lines:])
    return [str(raw / name) for name in ("onmt", "nt2012", "nt2014", "nt2013train")], str(raw / "dev")


def split_tab_corpus(path: Path, raw: Path, held_out: int, seed: int = 1) -> tuple[list[str], str]:
    """A corpus of ``English<TAB>German[<TAB>...]`` lines (the Tatoeba-derived files of manythings.org/anki)
    split into ``raw/{train,dev,test}.{en,de}``; returns (train prefixes, dev prefix).

    Exact duplicate pairs are dropped. ``held_out`` English sentences each go to dev and to test, drawn
    with ``seed`` from the distinct ones, each with its first German translation: no dev or test source
    is a training source (the file lists several translations of many sentences). Deterministic."""
    import random

    pairs = list(dict.fromkeys(tuple(line.split("\t")[:2]) for line in iter_lines(path) if line.count("\t") >= 1))
    sources = sorted({en for en, _ in pairs})
    random.Random(seed).shuffle(sources)
    dev, test = set(sources[:held_out]), set(sources[held_out : 2 * held_out])
    first = {}
    for en, de in pairs:
        first.setdefault(en, de)
    splits = {
        "train": [(en, de) for en, de in pairs if en not in dev and en not in test],
        "dev": [(en, first[en]) for en in sources[:held_out]],
        "test": [(en, first[en]) for en in sources[held_out : 2 * held_out]],
    }
    raw.mkdir(parents=True, exist_ok=True)
    for split, kept in splits.items():
        for i, lang in enumerate(LANGS):
            _write_lines(raw / f"{split}.{lang}", [pair[i] for pair in kept])
    log.info(
        "%s: %d distinct pairs, %d training pairs, %d dev and %d test sentences",
        path,
        len(pairs),
        len(splits["train"]),
        held_out,
        held_out,
    )
    return [str(raw / "train")], str(raw / "dev")


def _write_lines(path: Path, lines: list[str]) -> None:
    with atomic_output(path) as out:
        out.writelines(line + "\n" for line in lines)


def prepare(source: Path, work: Path, vocab_size: int, dev_lines: int) -> dict:
    """Raw text -> tokens -> cleaned pairs -> BPE pieces -> shards under ``work``; returns a summary.

    ``source``: the shared ``data/wmt`` folder (the WMT text of the module docstring, dev the last
    ``dev_lines`` lines of newstest2013), or a tab-separated corpus file (:func:`split_tab_corpus`,
    ``dev_lines`` sentences each for dev and test). Outputs: ``bpe/{train,dev}.{en,de}`` (piece text,
    fairseq's input; ``test`` too for a corpus file), ``bpe/spm.model``, ``bin/{train,dev}`` (our
    shards), ``raw/test.de`` (a corpus file's test reference). Skipped when ``work/data.json`` exists.
    """
    done = work / "data.json"
    if done.exists():
        summary = read_json(done)
        if (summary["vocab_size"], summary["dev_lines"]) != (vocab_size, dev_lines):
            raise ValueError(
                f"{done}: prepared with vocabulary {summary['vocab_size']} and {summary['dev_lines']} "
                f"dev lines, not {vocab_size} and {dev_lines}: use another --work"
            )
        return summary
    if source.is_file():
        train_prefixes, dev_prefix = split_tab_corpus(source, work / "raw", dev_lines)
        others = [str(work / "raw" / "test")]
    else:
        (train_prefixes, dev_prefix), others = raw_corpora(source, work / "raw", dev_lines), []
    tok = work / "tok"
    tok.mkdir(parents=True, exist_ok=True)
    for prefix in [*train_prefixes, dev_prefix, *others]:
        for lang in LANGS:
            map_file(MosesPipeline(lang, **TOKENIZE), f"{prefix}.{lang}", str(tok / f"{Path(prefix).name}.{lang}"))
    stats = clean_corpora([str(tok / Path(p).name) for p in train_prefixes], "en", "de", str(tok / "train"), CLEAN)
    bpe = work / "bpe"
    size = learn([str(tok / f"train.{lang}") for lang in LANGS], str(bpe / "spm"), BpeConfig(vocab_size))
    for split in ("train", "dev", *(["test"] if others else [])):
        for lang in LANGS:
            map_file(SpmEncode(str(bpe / "spm.model")), str(tok / f"{split}.{lang}"), str(bpe / f"{split}.{lang}"))
        if split == "test":
            continue
        manifest = binarize(
            str(bpe / "spm.model"), str(bpe / f"{split}.en"), str(bpe / f"{split}.de"), str(work / "bin" / split)
        )
        if manifest["unknown_pieces"]:
            raise ValueError(f"{bpe / split}.*: {manifest['unknown_pieces']} pieces unknown to the BPE model")
    summary = {
        "vocab_size": size,
        "clean": stats["total"],
        "train_pairs": count_lines(bpe / "train.en"),
        "dev_pairs": count_lines(bpe / "dev.en"),
        "dev_lines": dev_lines,
        "source": str(source),
    }
    write_json(done, summary)
    return summary


def fairseq_preprocess(python: str, work: Path) -> Path:
    """fairseq-preprocess --joined-dictionary of the piece files, with our vocabulary as the dictionary.

    fairseq's ``Dictionary`` puts ``<s> <pad> </s> <unk>`` at ids 0-3, then the file's symbols: with our
    pieces 4.. in order, both vocabularies have the same size and the same ids for every piece.
    """
    dest = work / "fairseq-bin"
    if (dest / "valid.en-de.de.bin").exists():
        return dest
    pieces = [line.split("\t")[0] for line in iter_lines(work / "bpe" / "spm.vocab")][4:]
    _write_lines(work / "fairseq-dict.txt", [f"{piece} 1" for piece in pieces])
    args = [
        "--source-lang",
        "en",
        "--target-lang",
        "de",
        "--trainpref",
        str(work / "bpe" / "train"),
        "--validpref",
        str(work / "bpe" / "dev"),
        *(["--testpref", str(work / "bpe" / "test")] if (work / "bpe" / "test.en").exists() else []),
        "--joined-dictionary",
        "--srcdict",
        str(work / "fairseq-dict.txt"),
        "--destdir",
        str(dest),
        "--workers",
        "1",
    ]
    done = subprocess.run(
        [python, "-m", "fairseq_cli.preprocess", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        check=False,
    )
    output = done.stdout + done.stderr
    if done.returncode:
        raise RuntimeError(f"fairseq-preprocess failed ({done.returncode}):\n{output[-3000:]}")
    for line in output.splitlines():
        if "replaced by <unk>" in line and "0.0% replaced" not in line:
            raise RuntimeError(f"fairseq-preprocess replaced pieces by <unk>: {line}")
    log.info("fairseq-preprocess: %s", dest)
    return dest
