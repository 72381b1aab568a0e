"""Formatters: one module per format, each a `Formatter` (formatter.py) in the registry below.

`render` builds the derived views once (views.py) and hands them to the formatter named.
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from triage.model import Report
    from triage.report.formatter import Formatter

# The registry's names, in its order; kept here so that `triage --help` lists them without
# importing every formatter (the registry checks that they agree).
FORMATS = ("terminal", "json", "markdown", "github", "junit", "sarif", "html")
# The decision alone, for a scheduler (report/scheduler.py): named like formats (-f, -o NAME=PATH).
SCHEDULER_FORMATS = ("slurm-exclude", "slurm-drain", "k8s", "ranks")


@functools.cache
def _registry() -> dict[str, Formatter]:
    from triage.report import github, html, json_format, junit, markdown, sarif, scheduler, terminal

    registry: dict[str, Formatter] = {f.name: f for f in (
        terminal.FORMATTER,
        json_format.FORMATTER,
        markdown.FORMATTER,
        github.FORMATTER,
        junit.FORMATTER,
        sarif.FORMATTER,
        html.FORMATTER,
        *scheduler.FORMATTERS,
    )}
    if tuple(registry) != FORMATS + SCHEDULER_FORMATS:
        raise RuntimeError(f"FORMATS {FORMATS + SCHEDULER_FORMATS} does not name the registry's formats "
                           f"{tuple(registry)}")
    if any(formatter(name) is not found for name, found in registry.items()):
        raise RuntimeError("_MODULES does not name the module of every format in the registry")
    return registry


def __getattr__(name: str) -> dict[str, Formatter]:
    if name == "REGISTRY":  # built when first asked for (PEP 562)
        return _registry()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class UnknownFormat(ValueError):
    pass


# The module of each format: `formatter` imports only the one asked for (the html and terminal
# formatters alone take longer to import than a small job takes to analyze).
_MODULES = {"terminal": "terminal", "json": "json_format", "markdown": "markdown", "github": "github",
            "junit": "junit", "sarif": "sarif", "html": "html", **dict.fromkeys(SCHEDULER_FORMATS, "scheduler")}


def is_format(name: str) -> bool:
    return name in _MODULES


def formatter(name: str) -> Formatter:
    module_name = _MODULES.get(name)
    if module_name is None:
        raise UnknownFormat(f"unknown format {name!r}; choose one of {', '.join(FORMATS + SCHEDULER_FORMATS)}")
    module = importlib.import_module(f"triage.report.{module_name}")
    found: Formatter = next(f for f in getattr(module, "FORMATTERS", ()) if f.name == name) \
        if module_name == "scheduler" else module.FORMATTER
    return found


def render(report: Report, fmt: str, out: TextIO, *, color: bool | None = None) -> None:
    from triage.report.views import build

    formatter(fmt).write(build(report), out, color=color)
