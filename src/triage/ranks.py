"""Rank lists as logs write them and as the report shows them."""

from __future__ import annotations

from collections.abc import Sequence

from triage.lazy_regex import lazy_compile

_RANK_LIST = lazy_compile(r"\d+")
_RANGE = lazy_compile(r"(\d+)\s*-\s*(\d+)")


def parse_ranks(text: str) -> list[int]:
    """`1, 2`, `[1,3,5,]`, `0-3` → ranks."""
    if not text:
        return []  # most callers ask of a field most events lack: no regex for that
    ranks: list[int] = []
    for m in _RANGE.finditer(text):
        lo, hi = int(m[1]), int(m[2])
        if 0 <= hi - lo <= 100_000:
            ranks.extend(range(lo, hi + 1))
    rest = _RANGE.sub(" ", text)
    ranks.extend(int(x) for x in _RANK_LIST.findall(rest))
    return sorted(set(ranks))


def fmt_ranks(ranks: Sequence[int], sep: str = ", ") -> str:
    """`[3, 4, 5, 9]` → `3-5, 9`."""
    parts: list[str] = []
    ordered = sorted(set(ranks))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return sep.join(parts)
