"""The runs a config trains and what each reads: which (task, experiment) pairs run, their seeds, the
settings of one run, and every stage's settings file. Takes the config as :func:`aiayn.config.load`
returns it (validated, the definitions' defaults filled in).

``defaults`` is the base model and its training, averaging and decoding; each entry of ``experiments``
overrides ``defaults`` only where the paper's row differs, optionally per task (``task_overrides``) and,
on a parsing task trained with silver trees, for that setting (``semi_supervised``, paper section 6.3).
:func:`resolve` merges them into the settings of one run (one experiment on one task);
:func:`settings_files` gives every stage its part of the config, the content of the one settings file
that stage reads (``aiayn.settings``).

Seeds: an experiment trains ``seeds`` models per task (``defaults.seeds``, overridable per experiment; 1,
the paper's single run, when unset), seed i (i = 0..k-1) being the run's ``train.seed`` + i. The first
keeps the run directory ``R/<task>/<exp>``; the others are runs of their own, ``R/<task>/<exp>.seed<S>``
(:meth:`Records.seeds`), so that ``seeds: 1`` changes no file and no job.

What runs: every experiment on each of its ``tasks``, or, with ``run: {tasks: [...], experiments: [...]}``,
only the chosen experiments on the chosen tasks (:func:`runs`).

The run record (:class:`Records`, built once per config): every run's typed settings (:class:`RunRecord`)
and its files (:class:`aiayn.paths.RunPaths`), and the files each table reads (:meth:`Records.table_inputs`).
The workflow's rules, the settings files and the report take runs and paths from it.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from aiayn.options import AverageConfig, DecodeConfig, ModelConfig, TrainConfig, normalizes
from aiayn.paths import AVERAGED, BASELINE, LAST, ResultPaths, RunPaths

SECTIONS = ("model", "train", "average", "decode")
SEED_RUN = "{experiment}.seed{seed}"  # the run directory of an experiment's seed after the first
FIGURE_RUN_KEYS = ("task", "experiment", "checkpoint")
log = logging.getLogger(__name__)


def deep_merge(base: dict, override: dict) -> dict:
    """Return ``base`` with ``override`` applied recursively (dicts merge, everything else replaces): a run's
    overrides onto ``defaults`` here, a config's overlays onto it in :func:`aiayn.config.load`."""
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def resolve(config: dict, experiment: str, task: str) -> dict:
    """Settings of one run: ``defaults``, then the experiment's sections, then its ``semi_supervised``
    sections if ``task`` is a parsing task with silver trees, then its task override.

    Returns a dict with the sections ``model``, ``train``, ``average``, ``decode`` plus ``experiment``
    and ``task`` names.
    """
    try:
        spec = config["experiments"][experiment]
    except KeyError:
        raise ValueError(f"unknown experiment {experiment!r}; known: {sorted(config['experiments'])}") from None
    if task not in spec["tasks"]:
        raise ValueError(f"experiment {experiment!r} does not train on task {task!r} (tasks: {spec['tasks']})")
    settings = {section: copy.deepcopy(config["defaults"][section]) for section in SECTIONS}
    settings = deep_merge(settings, {s: spec[s] for s in SECTIONS if s in spec})
    if is_semi_supervised(config["tasks"][task]):
        settings = deep_merge(settings, spec.get("semi_supervised", {}))
    settings = deep_merge(settings, spec.get("task_overrides", {}).get(task, {}))
    settings["experiment"] = experiment
    settings["task"] = task
    return settings


def _seeds(config: dict, experiment: str, settings: dict) -> list[tuple[str, int]]:
    """``[(run directory name, seed)]`` of ``experiment`` resolved as ``settings``: k = its ``seeds``
    (else ``defaults.seeds``, else 1), seed i = ``train.seed`` + i for i = 0..k-1 (distinct, the first
    one the seed a single run trains with); the first keeps the experiment's name, each further one is
    :data:`SEED_RUN` (``base.seed2``)."""
    k = config["experiments"][experiment].get("seeds", config["defaults"].get("seeds", 1))
    first = settings["train"].get("seed", TrainConfig.seed)
    return [
        (experiment if i == 0 else SEED_RUN.format(experiment=experiment, seed=first + i), first + i) for i in range(k)
    ]


