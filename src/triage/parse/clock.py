"""Wall-clock times from the envelopes of the log families.

c10 and glog print `MMDD HH:MM:SS` with no year (and the c10 fraction is a monotonic clock, not
wall time), NCCL 2.26+ and Python logging print full dates, HCCL `YYYY-MM-DD-HH:MM:SS.mmm.uuu`.
Times without a year are placed in `YEARLESS`, a leap year, until the job stage knows better.
"""

from __future__ import annotations

import calendar
import functools

from triage.lazy_regex import lazy_re

YEARLESS = 2000

_FULL = lazy_re(
    r"(?P<y>20\d\d)-(?P<mo>\d\d)-(?P<d>\d\d)[-T _](?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)"
    r"(?:[.,](?P<frac>\d{1,6}))?"
)
_HH_MM_SS = lazy_re(r":\d\d:\d\d")
# c10 `[E709 17:05:38.162555850 file:line]` and glog/torchrun `E0606 09:10:14.926000 pid file:line]`.
_GLOG = lazy_re(
    r"(?:^|[\[\s:])[FEWIV](?P<mo>\d{1,2}?)(?P<d>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)"
    r"(?:\.(?P<frac>\d+))? "
)


def parse_time(text: str) -> tuple[float, bool] | None:
    """(seconds since the epoch, whether the line gave the year), or None when it gave no time."""
    if ":" not in text or _HH_MM_SS.search(text) is None:
        # Every clock here has `HH:MM:SS`, and most lines a rule reads have none: one quick search
        # (for its colons) rules both clocks out.
        return None
    if (m := _FULL.search(text)) is not None:
        y, mo, d, h, mi, s, frac = m.groups()
    elif (m := _GLOG.search(text)) is not None:
        y, (mo, d, h, mi, s, _) = None, m.groups()
        frac = None  # c10's fraction is CLOCK_MONOTONIC nanoseconds, not wall time: whole seconds
    else:
        return None
    month, day = int(mo), int(d)
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    try:
        seconds = calendar.timegm((int(y) if y else YEARLESS, month, day, int(h), int(mi), int(s), 0, 0, 0))
    except (ValueError, OverflowError):
        return None
    return seconds + (float("0." + frac) if frac else 0.0), y is not None


# Every time stamp a line may carry (its envelope's, a launcher's): a date and time of day with
# their fractions and zone, a glog/c10 `MMDD HH:MM:SS` after its severity letter, a bare time of
# day. What a crash loop's line memory (parse/repeats.py) blanks to tell copies from other lines.
_STAMP = lazy_re(
    r"(?:\d{4}-\d\d-\d\d[-T _]|(?<=[FEWIV])\d{3,4} )?(?<!\d)\d\d:\d\d:\d\d(?:[.,:]\d+)*"
    r"(?:Z|[+-]\d\d:?\d\d(?!\d))?")
# What `parse_time` reads in one of them, up to its seconds.
_PIECE = lazy_re(
    r"(?:(20\d\d)-(\d\d)-(\d\d)[-T _]|(\d{1,2}?)(\d\d) )(\d\d):(\d\d):(\d\d)")


def stamp_spans(text: str) -> list[tuple[int, int]]:
    """Where the text's time stamps are: two lines that differ only there differ only in when
    they were written (counters and other numbers are no stamps)."""
    return [m.span() for m in _STAMP.finditer(text)] if ":" in text else []


def stamp_time(piece: str) -> tuple[float, bool] | None:
    """The time of one stamp that `stamp_spans` found, as `parse_time` reads it in its line (a time
    of day alone is none)."""
    cut = len(piece)
    for sep in ".,":
        at = piece.find(sep)
        if 0 <= at < cut:
            cut = at
    whole = _whole(piece[:cut])
    if whole is None or not whole[1] or cut == len(piece):
        return whole  # c10's fraction is a monotonic clock: see parse_time
    frac = piece[cut + 1:cut + 7]
    digits = len(frac) - len(frac.lstrip("0123456789"))
    return (whole[0] + float("0." + frac[:digits]), True) if digits else whole


@functools.lru_cache(maxsize=256)  # a crash loop prints many lines a second
def _whole(head: str) -> tuple[float, bool] | None:
    m = _PIECE.match(head)
    if m is None:
        return None
    y, mo, d, gmo, gd, h, mi, s = m.groups()
    month, day = int(mo or gmo), int(d or gd)
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    seconds = calendar.timegm((int(y) if y else YEARLESS, month, day, int(h), int(mi), int(s), 0, 0, 0))
    return float(seconds), y is not None
