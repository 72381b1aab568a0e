"""Undo what pasting does to a log: a quote prefix on every line, and hard wrapping.

People share logs in issues and chats: every line quoted (`> `) or indented, and long lines cut
at a fixed width (80, 100 …) with the prefix repeated on each piece. Rules look for whole
messages, so such a source is first put back together: the prefix is dropped, and a line that
fills the width exactly is glued to the next one. Only sources that look like that (nearly every
line carrying the same prefix, or many lines of one exact maximal width) are touched.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

_PREFIXES = ("> ", ">", "| ", "    ", "\t")
_MIN_LINES = 8
_SAMPLE = 200  # lines of the head looked at
_MIN_WIDTH, _MAX_WIDTH = 60, 240


@dataclass(frozen=True)
class Paste:
    prefix: str  # on every line ("" when none)
    width: int | None  # the width long lines were cut at, prefix included (None: not wrapped)

    def describe(self) -> str:
        parts = []
        if self.prefix:
            parts.append(f"every line prefixed with {self.prefix!r}")
        if self.width:
            parts.append(f"hard-wrapped at {self.width} columns")
        return ("a pasted log (" + ", ".join(parts) + "): lines were put back together; "
                "line numbers count the rejoined lines")


def detect(head: str) -> Paste | None:
    """How the first part of a source was pasted, if it was."""
    lines = head.split("\n", _SAMPLE)[:_SAMPLE]  # the last piece may be cut mid-line
    if len(lines) < _SAMPLE:
        lines = lines[:-1]
    nonblank = [line.rstrip("\r") for line in lines if line.strip()]
    if len(nonblank) < _MIN_LINES:
        return None
    # Only a prefix the first line carries can be on (nearly) every line.
    prefix = next((p for p in _PREFIXES if nonblank[0].startswith(p)
                   and sum(line.startswith(p) for line in nonblank) >= 0.95 * len(nonblank)), "")
    width = None
    lengths = Counter(len(line) for line in nonblank)
    widest = max(lengths)
    # Hard-wrapped text has many lines of exactly the widest length, and none longer.
    if _MIN_WIDTH <= widest <= _MAX_WIDTH and lengths[widest] >= max(3, 0.15 * len(nonblank)):
        width = widest
    if not prefix and width is None:
        return None
    return Paste(prefix=prefix, width=width)


def unwrap(texts: Iterable[str], paste: Paste) -> Iterator[str]:
    """The text with the paste undone, line by line (pieces of any size in, whole lines out)."""
    carry = ""
    pending: str | None = None  # a full-width line waiting for its continuation
    for piece in texts:
        carry += piece
        lines = carry.split("\n")
        carry = lines.pop()
        out: list[str] = []
        for line in lines:
            pending = _add(line, pending, paste, out)
        if out:
            yield "".join(out)
    if carry:
        out = []
        pending = _add(carry, pending, paste, out)
    else:
        out = []
    if pending is not None:
        out.append(pending + "\n")
    if out:
        yield "".join(out)


def _add(raw: str, pending: str | None, paste: Paste, out: list[str]) -> str | None:
    line = raw.rstrip("\r")
    full = paste.width is not None and len(line) == paste.width
    if paste.prefix and line.startswith(paste.prefix):
        line = line[len(paste.prefix):]
    elif paste.prefix.strip() and line.startswith(paste.prefix.strip()):
        line = line[len(paste.prefix.strip()):]
    text = line if pending is None else pending + line
    if full:
        return text  # cut here: the rest of it is on the next line
    out.append(text + "\n")
    return None
