"""A folder of files triage can rebuild from its own inputs, kept to save time on the next run.

What is kept: the compiled hyperscan database of the rule literals (parse/needles.py), the parsed
built-in rule files and the built-in policy's document (rules.py), the compiled form of the `regex`
patterns a run used (lazy_regex.py), each under a name that holds a hash of everything it was built
from: a stale entry is never read, only left behind. Nothing here is unpickled or executed; a file that
does not load is rebuilt. The folder is $TRIAGE_CACHE_DIR, else $XDG_CACHE_HOME/triage or
~/.cache/triage; TRIAGE_CACHE_DIR set empty turns the cache off. A folder that cannot be written
only means each run builds what it needs.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

try:
    # hashlib's own blake2b, without the OpenSSL set-up importing hashlib does (~2.5 ms a run)
    from _blake2 import blake2b
except ImportError:  # an interpreter built without it
    from hashlib import blake2b

KEEP = 8  # entries of one kind: a few rule sets (built-in, with one or two --rules folders)


def folder() -> Path | None:
    configured = os.environ.get("TRIAGE_CACHE_DIR")
    if configured is not None:
        return Path(configured) if configured else None
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "triage"


def key(*parts: object) -> str:
    """A name-safe hash of what an entry is built from."""
    return digest(repr(parts).encode("utf-8", "surrogatepass"))


def digest(data: bytes) -> str:
    """32 hex digits that tell `data` from any other (an entry's name, or a check of its content)."""
    return blake2b(data, digest_size=16).hexdigest()


def read(name: str) -> bytes | None:
    where = folder()
    if where is None:
        return None
    try:
        return (where / name).read_bytes()
    except OSError:
        return None


def write(name: str, data: bytes) -> None:
    """Kept whole or not at all: written under a temporary name, then renamed. Of the entries of
    one kind (the name up to its first `-`), only the KEEP most recent stay."""
    where = folder()
    if where is None:
        return
    with contextlib.suppress(OSError):
        where.mkdir(parents=True, exist_ok=True)
        partial = where / f".{name}.{os.getpid()}.tmp"
        try:
            partial.write_bytes(data)
            partial.replace(where / name)
        finally:
            partial.unlink(missing_ok=True)
        kind = name.split("-", 1)[0] + "-"
        entries = sorted(where.glob(kind + "*"), key=_modified, reverse=True)
        for stale in entries[KEEP:]:
            stale.unlink(missing_ok=True)


def _modified(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
