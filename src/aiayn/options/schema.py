"""The JSON schema (2020-12) of the config file, written from the option definitions.

Every object is closed (``additionalProperties: false``: an unknown key is an error) and lists as
``x-renamed`` the former names of its keys, so that :func:`aiayn.config.validate` can say what a
key is called now. A field without default is required, except inside a ``partial`` section (one
that overrides defaults). A union of sections told apart by a one-choice ``kind`` becomes an
``if``/``then`` per kind, so that an error names the key of that kind's section.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import MISSING
from typing import Any

from aiayn.options.core import Option, hints, members, numeric_choices, renames, spec, string_choices

DIALECT = "https://json-schema.org/draft/2020-12/schema"
BOUNDS = {"minimum": "minimum", "exclusive_minimum": "exclusiveMinimum", "maximum": "maximum",
          "exclusive_maximum": "exclusiveMaximum"}


def document(cls: type, title: str) -> dict:
    """The schema of a file whose content is the dataclass ``cls``."""
    return {"$schema": DIALECT, "title": title, **section(cls)}


def section(cls: type, partial: bool = False) -> dict:
    """The object schema of the dataclass ``cls``: its config keys, closed; ``partial``: none required."""
    properties, required = {}, []
    for field in dataclasses.fields(cls):
        opt = spec(field)
        if not opt.in_config:
            continue
        properties[field.name] = _described(of_type(hints(cls)[field.name], opt), field, opt)
        if not partial and field.default is MISSING and field.default_factory is MISSING:
            required.append(field.name)
    result: dict[str, Any] = {"type": "object", "additionalProperties": False, "properties": properties}
    if required:
        result["required"] = required
    if renames(cls):
        result["x-renamed"] = renames(cls)
    return result


def _described(schema: dict, field: dataclasses.Field, opt: Option) -> dict:
    extra = {"description": opt.help} if opt.help else {}
    if opt.source:
        extra["x-source"] = opt.source
    if field.default is not MISSING and isinstance(field.default, (bool, int, float, str, tuple, type(None))):
        extra["default"] = list(field.default) if isinstance(field.default, tuple) else field.default
    return {**extra, **schema}


def of_type(kind: Any, opt: Option) -> dict:
    """The schema of a value of type ``kind`` under the constraints of ``opt``."""
    union = members(kind)
    if union is not None:
        return _union(union, opt)
    if dataclasses.is_dataclass(kind):
        return section(kind, opt.partial)
    if kind is bool:
        return {"type": "boolean"}
    if kind in (int, float):
        return {"type": "integer" if kind is int else "number", **_choices(numeric_choices(opt)), **_bounds(opt)}
    if kind is str:
        extra = {"pattern": opt.pattern} if opt.pattern else {}
        if opt.min_length is not None:
            extra["minLength"] = opt.min_length
        return {"type": "string", **_choices(string_choices(opt)), **extra}
    return _container(kind, opt)


def _union(union: tuple, opt: Option) -> dict:
    others = [member for member in union if member is not type(None)]
    nullable = len(others) < len(union)
    if len(others) == 1:
        schema = of_type(others[0], opt)
        if nullable and isinstance(schema.get("type"), str):
            return {**schema, "type": [schema["type"], "null"]}
        return {"anyOf": [schema, {"type": "null"}]} if nullable else schema
    if all(_kind_of(member) for member in others):
        return _by_kind(others, opt)
    branches = [of_type(member, opt) for member in others] + ([{"type": "null"}] if nullable else [])
    return {"anyOf": branches}


def _kind_of(cls: Any) -> str | None:
    """The one ``kind`` a dataclass of a union stands for, if it has one."""
    if not dataclasses.is_dataclass(cls):
        return None
    field = {f.name: f for f in dataclasses.fields(cls)}.get("kind")
    choices = spec(field).choices if field is not None else None
    return choices[0] if choices and len(choices) == 1 else None


def _by_kind(classes: list, opt: Option) -> dict:
    kinds = [_kind_of(cls) for cls in classes]
    return {"type": "object", "required": ["kind"], "properties": {"kind": {"enum": kinds}},
            "allOf": [{"if": {"properties": {"kind": {"const": kind}}, "required": ["kind"]},
                       "then": section(cls, opt.partial)} for kind, cls in zip(kinds, classes)]}


def _container(kind: Any, opt: Option) -> dict:
    origin, args = typing.get_origin(kind) or kind, typing.get_args(kind)
    items = {"minItems": opt.min_items} if opt.min_items is not None else {}
    if origin is dict:
        schema: dict[str, Any] = {"type": "object"}
        if args:
            schema["additionalProperties"] = of_type(args[1], opt)
        if opt.key_pattern:
            schema["propertyNames"] = {"pattern": opt.key_pattern}
        return {**schema, **({"minProperties": opt.min_items} if opt.min_items is not None else {})}
    if origin in (list, tuple):
        schema = {"type": "array", **({"items": of_type(args[0], opt)} if args else {}), **items}
        if origin is tuple and args and args[-1] is not Ellipsis:
            schema.update(minItems=len(args), maxItems=len(args))
        return schema
    if kind is Any or origin is object:
        return {}
    raise TypeError(f"no JSON schema for the type {kind!r}")


def _choices(choices: tuple | None) -> dict:
    return {"enum": list(choices)} if choices is not None else {}


def _bounds(opt: Option) -> dict:
    return {key: getattr(opt, name) for name, key in BOUNDS.items() if getattr(opt, name) is not None}