def run_names(records: Records) -> list[str]:
    """Every run directory name under ``R/<task>/``: each experiment's, then the extra seeds' of the runs
    the config trains."""
    return list(dict.fromkeys([*records.config["experiments"], *(run.name for run in records)]))


def is_semi_supervised(task: dict) -> bool:
    """A parsing task trained with silver trees (``tasks.<task>.silver`` set; paper section 6.3)."""
    return task["kind"] == "parsing" and task.get("silver") is not None


def vocab_size(task: dict) -> int:
    """The subword vocabulary size a task learns: ``vocab_size``, or for a parsing task trained with
    silver trees ``semi_supervised_vocab_size`` (paper section 6.3: 16K WSJ only, 32K semi-supervised)."""
    if is_semi_supervised(task):
        return task["semi_supervised_vocab_size"]
    return task["vocab_size"]


def runs(config: dict, table: str | None = None) -> list[tuple[str, str]]:
    """Every (task, experiment) pair the config trains, optionally only those reported in ``table``.

    ``run.experiments`` and ``run.tasks`` (when given) limit them to the chosen experiments and tasks.
    """
    choice = config.get("run") or {}
    experiments, tasks = choice.get("experiments"), choice.get("tasks")
    return [
        (task, exp)
        for exp, spec in config["experiments"].items()
        if (table is None or table in spec["tables"]) and (experiments is None or exp in experiments)
        for task in spec["tasks"]
        if tasks is None or task in tasks
    ]


def decodes_test(config: dict, experiment: str) -> bool:
    """Whether a run of ``experiment`` is decoded and scored on the test set: reported in Table 2 or 4,
    or in no paper table (a researcher's own experiment). Table 3 rows are scored on dev only, as in the
    paper."""
    tables = config["experiments"][experiment]["tables"]
    return not tables or bool({"table2", "table4"} & set(tables))


def table_runs(config: dict) -> list[tuple[str, str]]:
    """``[(task, experiment)]`` of the experiments table: every run, but parsing without a treebank
    (nothing runs)."""
    tasks = config["tasks"]
    return [(t, e) for t, e in runs(config) if tasks[t]["kind"] != "parsing" or tasks[t].get("treebank")]


def table3_runs(config: dict) -> dict[str, str]:
    """``{experiment: task}`` of the Table 3 rows that run: each scored on the first of its tasks that runs
    (``en-de`` in the paper)."""
    first: dict[str, str] = {}
    for task, exp in runs(config, "table3"):
        first.setdefault(exp, task)
    return first


@dataclass(frozen=True)
class RunRecord:
    """One run (one seed of an experiment on a task): its settings, resolved once and typed, and its files.

    ``sections`` holds the resolved ``model``, ``train``, ``average`` and ``decode`` sections as the config
    gives them (what the settings files hold); ``model`` ... ``decode`` are the same, built."""

    task: str
    experiment: str
    name: str  # the run directory: the experiment's name, or SEED_RUN for a further seed
    seed: int
    translation: bool
    sections: dict[str, Any]
    paths: RunPaths

    @cached_property
    def model(self) -> ModelConfig:
        return ModelConfig.from_dict(self.sections["model"])

    @cached_property
    def train(self) -> TrainConfig:
        return TrainConfig.from_dict(self.sections["train"])

    @cached_property
    def average(self) -> AverageConfig:
        return AverageConfig.from_dict(self.sections["average"])

    @cached_property
    def decode(self) -> DecodeConfig:
        return DecodeConfig.from_dict(self.sections["decode"])

    def settings_files(self) -> dict[str, Any]:
        """The run's settings files and their content: training's ``model`` and ``train`` (with the
        experiment and task, which travel into every checkpoint), averaging's and decoding's sections."""
        return {
            self.paths.settings("train"): {
                "model": self.sections["model"],
                "train": self.sections["train"],
                "experiment": self.experiment,
                "task": self.task,
            },
            self.paths.settings("average"): self.sections["average"],
            self.paths.settings("decode"): self.sections["decode"],
        }


