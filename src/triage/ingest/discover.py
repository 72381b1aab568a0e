"""Find the files among the paths the user gave: files and folders (walked without recursion)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from triage.ingest.open import Stream, Unreadable, display_name, expand

# What `triage repro` writes next to the logs it analysed: a verdict, not a log of the job.
REPORT_TEXT, REPORT_JSON = "triage-report.txt", "triage-report.json"
OWN_REPORTS = frozenset({REPORT_TEXT, REPORT_JSON})
# Folders deeper than this under a named folder are not entered (reported): no log layout nests so.
MAX_FOLDER_DEPTH = 64
# Kernel file systems: their "regular" files (/proc/kmsg, trace_pipe) can block a read for ever.
_KERNEL_ROOTS = ("/proc", "/sys")


def _kernel_devices() -> frozenset[int]:
    return frozenset(Path(root).stat().st_dev for root in _KERNEL_ROOTS if Path(root).exists())


_KERNEL_DEVICES = _kernel_devices()


def special_reason(path: str | Path | None, st: os.stat_result, real: str | None = None) -> str | None:
    """Why a file (its stat, links followed) must not be opened for reading; None for a plain file.

    `path` is checked for lying under /proc or /sys (by its real path, `real` when the caller knows
    it); None checks the stat only (a file already checked by path, re-checked once opened).
    """
    if stat.S_ISDIR(st.st_mode):
        return "a folder"
    if not stat.S_ISREG(st.st_mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode)
                else "a socket" if stat.S_ISSOCK(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                else "a special file")
        return f"{kind}, not a regular file: not read"
    if st.st_dev in _KERNEL_DEVICES or (path is not None and _under_kernel_root(real or os.path.realpath(path))):
        return "a kernel file (/proc, /sys), not a log: not read"
    return None


def _child(real_folder: str, name: str) -> str:
    return real_folder.rstrip("/") + "/" + name


def _under_kernel_root(real: str) -> bool:
    return any(real == r or real.startswith(r + "/") for r in _KERNEL_ROOTS)


def iter_files(paths: list[str]) -> Iterator[Path | Unreadable]:
    """Each file named or found under a named folder, in a stable order; problems as Unreadable.

    Special files (FIFOs, devices, sockets, /proc entries), links to them included, are reported
    and never opened.
    """
    for raw in paths:
        if raw == "-":
            continue
        path = Path(raw)
        try:
            st = path.stat()  # follows links
        except FileNotFoundError:
            yield Unreadable(display_name(raw), "no such file or folder")
            continue
        except OSError as exc:
            yield Unreadable(display_name(raw), (exc.strerror or str(exc)).lower())
            continue
        if stat.S_ISDIR(st.st_mode):
            yield from _walk(path, raw)
        elif (reason := special_reason(path, st)) is not None:
            yield Unreadable(display_name(raw), reason)
        else:
            yield path


def _walk(top: Path, raw: str) -> Iterator[Path | Unreadable]:
    """Files under a folder: each folder's files (sorted), then its sub-folders, depth first.

    Iterative, with a depth bound; a symlinked folder is not entered, so a loop cannot trap the walk.
    """
    found = False
    # Each folder with its real path: the walk enters no symlinked folder, so an entry that is no
    # link lies at its folder's real path plus its name (no realpath call per file).
    stack: list[tuple[Path, str, int]] = [(top, os.path.realpath(top), 0)]
    while stack:
        folder, real_folder, depth = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            found = True  # said, not "holds no files"
            reason = (exc.strerror or str(exc)).lower()
            yield Unreadable(display_name(str(folder)), f"folder cannot be read: {reason}")
            continue
        folders: list[Path] = []
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(Path(entry.path))
                    continue
                if entry.is_symlink() and entry.is_dir():
                    continue  # a symlinked folder is not entered
                st = entry.stat()  # follows links: a link to a FIFO is a FIFO
            except OSError as exc:
                found = True
                yield Unreadable(display_name(entry.path), (exc.strerror or str(exc)).lower())
                continue
            found = True
            if entry.name in OWN_REPORTS:
                continue
            real = None if entry.is_symlink() else _child(real_folder, entry.name)
            why = special_reason(entry.path, st, real)
            yield Path(entry.path) if why is None else Unreadable(display_name(entry.path), why)
        if folders and depth >= MAX_FOLDER_DEPTH:
            found = True
            yield Unreadable(display_name(str(folder)),
                             f"sub-folders nested deeper than {MAX_FOLDER_DEPTH} levels: not entered")
            continue
        stack.extend((sub, _child(real_folder, sub.name), depth + 1) for sub in reversed(folders))
    if not found:
        yield Unreadable(display_name(raw), "folder holds no files")


def open_file(path: Path) -> Iterator[Stream | Unreadable]:
    name = display_name(str(path))
    try:
        before = path.stat()  # its path was checked when it was found; its kind may have changed
        if (reason := special_reason(None, before)) is not None:
            yield Unreadable(name, reason)
            return
        # O_NONBLOCK: if the file became a FIFO since, opening it cannot hang; checked again below.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        yield Unreadable(name, (exc.strerror or str(exc)).lower())
        return
    try:
        reason = special_reason(None, os.fstat(fd))
        if reason is None and hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
    if reason is not None:
        os.close(fd)
        yield Unreadable(name, reason)
        return
    with open(fd, "rb", buffering=0) as fileobj:
        yield from expand(name, fileobj)
