"""``aiayn-export``: a run's model, its sentencepiece model and its text processing, for another engine.

    aiayn-export --run results/<task>/<experiment> --to {ctranslate2,huggingface} DIR [--last] [--log F]

Reads the run's manifest (:mod:`aiayn.decode.manifest`: the averaged checkpoint, or the last with
``--last``; the task's sentencepiece model; the source side's ``data.tokenize`` settings) and writes
into DIR (made anew, atomically: a killed export leaves no DIR):

- the engine's model (:mod:`aiayn.export.ct2`, :mod:`aiayn.export.hf`);
- ``spm.model``, the task's sentencepiece model: both engines take its pieces;
- ``preprocessing.json``: what the workflow does around the network, which neither engine does. A
  source line goes through Moses (``moses_tokenize``: :class:`aiayn.data.tokenize.MosesPipeline`
  with these settings, language ``source_lang``), then sentencepiece; the end symbol ``</s>`` follows
  the pieces (``add_source_eos``); the output pieces are joined by sentencepiece and detokenized by
  Moses (``moses_detokenize``). ``decode`` holds the run's beam size, length penalty and length limit.

A translation task only: a parser's trees need :mod:`aiayn.parsing`'s repair after decoding.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from aiayn import settings
from aiayn.cli import add_log
from aiayn.decode.manifest import RunFiles, read_run
from aiayn.export import ct2, hf
from aiayn.io import setup_logging, write_json
from aiayn.model import Transformer
from aiayn.options import DecodeConfig, ModelConfig, TokenizeConfig
from aiayn.runtime.session import load_model

log = logging.getLogger(__name__)

ENGINES = ("ctranslate2", "huggingface")
SPECIALS = {"pad": "<pad>", "unk": "<unk>", "bos": "<s>", "eos": "</s>"}  # ids 0-3 (aiayn.runtime.batches)


def check_exportable(cfg: ModelConfig, engine: str) -> None:
    """Refuse, naming the key, a model the engine's architecture cannot hold."""
    problems = []
    if cfg.d_k * cfg.n_heads != cfg.d_model or cfg.d_v != cfg.d_k:
        problems.append(
            f"model.d_k={cfg.d_k}, d_v={cfg.d_v} with n_heads={cfg.n_heads}: {engine} needs "
            f"d_k = d_v = d_model / n_heads = {cfg.d_model // cfg.n_heads}"
        )
    if engine == "huggingface":
        if cfg.norm != "post":
            problems.append("model.norm=pre: MarianMT is post-norm")
        if cfg.positional != "sinusoid":
            problems.append("model.positional=learned: MarianMT computes sinusoids")
        if not (cfg.share_embeddings and cfg.share_softmax):
            problems.append("model.share_embeddings/share_softmax false: MarianMT is exported with one shared matrix")
    if problems:
        raise ValueError(f"cannot export to {engine}: " + "; ".join(problems))


def pieces(spm: Path) -> list[str]:
    """The sentencepiece model's pieces by id; ids 0-3 must be the workflow's special symbols."""
    from aiayn.data.bpe import load_processor

    processor = load_processor(spm)
    out = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    if out[:4] != list(SPECIALS.values()):
        raise ValueError(f"{spm}: pieces 0-3 are {out[:4]}, not the workflow's {list(SPECIALS.values())}")
    return out


def preprocessing(files: RunFiles, decode: DecodeConfig) -> dict:
    """``preprocessing.json``'s content (the module docstring)."""
    opts = settings.read(files.tokenize, TokenizeConfig, "data.tokenize")
    steps = {key: value for key, value in dataclasses.asdict(opts).items() if key != "chunk_lines"}
    return {
        "source_lang": files.source_lang,
        "target_lang": files.target_lang,
        "moses_tokenize": steps,
        "sentencepiece": "spm.model",
        "add_source_eos": True,
        "decoder_start_token": SPECIALS["bos"],
        "moses_detokenize": {"lang": files.target_lang},
        "decode": {
            "beam_size": decode.beam_size,
            "length_penalty": decode.length_penalty,
            "length_penalty_form": "GNMT: log P / ((5 + |Y|) / 6) ** length_penalty, |Y| with </s>",
            "max_len_a": decode.max_len_a,
            "max_len_b": decode.max_len_b,
            "min_length": decode.min_length,
        },
    }


# engine -> writer(model, pieces, directory, sentencepiece model); each imports its library on use
WRITERS: dict[str, Callable[[Transformer, list[str], Path, Path], None]] = {
    "ctranslate2": lambda model, vocab, out, spm: ct2.write(model, vocab, out),
    "huggingface": hf.write,
}


def export(run_dir: Path, engine: str, out: Path, which: str = "avg") -> Path:
    """Write ``out`` (see the module docstring); refused if it exists."""
    if engine not in ENGINES:
        raise ValueError(f"--to must be one of {ENGINES}, got {engine!r}")
    if out.exists():
        raise ValueError(f"{out} exists: give a new directory")
    files = read_run(run_dir, which)
    if files.kind != "translation":
        raise ValueError(f"{run_dir} is a {files.kind} run: only translation models are exported")
    model, checkpoint = load_model(files.checkpoint)
    check_exportable(model.cfg, engine)
    vocab = pieces(files.spm)
    if len(vocab) != model.vocab_size:
        raise ValueError(f"{files.spm} has {len(vocab)} pieces, {files.checkpoint} {model.vocab_size} embeddings")
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    work.chmod(0o777 & ~umask)  # mkdtemp's 0700 would keep the export from everyone else after the rename
    try:
        WRITERS[engine](model, vocab, work, files.spm)
        shutil.copyfile(files.spm, work / "spm.model")
        write_json(
            work / "preprocessing.json", preprocessing(files, settings.read(files.decode, DecodeConfig, "decode"))
        )
        work.rename(out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    log.info("exported %s (step %d) to %s as %s", files.checkpoint, checkpoint.step, out, engine)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="aiayn-export", description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", required=True, type=Path, help="the run directory, results/<task>/<experiment>")
    parser.add_argument("--to", required=True, choices=ENGINES, help="the engine")
    parser.add_argument("out", type=Path, help="the directory to write (must not exist)")
    parser.add_argument("--last", action="store_true", help="the last checkpoint instead of the averaged one")
    add_log(parser)
    args = parser.parse_args(argv)
    setup_logging(args.log)
    try:
        export(args.run, args.to, args.out, "last" if args.last else "avg")
    except (ValueError, ImportError) as error:
        parser.exit(1, f"aiayn-export: {error}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
