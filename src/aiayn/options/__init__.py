"""Every option of the workflow, defined once: name, type, default (the paper's value), range or
choices, help and source, as frozen dataclasses with field metadata (:func:`option`). The stages
receive these dataclasses; the config's validation (:func:`build`, once, in
:func:`aiayn.config.validate`), its defaults and the command-line flags that set an option
(:func:`aiayn.cli.add_option`) are derived from them; ``aiayn-describe --config`` prints them all
with the config's values. Standard library only, below every layer.

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
           "TrainConfig", "TreebankConfig", "build", "check", "check_keys", "normalizes", "option", "to_dict"]

