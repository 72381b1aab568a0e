"""Follow what the job writes: its own output (passed through unchanged) and its log folders.

In command mode the job's stdout and stderr go to files in the watch folder, and this follower
copies each new byte to triage's own stdout and stderr: the job never writes into a pipe that
triage reads, so a watcher that dies (killed, out of memory) cannot break the job's writes. In
attach mode the job's stdout and stderr are followed where they are regular files
(/proc/<pid>/fd/1), and `--logs` folders are followed in both modes. Only new bytes are read;
whole lines go to the judge.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

MAX_READ = 1 << 20  # bytes read from one file per poll: a flood is caught up over several polls
MAX_FILES = 2048  # files followed under the --logs folders
MAX_PENDING = 1 << 16  # a partial line kept while its end is awaited


@dataclass
class Followed:
    path: Path
    offset: int = 0
    echo: BinaryIO | None = None  # where its bytes are passed through, unchanged
    pending: bytes = b""


@dataclass
class Follower:
    on_text: Callable[[str, str], None]  # (source name, whole lines)
    files: dict[Path, Followed] = field(default_factory=dict)
    folders: list[Path] = field(default_factory=list)

    def add(self, path: Path, echo: BinaryIO | None = None, *, from_end: bool = False) -> None:
        if path in self.files:
            return
        offset = 0
        if from_end:
            try:
                offset = path.stat().st_size
            except OSError:
                offset = 0
        self.files[path] = Followed(path, offset, echo)

    def add_folder(self, folder: Path) -> None:
        if folder not in self.folders:
            self.folders.append(folder)

    def discover(self) -> None:
        """New files in the followed folders (read from their start: they are the job's logs)."""
        for folder in self.folders:
            count = 0
            for root, dirs, names in os.walk(folder):
                dirs[:] = [d for d in dirs if not d.startswith(".")][:64]
                for name in names:
                    path = Path(root) / name
                    count += 1
                    if count > MAX_FILES:
                        return
                    if path not in self.files and path.is_file():
                        self.add(path)

    def poll(self) -> int:
        """Read what each file gained; returns the bytes read."""
        total = 0
        for followed in list(self.files.values()):
            total += self._read(followed)
        return total

    def _read(self, followed: Followed) -> int:
        try:
            with open(followed.path, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                if size < followed.offset:  # truncated or replaced: start again
                    followed.offset = 0
                if size == followed.offset:
                    return 0
                handle.seek(followed.offset)
                data = handle.read(MAX_READ)
        except OSError:
            return 0
        followed.offset += len(data)
        if followed.echo is not None:
            try:
                followed.echo.write(data)
                followed.echo.flush()
            except (OSError, ValueError):
                followed.echo = None  # our own stdout went away: the job goes on, unechoed
        text = followed.pending + data
        cut = text.rfind(b"\n") + 1
        followed.pending = text[cut:][-MAX_PENDING:]
        if cut:
            self.on_text(str(followed.path), text[:cut].decode("utf-8", "replace"))
        return len(data)
