"""The rank a flight-recorder dump's file name gives: `<prefix><rank>`.

torch writes `${TORCH_FR_DUMP_TEMP_FILE:-~/.cache/torch/comm_lib_trace_rank_}<rank>` (older
releases `/tmp/nccl_trace_rank_<rank>`); people rename, compress and suffix them (`….json`,
`….pkl`, `….gz`). fr_trace takes the trailing digits after a common prefix; so does this, with a
`rank` word preferred and what compression or a suffix added stripped first.
"""

from __future__ import annotations

import re

from triage.lazy_regex import lazy_re

# What people add after the rank: compression and format suffixes, stripped first (repeatedly).
_SUFFIX = lazy_re(r"\.(?:gz|bz2|xz|zst|zstd|json|pkl|pickle|bin|dump|fr|trace)$", re.I)
_RANK_WORD = lazy_re(r"(?:^|[_.-])rank[_.-]?0*(\d{1,9})$", re.I)
_TRAILING = lazy_re(r"(?<!\d)0*(\d{1,9})$")
_DEFAULT_PREFIXES = ("comm_lib_trace_rank_", "nccl_trace_rank_")


def rank_from_name(name: str) -> tuple[int | None, str | None]:
    """(rank, how it was read) from a source's display name (`archive!member` included)."""
    base = name.replace("\\", "/").replace("!", "/").rsplit("/", 1)[-1]
    while (stripped := _SUFFIX.sub("", base)) != base:
        base = stripped
    if base.startswith(_DEFAULT_PREFIXES) and base.rsplit("_", 1)[-1].isdigit():
        return int(base.rsplit("_", 1)[-1]), "file name (<prefix><rank>, torch's default prefix)"
    if m := _RANK_WORD.search(base):
        return int(m[1]), "file name (…rank_<rank>)"
    if m := _TRAILING.search(base):
        return int(m[1]), "file name (trailing digits, as fr_trace reads them)"
    return None, None
