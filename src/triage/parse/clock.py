"""Wall-clock times from the envelopes of the log families.

c10 and glog print `MMDD HH:MM:SS` with no year (and the c10 fraction is a monotonic clock, not
wall time), NCCL 2.26+ and Python logging print full dates, HCCL `YYYY-MM-DD-HH:MM:SS.mmm.uuu`.
Times without a year are placed in `YEARLESS`, a leap year, until the job stage knows better.
"""

from __future__ import annotations

import calendar

import regex

YEARLESS = 2000

_FULL = regex.compile(
    r"(?P<y>20\d\d)-(?P<mo>\d\d)-(?P<d>\d\d)[-T _](?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)"
    r"(?:[.,](?P<frac>\d{1,6}))?"
)
# c10 `[E709 17:05:38.162555850 file:line]` and glog/torchrun `E0606 09:10:14.926000 pid file:line]`.
_GLOG = regex.compile(
    r"(?:^|[\[\s:])[FEWIV](?P<mo>\d{1,2}?)(?P<d>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)"
    r"(?:\.(?P<frac>\d+))? "
)


def parse_time(text: str) -> tuple[float, bool] | None:
    """(seconds since the epoch, whether the line gave the year), or None when it gave no time."""
    if ":" not in text:
        return None  # every clock here has one (and most lines a rule reads have no clock)
    m = _FULL.search(text)
    has_year = True
    if m is None:
        m = _GLOG.search(text)
        has_year = False
        if m is None:
            return None
    try:
        year = int(m["y"]) if has_year else YEARLESS
        seconds = calendar.timegm(
            (year, int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"]), 0, 0, 0)
        )
    except (ValueError, OverflowError):
        return None
    month, day = int(m["mo"]), int(m["d"])
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    # c10's fraction is CLOCK_MONOTONIC nanoseconds, not wall time: keep whole seconds for it.
    frac = m["frac"] if has_year and m["frac"] else ""
    return seconds + (float("0." + frac) if frac else 0.0), has_year
