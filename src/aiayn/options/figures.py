"""Settings of the attention figures: the keys of ``config.yaml`` ``figures`` but the run to draw from.

The paper's appendix ("Attention Visualizations", Figures 3, 4 and 5; ``visualizations.tex`` in the
arXiv 1706.03762 source) draws encoder self-attention "in layer 5 of 6" for two sentences. Defaults
here are the paper's: its sentences, its words ("making", "its") and its layer. Which heads it drew
is the one thing that does not carry over: head numbers belong to one trained model (Figure 4 names
heads 5 and 6 of the paper's), so heads are chosen from what the drawn model does (``heads: auto``)
unless listed (1-based, as the paper numbers them). Read without torch: the workflow checks these
when it parses its config (:func:`aiayn.config.validate`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aiayn.options.core import Section, option

FIGURE3_SENTENCE = (
    "It is in this spirit that a majority of American governments have passed new laws since 2009 "
    "making the registration or voting process more difficult."
)
FIGURE4_SENTENCE = (
    "The Law will never be perfect, but its application should be just - this is what we are missing, in my opinion."
)
FIGURES = ("figure3", "figure4", "figure5")
NEEDS_WORD = ("figure3", "figure4")  # the figures that draw attention from one word
APPENDIX = "paper appendix, visualizations.tex"


@dataclass(frozen=True)
class Layer(Section):
    """ "Layer ``index`` of ``of``": a model of N layers draws layer round(index * N / of) (1-based,
    halves up, at least 1), the same depth fraction; the paper's 5 of 6 is layer 5 of 6, 2 of 2, 3 of 4."""

    SECTION = "layer"

    index: int = option(5, help="the layer drawn, of `of`", source=APPENDIX, minimum=1)
    of: int = option(6, help="the depth `index` counts in", source=APPENDIX, minimum=1)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 1 <= self.index <= self.of:
            raise ValueError(f"layer: index must be between 1 and of, got index {self.index} of {self.of}")

    def of_model(self, n_layers: int) -> int:
        """The 1-based encoder layer of a model with ``n_layers`` layers."""
        return max(1, int(self.index * n_layers / self.of + 0.5))


@dataclass(frozen=True)
class FigureSpec(Section):
    """One figure: its sentence, the word attention is drawn from (Figures 3 and 4), and its heads:
    ``auto`` (``count`` heads chosen as :mod:`aiayn.report.attention` says) or a list of 1-based heads."""

    SECTION = "figure"

    sentence: str = option(help="the sentence drawn", source=APPENDIX, min_length=1)
    word: str | None = option(None, help="the word attention is drawn from (Figures 3 and 4)", min_length=1)
    heads: str | tuple[int, ...] = option(
        "auto",
        help="auto (count heads chosen from what the model does) or 1-based head numbers",
        choices=("auto",),
        minimum=1,
        min_items=1,
    )
    count: int = option(2, help="heads chosen with heads: auto", minimum=1)

    def __post_init__(self) -> None:
        if isinstance(self.heads, list):
            object.__setattr__(self, "heads", tuple(self.heads))
        super().__post_init__()
        if not self.sentence.strip():
            raise ValueError("figure: sentence is empty")
        if self.word is not None and not re.search(rf"(?<!\w){re.escape(self.word)}(?!\w)", self.sentence):
            raise ValueError(f"figure: word {self.word!r} is not a word of the sentence {self.sentence!r}")

    def listed_heads(self) -> tuple[int, ...]:
        return () if self.heads == "auto" else tuple(self.heads)


def _figure3() -> FigureSpec:
    return FigureSpec(FIGURE3_SENTENCE, "making", "auto", 4)  # the paper does not say how many heads it drew


def _figure4() -> FigureSpec:
    return FigureSpec(FIGURE4_SENTENCE, "its", "auto", 2)  # the paper: its model's heads 5 and 6


def _figure5() -> FigureSpec:
    return FigureSpec(FIGURE4_SENTENCE, None, "auto", 2)  # "two different heads" (Figure 5's caption)


@dataclass(frozen=True)
class FiguresConfig(Section):
    """The layer and the three figures; defaults: the paper's. A figure given in part keeps the rest of
    the paper's (``merge``)."""

    SECTION = "figures"

    layer: Layer = option(help="the encoder layer drawn", factory=Layer, merge=True)
    figure3: FigureSpec = option(help="Figure 3: attention from one word", factory=_figure3, merge=True)
    figure4: FigureSpec = option(help="Figure 4: one word's attention per head", factory=_figure4, merge=True)
    figure5: FigureSpec = option(help="Figure 5: every word's attention in two heads", factory=_figure5, merge=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in NEEDS_WORD:
            if getattr(self, name).word is None:
                raise ValueError(f"figures.{name}: word is required: the figure draws attention from one word")

    def specs(self) -> dict[str, FigureSpec]:
        return {name: getattr(self, name) for name in FIGURES}
