"""Build the job from every source's events: each rank's story, its groups, who each line is about.

Who wrote what is settled by the identity stage (`triage.identity`); here the events are put in
time order per rank, each rank's last milestone is placed, and the process groups with their
per-member progress are built (`triage.job.groups`), and who each line is about besides its writer
is resolved into global ranks (`triage.job.peers`). World size comes from `--world-size`, NCCL
`nranks`, the store's client count, HCCL/RAS summaries, or at least the highest rank seen.
"""

from __future__ import annotations

import calendar
import math
import time
from collections import Counter, defaultdict
from operator import attrgetter

from triage.identity import about_another, resolve
from triage.job.groups import build_groups
from triage.job.job import DENSE_RANKS, Job
from triage.job.peers import resolve_peers
from triage.job.progress import build_progress
from triage.model import Event, Kind, Milestone, Phase, RankState, SourceInfo
from triage.ranks import parse_ranks


def build_job(events: list[Event], sources: list[SourceInfo], world_size: int | None = None) -> Job:
    _place_yearless_times(events)
    size, size_from = _world_size(events, world_size)
    writers = resolve(events, sources, size)

    ranks: dict[int, RankState] = {}

    def state(rank: int) -> RankState:
        if rank not in ranks:
            ranks[rank] = RankState(rank=rank)
        return ranks[rank]

    if size and size <= DENSE_RANKS:
        for rank in range(size):
            state(rank)
    for source in sources:
        ident = writers.of_source(source.name)
        if ident.rank is not None and not source.skipped:
            st = state(ident.rank)
            st.has_log = True
            if source.last_line:
                st.last_lines.append(source.last_line)
            st.host = st.host or ident.host
            st.local_rank = st.local_rank if st.local_rank is not None else ident.local_rank
            st.device = st.device if st.device is not None else ident.device
    ordered = _in_time_order(events)
    unranked: list[Event] = []  # agents, Slurm, RAS lines about no one rank: still in `events`
    for event in ordered:
        if named := event.fields.get("culprit_ranks"):  # a rank another tool names exists,
            for rank in parse_ranks(named):  # even without a log of its own
                if size is None or rank < size:
                    state(rank)
        if event.identity.rank is None:
            unranked.append(event)
            continue
        st = state(event.identity.rank)
        st.events.append(event)
        if not about_another(event):
            st.has_log = True
        st.host = st.host or event.identity.host
        if st.local_rank is None:
            st.local_rank = event.identity.local_rank
    if size is None and ranks:
        size, size_from = max(ranks) + 1, "highest rank seen"
        if size <= DENSE_RANKS:
            for rank in range(size):
                state(rank)
    for st in ranks.values():
        place_milestone(st)
    _past_first_collective(ranks, unranked)
    job = Job(
        ranks=dict(sorted(ranks.items())),
        world_size=size,
        world_size_from=size_from,
        events=ordered,
        ip_hosts=_ip_hosts(events),
        groups=build_groups(ordered, size),
        unlisted=_gaps(ranks, size),
    )
    resolve_peers(job)  # who each line is about besides its writer: needs the ranks, hosts and groups
    job.progress = build_progress(job.events, job.groups)  # RAS lines need the peer pass's ranks
    return job


def _gaps(ranks: dict[int, RankState], size: int | None) -> list[tuple[int, int]]:
    """The ranges of range(size) that hold no rank state, in time linear in the states."""
    gaps: list[tuple[int, int]] = []
    if not size or len(ranks) >= size:
        return gaps
    nxt = 0
    for rank in sorted(r for r in ranks if 0 <= r < size):
        if rank > nxt:
            gaps.append((nxt, rank - 1))
        nxt = rank + 1
    if nxt < size:
        gaps.append((nxt, size - 1))
    return gaps


# torch.distributed calls a traceback can be inside while the process group is being made.
INIT_CALLS = ("init_process_group", "new_group", "_new_group_with_tag", "_store_based_barrier")
# Which milestone an event marks when its rule names none.
_KIND_MILESTONES = {Kind.INIT_START: Milestone.INIT_STARTED, Kind.INIT_DONE: Milestone.INIT_DONE}
# The kinds and phases the per-event questions below ask about, bound once: on Python 3.11 each
# `Kind.X` read goes through the enum metaclass's attribute hook (~90 ns), and these questions are
# asked of every event of the job.
_TIMEOUT, _PROGRESS, _EXIT = Kind.TIMEOUT, Kind.PROGRESS, Kind.EXIT
_TEARDOWN, _COMM_INIT = Phase.TEARDOWN, Phase.COMM_INIT
_STEADY = Milestone.STEADY
_ENDING = frozenset({Kind.CONSEQUENCE, Kind.EXIT})
_WAITING = frozenset({Kind.TIMEOUT, Kind.PEER_ERROR})
_IN_COLLECTIVES = frozenset({Phase.OPERATOR_LOAD, Phase.EXECUTION})
_C10_PREFIXED = ("pytorch", "python", "gloo", "store", "job")


