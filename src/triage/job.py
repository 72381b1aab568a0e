"""Merge the events of every source into one picture of the job: who is who, and each rank's story.

Identity comes from several places, in order of trust: the line's own prefix (`[rank11]:`), the
source's path (`rank-0011.log`, `attempt_0/3/` under a host folder), the first lines of the source,
the NCCL world communicator's `rank r nranks n` line, and (host, local rank) pairs matched against
ranks known elsewhere. World size comes from `--world-size`, NCCL `nranks`, the store's client
count, HCCL/RAS summaries, or at least the highest rank seen.
"""

from __future__ import annotations

import calendar
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import regex

from triage.model import Event, Identity, Kind, RankState, SourceInfo
from triage.parse.clock import YEARLESS

_DEFAULT_PG = regex.compile(r"^(?:0|default_pg)$|\(default_pg\)|^0\(")


@dataclass
class Job:
    ranks: dict[int, RankState]
    world_size: int | None
    world_size_from: str | None
    events: list[Event]  # every event, in time order where times are known
    ip_hosts: dict[str, str] = field(default_factory=dict)  # address -> host name

    def hosts(self) -> dict[str, list[int]]:
        by_host: dict[str, list[int]] = defaultdict(list)
        for rank, state in sorted(self.ranks.items()):
            if state.host:
                by_host[state.host].append(rank)
        return dict(by_host)


def build_job(events: list[Event], sources: list[SourceInfo], world_size: int | None = None) -> Job:
    _place_yearless_times(events)
    group_of = {s.name: _group_key(s.name) for s in sources}
    group_identity = _resolve_groups(events, sources, group_of)
    size, size_from = _world_size(events, world_size)
    _ranks_from_world_comm(events, group_identity, group_of, size)
    # Under srun, a task is a rank unless srun started one torchrun per node.
    slurm_tasks_are_ranks = not any(e.family == "torchrun" for e in events)
    for event in events:
        group = group_identity.get(group_of.get(event.evidence.source, event.evidence.source))
        if group is not None:
            event.identity = event.identity.merged_over(group)
        _identity_from_fields(event, slurm_tasks_are_ranks)
    _ranks_from_host_slots(events, group_of, group_identity)

    ranks: dict[int, RankState] = {}

    def state(rank: int) -> RankState:
        if rank not in ranks:
            ranks[rank] = RankState(rank=rank)
        return ranks[rank]

    if size:
        for rank in range(size):
            state(rank)
    for source in sources:
        ident = group_identity.get(group_of[source.name])
        if ident is not None and ident.rank is not None and not source.skipped:
            st = state(ident.rank)
            st.has_log = True
            if source.last_line:
                st.last_lines.append(source.last_line)
            st.host = st.host or ident.host
            st.local_rank = st.local_rank if st.local_rank is not None else ident.local_rank
    ordered = sorted(events, key=_time_key)
    for event in ordered:
        if event.identity.rank is None:
            continue  # agents, Slurm, RAS lines about no one rank: still in `events`
        st = state(event.identity.rank)
        st.events.append(event)
        st.has_log = True
        st.host = st.host or event.identity.host
        if st.local_rank is None:
            st.local_rank = event.identity.local_rank
    if size is None and ranks:
        size, size_from = max(ranks) + 1, "highest rank seen"
    return Job(
        ranks=dict(sorted(ranks.items())),
        world_size=size,
        world_size_from=size_from,
        events=ordered,
        ip_hosts=_ip_hosts(events),
    )


def _time_key(event: Event) -> tuple[float, str, int]:
    return (event.time if event.time is not None else float("inf"),
            event.evidence.source, event.evidence.line)


def _place_yearless_times(events: list[Event]) -> None:
    """Give c10/glog times (no year) the year the rest of the job's clocks show."""
    years = Counter(time.gmtime(e.time).tm_year for e in events if e.time and e.time_has_year)
    year = years.most_common(1)[0][0] if years else time.gmtime().tm_year
    shift = calendar.timegm((year, 1, 1, 0, 0, 0, 0, 0, 0)) - calendar.timegm(
        (YEARLESS, 1, 1, 0, 0, 0, 0, 0, 0))
    for event in events:
        if event.time is not None and not event.time_has_year:
            # 2000 is a leap year: dates after Feb 28 of a common year land one day late. Harmless
            # for ordering within a job, which is all these times are used for.
            event.time += shift
            event.time_has_year = True


def _group_key(name: str) -> str:
    """Sources written by the same process share a key: torchrun's stdout.log and stderr.log."""
    path = PurePosixPath(name.replace("!", "/"))
    if path.name in ("stdout.log", "stderr.log", "error.json") and path.parent.name.isdigit():
        return str(path.parent)
    return name


def _resolve_groups(events: list[Event], sources: list[SourceInfo],
                    group_of: dict[str, str]) -> dict[str, Identity]:
    """One identity per source group: its path's, completed by what most of its lines say."""
    identities: dict[str, Identity] = {}
    for source in sources:
        key = group_of[source.name]
        identities[key] = source.identity.merged_over(identities.get(key, Identity()))
    line_ranks: dict[str, Counter[int]] = defaultdict(Counter)
    line_hosts: dict[str, Counter[str]] = defaultdict(Counter)
    for event in events:
        key = group_of.get(event.evidence.source, event.evidence.source)
        if event.identity.rank is not None and "rank" not in identities.get(key, Identity()).learnt_from:
            line_ranks[key][event.identity.rank] += 1
        if event.identity.host:
            line_hosts[key][event.identity.host] += 1
    for key, identity in identities.items():
        if identity.rank is None and line_ranks[key]:
            rank, count = line_ranks[key].most_common(1)[0]
            # A file where one rank writes nearly every line is that rank's; otherwise it
            # interleaves several ranks and each line keeps its own.
            if count >= 0.8 * sum(line_ranks[key].values()):
                identity.rank = rank
                identity.learnt_from["rank"] = "line prefixes"
        if identity.host is None and line_hosts[key]:
            identity.host = line_hosts[key].most_common(1)[0][0]
            identity.learnt_from["host"] = "line prefixes"
    return identities


