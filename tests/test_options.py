"""aiayn.options: each option defined once; validation and defaults derived from the definitions."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import random
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from train_helpers import make_task, settings

from aiayn import config as aiayn_config
from aiayn import runs as aiayn_runs
from aiayn.options import Config, DecodeConfig, TrainConfig
from aiayn.options.core import Section, build, check, hints, option

ROOT = Path(__file__).resolve().parents[1]
PAPER = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))


def written_defaults(values: dict, cls: type, where: str) -> list[str]:
    """The keys of ``values`` (a section of type ``cls``) whose value is the definition's default."""
    found = []
    for field in dataclasses.fields(cls):
        if field.name not in values:
            continue
        value, kind = values[field.name], hints(cls)[field.name]
        if dataclasses.is_dataclass(kind) and isinstance(value, dict):
            found += written_defaults(value, kind, f"{where}.{field.name}")
            continue
        default = field.default if field.default is not dataclasses.MISSING else dataclasses.MISSING
        if default is not dataclasses.MISSING and value == (list(default) if isinstance(default, tuple) else default):
            found.append(f"{where}.{field.name}")
    return found


def test_config_yaml_writes_no_default_twice():
    """A default has one home, its definition: config.yaml's sections write only what differs (the
    experiments are data: a row may write a base value out)."""
    sections = {name: f for name, f in ((f.name, f) for f in dataclasses.fields(Config)) if name in aiayn_config.FILLED}
    found = [
        key for name in sections if name in PAPER for key in written_defaults(PAPER[name], hints(Config)[name], name)
    ]
    assert found == []


@pytest.mark.parametrize("overlays", [(), ("demo.yaml",), ("demo.yaml", "test.yaml")])
def test_the_shipped_configs_are_valid_and_complete(overlays):
    """Each shipped config validates, and validation fills in every option of a run's sections."""
    config = aiayn_config.load(ROOT / "config.yaml", *[ROOT / "configs" / name for name in overlays])
    assert set(config["defaults"]["train"]) == {f.name for f in dataclasses.fields(TrainConfig)}
    assert overlays or config["defaults"]["train"]["warmup_steps"] == TrainConfig().warmup_steps == 4000
    assert "vocab_size" not in config["data"]["bpe"]  # set by the workflow per task, not a config key


