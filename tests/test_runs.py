"""What a valid config runs (:mod:`aiayn.runs`): the runs of each table, one run's settings, extra seeds,
and every stage's settings file, on config.yaml and its overlays."""

import copy
import json
import re
from pathlib import Path

import pytest
import yaml
from paths import ROOT

from aiayn import config as aiayn_config
from aiayn import runs as aiayn_runs
from aiayn.options import (
    AverageConfig,
    BleuConfig,
    BpeConfig,
    CleanConfig,
    DecodeConfig,
    DownloadConfig,
    ModelConfig,
    PerplexityConfig,
    ShardsConfig,
    TokenizeConfig,
    TrainConfig,
    TreebankConfig,
)
from aiayn.options.figures import FiguresConfig


@pytest.fixture(scope="module")
def paper():
    return aiayn_config.load(ROOT / "config.yaml")


def test_resolve_does_not_mutate_and_rejects_unknown(paper):
    before = copy.deepcopy(paper)
    aiayn_runs.resolve(paper, "big", "en-fr")
    assert paper == before
    with pytest.raises(ValueError, match="unknown experiment"):
        aiayn_runs.resolve(paper, "Z9", "en-de")
    with pytest.raises(ValueError, match="does not train on task"):
        aiayn_runs.resolve(paper, "A1", "en-fr")


def test_runs(paper):
    assert len(aiayn_runs.runs(paper, "table2")) == 4
    assert len(aiayn_runs.runs(paper, "table3")) == 22  # base and big train on both pairs
    assert aiayn_runs.runs(paper, "table4") == [("wsj", "parser")]


def _overlays(paper, *names):
    merged = paper
    for name in names:
        merged = aiayn_runs.deep_merge(merged, yaml.safe_load((ROOT / "configs" / name).read_text()))
    return merged


# What each settings file is read into, by the stage that reads it (its CLI's --settings).
READERS = {
    "download.json": lambda v: DownloadConfig.from_dict(v, "data"),
    "tokenize.<lang>.json": lambda v: TokenizeConfig.from_dict(v, "data.tokenize"),
    "clean.json": lambda v: CleanConfig.from_dict(v, "data.clean"),
    "shards.json": lambda v: ShardsConfig.from_dict(v, "data.shards"),
    "bpe.json": lambda v: BpeConfig.from_dict(v, "data.bpe"),
    "treebank.json": lambda v: TreebankConfig.from_dict(v, "tasks.wsj"),
    "train.json": lambda v: (ModelConfig.from_dict(v["model"]), TrainConfig.from_dict(v["train"])),
    "average.json": lambda v: AverageConfig.from_dict(v, "average"),
    "decode.json": lambda v: DecodeConfig.from_dict(v, "decode"),
    "bleu.json": lambda v: BleuConfig.from_dict(v, "bleu"),
    "perplexity.json": lambda v: PerplexityConfig.from_dict(v, "perplexity"),
    "config.json": lambda v: aiayn_config.validate(v),
    "attention.json": lambda v: FiguresConfig.from_dict(v),
}


@pytest.mark.parametrize("overlays", [(), ("demo.yaml",), ("demo.yaml", "test.yaml")])
def test_every_settings_file_is_read_by_its_stage(paper, overlays):
    files = aiayn_runs.settings_files(_overlays(paper, *overlays))
    assert {_reader(path) for path in files} == set(READERS)
    for path, content in files.items():
        READERS[_reader(path)](json.loads(json.dumps(content)))


def _reader(path):
    """READERS' key of a settings file: its name, the language of a tokenize file generalized."""
    return re.sub(r"^tokenize\.\w+\.json$", "tokenize.<lang>.json", Path(path).name)


def test_tokenize_settings_resolve_punctuation_normalization_per_side(paper):
    """{source: true, target: false} normalizes sources only (data.tokenize.normalize_punctuation)."""
    files = aiayn_runs.settings_files(
        aiayn_runs.deep_merge(
            paper, {"data": {"tokenize": {"normalize_punctuation": {"source": True, "target": False}}}}
        )
    )
    data = paper["data_dir"]
    normalized = {
        lang: files[f"{data}/settings/{task}/tokenize.{lang}.json"]["normalize_punctuation"]
        for task, lang in (("en-de", "en"), ("en-de", "de"), ("en-fr", "fr"))
    }
    assert normalized == {"en": True, "de": False, "fr": False}
    both = aiayn_runs.settings_files(
        aiayn_runs.deep_merge(paper, {"data": {"tokenize": {"normalize_punctuation": True}}})
    )
    assert both[f"{data}/settings/en-de/tokenize.de.json"]["normalize_punctuation"] is True


