"""Every option of the workflow, defined once: name, type, default (the paper's value), range or
choices, help and source, as frozen dataclasses with field metadata (:func:`aiayn.options.core.option`). The stages
receive these dataclasses; the config's validation (:func:`aiayn.options.core.build`, once, in
:func:`aiayn.config.validate`), its defaults and the command-line flags that set an option
(:func:`aiayn.cli.add_option`) are derived from them; ``aiayn-describe --full`` prints them all
with the config's values. Standard library only, below every layer.

Words: the *config* is what a user writes (``config.yaml`` and overlays, :mod:`aiayn.config`); each
of its sections is a ``*Config`` class defined here, one *option* per field; a stage's *settings
file* is the part of the config that stage reads (:mod:`aiayn.settings`).

    model       ModelConfig                           defaults.model, experiments.<e>.model
    train       TrainConfig, RunConfig                defaults.train; a run's train settings file
    decode      AverageConfig, DecodeConfig           defaults.average, defaults.decode
    data        TokenizeConfig, CleanConfig, BpeConfig, ShardsConfig, DownloadConfig, DataConfig   data
    treebank    TreebankConfig                        tasks.<parsing task>
    evaluate    BleuConfig, PerplexityConfig          bleu, perplexity
    figures     FiguresConfig                         figures
    sources     Archive, Files                        sources
    workflow    Config                                the whole file
"""

from __future__ import annotations

from aiayn.options.data import (
    BpeConfig,
    CleanConfig,
    DataConfig,
    DownloadConfig,
    ShardsConfig,
    TokenizeConfig,
    normalizes,
)
from aiayn.options.decode import AverageConfig, DecodeConfig
from aiayn.options.evaluate import BleuConfig, PerplexityConfig
from aiayn.options.figures import FiguresConfig, FigureSpec, Layer
from aiayn.options.model import ModelConfig
from aiayn.options.train import RunConfig, TrainConfig
from aiayn.options.treebank import Silver, Splits, TreebankConfig
from aiayn.options.workflow import Config

__all__ = [
    "FiguresConfig",
    "AverageConfig",
    "BleuConfig",
    "Config",
    "DataConfig",
    "DecodeConfig",
    "DownloadConfig",
    "FigureSpec",
    "Layer",
    "BpeConfig",
    "CleanConfig",
    "ModelConfig",
    "PerplexityConfig",
    "RunConfig",
    "ShardsConfig",
    "Silver",
    "Splits",
    "TokenizeConfig",
    "TrainConfig",
    "TreebankConfig",
    "normalizes",
]
