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
(:func:`seed_runs`), so that ``seeds: 1`` changes no file and no job.

What runs: every experiment on each of its ``tasks``, or, with ``run: {tasks: [...], experiments: [...]}``,
only the chosen experiments on the chosen tasks (:func:`runs`).
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from aiayn.options import TrainConfig, normalizes

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


def seeds(config: dict, experiment: str, task: str) -> list[int]:
    """The training seeds of ``experiment`` on ``task``: k = its ``seeds`` (else ``defaults.seeds``,
    else 1), seed i = the run's resolved ``train.seed`` + i for i = 0..k-1 (distinct, the first one
    the seed a single run trains with)."""
    k = config["experiments"][experiment].get("seeds", config["defaults"].get("seeds", 1))
    first = resolve(config, experiment, task)["train"].get("seed", TrainConfig.seed)
    return [first + i for i in range(k)]


def seed_runs(config: dict, task: str, experiment: str) -> list[tuple[str, int]]:
    """``[(run directory name, seed)]`` of ``experiment`` on ``task``: the experiment's own name for the
    first seed, :data:`SEED_RUN` (``base.seed2``) for each further one."""
    return [
        (experiment if i == 0 else SEED_RUN.format(experiment=experiment, seed=seed), seed)
        for i, seed in enumerate(seeds(config, experiment, task))
    ]


def run_names(config: dict) -> list[str]:
    """Every run directory name under ``R/<task>/``: each experiment's, then the extra seeds' of the runs
    the config trains."""
    extra = [name for task, exp in runs(config) for name, _ in seed_runs(config, task, exp)[1:]]
    return list(dict.fromkeys([*config["experiments"], *extra]))


def resolve_run(config: dict, run: str, task: str) -> dict:
    """:func:`resolve` for a run directory name (:func:`seed_runs`): an extra seed's run is its
    experiment's settings with ``train.seed`` set to that seed."""
    if run in config["experiments"]:
        return resolve(config, run, task)
    for exp in config["experiments"]:
        if task in config["experiments"][exp]["tasks"]:
            for name, seed in seed_runs(config, task, exp)[1:]:
                if name == run:
                    settings = resolve(config, exp, task)
                    settings["train"]["seed"] = seed
                    return settings
    raise ValueError(f"unknown run {run!r} on task {task!r}")


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


def settings_files(config: dict) -> dict[str, Any]:
    """Every settings file of a run, by path, and its content: the part of the config one stage reads.

    Data stages read sections of ``data`` (tokenizing one language of a task resolves the per-side
    ``normalize_punctuation``; a task's BPE adds its ``vocab_size``; the treebank stage its
    task's splits, linearization and silver trees); training reads a run's ``model`` and ``train`` (with
    ``experiment`` and ``task``), averaging and decoding their own sections, so that a new beam size
    decodes again without training again; each extra seed of a run (:func:`seed_runs`) has its own, its
    ``train.seed`` its only difference; the attention figures read ``figures`` less its run
    (``R/settings/attention.json``). ``R/config.json`` is the whole config, for the report.
    """
    data, data_dir, results_dir = config["data"], config["data_dir"], config["results_dir"]
    files: dict[str, Any] = {
        f"{results_dir}/config.json": config,
        f"{data_dir}/settings/download.json": {k: data.get(k) for k in ("mirror", "lock")},
    }
    for stage in ("clean", "shards"):
        files[f"{data_dir}/settings/{stage}.json"] = data[stage]
    files[f"{results_dir}/settings/bleu.json"] = config.get("bleu", {})
    files[f"{results_dir}/settings/perplexity.json"] = config.get("perplexity", {})
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
    for task, exp in runs(config):
        for name, _ in seed_runs(config, task, exp):
            settings = resolve_run(config, name, task)
            run = f"{results_dir}/{task}/{name}/settings"
            files[f"{run}/train.json"] = {k: settings[k] for k in ("model", "train", "experiment", "task")}
            files[f"{run}/average.json"] = settings["average"]
            files[f"{run}/decode.json"] = settings["decode"]
    if _draws_figures(config):
        files[f"{results_dir}/settings/attention.json"] = figure_settings(config)
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
