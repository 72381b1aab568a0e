"""Where the report goes: stdout in one format, and any number of files each in its own format.

Shared by `analyze` and `repro`. `--output FORMAT=PATH` writes one file; a bare `--output PATH`
writes the `--format` output there instead of stdout (as before). When the analysis cannot run,
`write_error` still gives every requested file a document in its format saying why, so a CI step
that publishes them always has them.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from triage.model import Report
from triage.report import FORMATS, SCHEDULER_FORMATS, formatter, is_format
from triage.report.views import build


class OutputError(ValueError):
    """A bad --format / --output value: a usage error."""


@dataclass(frozen=True)
class Output:
    fmt: str
    path: Path | None  # None: stdout


def plan(fmt: str | None, specs: Sequence[str], *, quiet: bool = False) -> list[Output]:
    """The outputs of one run: each `--output` file, then stdout unless a bare PATH took its place.

    With `--quiet` and files to write, stdout gets a report only when `--format` was given.
    """
    if fmt is not None and not is_format(fmt):
        raise OutputError(f"--format must be one of {', '.join(FORMATS + SCHEDULER_FORMATS)}, not {fmt!r}")
    stdout_fmt = fmt or "terminal"
    files: list[Output] = []
    bare = False  # a plain `--output PATH`: the --format output goes there instead of stdout
    for spec in specs:
        name, sep, path = spec.partition("=")
        if sep and is_format(name):
            if not path:
                raise OutputError(f"--output {spec}: no file name after {name}=")
            files.append(Output(name, Path(path)))
        elif sep and name.isidentifier():
            raise OutputError(f"--output {spec}: {name!r} is not a format; choose one of "
                              f"{', '.join(FORMATS + SCHEDULER_FORMATS)}")
        else:
            files.append(Output(stdout_fmt, Path(spec)))
            bare = True
    if bare or (quiet and files and fmt is None):
        return files
    return [*files, Output(stdout_fmt, None)]


def write_report(report: Report, outputs: Sequence[Output], *, stdout: TextIO | None = None) -> None:
    """Every output, from one set of derived views; under GitHub Actions also the step summary."""
    view = build(report)
    for output in outputs:
        if output.path is None:
            formatter(output.fmt).write(view, stdout or sys.stdout)
            continue
        output.path.parent.mkdir(parents=True, exist_ok=True)
        with open(output.path, "w", encoding="utf-8", errors="backslashreplace") as out:
            formatter(output.fmt).write(view, out, color=False)
    if any(o.fmt == "github" for o in outputs):
        from triage.report import github

        github.append_step_summary(view)


def write_error(message: str, version: str, outputs: Sequence[Output]) -> None:
    """The analysis could not run: each requested file says so in its own format (stdout is left to
    the one-line error on stderr). Files that cannot be written are skipped: the error stands."""
    for output in outputs:
        if output.path is None:
            continue
        try:
            output.path.parent.mkdir(parents=True, exist_ok=True)
            with open(output.path, "w", encoding="utf-8", errors="backslashreplace") as out:
                formatter(output.fmt).write_error(message, version, out)
        except OSError:
            continue
    if any(o.fmt == "github" for o in outputs):
        from triage.report import github

        github.append_step_summary_error(message, version)
