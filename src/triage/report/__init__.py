"""Formatters: one module per format, each a `Formatter` (formatter.py) in the registry below.

`render` builds the derived views once (views.py) and hands them to the formatter named.
"""

from __future__ import annotations

from typing import TextIO

from triage.model import Report
from triage.report import github, html, json_format, junit, markdown, sarif, terminal
from triage.report.formatter import Formatter
from triage.report.views import build

REGISTRY: dict[str, Formatter] = {f.name: f for f in (
    terminal.FORMATTER,
    json_format.FORMATTER,
    markdown.FORMATTER,
    github.FORMATTER,
    junit.FORMATTER,
    sarif.FORMATTER,
    html.FORMATTER,
)}
FORMATS = tuple(REGISTRY)


class UnknownFormat(ValueError):
    pass


def formatter(name: str) -> Formatter:
    if name not in REGISTRY:
        raise UnknownFormat(f"unknown format {name!r}; choose one of {', '.join(FORMATS)}")
    return REGISTRY[name]


def render(report: Report, fmt: str, out: TextIO, *, color: bool | None = None) -> None:
    formatter(fmt).write(build(report), out, color=color)