class Records:
    """Every run the config trains, each resolved once: by task and run directory name (:meth:`get`), the
    seeds of a (task, experiment) (:meth:`seeds`), and the files each table reads (:meth:`table_inputs`).
    ``results_dir`` defaults to the config's."""

    def __init__(self, config: dict, results_dir: str | None = None):
        self.config = config
        self.results = ResultPaths(str(results_dir if results_dir is not None else config["results_dir"]))
        self._seeds: dict[tuple[str, str], list[RunRecord]] = {}
        self._by_name: dict[tuple[str, str], RunRecord] = {}
        for task, exp in runs(config):
            settings = resolve(config, exp, task)
            translation = config["tasks"][task]["kind"] == "translation"
            for i, (name, seed) in enumerate(_seeds(config, exp, settings)):
                sections = {s: copy.deepcopy(settings[s]) for s in SECTIONS}
                if i:
                    sections["train"]["seed"] = seed
                record = RunRecord(task, exp, name, seed, translation, sections, self.results.run(task, name))
                self._seeds.setdefault((task, exp), []).append(record)
                self._by_name[(task, name)] = record

    def __iter__(self):
        return iter(self._by_name.values())

    def get(self, task: str, name: str) -> RunRecord:
        """The run in directory ``R/<task>/<name>``."""
        try:
            return self._by_name[(task, name)]
        except KeyError:
            raise ValueError(f"unknown run {name!r} on task {task!r}") from None

    def seeds(self, task: str, experiment: str) -> list[RunRecord]:
        """Every seed's run of ``experiment`` on ``task``, the first one first."""
        return self._seeds[(task, experiment)]

    def baseline(self, task: str) -> RunPaths:
        """The run directory of ``task``'s baselines."""
        return self.results.run(task, BASELINE)

    def table_inputs(self, table: str) -> list[str]:
        """Every file ``table`` reads (``table2``, ``table3``, ``table4``, ``experiments``), in reading order."""
        paths: list[str] = []
        if table == "table2":
            table2 = runs(self.config, "table2")
            for task in _tasks(table2):
                for exp in [e for t, e in table2 if t == task]:
                    paths += [self.get(task, exp).paths.bleu("test", AVERAGED), self.get(task, exp).paths.train.summary]
                paths.append(self.baseline(task).bleu("test", "copy"))
        elif table == "table3":
            for exp, task in table3_runs(self.config).items():
                for i, run in enumerate(self.seeds(task, exp)):
                    paths += [run.paths.bleu("dev", LAST), run.paths.dev_ppl] + ([] if i else [run.paths.train.summary])
        elif table == "table4":
            table4 = runs(self.config, "table4")
            paths += [self.get(task, exp).paths.evalb("test", AVERAGED) for task, exp in table4]
            paths += [self.baseline(task).evalb("test", "flat") for task in _tasks(table4)]
        elif table == "experiments":
            for task, exp in table_runs(self.config):
                for run in self.seeds(task, exp):
                    paths += list(self.experiment_files(run).values())
        else:
            raise ValueError(f"unknown table {table!r}")
        return paths

    def experiment_files(self, run: RunRecord) -> dict[str, str]:
        """What the experiments table reads of one seed's run: ``summary``, ``ppl`` (dev, last checkpoint),
        ``dev_bleu`` (translation) and ``test`` (the averaged checkpoints' BLEU or F1, for a run that
        :func:`decodes_test`)."""
        files = {"summary": run.paths.train.summary, "ppl": run.paths.dev_ppl}
        if run.translation:
            files["dev_bleu"] = run.paths.bleu("dev", LAST)
        if decodes_test(self.config, run.experiment):
            files["test"] = run.paths.score(run.translation, "test", AVERAGED)
        return files

    def inputs(self, tables: list[str]) -> list[str]:
        """Every file ``tables`` read, each once: the workflow's tables rule takes them."""
        return list(dict.fromkeys(path for table in tables for path in self.table_inputs(table)))


