"""The rank a dump's file name gives, checked against what the logs say of the same dump.

A dump states no rank; its name does, and names get changed (copied from several nodes into one
folder, renamed by hand). The logs say which rank wrote which file (`Finished writing Flight
Recorder debug info to /…/comm_lib_trace_rank_3` under `[rank3]:`) and how far each rank's group
had got when it was asked to dump (`Received a dump signal … Last enqueued NCCL work: 41, last
completed NCCL work: 40` under `[PG ID 0 PG GUID 0(default_pg) Rank 3]`): a dump cannot be behind
what its own rank logged before writing it. A disagreement is added to the dump source's
`conflicts`, never resolved silently.

Runs on the job's events once the identity stage has given lines their ranks (and `pg_key`).
"""

from __future__ import annotations

from collections import defaultdict

from triage.model import Event, SourceInfo
from triage.parse.fr.events import DUMP, GROUP, latest_dumps


def _base(name: str) -> str:
    return name.replace("\\", "/").replace("!", "/").rsplit("/", 1)[-1]


def _pg_key(name: str, desc: str) -> str:
    """The job model's key for a group a dump names (as triage.identity keys `PG GUID` prefixes)."""
    return "pg:0" if desc == "default_pg" or (name == "0" and desc in ("", "undefined")) else f"pg:{name}"


def check_dump_ranks(sources: list[SourceInfo], events: list[Event]) -> None:
    """Note on each dump source where the logs contradict the rank its file name gives."""
    writers: dict[str, set[int]] = defaultdict(set)  # file name a log line names -> ranks that named it
    said: dict[tuple[int, str], tuple[int, int, Event]] = {}  # (rank, group) -> enqueued, completed
    for e in events:
        if e.rank is None or e.family != "pytorch":
            continue
        if path := e.fields.get("dump_path"):
            writers[_base(path)].add(e.rank)
        enq, done = e.fields.get("enqueued", ""), e.fields.get("completed", "")
        if enq.lstrip("-").isdigit() and done.lstrip("-").isdigit():
            said[(e.rank, e.fields.get("pg_key", "pg:0"))] = (int(enq), int(done), e)
    latest = latest_dumps(events)  # an earlier dump of a rank is behind what it logged later, rightly
    by_source: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        if e.family == "fr" and e.rule_id in (DUMP, GROUP):
            by_source[e.evidence.source].append(e)
    for source in sources:
        found = by_source.get(source.name)
        if not found:
            continue
        rank_text = next((e.fields.get("fr_file_rank", "") for e in found if e.rule_id == DUMP), "")
        if not rank_text.isdigit():
            continue
        rank = int(rank_text)
        named = writers.get(_base(source.name), set())
        if named and rank not in named:
            _conflict(source, f"rank: the file name says {rank}, but the logs of rank "
                              f"{', '.join(map(str, sorted(named)))} say they wrote {_base(source.name)}")
        dump = next((e for e in found if e.rule_id == DUMP), None)
        if dump is not None and dump.rank in latest and latest[dump.rank] is not dump:
            continue
        for e in found:
            if e.rule_id != GROUP:
                continue
            key = _pg_key(e.fields.get("fr_pg", ""), e.fields.get("fr_pg_desc", ""))
            logged = said.get((rank, key))
            dumped = e.fields.get("fr_last_enqueued", "")
            if logged and dumped.lstrip("-").isdigit() and int(dumped) < logged[0]:
                line = logged[2].evidence
                _conflict(source, f"rank: the dump says group {key} of rank {rank} enqueued up to {dumped}, but "
                                  f"rank {rank} logged {logged[0]} before its dump ({line.source}:{line.line}): "
                                  "another rank's dump, or another run's?")


def _conflict(source: SourceInfo, text: str) -> None:
    if text not in source.conflicts:
        source.conflicts.append(text)
