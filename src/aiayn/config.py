"""Configuration: load, validate, resolve experiments into per-run settings, and split them per stage.

The config (``config.yaml``) holds the paper's setup as data. ``defaults`` is the base model and its
training, averaging and decoding; each entry of ``experiments`` overrides ``defaults`` only where the
paper's row differs, optionally per task (``task_overrides``). :func:`resolve` merges them into the
settings of one run (one experiment on one task); :func:`settings_files` gives every stage its part
of the config, the content of the one settings file that stage reads (``aiayn.settings``).
"""

from __future__ import annotations

import copy
import functools
import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from aiayn.data.tokenize import normalizes
from aiayn.decode.settings import AverageConfig, DecodeConfig
from aiayn.model.config import ModelConfig
from aiayn.settings import from_section
from aiayn.train.settings import TrainConfig

SECTIONS = ("model", "train", "average", "decode")


class ConfigError(ValueError):
    """A configuration problem, with the key path that causes it."""


@functools.lru_cache(maxsize=1)
def schema() -> dict:
    text = resources.files("aiayn.resources").joinpath("config.schema.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def load(path: str | Path) -> dict:
    """Read and validate a config file (YAML, or JSON as the workflow records a run's config); raises
    :class:`ConfigError` naming the file and key."""
    with open(path, encoding="utf-8") as handle:
        config = json.load(handle) if str(path).endswith(".json") else yaml.safe_load(handle)
    validate(config, source=str(path))
    return config


def validate(config: Any, source: str = "config") -> None:
    """Check ``config`` against the JSON schema, then the cross-references the schema cannot see."""
    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"{source}: {_key_path(e.absolute_path)}: {e.message}" for e in errors[:10]]
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines))
    _check_references(config, source)


def _key_path(path) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def _check_references(config: dict, source: str) -> None:
    tasks, sources = config["tasks"], config["sources"]
    for name, task in tasks.items():
        if task["kind"] != "translation":
            continue
        pair = name
        for corpus in [*task["train"], task["dev"], task["test"]]:
            if corpus not in sources:
                raise ConfigError(f"{source}: tasks.{name}: unknown source {corpus!r} (not under sources)")
            members = sources[corpus]["members"]
            if pair not in members:
                raise ConfigError(f"{source}: sources.{corpus}.members has no entry for task {pair!r}")
            missing = {task["src"], task["tgt"]} - set(members[pair])
            if missing:
                raise ConfigError(f"{source}: sources.{corpus}.members.{pair} lacks language(s) {sorted(missing)}")
    for exp, spec in config["experiments"].items():
        for task in spec["tasks"]:
            if task not in tasks:
                raise ConfigError(f"{source}: experiments.{exp}.tasks: unknown task {task!r}")
        for task in spec.get("task_overrides", {}):
            if task not in spec["tasks"]:
                raise ConfigError(f"{source}: experiments.{exp}.task_overrides.{task}: not one of its tasks")
    _check_runs(config, source)


def _check_runs(config: dict, source: str) -> None:
    """Build every run's settings into the dataclasses its stages use, so that what they refuse (an odd
    ``d_model`` with sinusoids, say) is refused now, naming the experiment."""
    builders = {"model": ModelConfig.from_dict, "train": TrainConfig.from_dict,
                "average": lambda v: from_section(AverageConfig, v, "average"),
                "decode": lambda v: from_section(DecodeConfig, v, "decode")}
    for task, exp in runs(config):
        settings = resolve(config, exp, task)
        for section, build in builders.items():
            try:
                build(settings[section])
            except ValueError as error:
                raise ConfigError(f"{source}: experiments.{exp} ({task}): {error}") from None


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
    """Settings of one run: ``defaults``, then the experiment's sections, then its task override.

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
    settings = deep_merge(settings, spec.get("task_overrides", {}).get(task, {}))
    settings["experiment"] = experiment
    settings["task"] = task
    return settings


def vocab_size(task: dict) -> int:
    """The subword vocabulary size a task learns: ``vocab_size``, or for a parsing task trained with
    silver trees ``semi_supervised_vocab_size`` (paper section 6.3: 16K WSJ only, 32K semi-supervised)."""
    if task["kind"] == "parsing" and task.get("silver") is not None:
        return task["semi_supervised_vocab_size"]
    return task["vocab_size"]


def runs(config: dict, table: str | None = None) -> list[tuple[str, str]]:
    """Every (task, experiment) pair the config trains, optionally only those reported in ``table``."""
    return [
        (task, exp)
        for exp, spec in config["experiments"].items()
        if table is None or table in spec["tables"]
        for task in spec["tasks"]
    ]


def settings_files(config: dict) -> dict[str, Any]:
    """Every settings file of a run, by path, and its content: the part of the config one stage reads.

    Data stages read sections of ``data`` (tokenizing one language of a task resolves the per-side
    ``normalize_punctuation``; a task's BPE adds its ``vocab_size``; the treebank stage its
    task's splits, linearization and silver trees); training reads a run's ``model`` and ``train`` (with
    ``experiment`` and ``task``), averaging and decoding their own sections, so that a new beam size
    decodes again without training again. ``R/config.json`` is the whole config, for the report.
    """
    data, data_dir, results_dir = config["data"], config["data_dir"], config["results_dir"]
    files: dict[str, Any] = {f"{results_dir}/config.json": config,
                             f"{data_dir}/settings/download.json": {k: data.get(k) for k in ("mirror", "lock")}}
    for stage in ("clean", "shards"):
        files[f"{data_dir}/settings/{stage}.json"] = data[stage]
    for task, spec in config["tasks"].items():
        files[f"{data_dir}/settings/{task}/bpe.json"] = {**data["bpe"], "vocab_size": vocab_size(spec)}
        if spec["kind"] == "translation":
            for side, lang in (("source", spec["src"]), ("target", spec["tgt"])):
                files[f"{data_dir}/settings/{task}/tokenize.{lang}.json"] = {
                    **data["tokenize"], "normalize_punctuation": normalizes(data["tokenize"]["normalize_punctuation"], side)}
        if spec["kind"] == "parsing":
            files[f"{data_dir}/settings/{task}/treebank.json"] = {
                key: spec[key] for key in ("splits", "linearization", "silver") if key in spec}
    for task, exp in runs(config):
        settings = resolve(config, exp, task)
        run = f"{results_dir}/{task}/{exp}/settings"
        files[f"{run}/train.json"] = {k: settings[k] for k in ("model", "train", "experiment", "task")}
        files[f"{run}/average.json"] = settings["average"]
        files[f"{run}/decode.json"] = settings["decode"]
    return files