def test_stage_defaults_are_the_paper_config(paper):
    """Each stage run by hand (no --settings) runs what config.yaml says: the paper's setup."""
    files = aiayn_runs.settings_files(paper)
    defaults = {
        "download.json": DownloadConfig(),
        "en-de/tokenize.en.json": TokenizeConfig(),
        "clean.json": CleanConfig(),
        "shards.json": ShardsConfig(),
        "en-de/bpe.json": BpeConfig(),
        "treebank.json": TreebankConfig(),
        "base/settings/average.json": AverageConfig(),
        "base/settings/decode.json": DecodeConfig(),
        "results/settings/bleu.json": BleuConfig(),
        "results/settings/perplexity.json": PerplexityConfig(),
    }
    for suffix, default in defaults.items():
        [path] = [p for p in files if p.endswith(suffix) and "en-fr" not in p]
        assert READERS[_reader(path)](files[path]) == default, path
    model, train = READERS["train.json"](files["results/en-de/base/settings/train.json"])
    assert model == ModelConfig() and train == TrainConfig()


def test_a_decode_change_touches_only_that_runs_decode_file(paper):
    before = aiayn_runs.settings_files(paper)
    after = aiayn_runs.settings_files(
        aiayn_runs.deep_merge(paper, {"experiments": {"A1": {"decode": {"beam_size": 2}}}})
    )
    changed = sorted(path for path in before if before[path] != after[path])
    assert changed == ["results/config.json", "results/en-de/A1/settings/decode.json"]
    after = aiayn_runs.settings_files(aiayn_runs.deep_merge(paper, {"experiments": {"A2": {"model": {"d_ff": 128}}}}))
    changed = sorted(path for path in before if before[path] != after[path])
    assert changed == ["results/config.json", "results/en-de/A2/settings/train.json"]


def test_seeds_add_runs_that_differ_only_in_their_seed(paper):
    """``seeds: k`` adds k - 1 runs, seed i = train.seed + i, each with its own settings files; the first
    seed keeps the experiment's directory and files, and other runs are untouched."""
    assert paper["defaults"]["seeds"] == 1
    assert aiayn_runs.run_names(aiayn_runs.Records(paper)) == list(paper["experiments"])
    before = aiayn_runs.settings_files(paper)
    config = aiayn_runs.deep_merge(paper, {"experiments": {"C1": {"seeds": 3, "train": {"seed": 7}}}})
    aiayn_config.validate(config)
    seeds = aiayn_runs.Records(config).seeds("en-de", "C1")
    assert [(run.name, run.seed) for run in seeds] == [("C1", 7), ("C1.seed8", 8), ("C1.seed9", 9)]
    after = aiayn_runs.settings_files(config)
    assert sorted(set(after) - set(before)) == sorted(
        f"results/en-de/C1.seed{s}/settings/{stage}.json" for s in (8, 9) for stage in ("average", "decode", "train")
    )
    first, third = after["results/en-de/C1/settings/train.json"], after["results/en-de/C1.seed9/settings/train.json"]
    assert third["train"]["seed"] == 9 and third["experiment"] == "C1"
    assert {**third, "train": {**third["train"], "seed": 7}} == first
    records = aiayn_runs.Records(config)
    assert aiayn_runs.run_names(records)[-2:] == ["C1.seed8", "C1.seed9"]
    assert records.get("en-de", "C1.seed8").sections["train"]["seed"] == 8
    assert records.get("en-de", "C1.seed8").train.seed == 8 and records.get("en-de", "C1").train.seed == 7
    assert [run.name for run in records.seeds("en-de", "C1")] == ["C1", "C1.seed8", "C1.seed9"]
    per_task = aiayn_runs.deep_merge(
        paper, {"defaults": {"seeds": 2}, "experiments": {"big": {"task_overrides": {"en-fr": {"train": {"seed": 5}}}}}}
    )
    by_task = aiayn_runs.Records(per_task)
    assert [run.seed for run in by_task.seeds("en-de", "big")] == [1, 2]
    assert [run.seed for run in by_task.seeds("en-fr", "big")] == [5, 6]
