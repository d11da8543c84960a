"""An option written once: :func:`option` puts its help, range, choices and source in a dataclass
field's metadata (fairseq's ``field(default=..., metadata={"help": ...})``, facebookresearch/fairseq
``fairseq/dataclass/configs.py`` at v0.12.2). :func:`build` validates a config section or a whole
config file from it, the one validator there is: the workflow runs it once, on the whole file, when
the Snakefile is parsed (:func:`aiayn.config.validate`). Standard library only: parsing the config
loads no stage.

A constraint applies to the scalar leaves of a field's type: ``minimum`` to the number itself, or to
each number of a ``tuple[float, float]``; ``choices`` to a string, also inside a union
(``str | tuple[int, ...]`` with ``choices=("auto",)``). A union of dataclasses is told apart by the
value's one-choice ``kind``, or else by its keys.
"""

from __future__ import annotations

import dataclasses
import decimal
import functools
import math
import operator
import re
import types
import typing
from dataclasses import MISSING, dataclass
from typing import Any, Mapping

KEY = "aiayn.option"


NOT_GIVEN = object()  # an Option's absent_means when it has none


@dataclass(frozen=True)
class Option:
    """What :func:`option` records of one field (see there)."""

    help: str = ""
    choices: tuple | None = None
    minimum: float | None = None
    exclusive_minimum: float | None = None
    maximum: float | None = None
    exclusive_maximum: float | None = None
    pattern: str | None = None
    min_length: int | None = None
    min_items: int | None = None
    key_pattern: str | None = None
    source: str | None = None
    renamed_from: tuple[str, ...] = ()
    absent_means: Any = NOT_GIVEN
    override: bool = False
    merge: bool = False
    in_config: bool = True
    resumable: bool = False


def option(
    default: Any = MISSING,
    *,
    help: str,
    factory: Any = MISSING,
    choices: tuple | None = None,
    renamed_from: str | tuple[str, ...] = (),
    **constraints: Any,
) -> Any:
    """A dataclass field with its definition: ``default`` (or ``factory``), ``help``, ``choices``,
    ``minimum``, ``exclusive_minimum``, ``maximum``, ``exclusive_maximum``, ``pattern`` and
    ``min_length`` (strings), ``min_items`` (lists, tuples, mappings), ``key_pattern`` (mapping keys),
    ``source`` (where the paper or its code sets the value), ``renamed_from`` (former names: a config
    using one gets an error naming the new name), ``absent_means`` (the value that behaves as the
    project did before the key existed: what a checkpoint written then is compared as), ``override``
    (a section of some keys that override a run's defaults: each key is checked alone, the section as a
    whole once merged into a run), ``merge`` (a mapping given for this section overrides the keys of the
    field's default, not of its class's defaults: a figure keeps its paper sentence when only its heads
    are given), ``in_config=False`` (set by the workflow, not a config key) and
    ``resumable`` (a training run may change it and continue from its checkpoint: :mod:`aiayn.train.resume`)."""
    renamed = (renamed_from,) if isinstance(renamed_from, str) else tuple(renamed_from)
    spec = Option(
        help=help, choices=tuple(choices) if choices is not None else None, renamed_from=renamed, **constraints
    )
    return dataclasses.field(default=default, default_factory=factory, metadata={KEY: spec})


def spec(field: dataclasses.Field) -> Option:
    return field.metadata.get(KEY) or Option()


@functools.lru_cache(maxsize=None)
def hints(cls: type) -> dict[str, Any]:
    """The evaluated field types of the dataclass ``cls``."""
    return typing.get_type_hints(cls)


