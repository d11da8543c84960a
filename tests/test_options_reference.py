"""The generated configuration reference (``docs/options.md``) and JSON Schema
(``workflow/schemas/config.schema.json``) are what the definitions give now, and the schema accepts the
shipped configs (merged and pruned as the workflow reads them) and refuses what the validator refuses."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest
import yaml
from paths import ROOT

from aiayn import config as aiayn_config
from aiayn.options import reference


def test_the_reference_and_the_schema_are_not_stale():
    stale = [
        str(path) for path, text in reference.rendered().items() if (ROOT / path).read_text(encoding="utf-8") != text
    ]
    assert not stale, f"{stale} are stale: run python -m aiayn.options.reference"
    assert reference.main(["--check"]) == 0


def test_the_check_names_a_stale_file(tmp_path, capsys):
    for path, text in reference.rendered().items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text + ("edited\n" if path == reference.MARKDOWN else ""), encoding="utf-8")
    assert reference.main(["--check", "--root", str(tmp_path)]) == 1
    assert "stale: docs/options.md" in capsys.readouterr().err


def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads((ROOT / reference.SCHEMA).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def merged(*overlays: str) -> dict:
    """config.yaml with ``overlays`` merged and pruned as the workflow reads them, before defaults."""
    config: dict = {}
    for name in ("config.yaml", *overlays):
        config = aiayn_config.deep_merge(config, yaml.safe_load((ROOT / name).read_text(encoding="utf-8")))
    return aiayn_config.prune(config)


@pytest.mark.parametrize(
    "overlays", [(), ("configs/demo.yaml",), ("configs/demo.yaml", "configs/test.yaml"), ("configs/own-corpus.yaml",)]
)
def test_the_schema_accepts_the_shipped_configs(overlays):
    """As written (before defaults) and as validated (defaults filled in); the own-corpus template names
    files a user fills in, so it is read as written only."""
    check = validator()
    assert not [e.message for e in check.iter_errors(merged(*overlays))]
    if "configs/own-corpus.yaml" not in overlays:
        full = aiayn_config.load(ROOT / "config.yaml", *(ROOT / o for o in overlays))
        assert not [e.message for e in check.iter_errors(full)]


@pytest.mark.parametrize(
    "change, words",
    [
        (
            lambda c: c.setdefault("defaults", {}).setdefault("train", {}).update(warmup_step=4000),
            "Additional properties",
        ),
        (
            lambda c: c.setdefault("defaults", {}).setdefault("train", {}).update(warmup_steps=0),
            "less than the minimum",
        ),
        (lambda c: c.setdefault("defaults", {}).setdefault("train", {}).update(nan_policy="ignore"), "is not one of"),
        (
            lambda c: c.setdefault("defaults", {}).setdefault("model", {}).update(d_model="512"),
            "is not of type 'integer'",
        ),
    ],
)
def test_the_schema_refuses_what_the_validator_refuses(change, words):
    config = copy.deepcopy(merged())
    change(config)
    errors = " ".join(e.message for e in validator().iter_errors(config))
    assert words in errors, errors
    with pytest.raises(ValueError):
        aiayn_config.validate(config)