def _tasks(pairs: list[tuple[str, str]]) -> list[str]:
    return list(dict.fromkeys(task for task, _ in pairs))


def settings_files(config: dict, records: Records | None = None) -> dict[str, Any]:
    """Every settings file of a run, by path, and its content: the part of the config one stage reads
    (``records``: the config's run record, when the caller has built it already).

    Data stages read sections of ``data`` (tokenizing one language of a task resolves the per-side
    ``normalize_punctuation``; a task's BPE adds its ``vocab_size``; the treebank stage its
    task's splits, linearization and silver trees); training reads a run's ``model`` and ``train`` (with
    ``experiment`` and ``task``), averaging and decoding their own sections, so that a new beam size
    decodes again without training again; each extra seed of a run (:meth:`Records.seeds`) has its own, its
    ``train.seed`` its only difference; the attention figures read ``figures`` less its run
    (``R/settings/attention.json``). ``R/config.json`` is the whole config, for the report.
    """
    data, data_dir = config["data"], config["data_dir"]
    results = ResultPaths(config["results_dir"])
    files: dict[str, Any] = {
        results.config: config,
        f"{data_dir}/settings/download.json": {k: data.get(k) for k in ("mirror", "lock")},
    }
    for stage in ("clean", "shards"):
        files[f"{data_dir}/settings/{stage}.json"] = data[stage]
    files[results.settings("bleu")] = config.get("bleu", {})
    files[results.settings("perplexity")] = config.get("perplexity", {})
    for task, spec in config["tasks"].items():
        files[f"{data_dir}/settings/{task}/bpe.json"] = {**data["bpe"], "vocab_size": vocab_size(spec)}
        if spec["kind"] == "translation":
            for side, lang in (("source", spec["src"]), ("target", spec["tgt"])):
                files[f"{data_dir}/settings/{task}/tokenize.{lang}.json"] = {
                    **data["tokenize"],
                    "normalize_punctuation": normalizes(data["tokenize"]["normalize_punctuation"], side),
                }
        if spec["kind"] == "parsing":
            files[f"{data_dir}/settings/{task}/treebank.json"] = {
                key: spec[key] for key in ("splits", "linearization", "silver") if key in spec
            }
    for run in records if records is not None else Records(config):
        files.update(run.settings_files())
    if _draws_figures(config):
        files[results.settings("attention")] = figure_settings(config)
    return files


def figure_settings(config: dict) -> dict:
    """The ``figures`` section less the run it draws from: the figures stage's settings."""
    return {key: value for key, value in config["figures"].items() if key not in FIGURE_RUN_KEYS}


def _draws_figures(config: dict) -> bool:
    spec = config.get("figures")
    return bool(spec) and (spec["task"], spec["experiment"]) in runs(config)


def figures_run(config: dict) -> dict | None:
    """The run the attention figures are drawn from (``task``, ``experiment``, ``checkpoint``: avg or last,
    ``lang``: its source language), or None without ``figures`` or when ``run`` leaves that run out."""
    spec = config.get("figures")
    if not spec:
        return None
    if not _draws_figures(config):
        log.warning(
            "figures: experiment %s on task %s is not run (its tasks, run:): no attention figures",
            spec["experiment"],
            spec["task"],
        )
        return None
    return {
        "task": spec["task"],
        "experiment": spec["experiment"],
        "checkpoint": spec.get("checkpoint", "avg"),
        "lang": config["tasks"][spec["task"]]["src"],
    }
