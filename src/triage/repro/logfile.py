"""Append lines to a repro log: one write per line, UTC timestamp, our tag and the writer.

Lines are written with os.write on an O_APPEND descriptor, so that a rank's own lines, the native
messages of torch/gloo/NCCL sharing the file (standalone mode points the rank's stderr at it) and
faulthandler's stack dumps interleave whole, and nothing waits in a buffer when a process dies.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from triage.repro.protocol import TAG


def stamp(now: float | None = None) -> str:
    now = time.time() if now is None else now
    millis = int(now * 1000) % 1000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{millis:03d}Z"


class LineLog:
    def __init__(self, path: Path, writer: str) -> None:
        self.path = path
        self.writer = writer  # `rank 3` or `coordinator`
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def line(self, message: str) -> None:
        for text in message.splitlines() or [""]:
            self.write(f"{stamp()} {TAG} {self.writer}: {text}\n")

    def write(self, text: str) -> None:
        # A full or vanished disk must not turn a diagnosis into a crash.
        with contextlib.suppress(OSError):
            os.write(self.fd, text.encode("utf-8", "replace"))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)
