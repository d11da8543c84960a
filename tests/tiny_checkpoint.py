"""A sentencepiece model over a few sentences and an untrained checkpoint over it, for tests of CLIs that read both."""

import io
from pathlib import Path

import sentencepiece as spm
import torch

from aiayn.model import Transformer
from aiayn.options import ModelConfig
from aiayn.runtime.checkpoint import Checkpoint, save_checkpoint

TEXT = [
    "the quick brown fox jumps over the lazy dog",
    "a stitch in time saves nine",
    "all that glitters is not gold",
    "the early bird catches the worm",
] * 20


def write_tiny(root: Path, model_settings: dict, seed: int, **extra) -> tuple[spm.SentencePieceProcessor, Transformer]:
    """``root/spm.model`` (40 pieces, pad 0, unk 1, bos 2, eos 3) and ``root/avg.pt``: a model of
    ``model_settings`` drawn with ``seed``, plus ``extra`` checkpoint entries."""
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(TEXT),
        model_writer=buffer,
        vocab_size=40,
        model_type="bpe",
        pad_id=0,
        unk_id=1,
        bos_id=2,
        eos_id=3,
    )
    (root / "spm.model").write_bytes(buffer.getvalue())
    sp = spm.SentencePieceProcessor(model_file=str(root / "spm.model"))
    torch.manual_seed(seed)
    model = Transformer(ModelConfig.from_dict(model_settings), sp.get_piece_size()).eval()
    vocab = {"size": sp.get_piece_size(), "pad_id": 0, "unk_id": 1, "bos_id": 2, "eos_id": 3}
    save_checkpoint(
        root / "avg.pt", Checkpoint(model=model.state_dict(), settings={"model": model_settings}, vocab=vocab, **extra)
    )
    return sp, model