def members(kind: Any) -> tuple | None:
    """The members of a union type (``int | None``), or None for any other type."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        return typing.get_args(kind)
    return None


def renames(cls: type) -> dict[str, str]:
    """``{former name: name}`` of the fields of ``cls``."""
    return {old: f.name for f in dataclasses.fields(cls) for old in spec(f).renamed_from}


def absent_values(cls: type) -> dict[str, Any]:
    """``{name: value}`` of the fields of ``cls`` added after settings were first written: the value
    that behaves as the project did without them (``absent_means``)."""
    return {f.name: spec(f).absent_means for f in dataclasses.fields(cls) if spec(f).absent_means is not NOT_GIVEN}


def key(section: str, name: Any) -> str:
    """The full key of ``name`` inside ``section`` (``defaults.train`` + ``seed``)."""
    return f"{section}.{name}" if section else str(name)


def check_keys(cls: type, values: Mapping[str, Any], section: str, in_file: bool = False) -> None:
    """Refuse a key that ``cls`` has no field for, naming it; a former name says the new one.
    ``in_file``: the keys of a config file, which has no ``in_config=False`` field."""
    known = {f.name for f in dataclasses.fields(cls) if spec(f).in_config or not in_file}
    for old, new in renames(cls).items():
        if old in values:
            raise ValueError(f"{key(section, old)} was renamed {key(section, new)}")
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown {section or 'top-level'} setting(s) {unknown}; known: {sorted(known)}")


def check(obj: Any, section: str) -> None:
    """Check every field of the dataclass instance ``obj`` against its definition; raises ValueError
    naming the full key (``train.precision: 'fp16' is not one of auto, fp32, bf16``)."""
    for field in dataclasses.fields(obj):
        problem = value_problem(getattr(obj, field.name), hints(type(obj))[field.name], spec(field))
        if problem:
            raise ValueError(f"{key(section, field.name)}: {problem}")


def value_problem(value: Any, kind: Any, opt: Option) -> str | None:
    """Why ``value`` is not a valid ``kind`` under ``opt`` (None: it is)."""
    union = members(kind)
    if union is not None:
        problems = [value_problem(value, member, opt) for member in union]
        if any(problem is None for problem in problems):
            return None
        typed = [p for member, p in zip(union, problems) if _is_instance(value, member)]
        others = [
            " or ".join(map(repr, opt.choices)) if member is str and opt.choices else _name(member)
            for member in union
            if not _is_instance(value, member)
        ]
        if not typed:
            return f"{_shown(value)} is not {' or '.join(others)}{_yaml_hint(value, union)}"
        return typed[0] + (f" (or {' or '.join(others)})" if others else "")
    if not _is_instance(value, kind):
        return f"{_shown(value)} is not {_name(kind)}{_yaml_hint(value, (kind,))}"
    if dataclasses.is_dataclass(kind) or kind in (type(None), bool, Any):
        return None
    if kind in (int, float):
        return _range_problem(value, opt)
    if kind is str:
        return _string_problem(value, opt)
    return _container_problem(value, kind, opt)


def _yaml_hint(value: Any, kinds: tuple) -> str:
    """How to write a value that YAML read as another type. PyYAML's implicit types are YAML 1.1's: a float
    needs a dot and a signed exponent (``1e-9`` and ``1.0e5`` are text, ``1.0e-9`` and ``1.0e+5`` floats),
    and yes, no, on and off are booleans (Norwegian's code ``no`` is false): yaml/pyyaml
    ``lib/yaml/resolver.py`` at 6.0.3 (49790e73). Snakemake reads a --configfile the same way, through yte
    (snakemake/snakemake ``src/snakemake/common/configfile.py`` at ead894bd; koesterlab/yte
    ``yte/__init__.py`` at v1.5.7, bd72fa4c: ``yaml.FullLoader``)."""
    if isinstance(value, bool) and str in kinds:
        return f" (YAML reads yes, no, on and off as booleans: quote the text, as in '{'yes' if value else 'no'}')"
    match = re.fullmatch(r"([-+]?\d+)(?:\.(\d*))?[eE]([-+]?)(\d+)", value) if isinstance(value, str) else None
    if match is None or not {int, float} & set(kinds):
        return ""
    number = decimal.Decimal(value)  # exact: 1e30 is 10**30, not float's 1000000000000000019884624838656
    written = (
        str(int(number))
        if int in kinds and number == number.to_integral_value()
        else f"{match[1]}.{match[2] or 0}e{match[3] or '+'}{match[4]}"
    )
    return f" (YAML reads {value} as text: write {written})"


def _shown(value: Any) -> str:
    """``value`` as a config file writes it: a tuple as the list it was read from."""
    return repr(list(value)) if isinstance(value, tuple) else repr(value)


def _is_instance(value: Any, kind: Any) -> bool:
    origin = typing.get_origin(kind) or kind
    if kind is Any:
        return True
    if kind is type(None):
        return value is None
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if origin in (tuple, list):
        return isinstance(value, (tuple, list))
    if origin is dict:
        return isinstance(value, Mapping)
    return isinstance(value, origin)


def _name(kind: Any) -> str:
    names = {type(None): "null", bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    if kind in names:
        return names[kind]
    if dataclasses.is_dataclass(kind):
        return "a mapping of settings"
    origin = typing.get_origin(kind) or kind
    return {tuple: "a list", list: "a list", dict: "a mapping"}.get(origin, f"a {getattr(kind, '__name__', kind)}")


# an Option's bounds: the field, the relation a value must have to it, and the words for a value without it
BOUNDS = (
    ("minimum", ">=", operator.ge, "less than the minimum of"),
    ("exclusive_minimum", ">", operator.gt, "less than or equal to the minimum of"),
    ("maximum", "<=", operator.le, "greater than the maximum of"),
    ("exclusive_maximum", "<", operator.lt, "greater than or equal to the maximum of"),
)


def _range_problem(value: float, opt: Option) -> str | None:
    # YAML's .nan and .inf and JSON's NaN and Infinity: no option means them, and NaN passes every bound
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value!r} is not a finite number"
    # YAML's integers have any size; torch, NumPy and a settings file's readers hold 64 bits
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        return f"an integer of {len(str(abs(value)))} digits is more than 64 bits hold"
    for name, _, holds, words in BOUNDS:
        bound = getattr(opt, name)
        if bound is not None and not holds(value, bound):
            return f"{value!r} is {words} {bound!r}"
    return None


def _string_problem(value: str, opt: Option) -> str | None:
    if opt.choices is not None and value not in opt.choices:
        return f"{value!r} is not one of {', '.join(map(str, opt.choices))}"
    if opt.pattern is not None and not re.search(opt.pattern, value):
        return f"{value!r} does not match {opt.pattern!r}"
    if opt.min_length is not None and len(value) < opt.min_length:
        return f"{value!r} is shorter than {opt.min_length}"
    return None


def _container_problem(value: Any, kind: Any, opt: Option) -> str | None:
    args, origin = typing.get_args(kind), typing.get_origin(kind)
    if opt.min_items is not None and len(value) < opt.min_items:
        return f"{_shown(value)} has fewer than {opt.min_items} items"
    if origin is dict:
        for key, item in value.items():
            if opt.key_pattern is not None and not re.search(opt.key_pattern, str(key)):
                return f"key {key!r} does not match {opt.key_pattern!r}"
            problem = value_problem(item, args[1], opt) if args else None
            if problem:
                return f"{key}: {problem}"
        return None
    if origin is tuple and args and args[-1] is not Ellipsis and len(value) != len(args):
        return f"{_shown(value)} does not have {len(args)} items"
    for item in value:
        problem = value_problem(item, args[0], opt) if args else None
        if problem:
            return problem
    return None


class Section:
    """Base of a settings dataclass: checked against its definitions when made (``__post_init__``;
    a subclass with cross-field checks calls ``super().__post_init__()`` first), built from a config
    section by :meth:`from_dict`. ``SECTION`` is its key path in the config, for error messages."""

    SECTION = ""

    def __post_init__(self) -> None:
        check(self, self.SECTION)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], section: str | None = None) -> Any:
        """Build from a config section; an unknown key or a bad value raises ValueError naming it."""
        return build(cls, values, section or cls.SECTION)

    def to_dict(self) -> dict[str, Any]:
        return to_dict(self)


def build(cls: type, values: Any, section: str, in_file: bool = False, partial: bool = False) -> Any:
    """``cls`` built from a config section (nested sections from mappings, lists as tuples where the
    type says so); an unknown key or a bad value raises ValueError naming the full key. ``in_file``:
    ``values`` come from a config file (see :func:`check_keys`); ``partial``: the section overrides
    some keys of ``cls`` (an ``override`` field), each checked alone, and stays the mapping it is."""
    if not isinstance(values, Mapping):
        raise ValueError(f"{section or 'the config'}: expected a mapping of settings, got {type(values).__name__}")
    check_keys(cls, values, section, in_file)
    kwargs = {}
    for field in dataclasses.fields(cls):
        if field.name in values:
            kind, where, opt = hints(cls)[field.name], key(section, field.name), spec(field)
            if opt.override:
                kwargs[field.name] = build(kind, values[field.name], where, in_file, partial=True)
                continue
            value = values[field.name]
            if opt.merge and isinstance(value, Mapping):
                value = {**to_dict(field.default_factory() if field.default is MISSING else field.default), **value}
            value = _convert(value, kind, where, in_file)
            problem = value_problem(value, kind, opt)
            if problem:
                raise ValueError(f"{where}: {problem}")
            kwargs[field.name] = value
    if partial:
        return dict(values)
    missing = [
        f.name
        for f in dataclasses.fields(cls)
        if f.name not in kwargs and f.init and f.default is MISSING and f.default_factory is MISSING
    ]
    if missing:
        raise ValueError(f"{section or 'the config'}: missing {', '.join(missing)} (required: no default)")
    try:
        return cls(**kwargs)
    except ValueError as error:  # a check across fields, which names its keys from the class's SECTION
        own, message = getattr(cls, "SECTION", ""), str(error)
        renamed = own and message.startswith((f"{own}.", f"{own}:"))
        raise ValueError(section + message[len(own) :] if renamed else message) from None


def _convert(value: Any, kind: Any, where: str, in_file: bool = False) -> Any:
    union = members(kind)
    if union is not None:
        classes = [member for member in union if dataclasses.is_dataclass(member)]
        if classes and isinstance(value, Mapping):
            return build(_member(classes, value, where), value, where, in_file)
        for member in union:
            if typing.get_origin(member) is tuple and isinstance(value, list):
                return tuple(value)
        return value
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if dataclasses.is_dataclass(kind) and isinstance(value, Mapping):
        return build(kind, value, where, in_file)
    if origin is dict and args and isinstance(value, Mapping):
        return {name: _convert(item, args[1], key(where, name), in_file) for name, item in value.items()}
    if origin is tuple and isinstance(value, list):
        return tuple(value)
    return value


def _member(classes: list, value: Mapping, where: str) -> type:
    """The dataclass of a union that a mapping stands for: the one of its ``kind``, else the one whose
    fields hold its keys."""
    if len(classes) == 1:
        return classes[0]
    kinds = {_kind(cls): cls for cls in classes}
    if None not in kinds:
        if not isinstance(value.get("kind"), str) or value["kind"] not in kinds:
            raise ValueError(f"{key(where, 'kind')}: {value.get('kind')!r} is not one of {', '.join(kinds)}")
        return kinds[value["kind"]]
    fitting = [cls for cls in classes if set(value) <= {f.name for f in dataclasses.fields(cls)}]
    if len(fitting) != 1:
        shapes = " or ".join(f"{{{', '.join(f.name for f in dataclasses.fields(cls))}}}" for cls in classes)
        raise ValueError(f"{where}: keys {sorted(value)} are not one of {shapes}")
    return fitting[0]


def _kind(cls: type) -> str | None:
    """The one ``kind`` a dataclass of a union stands for, if it has one."""
    field = {f.name: f for f in dataclasses.fields(cls)}.get("kind")
    choices = spec(field).choices if field is not None else None
    return choices[0] if choices and len(choices) == 1 else None


def to_dict(obj: Any, in_file: bool = False) -> Any:
    """A dataclass instance as the plain mapping a settings file holds (tuples as lists); ``in_file``:
    as a config file holds it (no ``in_config=False`` field)."""
    if dataclasses.is_dataclass(obj):
        return {
            f.name: to_dict(getattr(obj, f.name), in_file)
            for f in dataclasses.fields(obj)
            if spec(f).in_config or not in_file
        }
    if isinstance(obj, dict):
        return {name: to_dict(item, in_file) for name, item in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_dict(item, in_file) for item in obj]
    return obj
