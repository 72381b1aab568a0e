"""A crash loop's copies counted in bulk: the lines after one just counted as a copy, compared in C.

`triage.parse.repeats` recognises one line as a copy of a remembered one; a crash loop then prints
it a thousand or a million times more. The functions here count the run of copies that follows
in a few C calls over the buffer (byte-identical copies, or copies that differ only in their time
stamps' digits), so a crash loop costs no Python per line. Each copy counted so would have been
counted alone the same way; where that is not sure (a line among them that another line's record
consumed, the last ones before a hard-wrap join's look-ahead) they are left to the scanner.

The line given is whole (not cut to the scanner's longest line). `join_lines`: how many following
lines the scanner glues to a line to try a hard wrap; a line remembered with the lines after it
counts only where the same lines follow, which the last `join_lines` copies of a run cannot show.
"""

from __future__ import annotations

import functools
import re

from triage.parse.repeats import CopyShape, Repeats


def count_exact(repeats: Repeats, buffer: str, line: str, end: int, cut: int, handled: set[int],
                line_no: int, join_lines: int) -> int:
    """Count in bulk the copies, byte for byte, that follow a line just counted as a copy of a
    remembered one (`Repeats.again`); return where the ones counted end.

    Each would be counted alone the same way: the same text, and (for a line remembered with the
    lines after it) the same lines after it, which holds for all but the last `join_lines` copies
    of the run. Compared in C, so a crash loop costs no Python per line."""
    block = line + "\n"
    if buffer[end:end + 1] != "\n":
        return end + 1
    after = repeats.exact_after()
    spare = 0 if after is False else join_lines
    if spare and after != "\n".join([line] * join_lines):
        return end + 1
    width, at = len(block), end + 1
    copies, step = 0, 1
    room = (cut - at) // width
    while copies < room:
        step = min(step, room - copies)
        if buffer.startswith(block * step, at + copies * width):
            copies += step
            step *= 2
        elif step == 1:
            break
        else:
            step = 1
    counted = _countable(copies - spare, at, width, handled)
    if not counted:
        return end + 1
    repeats.count_copies(counted, line_no + counted)
    return at + counted * width


def count_stamped(repeats: Repeats, buffer: str, line: str, end: int, cut: int, handled: set[int],
                  line_no: int, join_lines: int) -> int:
    """Count in bulk the copies of other times that follow a line just counted as one of a
    remembered line (`Repeats.again`): lines that differ from it in their stamps' digits alone
    (`Repeats.stamped_copies`); return where the ones counted end.

    As `count_exact`, each would be counted alone the same way, and they are compared in C: the
    rest of the buffer at once where it is all copies (`all_copies`), else by one regex. A crash
    loop whose every line has its own time costs no Python per line either."""
    found = repeats.stamped_copies() if buffer[end:end + 1] == "\n" else None
    if found is None:
        return end + 1
    shape, masked, after = found
    spare = 0 if after is False else join_lines
    if spare and after != "\n".join([masked] * join_lines):
        return end + 1
    width, at = len(line) + 1, end + 1
    copies = (cut - at) // width
    if copies <= spare:
        return end + 1
    if not all_copies(buffer, line, at, copies, shape):
        run = _run_of(shape.pattern).match(buffer, at, cut)
        copies = (run.end() - at) // width if run else 0
    counted = _countable(copies - spare, at, width, handled)
    if not counted:
        return end + 1
    stop = at + counted * width
    repeats.count_stamped(counted, line_no + counted, buffer[stop - width:stop - 1])
    return stop


def _countable(counted: int, at: int, width: int, handled: set[int]) -> int:
    """How many copies from `at` may be counted in bulk: 0 when none, or when a line among them was
    consumed by another line's record (those are counted one by one)."""
    if counted <= 0 or any(at <= h < at + counted * width for h in handled):
        return 0
    return counted


def all_copies(buffer: str, line: str, at: int, copies: int, shape: CopyShape) -> bool:
    """Whether the `copies` lines from `at`, just after `line` (whole lines), all have its shape.

    Each is as wide as `line`: its newline is where `line`'s would be, and no other is there. The
    text between one line's varying columns and the next one's (`line`'s end, newline, start) is
    found as often as there are lines: each has a newline, so each sits where it should. The
    varying columns, read down the lines (a slice with a step), hold digits or their character."""
    width = len(line) + 1
    stop = at + copies * width
    if buffer.count("\n", at, stop) != copies or buffer[at + width - 1:stop:width] != "\n" * copies:
        return False
    glue = line[shape.high:] + "\n" + line[:shape.low]
    first = at - width + shape.high  # in `line` itself
    if buffer.count(glue, first, first + (copies - 1) * width + len(glue)) != copies \
            or not buffer.startswith(line[shape.high:] + "\n", stop - width + shape.high):
        return False
    for column, char in shape.columns:
        down = buffer[at + column:stop:width]
        # ASCII digits: bytes.isdigit reads a table, str.isdigit the Unicode database (13x slower).
        if not (down.isascii() and down.encode("ascii").isdigit() if char is None else down == char * copies):
            return False
    return True


@functools.lru_cache(maxsize=64)
def _run_of(line_pattern: str) -> re.Pattern[str]:
    """Consecutive lines each matching `line_pattern`."""
    return re.compile(f"(?:{line_pattern}\n)*")
