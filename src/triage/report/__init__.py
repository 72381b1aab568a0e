"""Formatters: one module per format, each a `Formatter` (formatter.py) in the registry below.

`render` builds the derived views once (views.py) and hands them to the formatter named.
"""

from __future__ import annotations

import functools
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
    return registry


def __getattr__(name: str) -> dict[str, Formatter]:
    if name == "REGISTRY":  # built when first asked for (PEP 562)
        return _registry()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class UnknownFormat(ValueError):
    pass


def formatter(name: str) -> Formatter:
    if name not in _registry():
        raise UnknownFormat(f"unknown format {name!r}; choose one of {', '.join(FORMATS + SCHEDULER_FORMATS)}")
    return _registry()[name]


def render(report: Report, fmt: str, out: TextIO, *, color: bool | None = None) -> None:
    from triage.report.views import build

    formatter(fmt).write(build(report), out, color=color)
