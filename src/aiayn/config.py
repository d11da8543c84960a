"""Configuration: load, validate, resolve experiments into per-run settings, and split them per stage.

The config (``config.yaml``) holds the paper's setup as data. ``defaults`` is the base model and its
training, averaging and decoding; each entry of ``experiments`` overrides ``defaults`` only where the
paper's row differs, optionally per task (``task_overrides``) and, on a parsing task trained with silver
trees, for that setting (``semi_supervised``, paper section 6.3). :func:`resolve` merges them into the
settings of one run (one experiment on one task); :func:`settings_files` gives every stage its part
of the config, the content of the one settings file that stage reads (``aiayn.settings``).

Seeds: an experiment trains ``seeds`` models per task (``defaults.seeds``, overridable per experiment; 1,
the paper's single run, when unset), seed i (i = 0..k-1) being the run's ``train.seed`` + i. The first
keeps the run directory ``R/<task>/<exp>``; the others are runs of their own, ``R/<task>/<exp>.seed<S>``
(:func:`seed_runs`), so that ``seeds: 1`` changes no file and no job.

What runs: every experiment on each of its ``tasks``, or, with ``run: {tasks: [...], experiments: [...]}``,
only the chosen experiments on the chosen tasks (:func:`runs`). An overlay deletes an entry of ``tasks``,
``sources`` or ``experiments`` by setting it to ``null``, and a key of an experiment's ``model``,
``train``, ``average`` or ``decode`` (``defaults``' value applies) the same way (:func:`prune`).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

import yaml

from aiayn.options import AverageConfig, Config, DecodeConfig, FiguresConfig, ModelConfig, TrainConfig, normalizes
from aiayn.options.core import build, to_dict
from aiayn.options.sources import file_problem, is_archive
from aiayn.options.workflow import FigureRun

SECTIONS = ("model", "train", "average", "decode")
FILLED = ("threads", "data", "bleu", "perplexity", "defaults")  # absent keys take the definitions' defaults
SEED_RUN = "{experiment}.seed{seed}"  # the run directory of an experiment's seed after the first
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
        with open(name, encoding="utf-8") as handle:
            layer = json.load(handle) if str(name).endswith(".json") else yaml.safe_load(handle)
        # Refused as Snakemake refuses such a --configfile, an empty one too (snakemake/snakemake at ead894bd,
        # src/snakemake/common/configfile.py, load_configfile: "... given as JSON or YAML with keys at top level").
        if not isinstance(layer, dict):
            raise ConfigError(f"{name}: expected a mapping of settings at the top level, "
                              f"got {'an empty file' if layer is None else type(layer).__name__}")
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
    deleted: dict[str, set] = {}
    for key in DELETABLE:
        if isinstance(config.get(key), dict):
            deleted[key] = {name for name, value in config[key].items() if value is None}
            config[key] = {name: value for name, value in config[key].items() if value is not None}
    for source in (config.get("sources") or {}).values():
        if isinstance(source, dict) and isinstance(source.get("files"), dict):
            source["files"] = {lang: url for lang, url in source["files"].items() if url is not None}
    _prune_figures(config, deleted)
    experiments = config.get("experiments")
    if not isinstance(experiments, dict):
        return config
    for name, spec in list(experiments.items()):
        if isinstance(spec, dict):
            _prune_experiment(config, name, spec, deleted.get("tasks", set()))
    return config


def _prune_figures(config: dict, deleted: dict[str, set]) -> None:
    """No ``figures`` when an overlay deleted the task or the experiment they draw from."""
    figures = config.get("figures")
    if isinstance(figures, dict) and (figures.get("task") in deleted.get("tasks", set())
                                      or figures.get("experiment") in deleted.get("experiments", set())):
        log.info("figures: task %s or experiment %s deleted; no attention figures", figures.get("task"),
                 figures.get("experiment"))
        config["figures"] = None


def _prune_experiment(config: dict, name: str, spec: dict, deleted_tasks: set) -> None:
    if isinstance(spec.get("tasks"), list) and deleted_tasks & set(spec["tasks"]):
        log.info("experiments.%s: deleted task(s) %s dropped", name, sorted(deleted_tasks & set(spec["tasks"])))
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
    for sections in [spec, spec.get("semi_supervised"), *(spec.get("task_overrides") or {}).values()]:
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
    if config.get("figures"):
        config["figures"] = _check_figures(config, source)
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
    _check_seed_runs(config, source)


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
            raise ConfigError(f"{source}: run.experiments: {exp!r} trains on {config['experiments'][exp]['tasks']}, "
                              f"none of them in run.tasks {choice['tasks']} (set experiments.{exp}.tasks)")


def _check_files(config: dict, source: str) -> None:
    """Every plain file of a source that a chosen run reads can be read (:func:`aiayn.options.sources.file_problem`)."""
    tasks = config["tasks"]
    used = dict.fromkeys(c for task, _ in runs(config) if tasks[task]["kind"] == "translation"
                         for c in [*tasks[task]["train"], tasks[task]["dev"], tasks[task]["test"]])
    for corpus in used:
        for lang, url in config["sources"][corpus].get("files", {}).items():
            problem = file_problem(url)
            if problem:
                raise ConfigError(f"{source}: sources.{corpus}.files.{lang}: {problem}")


def _check_runs(config: dict, source: str) -> None:
    """Build every run's settings into the dataclasses its stages use, so that what they refuse (an odd
    ``d_model`` with sinusoids, say) is refused now, naming the experiment."""
    builders = {"model": ModelConfig.from_dict, "train": TrainConfig.from_dict,
                "average": AverageConfig.from_dict, "decode": DecodeConfig.from_dict}
    for task, exp in runs(config):
        settings = resolve(config, exp, task)
        for section, make in builders.items():
            try:
                make(settings[section])
            except ValueError as error:
                raise ConfigError(f"{source}: experiments.{exp} ({task}): {error}") from None


def _check_seed_runs(config: dict, source: str) -> None:
    """The run directory of an extra seed (:data:`SEED_RUN`) is not also an experiment's name."""
    for task, exp in runs(config):
        for name, seed in seed_runs(config, task, exp)[1:]:
            if name in config["experiments"]:
                raise ConfigError(f"{source}: experiments.{exp}.seeds: seed {seed} runs in {task}/{name}, "
                                  f"which is also an experiment's name; rename experiments.{name}")


