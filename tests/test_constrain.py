import io
import random
from collections import Counter

import pytest
import sentencepiece as spm
import torch

from aiayn.parsing.constrain import TreeConstraint, tree_tokens
from aiayn.parsing.repair import repair

# A toy piece vocabulary: 0 pad, 1 unk, 2 bos, 3 eos, then pieces; "(SBAR" shares a prefix with "(S".
PIECES = ["<pad>", "<unk>", "<s>", "</s>", "▁(", "▁)", "S", "NP", "BAR", "▁XX", "▁the", "dog"]
ENCODINGS = {"(S": ["▁(", "S"], ")S": ["▁)", "S"], "(NP": ["▁(", "NP"], ")NP": ["▁)", "NP"],
             "(SBAR": ["▁(", "S", "BAR"], ")SBAR": ["▁)", "S", "BAR"], "XX": ["▁XX"]}


def toy() -> TreeConstraint:
    return TreeConstraint.from_tokens(ENCODINGS, lambda t: [PIECES.index(p) for p in ENCODINGS[t]], len(PIECES), 3)


def allowed(constraint: TreeConstraint, state) -> list[str]:
    return sorted(PIECES[i] for i in constraint.mask(state).nonzero().flatten().tolist())


def walk(constraint, pieces: list[str], n_words: int):
    state = constraint.start(n_words)
    for piece in pieces:
        state = constraint.advance(state, PIECES.index(piece))
    return state


def test_golden_masks():
    c = toy()
    assert allowed(c, c.start(2)) == ["▁(", "▁XX"]
    assert allowed(c, walk(c, ["▁("], 2)) == ["NP", "S"]
    # after "(S": close is not yet allowed (empty constituent), but "(SBAR" may continue
    assert allowed(c, walk(c, ["▁(", "S"], 2)) == ["BAR", "▁(", "▁XX"]
    assert allowed(c, walk(c, ["▁(", "S", "▁XX"], 2)) == ["▁(", "▁)", "▁XX"]
    assert allowed(c, walk(c, ["▁(", "S", "▁XX", "▁)"], 2)) == ["S"]
    assert allowed(c, walk(c, ["▁(", "S", "▁XX", "▁XX", "▁)", "S"], 2)) == ["</s>"]
    assert allowed(c, walk(c, ["▁XX", "▁XX"], 2)) == ["</s>"]
    with pytest.raises(ValueError, match="not allowed"):
        walk(c, ["▁)"], 2)


def decode(pieces: list[str]) -> list[str]:
    return "".join(pieces).replace("▁", " ").split()


def test_random_walks_always_give_valid_trees():
    c, rng = toy(), random.Random(3)
    for n_words in (1, 2, 3, 6):
        for _ in range(150):
            state, pieces = c.start(n_words), []
            while True:
                ids = c.mask(state).nonzero().flatten().tolist()
                assert ids, "dead end"
                piece = rng.choice(ids)
                if piece == 3:
                    break
                pieces.append(PIECES[piece])
                state = c.advance(state, piece)
            tokens = decode(pieces)
            assert repair(tokens, [f"w{i}" for i in range(n_words)])[1] == Counter()


def test_with_a_real_sentencepiece_model(tmp_path):
    lines = ["(S (NP XX XX )NP (VP XX (SBAR XX (S (NP XX )NP (VP XX )VP )S )SBAR )VP XX )S",
             "(NP (NP XX )NP (PP XX (NP XX XX )NP )PP )NP", "(FRAG XX (ADJP XX )ADJP )FRAG"] * 30
    (tmp_path / "train.tree").write_text("\n".join(lines) + "\n")
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(input=str(tmp_path / "train.tree"), model_writer=model, vocab_size=40,
                                   model_type="bpe", pad_id=0, unk_id=1, bos_id=2, eos_id=3, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
    c = TreeConstraint.from_tokens(tree_tokens(tmp_path / "train.tree"), sp.encode, sp.get_piece_size(), sp.eos_id())
    rng = torch.Generator().manual_seed(0)
    for n_words in (1, 4, 9):
        state, ids = c.start(n_words), []
        while True:
            logits = torch.randn(sp.get_piece_size(), generator=rng)
            logits[~c.mask(state)] = -float("inf")
            piece = int(logits.argmax())
            if piece == sp.eos_id():
                break
            ids.append(piece)
            state = c.advance(state, piece)
        assert repair(sp.decode(ids).split(), ["w"] * n_words)[1] == Counter()
