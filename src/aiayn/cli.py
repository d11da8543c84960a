"""What every command line shares: ``--log FILE`` and ``--settings FILE``, and flags that set an option
(:mod:`aiayn.options`), whose default and help come from the option's definition."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from aiayn.options.core import hints, spec, value_problem


def add_log(parser: argparse.ArgumentParser) -> None:
    """``--log FILE``: also log to this file, appended (:func:`aiayn.io.setup_logging`)."""
    parser.add_argument("--log", default=None, help="also log to this file (appended)")


def add_settings(parser: argparse.ArgumentParser, what: str, **kwargs: Any) -> None:
    """``--settings FILE``: the stage's settings file (:func:`aiayn.settings.read`), holding ``what``."""
    parser.add_argument("--settings", help=f"settings file (JSON): {what}", **kwargs)


def field(cls: type, name: str) -> dataclasses.Field:
    return {f.name: f for f in dataclasses.fields(cls)}[name]


def add_option(parser: argparse.ArgumentParser, flag: str, cls: type, name: str) -> None:
    """A flag that overrides the option ``cls.name`` of ``--settings``: its type, choices and help from
    the definition; unset (None), the settings file's value applies, else the definition's default."""
    definition = field(cls, name)
    opt = spec(definition)
    metavar = None if opt.choices else flag.lstrip("-").upper().replace("-", "_")
    parser.add_argument(
        flag,
        type=type(definition.default),
        default=None,
        dest=name,
        choices=opt.choices,
        metavar=metavar,
        help=f"{opt.help} (overrides {cls.SECTION}.{name} of --settings; default: {definition.default})",
    )


def check_options(parser: argparse.ArgumentParser, args: argparse.Namespace, cls: type) -> None:
    """Refuse, before any work, a flag of :func:`add_option` whose value the definition does not allow."""
    for definition in dataclasses.fields(cls):
        value = getattr(args, definition.name, None)
        problem = None if value is None else value_problem(value, hints(cls)[definition.name], spec(definition))
        if problem:
            parser.error(f"{cls.SECTION}.{definition.name}: {problem}")


def overridden(opts: Any, args: argparse.Namespace) -> Any:
    """``opts`` with the options that flags of :func:`add_option` set."""
    names = [f.name for f in dataclasses.fields(opts) if getattr(args, f.name, None) is not None]
    return dataclasses.replace(opts, **{name: getattr(args, name) for name in names})