@pytest.mark.parametrize(
    "overlay, message",
    [
        (
            {"defaults": {"train": {"precision": "fp16"}}},
            "defaults.train.precision: 'fp16' is not one of auto, fp32, bf16",
        ),
        ({"defaults": {"train": {"warmup_steps": 0}}}, "defaults.train.warmup_steps: 0 is less than the minimum of 1"),
        ({"defaults": {"decode": {"beam_size": "4"}}}, "defaults.decode.beam_size: '4' is not an integer"),
        (
            {"experiments": {"A1": {"model": {"n_head": 2}}}},
            "unknown experiments.A1.model setting(s) ['n_head']; known: ['attention_bias', 'attention_dropout', 'd_ff'",
        ),
        (
            {"defaults": {"train": {"max_tokens": 25000}}},
            "defaults.train.max_tokens was renamed defaults.train.tokens_per_step",
        ),
        (
            {"experiments": {"big": {"train": {"max_tokens_per_batch": 100}}}},
            "experiments.big.train.max_tokens_per_batch was renamed experiments.big.train.tokens_per_pass",
        ),
        ({"tasks": {"en-de": {"src": "eng"}}}, "tasks.en-de.src: 'eng' does not match"),
        ({"tasks": {"en-de": {"kind": "speech"}}}, "tasks.en-de.kind: 'speech' is not one of translation, parsing"),
        (
            {"experiments": {"C1": {"model": {"n_layers": 0}}}},
            "experiments.C1.model.n_layers: 0 is less than the minimum",
        ),
        ({"data": {"bpe": {"vocab_size": 8000}}}, "unknown data.bpe setting(s) ['vocab_size']"),
        ({"figures": {"checkpoint": "best"}}, "figures.checkpoint: 'best' is not one of avg, last"),
        ({"bleu": {"straighten": "both"}}, "unknown bleu setting(s) ['straighten']; known: ['straighten_quotes']"),
        ({"defaults": {"train": 5}}, "defaults.train: 5 is not a mapping of settings"),
        ({"defaults": {"model": {"d_model": 511}}}, "defaults.model.d_model must be even for sinusoidal positions"),
        ({"tasks": {"wsj": {"splits": {"train": [5, 3]}}}}, "tasks.wsj.splits.train: bad WSJ section range [5, 3]"),
        ({"demo": {"seed": 1}}, "demo: missing train_pairs, eval_pairs, trees (required: no default)"),
        ({"defaults": {"train": {"adam_betas": [0.9]}}}, "defaults.train.adam_betas: [0.9] does not have 2 items"),
        ({"defaults": {"train": {"threads": 0}}}, "defaults.train.threads: 0 is less than the minimum of 1 (or null)"),
        (
            {"figures": {"figure3": {"heads": [0]}}},
            "figures.figure3.heads: 0 is less than the minimum of 1 (or 'auto')",
        ),
        ({"figures": {"figure3": {"heads": "some"}}}, "figures.figure3.heads: 'some' is not one of auto (or a list)"),
        # shapes that an overlay's deletions (aiayn.config.prune) meet before the definitions judge them
        ({"sources": [1]}, "sources: [1] is not a mapping"),
        ({"experiments": {"C5": {"tasks": [[1]]}}}, "experiments.C5.tasks: [1] is not a string"),
        ({"experiments": {"big": {"task_overrides": [1]}}}, "experiments.big.task_overrides: [1] is not a mapping"),
        ({"figures": {"task": {"a": 1}}}, "figures.task: {'a': 1} is not a string"),
        ({"tasks": {"en-de": {"kind": [1]}}}, "tasks.en-de.kind: [1] is not one of translation, parsing"),
        ({"defaults": {"model": {"dropout": float("nan")}}}, "defaults.model.dropout: nan is not a finite number"),
        (
            {"defaults": {"train": {"label_smoothing": float("inf")}}},
            "defaults.train.label_smoothing: inf is not a finite",
        ),
        (
            {"defaults": {"train": {"warmup_steps": 10**400}}},
            "defaults.train.warmup_steps: an integer of 401 digits is more than 64 bits hold",
        ),
        ({"defaults": {"train": {"seed": -1}}}, "defaults.train.seed: -1 is less than the minimum of 0"),
        ({"data": {"bpe": {"seed": 2**32 - 1}}}, "data.bpe.seed: 4294967295 is greater than the maximum of 4294967294"),
        (
            {"experiments": {"big": {"train": {"keep_checkpoints": 10}}}},
            "experiments.big (en-de): "
            "train.keep_checkpoints=10 keeps fewer checkpoints than average.last=20 averages; keep at least 20",
        ),
        (
            {"defaults": {"train": {"seed": 2**32 - 1}, "seeds": 2}},
            ", seed 2 of its 2: train.seed: 4294967296 is greater than the maximum of 4294967295",
        ),
    ],
)
def test_a_bad_value_is_refused_naming_the_key(tmp_path, overlay, message):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(overlay), encoding="utf-8")
    with pytest.raises(aiayn_config.ConfigError, match=re.escape(message)):
        aiayn_config.load(ROOT / "config.yaml", path)


@pytest.mark.parametrize("text", ["1e-9", "1.0e5", "1e5", "-2E3", "5e+0", "3.25e2", "1e30"])
@pytest.mark.parametrize("key", ["adam_eps", "warmup_steps"])
def test_a_number_yaml_reads_as_text_is_refused_with_how_to_write_it(tmp_path, text, key):
    """YAML 1.1 (PyYAML, and Snakemake's --configfile through it) reads ``1e-9`` as a string: the error
    says what to write instead, and what it says YAML reads as that number."""
    path = tmp_path / "bad.yaml"
    path.write_text(f"defaults:\n  train:\n    {key}: {text}\n", encoding="utf-8")
    assert yaml.safe_load(path.read_text())["defaults"]["train"][key] == text  # the gotcha itself
    with pytest.raises(aiayn_config.ConfigError, match=f"defaults.train.{key}: '{re.escape(text)}' is not") as error:
        aiayn_config.load(ROOT / "config.yaml", path)
    written = re.search(r"write (\S+)\)$", str(error.value))[1]
    assert yaml.safe_load(f"x: {written}")["x"] == (int(Decimal(text)) if written.isdigit() else float(text))


