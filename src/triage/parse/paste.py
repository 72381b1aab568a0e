"""Undo what pasting does to a log: a quote prefix on every line, and hard wrapping.

People share logs in issues and chats: every line quoted (`> `) or indented, and long lines cut
at a fixed width (80, 100 …) with the prefix repeated on each piece. Rules look for whole
messages, so such a source is first put back together: the prefix is dropped, and a line that
fills the width exactly is glued to the next one. Only sources that look like that (nearly every
line carrying the same prefix, or many lines of one exact maximal width that go on, on the next
line, mid-message) are touched.

Equal widths alone do not make a paste: a crash loop prints one line of one length a million times,
and a fixed-width table or a progress line prints many of one length. A cut piece is followed by
the rest of its message, which does not begin the way a log line of that writer begins; the next
line after a whole line does. So the lines after the full-width ones must mostly not begin like
them (by their first characters, digits ignored: timestamps and counters change).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

_PREFIXES = ("> ", ">", "| ", "    ", "\t")
_MIN_LINES = 8
_SAMPLE = 200  # lines of the head looked at
_MIN_WIDTH, _MAX_WIDTH = 60, 240
_ENVELOPE = 12  # characters that begin a log line the same way for one writer (digits aside)
_DIGITS = str.maketrans("0123456789", "0000000000")
# A line glued from more pieces than this is emitted as it is (a long run of full-width lines is
# not one message): what rules see of a line is cut at 16 KiB anyway, and gluing stays linear.
MAX_JOINED = 16 << 10


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
    if "\r" in head:
        lines = [line.rstrip("\r") for line in lines]
    nonblank = list(filter(str.strip, lines))  # filter and map loop in C: every source is sniffed
    if len(nonblank) < _MIN_LINES:
        return None
    # Only a prefix the first line carries can be on (nearly) every line.
    prefix = next((p for p in _PREFIXES if nonblank[0].startswith(p)
                   and sum(line.startswith(p) for line in nonblank) >= 0.95 * len(nonblank)), "")
    width = None
    lengths = Counter(map(len, nonblank))
    widest = max(lengths)
    # Hard-wrapped text has many lines of exactly the widest length, and none longer, each but the
    # last piece of a message followed by the rest of it.
    if (_MIN_WIDTH <= widest <= _MAX_WIDTH and lengths[widest] >= max(3, 0.15 * len(nonblank))
            and _cut_pieces(nonblank, widest, prefix) >= max(3, 0.5 * lengths[widest])):
        width = widest
    if not prefix and width is None:
        return None
    return Paste(prefix=prefix, width=width)


def _cut_pieces(lines: list[str], width: int, prefix: str) -> int:
    """How many full-width lines are followed by a line that does not begin the way they do (a
    piece of one message cut at `width`, not a whole line that happens to be that long)."""
    def envelope(line: str) -> str:
        return line[len(prefix):len(prefix) + _ENVELOPE].translate(_DIGITS)

    full = [i for i, line in enumerate(lines[:-1]) if len(line) == width]
    if len({lines[i] for i in full}) < 2:
        return 0  # one line repeated is a crash loop, not a paste
    return sum(envelope(lines[i + 1]) != envelope(lines[i]) for i in full)


def unwrap(texts: Iterable[str], paste: Paste) -> Iterator[str]:
    """The text with the paste undone, line by line (pieces of any size in, whole lines out)."""
    carry = ""
    pending = _Pending()  # full-width pieces waiting for their continuation
    for piece in texts:
        lines = (carry + piece).split("\n")
        carry = lines.pop()[:MAX_JOINED + 1]  # a line without end is cut, as the scan cuts it
        out: list[str] = []
        for line in lines:
            _add(line, pending, paste, out)
        if out:
            yield "".join(out)
    out = []
    if carry:
        _add(carry, pending, paste, out)
    if pending.pieces:
        out.append(pending.flush() + "\n")
    if out:
        yield "".join(out)


class _Pending:
    """The pieces of a line being glued back, joined once it is whole (linear in its length)."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.size = 0

    def flush(self) -> str:
        text = "".join(self.pieces)
        self.pieces, self.size = [], 0
        return text


def _add(raw: str, pending: _Pending, paste: Paste, out: list[str]) -> None:
    line = raw.rstrip("\r")
    full = paste.width is not None and len(line) == paste.width
    if paste.prefix and line.startswith(paste.prefix):
        line = line[len(paste.prefix):]
    elif paste.prefix.strip() and line.startswith(paste.prefix.strip()):
        line = line[len(paste.prefix.strip()):]
    pending.pieces.append(line)
    pending.size += len(line)
    if full and pending.size < MAX_JOINED:
        return  # cut here: the rest of it is on the next line
    out.append(pending.flush() + "\n")
