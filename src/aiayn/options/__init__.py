"""Every option of the workflow, defined once: name, type, default (the paper's value), range or
choices, help and source, as frozen dataclasses with field metadata (:func:`option`). The stages
receive these dataclasses; the config's JSON schema (:func:`schema`), its validation
(:func:`aiayn.config.validate`, :func:`build`) and the command-line flags that set an option
(:func:`aiayn.cli.add_option`) are derived from them. Standard library only, below every layer.

    model       ModelConfig                     defaults.model, experiments.<e>.model
    train       TrainConfig, StepPlan, RunSettings   defaults.train; a run's settings/train.json
    decode      AverageConfig, DecodeConfig     defaults.average, defaults.decode
    data        TokenizeConfig, LengthFilter, LearnOptions, ShardsConfig, DownloadConfig   data
    parsing     TreebankConfig                  tasks.<parsing task>
    evaluate    BleuConfig, PerplexityConfig    bleu, perplexity
    figures     AttentionSettings               figures
    sources     Archive, Files                  sources
    workflow    Config                          the whole file
"""

from __future__ import annotations

import functools

from aiayn.options.core import Option, build, check, check_keys, option, to_dict
from aiayn.options.data import (
    DataConfig,
    DownloadConfig,
    LearnOptions,
    LengthFilter,
    ShardsConfig,
    TokenizeConfig,
    normalizes,
)
from aiayn.options.decode import AverageConfig, DecodeConfig
from aiayn.options.evaluate import BleuConfig, PerplexityConfig
from aiayn.options.figures import AttentionSettings, FigureSpec, Layer
from aiayn.options.model import ModelConfig
from aiayn.options.parsing import Silver, Splits, TreebankConfig
from aiayn.options.train import RunSettings, StepPlan, TrainConfig
from aiayn.options.workflow import Config

__all__ = ["AttentionSettings", "AverageConfig", "BleuConfig", "Config", "DataConfig", "DecodeConfig",
           "DownloadConfig", "FigureSpec", "Layer", "LearnOptions", "LengthFilter", "ModelConfig", "Option",
           "PerplexityConfig", "RunSettings", "ShardsConfig", "Silver", "Splits", "StepPlan", "TokenizeConfig",
           "TrainConfig", "TreebankConfig", "build", "check", "check_keys", "normalizes", "option", "schema", "to_dict"]


@functools.lru_cache(maxsize=1)
def schema() -> dict:
    """The JSON schema (2020-12) of the whole config file, from the definitions."""
    from aiayn.options.schema import document
    return document(Config, "aiayn workflow configuration")