FIGURE_RUN_KEYS = ("task", "experiment", "checkpoint")


def _check_figures(config: dict, source: str) -> dict:
    """``figures`` names a translation run, its settings build, and listed heads exist in that run's model;
    returns the section with the definitions' defaults filled in."""
    spec = config["figures"]
    try:
        run = build(FigureRun, {key: spec[key] for key in FIGURE_RUN_KEYS if key in spec}, "figures")
    except ValueError as error:
        raise ConfigError(f"{source}: {error}") from None
    task, exp = spec["task"], spec["experiment"]
    if config["tasks"].get(task, {}).get("kind") != "translation":
        raise ConfigError(f"{source}: figures.task: {task!r} is not a translation task of tasks")
    if exp not in config["experiments"]:
        raise ConfigError(f"{source}: figures.experiment: unknown experiment {exp!r}")
    try:
        opts = FiguresConfig.from_dict(figure_settings(config))
    except ValueError as error:
        raise ConfigError(f"{source}: {error}") from None
    if task in config["experiments"][exp]["tasks"]:  # else nothing is drawn (figures_run)
        n_heads = resolve(config, exp, task)["model"]["n_heads"]
        for name, figure in opts.specs().items():
            if any(head > n_heads for head in figure.listed_heads()):
                raise ConfigError(f"{source}: figures.{name}.heads: {list(figure.heads)}, but experiments.{exp} "
                                  f"has {n_heads} heads")
    return {**{key: to_dict(run)[key] for key in FIGURE_RUN_KEYS}, **to_dict(opts)}


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
        log.warning("figures: experiment %s on task %s is not run (its tasks, run:): no attention figures",
                    spec["experiment"], spec["task"])
        return None
    return {"task": spec["task"], "experiment": spec["experiment"], "checkpoint": spec.get("checkpoint", "avg"),
            "lang": config["tasks"][spec["task"]]["src"]}


def deep_merge(base: dict, override: dict) -> dict:
    """Return ``base`` with ``override`` applied recursively (dicts merge, everything else replaces)."""
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
        raise ConfigError(f"unknown experiment {experiment!r}; known: {sorted(config['experiments'])}") from None
    if task not in spec["tasks"]:
        raise ConfigError(f"experiment {experiment!r} does not train on task {task!r} (tasks: {spec['tasks']})")
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
    return [(experiment if i == 0 else SEED_RUN.format(experiment=experiment, seed=seed), seed)
            for i, seed in enumerate(seeds(config, experiment, task))]


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
    raise ConfigError(f"unknown run {run!r} on task {task!r}")


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
    files: dict[str, Any] = {f"{results_dir}/config.json": config,
                             f"{data_dir}/settings/download.json": {k: data.get(k) for k in ("mirror", "lock")}}
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
                    "normalize_punctuation": normalizes(data["tokenize"]["normalize_punctuation"], side)}
        if spec["kind"] == "parsing":
            files[f"{data_dir}/settings/{task}/treebank.json"] = {
                key: spec[key] for key in ("splits", "linearization", "silver") if key in spec}
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
