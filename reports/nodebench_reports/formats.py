"""The registry of the report's output formats: each writer registers itself where it is written
(``@formats.register(...)`` above its render function), and the commands iterate the registry: the
``html`` command writes every format of its page, ``compare`` and ``fleet`` offer one option per
format that has one (``--json``, ``--junit``). Adding a format is its function and its registration,
in one file, plus its test (``test_formats.py`` lists them).

A format: its ``name``, the ``command`` that produces it, what it is, how to render it (a function of
what the command made: the page's data, checklist and figures; the comparison; the fleet), and either
the file it is written to (``file_name``, the page's) or the command-line ``option`` that names one.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

# the modules that hold writers, imported by :func:`formats` so that they register (the one place that
# names them; a module of a new format is added here or registers from one of these)
WRITER_MODULES = ("htmlpage", "compare_output", "history_fleet")


@dataclass(frozen=True)
class Format:
    name: str
    command: str
    description: str
    render: Callable = None
    file_name: str | None = None     # the file in the command's output folder (html's page)
    option: str | None = None        # the option that names the file (--json), None: printed / fixed file


_registry: dict[str, Format] = {}


def register(name: str, command: str, description: str, file_name: str | None = None, option: str | None = None):
    """A decorator that registers the function below it as the writer of format ``name``."""
    def wrap(fn):
        if name in _registry and _registry[name].render is not fn:
            raise ValueError(f"output format {name!r} registered twice")
        _registry[name] = Format(name, command, description, fn, file_name, option)
        return fn
    return wrap


def formats(command: str | None = None) -> list[Format]:
    """The registered formats (of one command), in registration order."""
    for mod in WRITER_MODULES:
        importlib.import_module(f"{__package__}.{mod}")
    return [f for f in _registry.values() if command is None or f.command == command]


def get(name: str) -> Format:
    formats()
    return _registry[name]