def _ranks_from_world_comm(events: list[Event], groups: dict[str, Identity],
                           group_of: dict[str, str], size: int | None) -> None:
    """In the world communicator (nranks == world size) the NCCL/HCCL rank is the global rank."""
    if not size:
        return
    for event in events:
        fields = event.fields
        if event.kind not in (Kind.INIT_START, Kind.INIT_DONE) or fields.get("nranks") != str(size):
            continue
        if "rank" not in fields or event.identity.rank is not None:
            continue
        group = groups.get(group_of.get(event.evidence.source, event.evidence.source))
        if group is not None and group.rank is None:
            group.rank = int(fields["rank"])
            group.learnt_from["rank"] = "rank in the world communicator's init line"


def _identity_from_fields(event: Event, slurm_tasks_are_ranks: bool) -> None:
    """A rank named inside the message is global when it belongs to the default process group."""
    if event.identity.rank is not None:
        return
    fields = event.fields
    if event.kind in (Kind.INIT_START, Kind.INIT_DONE):
        return  # communicator ranks are resolved with the world size below
    pg = fields.get("pg")
    families = ("pytorch", "torchrun", "hccl", "repro", "slurm" if slurm_tasks_are_ranks else "")
    if "rank" in fields and (pg is None or _DEFAULT_PG.search(pg)) and event.family in families:
        event.identity.rank = int(fields["rank"])
        event.identity.learnt_from["rank"] = "rank named in the message"


def _ranks_from_host_slots(events: list[Event], group_of: dict[str, str], groups: dict[str, Identity]) -> None:
    """Give (host, local rank) sources their global rank from the pairs known elsewhere."""
    slots: dict[tuple[str, int], int] = {}
    for event in events:
        ident = event.identity
        if ident.rank is not None and ident.host and ident.local_rank is not None:
            slots[(ident.host, ident.local_rank)] = ident.rank
        if event.kind is Kind.EXIT and {"host", "rank", "local_rank"} <= event.fields.keys():
            host = event.fields["host"].split(".")[0]
            slots[(host, int(event.fields["local_rank"]))] = int(event.fields["rank"])
    for ident in groups.values():
        if ident.rank is not None and ident.host and ident.local_rank is not None:
            slots.setdefault((ident.host, ident.local_rank), ident.rank)
    # Hosts with some known slots: rank = base + local rank (static, homogeneous launches).
    bases: dict[str, Counter[int]] = defaultdict(Counter)
    for (host, local), rank in slots.items():
        bases[host][rank - local] += 1
    for ident in groups.values():
        if ident.rank is None and ident.host and ident.local_rank is not None:
            if (ident.host, ident.local_rank) in slots:
                ident.rank = slots[(ident.host, ident.local_rank)]
                ident.learnt_from["rank"] = "host and local rank, matched elsewhere"
            elif bases.get(ident.host):
                ident.rank = bases[ident.host].most_common(1)[0][0] + ident.local_rank
                ident.learnt_from["rank"] = "host's rank base plus local rank"
    pid_ranks: dict[int, int] = {e.identity.pid: e.identity.rank for e in events
                                 if e.identity.pid is not None and e.identity.rank is not None}
    for event in events:
        ident = event.identity
        if ident.rank is not None:
            continue
        group = groups.get(group_of.get(event.evidence.source, event.evidence.source))
        if group is not None and group.rank is not None:
            event.identity = ident.merged_over(group)
            continue
        # Launcher lines about a worker: `failed (exitcode: -9) local_rank: 3 (pid: 4242)`.
        worker_local = ident.local_rank
        if worker_local is None and event.fields.get("local_rank", "").isdigit():
            worker_local = int(event.fields["local_rank"])
        pid = event.fields.get("pid", "")
        if pid.isdigit() and pid_ranks.get(int(pid)) is not None:
            ident.rank = pid_ranks[int(pid)]
            ident.learnt_from["rank"] = "pid seen in the rank's own lines"
        elif ident.host and worker_local is not None and (ident.host, worker_local) in slots:
            ident.rank = slots[(ident.host, worker_local)]
            ident.learnt_from["rank"] = "host and local rank, matched elsewhere"
        elif ident.host and worker_local is not None and bases.get(ident.host):
            ident.rank = bases[ident.host].most_common(1)[0][0] + worker_local
            ident.learnt_from["rank"] = "host's rank base plus local rank"


def _world_size(events: list[Event], given: int | None) -> tuple[int | None, str | None]:
    if given:
        return given, "--world-size"
    candidates: list[tuple[int, str]] = []
    for event in events:
        fields = event.fields
        for key, label in (("world_size", "world size line"), ("nranks", "communicator size"),
                           ("clients_expected", "store client count")):
            if key in fields and fields[key].isdigit():
                candidates.append((int(fields[key]), f"{label} ({event.rule_id})"))
    if not candidates:
        return None, None
    # The world communicator is the largest; sub-communicators are smaller.
    size, label = max(candidates)
    return size, label


def _ip_hosts(events: list[Event]) -> dict[str, str]:
    """Map the addresses that writers announce (NCCL `Bootstrap : Using eth0:10.1.2.3`) to hosts."""
    mapping: dict[str, str] = {}
    for event in events:
        ip = event.fields.get("ip")
        if ip and event.identity.host:
            mapping.setdefault(ip, event.identity.host)
    return mapping
