"""Scoring settings: ``config.yaml``'s ``bleu`` and ``perplexity`` sections."""

from __future__ import annotations

from dataclasses import dataclass

from aiayn.options.core import Section, option

STRAIGHTEN_MODES = ("both", "reference", "none")


@dataclass(frozen=True)
class BleuConfig(Section):
    """The paper-method BLEU (:mod:`aiayn.evaluate.bleu`): where it straightens double quotes."""

    SECTION = "bleu"

    straighten_quotes: str = option(
        "both",
        help="straighten double quotes in both files, the reference only (as the paper), or none",
        choices=STRAIGHTEN_MODES,
        source="tensor2tensor issue #317 (the reference's quotes straightened "
        "by hand; double quotes only is our reading, aiayn.evaluate.bleu)",
    )


@dataclass(frozen=True)
class PerplexityConfig(Section):
    """Dev perplexity of a run's last checkpoint (:mod:`aiayn.evaluate.perplexity`; Table 3's PPL)."""

    SECTION = "perplexity"

    tokens_per_batch: int = option(
        8000, help="padded tokens per side of one evaluation batch (the perplexity does not depend on it)", minimum=1
    )
