"""The paper's attention figures (Figures 3, 4, 5) drawn from a trained model's encoder self-attention.

CLI::

    python -m aiayn.report.attention --checkpoint C --spm M --lang en --tokenize-settings T
        [--settings S] --out-dir D [--log F]

tokenizes each sentence as the task's source side was (Moses with the task's ``data.tokenize``
settings ``T``, then the sentencepiece model ``M``), appends ``<EOS>`` as training does, runs the
encoder of checkpoint ``C`` and recomputes the chosen layer's softmax(Q K^T / sqrt(d_k))
(:meth:`aiayn.model.Transformer.encoder_attention`). ``S`` is the ``figures`` section of the config
(:mod:`aiayn.options.figures`; default: the paper's). Written, each atomically:
``D/figure3.png``, ``D/figure4.png``, ``D/figure5.png`` (drawn by :mod:`aiayn.report.attention_plot`)
and ``D/figures.json``: the layer, and per figure its words, heads, how they were chosen, and the
attention from its word.

Words, not pieces, as the paper shows words. A word is a Moses token: a sentencepiece piece that
starts with "▁" begins one, the pieces after it belong to it, and ``<EOS>`` is one of its own. A
word's attention to another word is the sum over the key word's pieces, averaged over the query
word's pieces, so each word's row still sums to one:

    A[w, u] = 1 / |w| * sum_{i in w} sum_{j in u} p[i, j]

The paper's figures also show ``<pad>`` positions (its sentences were drawn from a padded batch);
here a sentence is encoded alone, with no padding, so none is shown.

Heads, ``heads: auto`` (counted from 1 as the paper numbers them; ``count`` of them):

- Figure 3 (long-distance dependencies): the heads whose attention from the word reaches furthest,
  by the weighted distance sum_u A[w, u] |u - w| over the sentence's words (``<EOS>`` left out);
- Figure 4 (anaphora, "the attentions are very sharp for this word"): the heads with the largest
  single weight from the word to another word (not itself, not ``<EOS>``); the top panel draws the
  first head's full attentions;
- Figure 5 ("the heads clearly learned to perform different tasks"): the two heads whose attentions
  differ most (mean over query words of the total variation distance between their rows), then
  greedily each head furthest from those chosen.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sentencepiece as spm
import torch

from aiayn import settings
from aiayn.cli import add_log, add_settings
from aiayn.data.bpe import load_processor
from aiayn.data.tokenize import MosesPipeline
from aiayn.decode.translate import check_vocabulary
from aiayn.io import write_json
from aiayn.options import TokenizeConfig
from aiayn.options.figures import FiguresConfig, FigureSpec
from aiayn.paths import FIGURES_SUMMARY
from aiayn.report import attention_plot
from aiayn.report.plots import save
from aiayn.runtime.session import load_model

log = logging.getLogger(__name__)

WORD_START = "\u2581"  # sentencepiece's whitespace mark
EOS = "<EOS>"


@dataclass(frozen=True)
class Sentence:
    """A sentence as the encoder sees it: ``ids`` (P,) with eos last, ``pieces`` (P,), and per piece
    the index of its word in ``words`` (W,), ``<EOS>`` the last word."""

    ids: list[int]
    pieces: list[str]
    word_of: list[int]
    words: list[str]


def words_of(pieces: list[str]) -> tuple[list[int], list[str]]:
    """Each piece's word index and the words (pieces joined, "▁" removed): a piece starting with "▁"
    (or the first) begins a word; the final ``<EOS>`` piece is a word of its own."""
    word_of, words = [], []
    for piece in pieces:
        if not words or piece.startswith(WORD_START) or piece == EOS:
            words.append("")
        words[-1] += piece.replace(WORD_START, "")
        word_of.append(len(words) - 1)
    return word_of, words


def encode(text: str, pipeline: MosesPipeline, sp: spm.SentencePieceProcessor) -> Sentence:
    """Moses-tokenize and sentencepiece-encode ``text`` as the training source was, eos appended."""
    pieces = sp.encode(pipeline.line(text), out_type=str)
    ids = [sp.piece_to_id(piece) for piece in pieces]
    unknown = [p for p, i in zip(pieces, ids) if i == sp.unk_id()]
    if unknown:
        log.warning("%d piece(s) of %r are not in the vocabulary: %s", len(unknown), text, unknown[:10])
    word_of, words = words_of([*pieces, EOS])
    return Sentence([*ids, sp.eos_id()], [*pieces, EOS], word_of, words)


def word_attention(probs: np.ndarray, word_of: list[int]) -> np.ndarray:
    """Piece attention probs (h, P, P) -> word attention (h, W, W): A[w, u] = mean over the pieces i
    of w of the sum over the pieces j of u of p[i, j] (rows sum to one as the pieces' rows do)."""
    member = np.zeros((len(word_of), max(word_of) + 1))  # (P, W): piece i belongs to word w
    member[np.arange(len(word_of)), word_of] = 1.0
    summed = probs @ member  # (h, P, W)
    return np.einsum("pw,hpu->hwu", member / member.sum(0), summed)  # (h, W, W)


def find_word(words: list[str], word: str, key: str) -> int:
    """The position of the first ``word`` among ``words``; ValueError naming ``key`` if absent."""
    if word not in words:
        raise ValueError(f"{key}: {word!r} is not one of the tokenized sentence's words {words}")
    return words.index(word)


def reach_heads(attn: np.ndarray, w: int, count: int) -> list[int]:
    """The ``count`` heads (0-based) of word attention (h, W, W) whose row ``w`` has the largest
    weighted distance sum_u A[w, u] |u - w| over the words (the last, ``<EOS>``, left out)."""
    words = attn.shape[-1] - 1
    reach = attn[:, w, :words] @ np.abs(np.arange(words) - w)  # (h,)
    return [int(h) for h in np.argsort(-reach, kind="stable")[:count]]


def sharp_heads(attn: np.ndarray, w: int, count: int) -> list[int]:
    """The ``count`` heads (0-based) with the largest single weight from word ``w`` to another word
    (not ``w`` itself, not the last, ``<EOS>``)."""
    others = [u for u in range(attn.shape[-1] - 1) if u != w]
    peak = attn[:, w, others].max(-1)  # (h,)
    return [int(h) for h in np.argsort(-peak, kind="stable")[:count]]


def distinct_heads(attn: np.ndarray, count: int) -> list[int]:
    """``count`` heads (0-based) of word attention (h, W, W) that differ most: the pair with the largest
    mean total variation distance between rows, then greedily the head furthest (by its least
    distance) from those chosen."""
    if len(attn) < 2:
        return [0]
    tv = 0.5 * np.abs(attn[:, None] - attn[None]).sum(-1).mean(-1)  # (h, h)
    first, second = np.unravel_index(np.argmax(np.triu(tv, 1)), tv.shape)
    chosen = [int(first), int(second)]
    while len(chosen) < min(count, len(attn)):
        rest = [h for h in range(len(attn)) if h not in chosen]
        chosen.append(max(rest, key=lambda h: (tv[h, chosen].min(), -h)))
    return chosen[:count]


# How each figure's heads are chosen under `heads: auto`: (chooser(attn, word, count), what the figure says).
CHOOSERS = {
    "figure3": (reach_heads, "furthest reach from the word"),
    "figure4": (sharp_heads, "sharpest attention from the word"),
    "figure5": (lambda attn, _, count: distinct_heads(attn, count), "most different attentions"),
}


@dataclass(frozen=True)
class Drawn:
    """One figure's data: its words (W,), word attention of every head (h, W, W), the query word's
    position (None for Figure 5), the heads drawn (0-based) and how they were chosen."""

    words: list[str]
    attn: np.ndarray
    query: int | None
    heads: list[int]
    chosen: str


def choose(name: str, spec: FigureSpec, words: list[str], attn: np.ndarray) -> Drawn:
    """The heads of figure ``name``: ``spec.heads`` as listed (1-based), or chosen (module docstring)."""
    query = None if spec.word is None else find_word(words, spec.word, f"figures.{name}.word")
    listed = spec.listed_heads()
    if listed:
        if max(listed) > len(attn):
            raise ValueError(f"figures.{name}.heads: {list(listed)}, but the model has {len(attn)} heads")
        return Drawn(words, attn, query, [h - 1 for h in listed], "listed in figures." + name + ".heads")
    chooser, how = CHOOSERS[name]
    return Drawn(words, attn, query, chooser(attn, query, spec.count), how)


def layer_attention(model, sentence: Sentence, layer: int) -> np.ndarray:
    """Word attention (h, W, W) of the 1-based encoder ``layer`` for one sentence."""
    with torch.no_grad():
        probs = model.encoder_attention(torch.tensor([sentence.ids]), layer - 1)[0]  # (h, P, P)
    return word_attention(probs.double().numpy(), sentence.word_of)


def draw_all(model, sp, pipeline: MosesPipeline, opts: FiguresConfig, out_dir: Path) -> dict:
    """Every figure into ``out_dir``; returns what ``figures.json`` records."""
    n_layers = len(model.encoder)
    layer = opts.layer.of_model(n_layers)
    record = {"layer": layer, "n_layers": n_layers, "n_heads": model.cfg.n_heads, "figures": {}}
    for name, spec in opts.specs().items():
        sentence = encode(spec.sentence, pipeline, sp)
        drawn = choose(name, spec, sentence.words, layer_attention(model, sentence, layer))
        path = save(attention_plot.FIGURES[name](drawn, layer, n_layers), out_dir / f"{name}.png")
        log.info(
            "%s: layer %d of %d, heads %s (%s): %s",
            name,
            layer,
            n_layers,
            [h + 1 for h in drawn.heads],
            drawn.chosen,
            path,
        )
        record["figures"][name] = summary(spec, sentence, drawn)
    return record


def summary(spec: FigureSpec, sentence: Sentence, drawn: Drawn) -> dict:
    """What ``figures.json`` records of one figure: heads 1-based, weights to 4 decimals."""
    entry = {
        "sentence": spec.sentence,
        "pieces": sentence.pieces,
        "words": drawn.words,
        "heads": [h + 1 for h in drawn.heads],
        "chosen": drawn.chosen,
        "word": spec.word,
    }
    if drawn.query is not None:
        entry["attention_from_word"] = {
            str(h + 1): np.round(drawn.attn[h, drawn.query], 4).tolist() for h in drawn.heads
        }
    return entry


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m aiayn.report.attention", description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True, help="a trained or averaged checkpoint")
    parser.add_argument("--spm", required=True, help="the task's sentencepiece model")
    parser.add_argument("--lang", required=True, help="the task's source language (Moses tokenizer)")
    parser.add_argument("--tokenize-settings", help="the source side's data.tokenize settings file")
    add_settings(parser, "the figures settings file (default: the paper's)")
    parser.add_argument("--out-dir", required=True, type=Path)
    add_log(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    opts = settings.start(args, FiguresConfig, "figures")
    steps = dataclasses.asdict(settings.read(args.tokenize_settings, TokenizeConfig, "data.tokenize"))
    steps.pop("chunk_lines")
    model, checkpoint = load_model(args.checkpoint)
    sp = load_processor(args.spm)
    check_vocabulary(args.checkpoint, checkpoint.vocab, args.spm, sp)
    record = draw_all(model, sp, MosesPipeline(lang=args.lang, **steps), opts, args.out_dir)
    write_json(args.out_dir / FIGURES_SUMMARY, {"checkpoint": args.checkpoint, **record})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
