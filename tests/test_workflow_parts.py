"""The corpus-sized data stages in parts (``data.chunks``) give the files one job per stage gives, byte for
byte, and a missing part is the only part that runs again."""

import re
from pathlib import Path

import pytest
import workflow_helpers
from workflow_helpers import ROOT

pytestmark = pytest.mark.slow

CONFIGS = [str(ROOT / "config.yaml"), str(ROOT / "configs/demo.yaml"), str(ROOT / "configs/test.yaml")]
TARGETS = [f"data/test/bin/{task}/train/manifest.json" for task in ("en-de", "en-fr")]


def _run(workdir: Path, chunks: int, *args):
    overlay = workdir / "chunks.yaml"
    overlay.write_text(f"data: {{chunks: {chunks}}}\n")
    return workflow_helpers.snakemake(workdir, *args, "--cores", "2", "--configfile", *CONFIGS, str(overlay))


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for stage in ("tok", "clean", "bpe", "bin")
        for path in sorted((root / stage).rglob("*"))
        if path.is_file()
    }


@pytest.fixture(scope="module")
def whole_and_parts(tmp_path_factory):
    built = {}
    for chunks in (1, 3):
        workdir = tmp_path_factory.mktemp(f"chunks{chunks}")
        _run(workdir, chunks, *TARGETS)
        built[chunks] = workdir
    return built


def test_parts_give_the_same_bytes(whole_and_parts):
    whole, parts = (_files(whole_and_parts[n] / "data/test") for n in (1, 3))
    assert any(name.startswith("bin/en-fr/train/") and name.endswith(".bin") for name in whole)
    assert sorted(whole) == sorted(parts)
    assert [name for name in whole if whole[name] != parts[name]] == []


def test_parts_are_temporary_and_logged(whole_and_parts):
    data = whole_and_parts[3] / "data/test"
    assert not [p for p in (data / "parts").rglob("*") if p.is_file()]
    log = (data / "logs/clean/en-de.1-3.log").read_text()
    assert "(part 1-3)" in log


def test_a_missing_part_alone_runs_again(tmp_path):
    target = "data/test/tok/en-de/europarl_v7.en"
    parts = [f"data/test/parts/tok/en-de/europarl_v7.en.{i}-3" for i in (0, 2)]
    _run(tmp_path, 3, "--notemp", *parts)
    plan = _run(tmp_path, 3, "--dry-run", target)
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", plan.stdout, re.M))
    assert (jobs.get("tokenize_part"), jobs.get("tokenize_gather")) == ("1", "1"), plan.stdout
    outputs = re.findall(r"^\s*output: (.+)$", plan.stdout, re.M)
    assert sorted(outputs) == ["data/test/parts/tok/en-de/europarl_v7.en.1-3", target]
