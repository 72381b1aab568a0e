"""Snapshot files: the names ``triage ras collect`` gives them and their content."""

from __future__ import annotations

import time

from .json_report import render_json
from .model import Snapshot
from .text import render_text


def stamp(t: float) -> str:
    """20260101T000000.250000 for a UTC epoch time (microseconds)."""
    whole = int(t)
    us = round((t - whole) * 1e6)
    if us == 1_000_000:
        whole, us = whole + 1, 0
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(whole)) + f".{us:06d}"


def file_name(s: Snapshot, fmt: str) -> str:
    """The name `triage ras collect` gives a snapshot: ras-<UTC time STATUS was sent>Z.txt|.json."""
    ext = {"text": "txt", "json": "json"}[fmt]
    return f"ras-{stamp(s.time)}Z.{ext}"


def render(s: Snapshot, fmt: str) -> str:
    return render_text(s) if fmt == "text" else render_json(s)
