"""The formatter protocol: what one output format provides (one module per format, `report/<name>.py`).

A formatter lays out a `ReportView` (views.py derives it once from the Report) and can also say that
the analysis failed, so a CI step gets each report file it asked for even when the input was bad.
To add a format: write its module `report/<name>.py` with a `FORMATTER`; then, in `report/__init__.py`,
add its name to `FORMATS` and its module to the import list and the tuple in `_registry()`, in the
same place in both (`_registry()` refuses to build when the two orders differ), and its module to
`_MODULES` (what `formatter()` imports; `_registry()` checks that too).
"""

from __future__ import annotations

from typing import Protocol, TextIO

from triage.report.views import ReportView


class Formatter(Protocol):
    name: str  # what --format and --output FORMAT=PATH call it
    summary: str  # one line for --help

    def write(self, view: ReportView, out: TextIO, *, color: bool | None = None) -> None:
        """The report; `color` is for terminal output only (None: decide from the stream)."""

    def write_error(self, message: str, version: str, out: TextIO) -> None:
        """A document in this format saying that the analysis could not run, and why."""
