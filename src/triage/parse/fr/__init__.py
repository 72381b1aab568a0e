"""PyTorch flight-recorder dumps (docs/formats.md §1.6.1): told by their content, read safely.

A dump is one rank's record of the collectives its process groups enqueued, started and
completed, written when a watchdog timed out (`<prefix><rank>`: `comm_lib_trace_rank_3`, older
`nccl_trace_rank_3`) or asked for (`_dump_fr_trace()`, `_dump_fr_trace_json()`). It is told by
its first bytes, whatever its name: a pickle (PROTO opcode) or a JSON object with the recorder's
keys. The pickle is checked before it is loaded and loaded without code (safe_pickle); every field
is checked by type (dump); the dump becomes compact events (events). What cannot be read is a
skipped source with the reason, never an exception.

The dump names neither its rank nor its host: the rank comes from the file name (names.py) and is
checked against the groups the dump lists; the logs' own say is checked by crosscheck.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from triage.lazy_regex import lazy_re
from triage.model import Event, SourceInfo
from triage.parse.fr import events as fr_events
from triage.parse.fr.names import rank_from_name

if TYPE_CHECKING:
    from triage.parse.fr import dump as dumps

# The readers (dump, safe_pickle, with pickle) are imported by `scan`: most runs meet no dump.
FAMILY = fr_events.FAMILY
# The JSON form's keys (sorted by the C++ writer; in insertion order where Python wrote it).
_JSON_KEYS = lazy_re(rb'"(entries|pg_config|pg_status|comm_lib_version|nccl_version|profiling_name|'
                        rb'collective_seq_id|record_id)"\s*:')
_STRONG = {b"entries", b"pg_config", b"pg_status", b"profiling_name"}


def sniff(head: bytes) -> str | None:
    """`pickle` or `json` when the first bytes of a source are those of a dump; None otherwise.

    Any pickle is taken (a pickle is no log, and one that is not a dump is said so); a JSON
    object only with two of the recorder's keys in its first bytes, one of them its own.
    """
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return "pickle"
    start = head.lstrip()[:1]
    if start == b"{":
        keys = {m.group(1) for m in _JSON_KEYS.finditer(head[:65536])}
        if len(keys) >= 2 and keys & _STRONG:
            return "json"
    elif start == b"[" and b'"profiling_name"' in head[:65536]:
        return "json"
    return None


def scan(info: SourceInfo, chunks: Iterable[bytes], form: str) -> list[Event]:
    """The events of the dump a source holds; what was wrong is set on `info` (skipped, notes)."""
    from triage.parse.fr import dump as dumps
    from triage.parse.fr.safe_pickle import MAX_BYTES, Refused, load

    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > MAX_BYTES:
            info.bytes = size
            info.skipped = f"a flight-recorder dump larger than {MAX_BYTES >> 20} MiB: not read"
            return []
        parts.append(chunk)
    data = b"".join(parts)
    info.bytes = len(data)
    what = "flight-recorder dump" if form == "json" else "pickle"
    try:
        doc = load(data) if form == "pickle" else _json(data)
        dump = dumps.read(doc, form)
        rank, how = rank_from_name(info.name)
        found = fr_events.build(info.name, dump, rank, how)  # reads the frames of the entries it keeps
    except Refused as exc:
        info.skipped = f"{what} refused: {exc}" if form == "pickle" else f"JSON flight-recorder dump refused: {exc}"
        return []
    info.notes.append(f"flight-recorder dump (version {dump.version or 'pre-2024'}, {dump.form}), "
                      f"{len(dump.entries)} entries" + (f"; rank {rank} from its {how}" if rank is not None
                                                         else "; its name gives no rank"))
    info.notes.extend(dump.notes)
    if rank is not None:
        info.notes.extend(rank_conflicts(dump, rank))
    info.events = len(found)
    return found


def rank_conflicts(dump: dumps.Dump, rank: int) -> list[str]:
    """The groups whose stated members leave out the rank the file name gives."""
    out = []
    for group in dump.groups.values():
        if group.ranks and rank not in group.ranks:
            shown = group.ranks if len(group.ranks) <= 16 else f"{len(group.ranks)} ranks"
            out.append(f"rank conflict: the file name says rank {rank}, but the dump's process group "
                       f"{group.name}" + (f" ({group.desc})" if group.desc else "") +
                       f" lists {shown} without it (renamed, or another job's dump?)")
    return out


def _json(data: bytes) -> object:
    from triage.parse.fr.safe_pickle import Refused

    try:
        return json.loads(data, parse_constant=_no_constant)
    except RecursionError:
        raise Refused("nested too deeply") from None
    except UnicodeDecodeError:
        raise Refused("not UTF-8") from None
    except ValueError as exc:
        raise Refused(f"not valid JSON: {str(exc)[:120]}") from None


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a number")
