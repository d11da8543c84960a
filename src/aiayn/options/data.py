"""Data preparation settings: the keys of ``config.yaml`` ``data`` (tokenize, clean, bpe, shards and
where archives come from). What each step does and why these defaults: :mod:`aiayn.data.tokenize`,
:mod:`aiayn.data.clean`, :mod:`aiayn.data.bpe`, :mod:`aiayn.data.binarize`, :mod:`aiayn.data.download`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from aiayn.options.core import Section, option

SIDES = ("source", "target")
WMT16 = "google/seq2seq bin/data/wmt16_en_de.sh at d5bb7a1a"


@dataclass(frozen=True)
class PerSide:
    """A setting of each side of a task."""

    source: bool = option(help="the source side")
    target: bool = option(help="the target side")


@dataclass(frozen=True)
class TokenizeConfig(Section):
    """The keys of ``data.tokenize``: the Moses steps and the lines per work unit.

    In a tokenize stage's settings file ``normalize_punctuation`` is that file's side's value
    (``aiayn.runs.settings_files`` resolves the per-side setting with :func:`normalizes`).
    """

    SECTION = "data.tokenize"

    normalize_punctuation: bool | PerSide = option(
        False, help="Moses punctuation normalization, for both sides or per side of a task", source=WMT16
    )
    remove_non_printing: bool = option(False, help="remove-non-printing-char.perl", source=WMT16)
    aggressive_dash_splits: bool = option(False, help="tokenizer.perl -a", source=WMT16)
    escape: bool = option(False, help="tokenizer.perl's entity escaping (the paper's data was escaped)")
    chunk_lines: int = option(20000, help="lines per work unit of the worker processes", minimum=1)


def normalizes(setting: bool | PerSide | Mapping[str, bool], side: str) -> bool:
    """Whether ``data.tokenize.normalize_punctuation`` (a bool for both sides, or
    ``{source: bool, target: bool}``) normalizes the ``side`` (``source`` or ``target``) of a task."""
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, got {side!r}")
    if isinstance(setting, bool):
        return setting
    if isinstance(setting, PerSide):
        return getattr(setting, side)
    if (
        not isinstance(setting, Mapping)
        or set(setting) != set(SIDES)
        or not all(isinstance(v, bool) for v in setting.values())
    ):
        raise ValueError(
            f"data.tokenize.normalize_punctuation must be true, false or {{source: bool, target: bool}}, "
            f"got {setting!r}"
        )
    return setting[side]


@dataclass(frozen=True)
class CleanConfig(Section):
    """The keys of ``data.clean``, clean-corpus-n's rules; :meth:`reason` says why a pair is dropped
    (``None``: keep it)."""

    SECTION = "data.clean"

    min_len: int = option(1, help="fewest tokens of a side", source=WMT16, minimum=0)
    max_len: int | None = option(80, help="most tokens of a side (null: no limit)", source=WMT16, minimum=1)
    max_ratio: float | None = option(
        9, help="largest length ratio of the sides (null: none)", source="clean-corpus-n.perl's default", minimum=1
    )

    def reason(self, n_src: int, n_tgt: int) -> str | None:
        shorter, longer = min(n_src, n_tgt), max(n_src, n_tgt)
        if shorter == 0:
            return "empty"
        if shorter < self.min_len:
            return "too_short"
        if self.max_len is not None and longer > self.max_len:
            return "too_long"
        if self.max_ratio is not None and longer / shorter > self.max_ratio:
            return "ratio"
        return None


@dataclass(frozen=True)
class BpeConfig(Section):
    """``data.bpe`` and the task's ``vocab_size``; ``threads`` comes from the command line."""

    SECTION = "data.bpe"

    vocab_size: int = option(
        37000, help="subword vocabulary size (the task's vocab_size)", source="paper 5.1", minimum=1, in_config=False
    )
    model_type: str = option("bpe", help="sentencepiece model type", choices=("bpe", "unigram", "word"))
    character_coverage: float = option(1.0, help="sentencepiece character_coverage", exclusive_minimum=0.0, maximum=1.0)
    sample_sentences: int = option(10_000_000, help="training sentences sentencepiece learns from", minimum=1)
    # sentencepiece's seed is an unsigned int, and 2**32 - 1 there means a random one (google/sentencepiece
    # src/util.cc at v0.2.0, 17d7580d: SetRandomGeneratorSeed, kDefaultSeed)
    seed: int = option(1, help="seed of the sentence sample and of sentencepiece", minimum=0, maximum=2**32 - 2)
    threads: int = option(1, help="sentencepiece threads (--threads)", minimum=1, in_config=False)


@dataclass(frozen=True)
class ShardsConfig(Section):
    """The keys of ``data.shards``: a shard's largest size, in MiB."""

    SECTION = "data.shards"

    max_shard_mb: float = option(1024, help="largest size of one shard, in MiB", exclusive_minimum=0)


@dataclass(frozen=True)
class DownloadConfig(Section):
    """Where archives come from: ``mirror`` (None: the URLs), ``lock`` (None: the lock shipped in the package)."""

    SECTION = "data"

    mirror: str | None = option(None, help="a directory holding the archives (null: their URLs)")
    lock: str | None = option(None, help="the checksums file (null: the lock shipped in the package)")


@dataclass(frozen=True, kw_only=True)
class DataConfig(DownloadConfig):
    """``config.yaml``'s ``data`` section."""

    tokenize: TokenizeConfig = option(help="Moses tokenization (aiayn.data.tokenize)", factory=TokenizeConfig)
    clean: CleanConfig = option(help="length filter (aiayn.data.clean)", factory=CleanConfig)
    bpe: BpeConfig = option(help="the subword model (aiayn.data.bpe)", factory=BpeConfig)
    shards: ShardsConfig = option(help="binarized shards (aiayn.data.binarize)", factory=ShardsConfig)
    chunks: int = option(
        16,
        help="jobs each corpus-sized stage of a translation task runs as (tokenize, clean, encode and binarize "
        "its training data, each job a range of lines: aiayn.data.parts); any value gives the same files",
        minimum=1,
    )
