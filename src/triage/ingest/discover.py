"""Find the files among the paths the user gave: files and folders (recursively)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from triage.ingest.open import Stream, Unreadable, expand

# What `triage repro` writes next to the logs it analysed: a verdict, not a log of the job.
REPORT_TEXT, REPORT_JSON = "triage-report.txt", "triage-report.json"
OWN_REPORTS = frozenset({REPORT_TEXT, REPORT_JSON})


def iter_files(paths: list[str]) -> Iterator[Path | Unreadable]:
    """Each file named or found under a named folder, in a stable order; problems as Unreadable."""
    for raw in paths:
        if raw == "-":
            continue
        path = Path(raw)
        if path.is_dir():
            found = False
            # followlinks=False: a symlinked folder is not entered, so a loop cannot trap the walk.
            for root, dirs, files in os.walk(path, onerror=None, followlinks=False):
                dirs.sort()
                for name in sorted(files):
                    found = True
                    if name not in OWN_REPORTS:
                        yield Path(root) / name
            if not found:
                yield Unreadable(raw, "folder holds no files")
        elif path.is_file():
            yield path
        elif path.exists():
            yield Unreadable(raw, "not a regular file")
        else:
            yield Unreadable(raw, "no such file or folder")


def open_file(path: Path) -> Iterator[Stream | Unreadable]:
    name = str(path)
    try:
        fileobj = open(path, "rb")  # noqa: SIM115 - closed below, after its streams are read
    except OSError as exc:
        yield Unreadable(name, (exc.strerror or str(exc)).lower())
        return
    with fileobj:
        yield from expand(name, fileobj)
