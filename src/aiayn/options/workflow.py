"""The whole config file (``config.yaml`` plus ``--configfile`` overlays): its top-level keys, each
defined here or by a stage's settings. :func:`aiayn.config.validate` builds it once, which checks every
key and fills in the definitions' defaults, then checks the cross-references (a task an experiment
names exists, say) and builds every run's settings."""

from __future__ import annotations

from dataclasses import dataclass

from aiayn.options.core import option
from aiayn.options.data import DataConfig
from aiayn.options.decode import AverageConfig, DecodeConfig
from aiayn.options.evaluate import BleuConfig, PerplexityConfig
from aiayn.options.figures import FiguresConfig
from aiayn.options.model import ModelConfig
from aiayn.options.sources import LANG, Archive, Files
from aiayn.options.train import TrainConfig
from aiayn.options.treebank import ParsingTask

SEEDS_HELP = "models trained per run, seed i = train.seed + i (aiayn.runs.Records.seeds); 1 is the paper's single run"


@dataclass(frozen=True)
class Threads:
    """Threads per job of each kind (Snakemake lowers them to ``--cores``)."""

    data: int = option(1, help="threads of a data job", minimum=1)
    train: int = option(1, help="threads of a training job", minimum=1)
    decode: int = option(1, help="threads of a decoding or scoring job", minimum=1)


@dataclass(frozen=True)
class Demo:
    """Generate the demo's archives and treebank into ``data.mirror`` (``configs/demo.yaml``)."""

    seed: int = option(help="seed of the generated data")
    train_pairs: int = option(help="training sentence pairs per language pair", minimum=1)
    eval_pairs: int = option(help="sentence pairs of each dev and test set", minimum=1)
    trees: int = option(help="trees of the generated treebank", minimum=1)


@dataclass(frozen=True)
class TranslationTask:
    """``tasks.<task>`` of ``kind: translation``."""

    kind: str = option(help="the kind of task", choices=("translation",))
    vocab_size: int = option(help="shared subword vocabulary (paper 5.1: about 37000 EN-DE, 32000 EN-FR)", minimum=1)
    src: str = option(help="source language code", pattern=LANG)
    tgt: str = option(help="target language code", pattern=LANG)
    train: list[str] = option(help="the sources of the training corpus", min_items=1)
    dev: str = option(help="the source of the dev set")
    test: str = option(help="the source of the test set")


@dataclass(frozen=True)
class Run:
    """What runs; absent or null runs every experiment on each of its tasks."""

    tasks: list[str] | None = option(None, help="the tasks run (null: all)", min_items=1)
    experiments: list[str] | None = option(None, help="the experiments run (null: all)", min_items=1)


@dataclass(frozen=True, kw_only=True)
class FigureRun(FiguresConfig):
    """``figures``: the run drawn from, and the figures (:class:`FiguresConfig`: each figure's keys
    override that figure's defaults)."""

    task: str = option(help="the translation task of the run drawn")
    experiment: str = option(help="the experiment of the run drawn")
    checkpoint: str = option("avg", help="the averaged or the last checkpoint", choices=("avg", "last"))


@dataclass(frozen=True)
class Overrides:
    """Settings that override ``defaults`` where a paper row differs."""

    model: ModelConfig = option(help="model hyperparameters", factory=dict, override=True)
    train: TrainConfig = option(help="training", factory=dict, override=True)
    average: AverageConfig = option(help="checkpoint averaging", factory=dict, override=True)
    decode: DecodeConfig = option(help="beam search", factory=dict, override=True)


@dataclass(frozen=True, kw_only=True)
class Defaults:
    """The base model and its training, averaging and decoding."""

    seeds: int = option(1, help=SEEDS_HELP, minimum=1)
    model: ModelConfig = option(help="model hyperparameters", factory=ModelConfig)
    train: TrainConfig = option(help="training", factory=TrainConfig)
    average: AverageConfig = option(help="checkpoint averaging", factory=AverageConfig)
    decode: DecodeConfig = option(help="beam search", factory=DecodeConfig)


@dataclass(frozen=True, kw_only=True)
class Experiment(Overrides):
    """One experiment: where it differs from ``defaults``, optionally per task and for silver trees."""

    tasks: list[str] = option(help="the tasks it trains on", min_items=1)
    tables: list[str] = option(help="the paper tables reporting it", choices=("table2", "table3", "table4"))
    seeds: int | None = option(None, help=SEEDS_HELP + " (absent: defaults.seeds)", minimum=1)
    task_overrides: dict[str, Overrides] = option(help="overrides on one task", factory=dict)
    semi_supervised: Overrides = option(
        help="overrides for a parsing task trained with silver trees (tasks.<task>.silver set)", factory=Overrides
    )


@dataclass(frozen=True, kw_only=True)
class Config:
    """The whole config file."""

    data_dir: str = option(help="where data stages write (D)")
    results_dir: str = option(help="where runs, scores and reports go (R)")
    threads: Threads = option(help=Threads.__doc__.splitlines()[0], factory=Threads)
    demo: Demo | None = option(None, help=Demo.__doc__.splitlines()[0])
    data: DataConfig = option(help="data preparation", factory=DataConfig)
    bleu: BleuConfig = option(help="the paper-method BLEU (aiayn.evaluate.bleu)", factory=BleuConfig)
    perplexity: PerplexityConfig = option(help="dev perplexity (aiayn.evaluate.perplexity)", factory=PerplexityConfig)
    tasks: dict[str, TranslationTask | ParsingTask] = option(help="translation and parsing tasks", min_items=1)
    sources: dict[str, Archive | Files] = option(
        help="an archive (url, members per task and language) or plain files (files per language)"
    )
    run: Run | None = option(None, help=Run.__doc__.splitlines()[0])
    figures: FigureRun | None = option(
        None,
        help="the paper's attention figures 3-5 (aiayn.report.attention): "
        "the run drawn and the figures; null draws none",
    )
    defaults: Defaults = option(help=Defaults.__doc__.splitlines()[0], factory=Defaults)
    experiments: dict[str, Experiment] = option(help="paper rows and your own experiments", min_items=1)
