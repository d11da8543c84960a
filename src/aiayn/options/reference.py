"""The configuration's reference, made from the definitions: ``docs/options.md`` (every key with its type,
default, range, whether a training resumes across a change of it, its source and help) and a JSON Schema
(2020-12) of the whole config file, ``workflow/schemas/config.schema.json``, for editors and other tools.

    python -m aiayn.options.reference            # write both files
    python -m aiayn.options.reference --check    # exit 1, naming the file, when either is stale

The project's own validation is :func:`aiayn.options.core.build` (it names the key and what to write
instead); the schema says the same of types, ranges, choices and unknown keys, less what needs code
(cross-references between sections, YAML's spelling traps). ``tests/test_options_reference.py`` fails
when either file is stale and checks the schema against the shipped configs. Standard library only.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

from aiayn.options.core import BOUNDS, NOT_GIVEN, hints, members, spec
from aiayn.options.workflow import Config

ROOT = Path(__file__).resolve().parents[3]
MARKDOWN = Path("docs/options.md")
SCHEMA = Path("workflow/schemas/config.schema.json")
SCALARS = {int: "integer", float: "number", str: "string", bool: "boolean"}


def sections(cls: type = Config, path: str = "") -> list[tuple[str, type]]:
    """(where in the config, dataclass) of every section under ``cls``, depth first, each class once."""
    found, seen = [(path, cls)], {cls}
    stack = [(path, cls)]
    while stack:
        where, current = stack.pop(0)
        for field in dataclasses.fields(current):
            if not spec(field).in_config:
                continue
            below = f"{where}.{field.name}" if where else field.name
            for inner, suffix in _dataclasses_in(hints(current)[field.name]):
                if inner not in seen:
                    seen.add(inner)
                    found.append((below + suffix, inner))
                    stack.append((below + suffix, inner))
    return found


def _dataclasses_in(kind: Any) -> list[tuple[type, str]]:
    """The dataclasses a field's type holds, with ``.<name>`` where they are a mapping's entries."""
    if dataclasses.is_dataclass(kind):
        return [(kind, "")]
    if typing.get_origin(kind) is dict:
        return [(inner, ".<name>" + suffix) for inner, suffix in _dataclasses_in(typing.get_args(kind)[1])]
    return [pair for member in (members(kind) or ()) for pair in _dataclasses_in(member)]


def type_name(kind: Any) -> str:
    """A field's type as the reference writes it: ``int``, ``int | null``, ``list of str``, a section's class."""
    if kind is type(None):
        return "null"
    if kind in SCALARS:
        return kind.__name__
    if dataclasses.is_dataclass(kind):
        return kind.__name__
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in args)
    if origin is dict:
        return f"mapping of {type_name(args[1])}"
    if origin in (list, tuple):
        if origin is tuple and args and args[-1] is not Ellipsis:
            return "[" + ", ".join(type_name(a) for a in args) + "]"
        return f"list of {type_name(args[0])}"
    return str(kind)


def default_of(field: dataclasses.Field) -> Any:
    """A field's default as plain data (a section's default as its mapping), or NOT_GIVEN."""
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return NOT_GIVEN
    return _plain(value)


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _range(field: dataclasses.Field) -> str:
    opt = spec(field)
    shown = [f"{sign} {getattr(opt, name)}" for name, sign, _, _ in BOUNDS if getattr(opt, name) is not None]
    if opt.choices:
        shown.append("one of " + ", ".join(str(c) for c in opt.choices))
    if opt.pattern:
        shown.append(f"matches `{opt.pattern}`")
    return "; ".join(shown)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown() -> str:
    """``docs/options.md``: one table per section of the config."""
    lines = [
        "# Options",
        "",
        "Every key of the config file, generated from the definitions in `src/aiayn/options/` by",
        "`python -m aiayn.options.reference` (do not edit by hand; `tests/test_options_reference.py` fails",
        "when this page is stale). A default is the paper's value where the paper gives one (**source**);",
        "`aiayn-describe config.yaml --full` prints the same with a config's own values. **resumable**: a",
        "training continues from its checkpoint after a change of this key (`aiayn.train.resume`).",
        "",
    ]
    for where, cls in sections():
        lines += [f"## `{where or '(top level)'}`: {cls.__name__}", ""]
        doc = (cls.__doc__ or "").strip().split("\n\n")[0]
        if doc and not doc.startswith(cls.__name__ + "("):
            lines += [" ".join(doc.split()), ""]
        lines += ["| key | type | default | range | resumable | source | help |", "|---|---|---|---|---|---|---|"]
        for field in dataclasses.fields(cls):
            opt = spec(field)
            if not opt.in_config:
                continue
            default = default_of(field)
            shown = "(required)" if default is NOT_GIVEN else f"`{json.dumps(default, ensure_ascii=False)}`"
            if isinstance(default, dict) and len(json.dumps(default)) > 60:
                shown = "(its section's defaults)"
            lines.append(
                "| "
                + " | ".join(
                    _cell(c)
                    for c in (
                        f"`{field.name}`",
                        type_name(hints(cls)[field.name]),
                        shown,
                        _range(field),
                        "yes" if opt.resumable else "",
                        opt.source or "",
                        opt.help,
                    )
                )
                + " |"
            )
        lines.append("")
    return "\n".join(lines)


def schema() -> dict:
    """The JSON Schema (2020-12) of the config file."""
    definitions: dict[str, dict] = {}
    root = _object_schema(Config, definitions)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://aiayn.invalid/workflow/schemas/config.schema.json",
        "title": "aiayn config (config.yaml and its overlays)",
        "description": "Generated from src/aiayn/options by python -m aiayn.options.reference.",
        **root,
        "$defs": dict(sorted(definitions.items())),
    }


def _object_schema(cls: type, definitions: dict) -> dict:
    properties, required = {}, []
    for field in dataclasses.fields(cls):
        opt = spec(field)
        if not opt.in_config:
            continue
        entry = _type_schema(hints(cls)[field.name], definitions)
        entry = dict(entry, **_constraints(field, hints(cls)[field.name]))
        if opt.help:
            entry["description"] = opt.help + (f" [{opt.source}]" if opt.source else "")
        default = default_of(field)
        if default is NOT_GIVEN:
            required.append(field.name)
        elif not isinstance(default, dict):
            entry["default"] = default
        properties[field.name] = entry
    out = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        out["required"] = required
    return out


def _type_schema(kind: Any, definitions: dict) -> dict:
    if kind is type(None):
        return {"type": "null"}
    if kind in SCALARS:
        return {"type": SCALARS[kind]} if kind is not float else {"type": "number"}
    if dataclasses.is_dataclass(kind):
        if kind.__name__ not in definitions:
            definitions[kind.__name__] = {}  # taken first: a type that refers to itself ends here
            definitions[kind.__name__] = _object_schema(kind, definitions)
        return {"$ref": f"#/$defs/{kind.__name__}"}
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_type_schema(a, definitions) for a in args]}
    if origin is dict:
        return {"type": "object", "additionalProperties": _type_schema(args[1], definitions)}
    if origin is list or (origin is tuple and args and args[-1] is Ellipsis):
        return {"type": "array", "items": _type_schema(args[0], definitions)}
    if origin is tuple:
        items = [_type_schema(a, definitions) for a in args]
        return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}
    raise TypeError(f"no schema for the type {kind!r}")


def _constraints(field: dataclasses.Field, kind: Any) -> dict:
    """The option's range and choices, on its numbers and strings wherever they sit in its type."""
    opt = spec(field)
    leaf: dict[str, Any] = {name: getattr(opt, name) for name, _, _, _ in BOUNDS if getattr(opt, name) is not None}
    if opt.choices:
        leaf["enum"] = list(opt.choices)
    if opt.pattern:
        leaf["pattern"] = opt.pattern
    if opt.min_length is not None:
        leaf["minLength"] = opt.min_length
    container = {"minItems": opt.min_items} if opt.min_items is not None else {}
    if not leaf:
        return container
    # numbers and strings inside a union or a tuple take the constraint; other members (null) do not
    return container | {
        "allOf": [
            {"if": {"type": ["number", "string"]}, "then": leaf},
            {"if": {"type": "array"}, "then": {"items": {"if": {"type": ["number", "string"]}, "then": leaf}}},
        ]
    }


def rendered() -> dict[Path, str]:
    """``{path under the checkout: its generated text}``."""
    return {MARKDOWN: markdown() + "\n", SCHEMA: json.dumps(schema(), indent=1, ensure_ascii=False) + "\n"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aiayn.options.reference", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say which file is stale (exit 1)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout (default: this one)")
    args = parser.parse_args(argv)
    stale = []
    for path, text in rendered().items():
        target = args.root / path
        if target.exists() and target.read_text(encoding="utf-8") == text:
            continue
        if args.check:
            stale.append(str(path))
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(target)
        print(f"wrote {path}")
    if stale:
        print(f"stale: {', '.join(stale)}: run python -m aiayn.options.reference", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