def test_norwegian_read_as_false_is_refused_with_how_to_quote_it(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("tasks:\n  en-de:\n    tgt: no\n", encoding="utf-8")
    with pytest.raises(
        aiayn_config.ConfigError,
        match=r"tasks.en-de.tgt: False is not a string \(YAML reads yes, "
        r"no, on and off as booleans: quote the text, as in 'no'\)",
    ):
        aiayn_config.load(ROOT / "config.yaml", path)
    assert yaml.safe_load("tgt: 'no'")["tgt"] == "no"


def test_the_seeds_allowed_are_the_seeds_the_libraries_take():
    """The largest ``data.bpe.seed`` is a seed sentencepiece keeps (one more is its "random seed"); the
    largest ``train.seed``, with extra seeds, a long run and many ranks, still gives torch a seed of a step
    it takes; and the smallest, 0, seeds NumPy's batch order."""
    import numpy as np
    import sentencepiece as spm
    import torch

    from aiayn.options import BpeConfig
    from aiayn.options.core import spec
    from aiayn.train.step import step_seed

    def bounds(cls, name):
        opt = spec({f.name: f for f in dataclasses.fields(cls)}[name])
        return opt.minimum, opt.maximum

    low, high = bounds(BpeConfig, "seed")
    spm.set_random_generator_seed(high)
    with pytest.raises(TypeError):  # an unsigned int
        spm.set_random_generator_seed(high + 2)
    with pytest.raises(TypeError):
        spm.set_random_generator_seed(low - 1)
    low, high = bounds(TrainConfig, "seed")
    torch.manual_seed(step_seed(high + 1000, 10**9, 4095))
    with pytest.raises(ValueError, match="Overflow"):  # the bound is not loose by orders of magnitude
        torch.manual_seed(step_seed(2 * high, 0, 0))
    np.random.default_rng([low, 0])
    with pytest.raises(ValueError):
        np.random.default_rng([low - 1, 0])


def _mutated(config: dict, rng: random.Random) -> dict:
    """``config`` with one to three of its entries replaced by a value of another shape, or deleted."""
    config = copy.deepcopy(config)
    odd = [
        None,
        0,
        -1,
        1.5,
        True,
        "x",
        "",
        [],
        [1],
        [[1]],
        {},
        {"a": 1},
        {"kind": [1]},
        "en-de",
        ["base"],
        float("nan"),
        10**9,
        "DELETE",
    ]
    for _ in range(rng.randint(1, 3)):
        node, path = config, []
        while isinstance(node, (dict, list)) and node and (not path or rng.random() < 0.7):
            path.append(rng.choice(list(node) if isinstance(node, dict) else range(len(node))))
            parent, node = node, node[path[-1]]
        if not path:
            continue
        value = rng.choice(odd)
        if value == "DELETE":
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(value)
    return config


def test_a_malformed_config_is_refused_naming_its_key_never_with_a_traceback():
    """Random reshapings of the demo's config (deleted keys, lists for mappings, unhashable names, NaN):
    each is valid or a ConfigError, through the overlay's deletions, the validation and the planning of its
    runs and settings files."""
    layers = [
        yaml.safe_load((ROOT / name).read_text(encoding="utf-8")) for name in ("config.yaml", "configs/demo.yaml")
    ]
    merged, rng, outcomes = aiayn_runs.deep_merge(*layers), random.Random(0), []
    for _ in range(1000):
        try:
            valid = aiayn_config.validate(aiayn_config.prune(_mutated(merged, rng)), source="mutated")
            aiayn_runs.settings_files(valid)
            outcomes.append("valid")
        except aiayn_config.ConfigError:
            outcomes.append("refused")
    assert outcomes.count("refused") > 500 and outcomes.count("valid") > 10  # the mutations reach both


@pytest.mark.parametrize("text, found", [("# nothing yet\n", "an empty file"), ("- a\n- b\n", "list")])
def test_an_overlay_that_is_not_a_mapping_is_refused_naming_it(tmp_path, text, found):
    """As Snakemake's --configfile refuses it: an empty overlay is a mistake, not a config of nothing."""
    (tmp_path / "overlay.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(
        aiayn_config.ConfigError, match=f"overlay.yaml: expected a mapping of settings at the top level, got {found}"
    ):
        aiayn_config.load(ROOT / "config.yaml", tmp_path / "overlay.yaml")


@pytest.mark.parametrize(
    "name, text, message",
    [
        (
            "overlay.yaml",
            "defaults:\n  train: {seed: 1\n",
            r"overlay\.yaml: not valid YAML: while parsing a flow mapping\n"
            r'  in ".*overlay\.yaml", line 2, column 10',
        ),
        ("run.json", '{"a": 1,}', r"run\.json: not valid JSON: Expecting property name .*: line 1 column 9"),
    ],
)
def test_a_config_file_that_does_not_parse_is_refused_naming_it_and_the_line(tmp_path, name, text, message):
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(aiayn_config.ConfigError, match=message):
        aiayn_config.load(ROOT / "config.yaml", tmp_path / name)


def test_a_stage_refuses_an_old_name_with_its_new_name():
    with pytest.raises(ValueError, match="train.max_tokens was renamed train.tokens_per_step"):
        TrainConfig.from_dict({"max_tokens": 25000})


def test_a_dataclass_made_by_hand_is_checked_by_the_same_definition():
    """A range written once binds a dataclass made by hand and the config alike."""
    with pytest.raises(ValueError, match="train.precision: 'fp16' is not one of auto, fp32, bf16"):
        TrainConfig(precision="fp16")
    with pytest.raises(ValueError, match="decode.cpu_matmul: 'blas' is not one of onednn, mkl"):
        DecodeConfig(cpu_matmul="blas")


@dataclasses.dataclass(frozen=True)
class Part(Section):
    SECTION = "part"
    name: str = option("class default", help="a name")
    size: int = option(1, help="a size", minimum=1)


@dataclasses.dataclass(frozen=True)
class Whole(Section):
    merged: Part = option(help="a part", factory=lambda: Part("field default", 2), merge=True)
    plain: Part = option(help="a part", factory=lambda: Part("field default", 2))


def test_a_merged_section_given_in_part_keeps_its_defaults_own_keys():
    """``merge``: the keys given override the field's default (a paper figure), not its class's defaults;
    without it, the class's defaults fill what is not given."""
    whole = build(Whole, {"merged": {"size": 3}, "plain": {"size": 3}}, "whole")
    assert whole.merged == Part("field default", 3) and whole.plain == Part("class default", 3)
    with pytest.raises(ValueError, match="whole.merged.size: 0 is less than the minimum of 1"):
        build(Whole, {"merged": {"size": 0}}, "whole")


def test_option_metadata_drives_check():
    @dataclasses.dataclass(frozen=True)
    class Toy:
        rate: float = option(0.5, help="a probability", minimum=0.0, exclusive_maximum=1.0)
        mode: str = option("a", help="a mode", choices=("a", "b"))
        pair: tuple[int, int] = option((1, 2), help="two positive integers", minimum=1)

    check(Toy(), "toy")
    for bad, message in (
        (Toy(rate=1.0), "toy.rate: 1.0 is greater than or equal to the maximum of 1.0"),
        (Toy(mode="c"), "toy.mode: 'c' is not one of a, b"),
        (Toy(pair=(1, 0)), "toy.pair: 0 is less than the minimum of 1"),
        (Toy(pair=(1, 2, 3)), r"toy.pair: \[1, 2, 3\] does not have 2 items"),
        (Toy(rate=True), "toy.rate: True is not a number"),
    ):
        with pytest.raises(ValueError, match=message):
            check(bad, "toy")


def test_the_search_takes_the_decode_settings_whole():
    """beam search has no option of its own to drift from the definitions: it takes a DecodeConfig."""
    import inspect

    beam = pytest.importorskip("aiayn.decode.beam")
    for search in (beam.beam_search_n_best, beam.translate_sentences_n_best):
        parameters = inspect.signature(search).parameters
        assert parameters["opts"].default == DecodeConfig()
        assert not {field.name for field in dataclasses.fields(DecodeConfig)} & set(parameters)


def test_a_training_process_builds_its_train_config_once(tmp_path, monkeypatch):
    """train/__main__ reads the settings file into one RunConfig and hands it to the Trainer."""
    pytest.importorskip("torch")
    from aiayn.train import __main__ as train_main

    built = []
    original = TrainConfig.__post_init__
    monkeypatch.setattr(TrainConfig, "__post_init__", lambda self: (built.append(self), original(self))[1])
    data = make_task(tmp_path / "bin", n_train=32, n_dev=4)
    path = tmp_path / "train.json"
    path.write_text(json.dumps(settings(train_steps=2, dev_every_steps=0)), encoding="utf-8")
    assert train_main.main(["--data", str(data), "--settings", str(path), "--out-dir", str(tmp_path / "out")]) == 0
    assert len(built) == 1


def test_parsing_the_config_loads_no_stage():
    """aiayn.config, aiayn.runs and aiayn.paths (what the Snakefile imports) and aiayn.options load neither
    torch nor the data tools, and aiayn.options nothing of aiayn but itself."""
    code = (
        "import sys, aiayn.config; heavy = {'torch', 'sacremoses', 'regex', 'tqdm', 'numpy'}; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy)); "
        "print(sorted(m for m in sys.modules if m.startswith('aiayn.') and not m.startswith('aiayn.options')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    ).stdout.splitlines()
    assert out == ["[]", "['aiayn.config', 'aiayn.paths', 'aiayn.runs']"]


def test_a_flag_takes_its_default_help_and_range_from_the_definition(capsys):
    import argparse

    from aiayn.cli import add_option, check_options, overridden
    from aiayn.options import PerplexityConfig

    parser = argparse.ArgumentParser()
    add_option(parser, "--tokens-per-batch", PerplexityConfig, "tokens_per_batch")
    assert "default: 8000" in " ".join(parser.format_help().split())
    args = parser.parse_args([])
    assert overridden(PerplexityConfig(), args) == PerplexityConfig()
    assert overridden(PerplexityConfig(), parser.parse_args(["--tokens-per-batch", "24"])).tokens_per_batch == 24
    with pytest.raises(SystemExit):
        check_options(parser, parser.parse_args(["--tokens-per-batch", "0"]), PerplexityConfig)
    assert "perplexity.tokens_per_batch: 0 is less than the minimum of 1" in capsys.readouterr().err
