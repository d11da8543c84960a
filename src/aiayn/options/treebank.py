"""A parsing task's keys (``config.yaml`` ``tasks.<parsing task>``; paper section 6.3)."""

from __future__ import annotations

from dataclasses import dataclass

from aiayn.options.core import Section, option

SECTIONS = {"minimum": 0, "maximum": 99}  # WSJ sections 00 to 24, and room for more
SPLIT_HELP = "WSJ sections [first, last]"


@dataclass(frozen=True)
class Splits(Section):
    """WSJ sections ``[first, last]`` per split (the paper: 2-21 train, 22 dev, 23 test)."""

    SECTION = "splits"

    train: tuple[int, int] = option(help=SPLIT_HELP, source="paper 6.3 (Vinyals et al.)", **SECTIONS)
    dev: tuple[int, int] = option(help=SPLIT_HELP, source="paper 6.3", **SECTIONS)
    test: tuple[int, int] = option(help=SPLIT_HELP, source="paper 6.3", **SECTIONS)

    def __post_init__(self) -> None:
        super().__post_init__()
        for split in ("train", "dev", "test"):
            first, last = getattr(self, split)
            if first > last:
                raise ValueError(f"splits.{split}: bad WSJ section range [{first}, {last}]")


@dataclass(frozen=True)
class Silver:
    """Silver trees of the semi-supervised setting: a file of one tree per line and how many per gold tree."""

    path: str = option(help="one tree per line")
    ratio: float = option(help="silver trees per gold training tree", minimum=0)


@dataclass(frozen=True)
class TreebankConfig(Section):
    """A parsing task's keys that shape its data: WSJ sections per split, the linearization (``xx``:
    tags as XX, Vinyals et al.; ``pos``: real tags; ``t2t``: tensor2tensor's bare labels and ``/X``
    closes, :mod:`aiayn.parsing.linearize`) and ``{path, ratio}`` of silver trees."""

    SECTION = "treebank"

    splits: Splits = option(
        help="WSJ sections per split", factory=lambda: Splits(train=(2, 21), dev=(22, 22), test=(23, 23))
    )
    linearization: str = option(
        "xx",
        help="tags as XX (Vinyals et al.), the real tags in the same brackets (pos), "
        "or tensor2tensor's bare labels with /X closes (t2t)",
        choices=("xx", "pos", "t2t"),
    )
    silver: Silver | None = option(None, help="silver trees (null: WSJ only)", source="paper 6.3")


@dataclass(frozen=True, kw_only=True)
class ParsingTask(TreebankConfig):
    """``tasks.<task>`` of ``kind: parsing``."""

    kind: str = option(help="the kind of task", choices=("parsing",))
    vocab_size: int = option(help="word-piece vocabulary, WSJ only (paper 6.3: 16K)", minimum=1)
    semi_supervised_vocab_size: int = option(help="word-piece vocabulary with silver trees (paper 6.3: 32K)", minimum=1)
    treebank: str | None = option(help="the LDC99T42 treebank directory (null: none yet)")
