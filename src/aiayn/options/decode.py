"""Averaging and decoding settings: the keys of ``config.yaml`` ``defaults.average`` and ``defaults.decode``."""

from __future__ import annotations

from dataclasses import dataclass

from aiayn.options.core import Section, option

PRECISIONS = ("auto", "fp32", "bf16")  # fp16 would need loss scaling; bf16 has fp32's range
CPU_MATMULS = ("onednn", "mkl")
INT8 = "int8"  # decoding only: aiayn.model.int8
EARLY_STOP_RULES = ("bound", "beam_finished")  # aiayn.decode.beam


def precision_option(help: str) -> object:
    """The arithmetic of a stage's forward passes (:mod:`aiayn.runtime.precision`): ``auto`` is bf16
    autocast on GPUs with bf16 tensor cores, fp32 elsewhere."""
    return option("auto", help=help, choices=PRECISIONS)


def cpu_matmul_option(help: str, default: str = "onednn", choices: tuple[str, ...] = CPU_MATMULS) -> object:
    """``onednn`` computes float32 CPU products through oneDNN (:mod:`aiayn.model.functional`), ``mkl``
    through torch's default, ``int8`` (decoding) in int8 (:mod:`aiayn.model.int8`)."""
    return option(default, help=help, choices=choices)


@dataclass(frozen=True)
class AverageConfig(Section):
    """How many of the last checkpoints to average (paper section 6.1: 5 for base, 20 for big)."""

    SECTION = "average"

    last: int = option(
        5, help="checkpoints averaged, the last ones spaced by train.checkpoint_steps", source="paper 6.1", minimum=1
    )


@dataclass(frozen=True)
class DecodeConfig(Section):
    """Beam search (paper section 6.1): beam 4, length penalty alpha 0.6, max length input + 50.

    The length penalty is GNMT's, score = log P(Y|X) / ((5 + |Y|) / 6)^alpha; at most
    ``max_len_a * |X| + max_len_b`` target tokens; ``early_stop`` ends a sentence once no live hypothesis can
    beat the finished ones; ``max_sentences`` is the batch size of the decoding loop.
    """

    SECTION = "decode"

    beam_size: int = option(4, help="hypotheses kept per sentence", source="paper 6.1", minimum=1)
    length_penalty: float = option(
        0.6, help="alpha of GNMT's length penalty ((5 + |Y|) / 6)^alpha", source="paper 6.1", minimum=0.0
    )
    max_len_a: float = option(
        1, help="target tokens at most max_len_a * |X| + max_len_b", source="paper 6.1 (input length + 50)", minimum=0.0
    )
    max_len_b: int = option(
        50, help="target tokens at most max_len_a * |X| + max_len_b", source="paper 6.1 (input length + 50)", minimum=0
    )
    early_stop: bool = option(
        True,
        help="end a sentence once no live hypothesis can beat the finished ones",
        source='paper 6.1 ("terminate early when possible")',
    )
    early_stop_rule: str = option(
        "bound",
        help="with early_stop: bound ends a sentence once no live hypothesis can beat the finished ones "
        "(tensor2tensor's rule: the output of a search to the length limit); beam_finished once beam_size "
        "hypotheses have finished (fairseq's and CTranslate2's rule, not the paper's: fewer decoder steps, "
        'and a better hypothesis may be missed; benchmarks/RESULTS.md, "Decoding speed")',
        source="paper 6.1; tensor2tensor utils/beam_search.py at 3d9c62f2",
        choices=EARLY_STOP_RULES,
    )
    min_length: int = option(
        1,
        help="tokens an output holds at least before its end symbol (0: none, so an empty output can win, "
        "as in tensor2tensor's search: docs/deviations.md)",
        source="fairseq min_len 1 (fairseq/dataclass/configs.py at v0.12.2); CTranslate2 min_decoding_length 1 "
        "(include/ctranslate2/translation.h at 0d8bcd36)",
        minimum=0,
    )
    max_source_length: int | None = option(
        None,
        help="source subwords a sentence may have to be decoded; a longer one gets an empty output line "
        "and a warning naming its line, and the BLEU file counts the empty outputs (null: the "
        "model's model.max_positions)",
        minimum=1,
    )
    max_sentences: int = option(128, help="sentences per batch of the decoding loop", minimum=1)
    precision: str = precision_option("arithmetic of decoding's forward passes")
    cpu_matmul: str = cpu_matmul_option(
        "CPU products of decoding: onednn or mkl (float32), or int8 (weights and inputs quantized: "
        "faster, BLEU in benchmarks/RESULTS.md)",
        choices=(*CPU_MATMULS, INT8),
    )