def place_milestone(state: RankState) -> None:
    """The furthest a rank is known to have got, and whether it went on to tear down."""
    best: Milestone | None = Milestone.STARTED if state.has_log else None
    evidence = state.last_lines[0] if state.last_lines and state.has_log else None
    for event in state.events:
        if about_another(event):
            if event.kind is _EXIT:
                state.tore_down = True
            continue
        # Past `steady` no event can take the rank further: not asked.
        reached = milestone_of(event) if best is not _STEADY else None
        if event.kind in _ENDING or event.phase is _TEARDOWN:
            state.tore_down = True
        if event.kind is _PROGRESS and event.fields.get("step", "").isdigit():
            state.step = max(state.step or 0, int(event.fields["step"]))
        if reached is not None and (best is None or reached > best):
            best, evidence = reached, event.evidence
    state.milestone = best
    state.milestone_evidence = evidence


def _past_first_collective(ranks: dict[int, RankState], unranked: list[Event]) -> None:
    """A collective needs every member: once any writer completed one, even a line whose writer is
    not known (a console that interleaves its workers' unprefixed output), every rank that had
    finished init completed it too."""
    done = next((e for e in unranked if e.family not in ("torchrun", "slurm", "ras")
                 and (m := milestone_of(e)) is not None and m >= Milestone.FIRST_COLLECTIVE), None)
    if done is None:
        return
    for st in ranks.values():
        if st.milestone == Milestone.INIT_DONE:
            st.milestone, st.milestone_evidence = Milestone.FIRST_COLLECTIVE, done.evidence


def milestone_of(event: Event) -> Milestone | None:
    """The progress an event proves its writer had made."""
    fields, kind = event.fields, event.kind
    if kind is _PROGRESS and "step" in fields:
        return Milestone.STEADY
    done = fields.get("completed", "")
    if done.isdigit() and len(done) < 12 and int(done) >= 1:
        return Milestone.FIRST_COLLECTIVE
    seq = fields.get("seq", "")
    if kind is _TIMEOUT and seq.isdigit() and int(seq) >= 2:
        return Milestone.FIRST_COLLECTIVE  # collectives complete in order: the one before did
    if kind in _KIND_MILESTONES:
        return _KIND_MILESTONES[kind]
    if fields.get("call") in INIT_CALLS:
        return Milestone.INIT_STARTED  # its traceback is inside init_process_group / new_group
    if event.family in _C10_PREFIXED and event.identity.learnt_from.get("rank") == "[rankN]: prefix":
        # c10 prefixes its log lines, and init_process_group's excepthook each traceback line,
        # with `[rankN]:` only once the default process group exists (torch >= 2.3).
        return Milestone.INIT_DONE
    if event.phase in _IN_COLLECTIVES and kind in _WAITING:
        return Milestone.INIT_DONE  # it was waiting inside a collective: init was behind it
    if event.phase is _COMM_INIT and kind is _TIMEOUT:
        return Milestone.RENDEZVOUS  # it reached the store and waited there for the others
    return None


def _in_time_order(events: list[Event]) -> list[Event]:
    """By time, then source and line; the events without a time last, by source and line.

    The same order as one sort by (time, or infinity; source; line), with the keys read in C.
    """
    timed: list[Event] = []
    untimed: list[Event] = []
    for event in events:
        (untimed if event.time is None or event.time == math.inf else timed).append(event)
    timed.sort(key=attrgetter("time", "evidence.source", "evidence.line"))
    untimed.sort(key=attrgetter("evidence.source", "evidence.line"))
    return timed + untimed


