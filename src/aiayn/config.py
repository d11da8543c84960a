"""Configuration: load the config file and its overlays, delete what an overlay set to ``null``, and
validate the result against the definitions (:mod:`aiayn.options`) and its cross-references. What a
valid config runs, and what each run and stage reads, is :mod:`aiayn.runs`.

The config (``config.yaml``) holds the paper's setup as data: ``defaults``, the ``experiments`` that
override them where a paper row differs, the ``tasks`` and their ``sources``. An overlay deletes an entry
of ``tasks``, ``sources`` or ``experiments`` by setting it to ``null``, and a key of an experiment's
``model``, ``train``, ``average`` or ``decode`` (``defaults``' value applies) the same way (:func:`prune`).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

import yaml

from aiayn.options import Config
from aiayn.options.core import build, to_dict
from aiayn.options.sources import file_problem, is_archive
from aiayn.options.workflow import FigureRun
from aiayn.runs import FIGURE_RUN_KEYS, SECTIONS, Records, deep_merge, resolve, runs

FILLED = ("threads", "data", "bleu", "perplexity", "defaults")  # absent keys take the definitions' defaults
DELETABLE = ("tasks", "sources", "experiments")
log = logging.getLogger(__name__)


class ConfigError(ValueError):
    """A configuration problem, with the key path that causes it."""


def load(path: str | Path, *overlays: str | Path) -> dict:
    """Read a config file (YAML, or JSON as the workflow records a run's config) and ``overlays`` merged
    onto it in order (as ``--configfile`` does), then prune (:func:`prune`) and validate it
    (:func:`validate`: the defaults filled in); raises :class:`ConfigError` naming the file(s) and key."""
    config: dict = {}
    for name in (path, *overlays):
        is_json = str(name).endswith(".json")
        with open(name, encoding="utf-8") as handle:
            try:
                layer = json.load(handle) if is_json else yaml.safe_load(handle)
            except (json.JSONDecodeError, yaml.YAMLError) as error:  # YAML's says the line and column
                raise ConfigError(f"{name}: not valid {'JSON' if is_json else 'YAML'}: {error}") from None
        # Refused as Snakemake refuses such a --configfile, an empty one too (snakemake/snakemake at ead894bd,
        # src/snakemake/common/configfile.py, load_configfile: "... given as JSON or YAML with keys at top level").
        if not isinstance(layer, dict):
            raise ConfigError(
                f"{name}: expected a mapping of settings at the top level, "
                f"got {'an empty file' if layer is None else type(layer).__name__}"
            )
        config = deep_merge(config, layer)
    return validate(prune(config), source=" + ".join(str(name) for name in (path, *overlays)))


def prune(config: Any) -> Any:
    """``config`` without what an overlay deleted with ``null``.

    ``tasks.<t>: null``, ``sources.<s>: null``, ``sources.<s>.files.<lang>: null`` and
    ``experiments.<e>: null`` remove that entry; a
    removed task also leaves every experiment's ``tasks`` (and ``task_overrides``), and an experiment
    left without a task is removed, with a log line. ``null`` for a key of an experiment's ``model``,
    ``train``, ``average`` or ``decode`` (also under ``task_overrides``), or for its ``seeds``, removes
    the override, so ``defaults``' value applies; deleting the task or experiment ``figures`` draws from
    removes ``figures``. Anything else is returned unchanged (:func:`validate` judges it).
    """
    if not isinstance(config, dict):
        return config
    config = copy.deepcopy(config)
    deleted = {key: [] for key in DELETABLE}  # lists: a malformed entry compared with them may be unhashable
    for key in DELETABLE:
        if isinstance(config.get(key), dict):
            deleted[key] = [name for name, value in config[key].items() if value is None]
            config[key] = {name: value for name, value in config[key].items() if value is not None}
    for source in _values(config.get("sources")):
        if isinstance(source, dict) and isinstance(source.get("files"), dict):
            source["files"] = {lang: url for lang, url in source["files"].items() if url is not None}
    _prune_figures(config, deleted)
    experiments = config.get("experiments")
    if not isinstance(experiments, dict):
        return config
    for name, spec in list(experiments.items()):
        if isinstance(spec, dict):
            _prune_experiment(config, name, spec, deleted["tasks"])
    return config


def _values(mapping: Any) -> list:
    """The values of ``mapping``, or none if it is not a mapping (:func:`validate` judges that)."""
    return list(mapping.values()) if isinstance(mapping, dict) else []


def _prune_figures(config: dict, deleted: dict[str, list]) -> None:
    """No ``figures`` when an overlay deleted the task or the experiment they draw from."""
    figures = config.get("figures")
    if isinstance(figures, dict) and (
        figures.get("task") in deleted["tasks"] or figures.get("experiment") in deleted["experiments"]
    ):
        log.info(
            "figures: task %s or experiment %s deleted; no attention figures",
            figures.get("task"),
            figures.get("experiment"),
        )
        config["figures"] = None


def _prune_experiment(config: dict, name: str, spec: dict, deleted_tasks: list) -> None:
    gone = [t for t in spec["tasks"] if t in deleted_tasks] if isinstance(spec.get("tasks"), list) else []
    if gone:
        log.info("experiments.%s: deleted task(s) %s dropped", name, gone)
        spec["tasks"] = [t for t in spec["tasks"] if t not in deleted_tasks]
        if not spec["tasks"]:
            log.info("experiments.%s: no task left; not run", name)
            del config["experiments"][name]
            return
    if "seeds" in spec and spec["seeds"] is None:
        del spec["seeds"]
    overrides = spec.get("task_overrides")
    if isinstance(overrides, dict):
        spec["task_overrides"] = {t: v for t, v in overrides.items() if t not in deleted_tasks}
    for sections in [spec, spec.get("semi_supervised"), *_values(spec.get("task_overrides"))]:
        for section in SECTIONS:
            if isinstance(sections, dict) and isinstance(sections.get(section), dict):
                sections[section] = {k: v for k, v in sections[section].items() if v is not None}


def validate(config: Any, source: str = "config") -> dict:
    """``config`` checked against the definitions (:class:`aiayn.options.Config`, built once) and its
    cross-references, with the definitions' defaults filled in where the file leaves a key of
    :data:`FILLED` out; raises :class:`ConfigError` naming ``source`` and the full key."""
    try:
        typed = build(Config, config, "", in_file=True)
    except ValueError as error:
        raise ConfigError(f"{source}: {error}") from None
    config = {**config, **{name: to_dict(getattr(typed, name), in_file=True) for name in FILLED}}
    config = {f.name: config[f.name] for f in dataclasses.fields(Config) if f.name in config}  # the definitions' order
    _check_references(config, source)
    if typed.figures is not None:
        config["figures"] = _check_figures(config, typed.figures, source)
    return config


def _check_references(config: dict, source: str) -> None:
    tasks = config["tasks"]
    for name, task in tasks.items():
        if task["kind"] == "translation":
            for corpus in [*task["train"], task["dev"], task["test"]]:
                _check_source(config, name, corpus, source)
    for exp, spec in config["experiments"].items():
        for task in spec["tasks"]:
            if task not in tasks:
                raise ConfigError(f"{source}: experiments.{exp}.tasks: unknown task {task!r}")
        for task in spec.get("task_overrides", {}):
            if task not in spec["tasks"]:
                raise ConfigError(f"{source}: experiments.{exp}.task_overrides.{task}: not one of its tasks")
        if "semi_supervised" in spec and not any(tasks[t]["kind"] == "parsing" for t in spec["tasks"]):
            raise ConfigError(f"{source}: experiments.{exp}.semi_supervised: none of its tasks is a parsing task")
    _check_choice(config, source)
    _check_files(config, source)
    _check_runs(config, source)


def _check_source(config: dict, task: str, corpus: str, source: str) -> None:
    """A translation task's corpus names a source that has both of its languages."""
    spec, sources = config["tasks"][task], config["sources"]
    if corpus not in sources:
        raise ConfigError(f"{source}: tasks.{task}: unknown source {corpus!r} (not under sources)")
    langs, where = sources[corpus].get("files"), f"sources.{corpus}.files"
    if is_archive(sources[corpus]):
        members = sources[corpus]["members"]
        if task not in members:
            raise ConfigError(f"{source}: sources.{corpus}.members has no entry for task {task!r}")
        langs, where = members[task], f"sources.{corpus}.members.{task}"
    missing = {spec["src"], spec["tgt"]} - set(langs)
    if missing:
        raise ConfigError(f"{source}: {where} lacks language(s) {sorted(missing)}")


def _check_choice(config: dict, source: str) -> None:
    """``run.tasks`` and ``run.experiments`` name known entries, and every chosen experiment trains on
    a chosen task."""
    choice = config.get("run") or {}
    for key, known in (("tasks", config["tasks"]), ("experiments", config["experiments"])):
        for name in choice.get(key) or []:
            if name not in known:
                raise ConfigError(f"{source}: run.{key}: unknown {key[:-1]} {name!r}; known: {sorted(known)}")
    if choice.get("tasks") is None or choice.get("experiments") is None:
        return
    for exp in choice["experiments"]:
        if not set(config["experiments"][exp]["tasks"]) & set(choice["tasks"]):
            raise ConfigError(
                f"{source}: run.experiments: {exp!r} trains on {config['experiments'][exp]['tasks']}, "
                f"none of them in run.tasks {choice['tasks']} (set experiments.{exp}.tasks)"
            )


def _check_files(config: dict, source: str) -> None:
    """Every plain file of a source that a chosen run reads can be read (:func:`aiayn.options.sources.file_problem`)."""
    tasks = config["tasks"]
    used = dict.fromkeys(
        c
        for task, _ in runs(config)
        if tasks[task]["kind"] == "translation"
        for c in [*tasks[task]["train"], tasks[task]["dev"], tasks[task]["test"]]
    )
    for corpus in used:
        for lang, url in config["sources"][corpus].get("files", {}).items():
            problem = file_problem(url)
            if problem:
                raise ConfigError(f"{source}: sources.{corpus}.files.{lang}: {problem}")


def _check_runs(config: dict, source: str) -> None:
    """Build every run's settings, each seed's too, into the dataclasses its stages use
    (:class:`aiayn.runs.RunRecord`), so that what they refuse (an odd ``d_model`` with sinusoids, a last
    seed out of range) is refused now, naming the experiment; an extra seed's run directory
    (:data:`aiayn.runs.SEED_RUN`) is not also an experiment's; and the training keeps the checkpoints its
    averaging takes (else averaging would take fewer, with a warning, after the training)."""
    records = Records(config)
    for task, exp in runs(config):
        seeds = records.seeds(task, exp)
        for i, run in enumerate(seeds):
            where = f"experiments.{exp} ({task})" + (f", seed {i + 1} of its {len(seeds)}" if i else "")
            if i and run.name in config["experiments"]:
                raise ConfigError(
                    f"{source}: experiments.{exp}.seeds: seed {run.seed} runs in {task}/{run.name}, "
                    f"which is also an experiment's name; rename experiments.{run.name}"
                )
            try:
                built = (run.model, run.train, run.average, run.decode)
            except ValueError as error:
                raise ConfigError(f"{source}: {where}: {error}") from None
            keep, last = built[1].keep_checkpoints, built[2].last
            if keep < last:
                raise ConfigError(
                    f"{source}: {where}: train.keep_checkpoints={keep} keeps fewer "
                    f"checkpoints than average.last={last} averages; keep at least {last}"
                )


def _check_figures(config: dict, run: FigureRun, source: str) -> dict:
    """``figures`` names a translation run, and listed heads exist in that run's model; returns the
    section with the definitions' defaults filled in."""
    if config["tasks"].get(run.task, {}).get("kind") != "translation":
        raise ConfigError(f"{source}: figures.task: {run.task!r} is not a translation task of tasks")
    if run.experiment not in config["experiments"]:
        raise ConfigError(f"{source}: figures.experiment: unknown experiment {run.experiment!r}")
    if run.task in config["experiments"][run.experiment]["tasks"]:  # else nothing is drawn (figures_run)
        n_heads = resolve(config, run.experiment, run.task)["model"]["n_heads"]
        for name, figure in run.specs().items():
            if any(head > n_heads for head in figure.listed_heads()):
                raise ConfigError(
                    f"{source}: figures.{name}.heads: {list(figure.heads)}, but "
                    f"experiments.{run.experiment} has {n_heads} heads"
                )
    values = to_dict(run)
    return {**{key: values[key] for key in FIGURE_RUN_KEYS}, **values}
