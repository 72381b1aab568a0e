"""Formatters: pure functions of a Report. `render` picks one by name."""

from __future__ import annotations

from typing import TextIO

from triage.model import Report
from triage.report import json_format, terminal

FORMATS = ("terminal", "json")


def render(report: Report, fmt: str, out: TextIO, *, color: bool | None = None) -> None:
    if fmt == "json":
        json_format.write(report, out)
    elif fmt == "terminal":
        terminal.write(report, out, color=color)
    else:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
