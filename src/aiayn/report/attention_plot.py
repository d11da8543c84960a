"""Drawing the attention figures in the paper's style (Figures 3-5, arXiv 1706.03762 appendix).

The sentence is written twice, across the top (the attending words, queries) and across the bottom
(the attended words, keys); a line joins query word w to key word u with opacity A[w, u], one colour
per head (matplotlib's ``tab10`` by head number, the same head in the same colour in every figure).
Lines under ``MIN_WEIGHT`` are not drawn (they would be invisible). Input: :class:`aiayn.report.attention.Drawn`.
"""

from __future__ import annotations

import numpy as np
from matplotlib import colormaps
from matplotlib.collections import LineCollection
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Patch

MIN_WEIGHT = 0.01
INCH_PER_WORD = 0.32
PANEL_HEIGHT = 2.6


def colour(head: int) -> tuple[float, float, float]:
    """The colour of 0-based ``head``."""
    return to_rgb(colormaps["tab10"](head % 10))


def links(attn: np.ndarray, head: int, rows: list[int]) -> LineCollection:
    """The lines of one head's word attention (W, W) from the query words ``rows``."""
    segments, colours = [], []
    for w in rows:
        for u in np.flatnonzero(attn[w] >= MIN_WEIGHT):
            segments.append([(w, 1.0), (u, 0.0)])
            colours.append((*colour(head), min(1.0, float(attn[w, u]))))
    return LineCollection(segments, colors=colours, linewidths=2.2)


def panel(ax, drawn, heads: list[int], query: int | None, title: str) -> None:
    """One bipartite panel: lines of ``heads`` from word ``query`` (None: from every word)."""
    n = len(drawn.words)
    for head in heads:
        ax.add_collection(links(drawn.attn[head], head, list(range(n)) if query is None else [query]))
    for i, word in enumerate(drawn.words):
        weight = "bold" if i == query else "normal"
        ax.text(i, 1.03, word, rotation=90, ha="center", va="bottom", fontsize=9, fontweight=weight)
        ax.text(i, -0.03, word, rotation=90, ha="center", va="top", fontsize=9)
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_ylim(0.0, 1.0)
    ax.axis("off")
    ax.set_title(title, pad=62, fontsize=10)
    ax.legend(
        handles=[Patch(color=colour(h), label=f"head {h + 1}") for h in heads],
        loc="center left",
        bbox_to_anchor=(1.0, 0.5),
        frameon=False,
        fontsize=9,
    )


def _figure(drawn, panels: int) -> tuple[Figure, list]:
    figure = Figure(figsize=(max(6.0, INCH_PER_WORD * len(drawn.words) + 1.5), PANEL_HEIGHT * panels + 1.2 * panels))
    axes = figure.subplots(panels, 1, squeeze=False)[:, 0]
    figure.subplots_adjust(hspace=1.1)
    return figure, list(axes)


def _heads(drawn) -> str:
    return ", ".join(str(h + 1) for h in drawn.heads)


def figure3(drawn, layer: int, n_layers: int) -> Figure:
    """Figure 3: attention from one word, every chosen head in its colour."""
    figure, (ax,) = _figure(drawn, 1)
    word = drawn.words[drawn.query]
    panel(
        ax,
        drawn,
        drawn.heads,
        drawn.query,
        f"Encoder self-attention, layer {layer} of {n_layers}: from '{word}' only, heads {_heads(drawn)} "
        f"({drawn.chosen})",
    )
    return figure


def figure4(drawn, layer: int, n_layers: int) -> Figure:
    """Figure 4: top, every word's attention in the first head; bottom, the word's in each head."""
    figure, (top, bottom) = _figure(drawn, 2)
    word, first = drawn.words[drawn.query], drawn.heads[0]
    panel(top, drawn, [first], None, f"Layer {layer} of {n_layers}: full attentions for head {first + 1}")
    panel(
        bottom,
        drawn,
        drawn.heads,
        drawn.query,
        f"Isolated attentions from just '{word}' for heads {_heads(drawn)} ({drawn.chosen})",
    )
    return figure


def figure5(drawn, layer: int, n_layers: int) -> Figure:
    """Figure 5: every word's attention, one panel per head."""
    figure, axes = _figure(drawn, len(drawn.heads))
    for ax, head in zip(axes, drawn.heads):
        panel(ax, drawn, [head], None, f"Layer {layer} of {n_layers}, head {head + 1} ({drawn.chosen})")
    return figure


FIGURES = {"figure3": figure3, "figure4": figure4, "figure5": figure5}