def _place_yearless_times(events: list[Event]) -> None:
    """Give c10/glog times (no year) the year the rest of the job's clocks show: the same month,
    day and time in that year (not a fixed shift from the placeholder year, which lands a day late
    after February in a common year and puts a glog timeout after the next day's lines)."""
    yearless = [(e, when) for e in events if (when := e.time) is not None and not e.time_has_year]
    if not yearless:
        return
    # Counted by day, then by year: a job's thousands of times fall on a few days.
    days = Counter(int(e.time // _DAY) for e in events if e.time and e.time_has_year)
    years: Counter[int] = Counter()
    for day, count in days.items():
        years[time.gmtime(day * _DAY).tm_year] += count
    year = years.most_common(1)[0][0] if years else time.gmtime().tm_year
    shifts: dict[int, float] = {}  # placeholder day -> seconds to the same date in `year`
    for event, when in yearless:
        if when >= 0:
            day = int(when // _DAY)
            if (shift := shifts.get(day)) is None:
                shift = shifts[day] = _placed(day * _DAY, year) - day * _DAY
            # The same sum as placing the time of day itself: whole seconds, then the fraction.
            event.time = when + shift
        else:
            event.time = _placed(when, year)
        event.time_has_year = True


_DAY = 86400


def _placed(when: float, year: int) -> float:
    """`when`'s month, day and time of day in `year`."""
    tm = time.gmtime(when)
    fraction = when - int(when)
    # Feb 29 of the placeholder leap year becomes Mar 1 of a common year (timegm normalises).
    return calendar.timegm((year, tm.tm_mon, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, 0, 0, 0)) + fraction


_SIZE_FIELDS = frozenset({"world_size", "nranks", "clients_expected"})


def _world_size(events: list[Event], given: int | None) -> tuple[int | None, str | None]:
    if given:
        return given, "--world-size"
    candidates: list[tuple[int, str]] = []
    for event in events:
        fields = event.fields
        if fields.keys().isdisjoint(_SIZE_FIELDS):
            continue  # most lines state no size
        for key, label in (("world_size", "world size line"), ("nranks", "communicator size"),
                           ("clients_expected", "store client count")):
            if key in fields and fields[key].isdigit() and int(fields[key]) >= 1:  # `nranks 0`: no world
                candidates.append((int(fields[key]), f"{label} ({event.rule_id})"))
    if not candidates:
        return None, None
    # The world communicator is the largest; sub-communicators are smaller.
    size, label = max(candidates)
    return size, label


def _ip_hosts(events: list[Event]) -> dict[str, str]:
    """Map the addresses that writers announce (NCCL `Bootstrap : Using eth0:10.1.2.3`) to hosts.

    An address announced from two hosts (loopback, a NAT'd or reused one) names neither.
    """
    seen: dict[str, set[str]] = defaultdict(set)
    for event in events:
        ip = event.fields.get("ip")
        if ip and event.identity.host:
            seen[ip].add(event.identity.host)
    return {ip: next(iter(hosts)) for ip, hosts in seen.items()
            if len(hosts) == 1 and not ip.startswith("127.") and ip != "::1"}


# Logs more than this far apart in time are not one run (a torchrun restart is seconds to minutes).
_JOB_GAP_S = 6 * 3600


def separate_runs(events: list[Event]) -> list[str]:
    """Why these logs cannot all be one job: periods hours apart that each hold a start and a
    failure of their own (a long job's init and its failure a day later are one period's start and
    another's failure), or world communicators of different sizes. Empty when nothing says so.
    A source spans from its first time to its last, a folded crash loop's last copy included."""
    spans: dict[str, list[float]] = defaultdict(list)
    sizes: dict[object, int] = {}  # per process (host, pid), else per file
    for event in events:
        source = event.evidence.source
        if event.time is not None:
            spans[source].append(event.time)
            if event.count != 1:  # a folded crash loop's last copy: the source ran until then
                spans[source].append(event.time + event.span)  # its `last_time`
        if event.kind in _STARTS and event.fields.get("nranks", "").isdigit():
            writer = (event.identity.host, event.identity.pid) if event.identity.pid is not None else source
            sizes[writer] = max(sizes.get(writer, 0), int(event.fields["nranks"]))
    reasons: list[str] = []
    clusters: list[list[float]] = []
    for start, end in sorted((min(t), max(t)) for t in spans.values() if t):
        if clusters and start - clusters[-1][1] <= _JOB_GAP_S:
            clusters[-1][1] = max(clusters[-1][1], end)
        else:
            clusters.append([start, end])
    # One period is one run, whatever it holds.
    whole = [c for c in clusters if _started_and_failed(events, c[0], c[1])] if len(clusters) > 1 else []
    if len(whole) > 1:
        days = ", ".join(time.strftime("%Y-%m-%d %H:%M", time.gmtime(c[0])) for c in whole[:4])
        reasons.append(f"they hold {len(whole)} runs hours apart, each started and failed (from {days})")
    by_size = Counter(sizes.values())
    worlds = sorted(size for size, n in by_size.items() if n >= 2)
    if len(worlds) > 1:
        reasons.append("their largest communicators differ in size ("
                       + ", ".join(f"{size} ranks for {by_size[size]} processes" for size in worlds) + ")")
    return reasons


_STARTS = (Kind.INIT_START, Kind.INIT_DONE)
_FAILURES = (Kind.TIMEOUT, Kind.ERROR, Kind.PEER_ERROR, Kind.EXIT)


def _started_and_failed(events: list[Event], start: float, end: float) -> bool:
    inside = [e.kind for e in events if e.time is not None and start <= e.time <= end]
    return any(k in _STARTS for k in inside) and any(k in _FAILURES for k in inside)
