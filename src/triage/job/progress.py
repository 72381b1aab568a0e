"""One progress model per process group, fed by every source that says how far a rank got.

Sources (each keeps its own numbers, so that they can be compared):

- flight-recorder dumps (`fr-group`, `fr-entry` events, triage.parse.fr.events): the group's
  status (last enqueued / started / completed), the signature of every collective in the buffer
  by `collective_seq_id` (and of every P2P op by `p2p_seq_id`), and the entries not known complete
  with their times and stacks;
- text logs (the job's `ProcessGroup` members, triage.job.groups): the watchdog's last enqueued and
  completed work, the SeqNum a rank timed out in (desync reports and watchdog lines);
- NCCL RAS (`ras-rank-launched-up-to`, `ras-op-count-group`): how many operations of each
  collective each communicator's ranks launched, per snapshot, and the majority's count (`RasCount`,
  read by the ras-status principle); per member, the most any snapshot says it launched.

Collectives are aligned by sequence number within one group, never by `record_id` (numbered per
process across groups). Groups are matched across ranks by the key the job model uses for log
prefixes (`pg:0` for the default group, `pg:<name>` else): a dump's group name is the GUID the logs
print. A dump whose first record is above 0 wrapped its ring buffer: its start was dropped, so its
first sequence number is not the job's first collective.

How progress is read (docs/design.md §4, principle 4): a rank with work enqueued above what it
completed is *waiting*; the rank with nothing in flight (last enqueued = last completed) while its
peers wait on it stopped on the CPU side. `in_flight` and `idle` are that reading, written once:
`RankProgress.waiting`/`idle` apply it to a dump (else the logs), `log_waiting`/`log_idle` to the
logs alone, which the lagging-rank principle (principles/progress.py) reads; the flight-recorder
principle reads the dumps.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from triage.model import Event, Evidence, ProcessGroup
from triage.parse.fr.crosscheck import _pg_key
from triage.parse.fr.events import DUMP, ENTRY, GROUP, latest_dumps, parse_timeline


def in_flight(enqueued: int | None, completed: int | None, timed_out: bool = False) -> bool:
    """It waits on a collective: work enqueued above what completed (or, the counts unsaid, a
    work it timed out in)."""
    if enqueued is not None and completed is not None:
        return enqueued > completed
    return timed_out


def idle(enqueued: int | None, completed: int | None, timed_out: bool = False) -> bool:
    """Nothing in flight: every work it enqueued completed, and it timed out in none."""
    return enqueued is not None and completed is not None and enqueued == completed and not timed_out


def stated_count(text: str | None) -> int | None:
    """A count a log line states (`Last enqueued NCCL work: 5`): a plain number, else None."""
    return int(text) if text and text.isascii() and text.isdigit() and len(text) < 24 else None


@dataclass
class Op:
    """One recorded operation of one rank, from a dump entry."""

    seq: int | None  # collective_seq_id (p2p_seq_id for P2P)
    p2p: bool
    op: str
    sizes: str
    dtypes: str
    state: str
    since: float | None  # when it was enqueued (s since the epoch)
    timeout_s: float | None
    stack: list[tuple[str, str, int | None]]  # innermost first: (function, file, line)
    evidence: Evidence

    @property
    def label(self) -> str:
        return f"{self.op.upper()} {'p2p ' if self.p2p else ''}#{self.seq}"

    def where(self, limit: int = 3) -> str:
        """`main (fr_job.py:152) ← <module> (fr_job.py:183)`: the frames outside torch first."""
        own = [f for f in self.stack if "/torch/" not in f[1]] or self.stack
        return " ← ".join(f"{n} ({fn.rsplit('/', 1)[-1]}:{ln})" for n, fn, ln in own[:limit])


@dataclass
class RankProgress:
    rank: int
    # From its dump: pg_status, in op counts (gloo counts send/recv too: op_id units).
    enqueued: int | None = None
    started: int | None = None
    completed: int | None = None
    first_seq: int | None = None  # the first collective the buffer holds (1 unless wrapped)
    last_seq: int | None = None
    wrapped: bool = False
    timeline: dict[int, str] = field(default_factory=dict)  # seq -> signature
    pending: list[Op] = field(default_factory=list)  # entries not known complete, oldest first
    last_done: Op | None = None  # the last entry known complete
    dump: Evidence | None = None
    # From its logs.
    log_enqueued: int | None = None
    log_completed: int | None = None
    log_stuck_seq: int | None = None
    log_stuck_op: str | None = None
    log_timeouts: list[Event] = field(default_factory=list)  # its timeout lines in this group
    # From RAS.
    ras_launched: int | None = None

    @property
    def has_dump(self) -> bool:
        return self.dump is not None

    @property
    def log_timed_out(self) -> bool:
        return bool(self.log_timeouts)

    @property
    def log_waiting(self) -> bool:
        """Waiting by its logs alone."""
        return in_flight(self.log_enqueued, self.log_completed, self.log_timed_out)

    @property
    def log_idle(self) -> bool:
        """Nothing in flight by its logs alone."""
        return idle(self.log_enqueued, self.log_completed, self.log_timed_out)

    @property
    def waiting(self) -> bool:
        if self.has_dump:
            return in_flight(self.enqueued, self.completed) or bool(self.pending and self.enqueued is None)
        return self.log_waiting

    @property
    def idle(self) -> bool:
        if self.has_dump:
            return idle(self.enqueued, self.completed)
        return self.log_idle

    @property
    def reached(self) -> int | None:
        """The furthest it enqueued, in the group's count."""
        return self.enqueued if self.has_dump else self.log_enqueued

    @property
    def oldest(self) -> Op | None:
        """The oldest collective it waits in (an entry not known complete)."""
        return self.pending[0] if self.pending else None

    def sources(self) -> list[str]:
        return [name for name, has in (("dump", self.has_dump),
                                       ("log", self.log_enqueued is not None or self.log_stuck_seq is not None),
                                       ("ras", self.ras_launched is not None)) if has]


@dataclass
class GroupProgress:
    key: str  # `pg:0`, `pg:<name>`, `comm:<id>`
    name: str
    desc: str
    default: bool
    ranks: list[int] = field(default_factory=list)  # members as stated (a dump's pg_config, the logs)
    by_rank: dict[int, RankProgress] = field(default_factory=dict)
    log_members: list[int] = field(default_factory=list)  # the members its logs show, as first read

    def member(self, rank: int) -> RankProgress:
        if rank not in self.by_rank:
            self.by_rank[rank] = RankProgress(rank)
        return self.by_rank[rank]

    @property
    def label(self) -> str:
        what = self.desc if self.desc and self.desc not in ("undefined",) else self.key
        return "the default group" if self.default else f"group {what}"

    @property
    def dumped(self) -> list[int]:
        return sorted(r for r, p in self.by_rank.items() if p.has_dump)

    def first_log_wait(self) -> float | None:
        """When the first timeout its members logged in it fired (None: none timed)."""
        times = [e.time for r in self.log_members for e in self.by_rank[r].log_timeouts if e.time is not None]
        return min(times) if times else None

    def stalled_since(self) -> float | None:
        """When its oldest work still in flight on any rank was enqueued (None: nothing in flight)."""
        times = [p.oldest.since for p in self.by_rank.values()
                 if p.waiting and p.oldest is not None and p.oldest.since is not None]
        return min(times) if times else None


@dataclass
class RasCount:
    """One collective's operation counts in one communicator, as one RAS snapshot gives them.

    RAS prints groups of ranks by the count they launched up to (`ras-op-count-group`, with how many
    ranks) and, for ranks outside the usual, a line each (`ras-rank-launched-up-to`, its communicator
    rank). The counts are read by majority: each group weighs its ranks, a rank's own line one more
    where no group holds its count."""

    comm: str
    collective: str
    groups: Counter[int] = field(default_factory=Counter)  # count -> ranks a group line puts there
    listed: dict[str, int] = field(default_factory=dict)  # communicator rank -> count, from its own line
    lines: dict[str, Event] = field(default_factory=dict)  # communicator rank -> its line

    @property
    def majority(self) -> int | None:
        """The count most ranks launched up to (None when the ranks split evenly)."""
        tally = Counter(self.groups)
        for count in self.listed.values():
            if count not in self.groups:  # a `Rank r has launched up to …` line of its own
                tally[count] += 1
        top = tally.most_common(2)
        return None if len(top) > 1 and top[0][1] == top[1][1] else top[0][0]

    def behind(self) -> dict[str, int]:
        """The listed ranks below the majority's count (none without a majority)."""
        common = self.majority
        return {} if common is None else {r: c for r, c in self.listed.items() if c < common}

    def ahead(self) -> bool:
        common = self.majority
        return common is not None and any(c > common for c in self.listed.values())


@dataclass
class Progress:
    groups: dict[str, GroupProgress] = field(default_factory=dict)
    dumps: dict[int, Evidence] = field(default_factory=dict)  # rank -> its dump (its latest, `latest_dumps`)
    folded: dict[int, int] = field(default_factory=dict)  # rank -> its earlier dumps, left for its latest
    latest: float | None = None  # the latest time any dump states (near when they were written)
    # RAS snapshot name -> (communicator, collective) -> its counts in that snapshot.
    ras: dict[str, dict[tuple[str, str], RasCount]] = field(default_factory=dict)

    @property
    def has_dumps(self) -> bool:
        return bool(self.dumps)

    def by_first_log_wait(self) -> list[GroupProgress]:
        """The groups, the one whose logged waiting began first leading (then the default group)."""
        return sorted(self.groups.values(), key=lambda g: (
            t if (t := g.first_log_wait()) is not None else float("inf"), not g.default, g.key))


def build_progress(events: list[Event], groups: dict[str, ProcessGroup]) -> Progress:
    """The progress of every group the events and the job's log-read groups show."""
    out = Progress()
    times: list[float] = []
    dumped = [e for e in events if e.family == "fr"]  # a dump's lines (most jobs: none)
    latest = latest_dumps(dumped)
    for e in dumped:
        if e.rank is None:
            continue
        if (kept := latest.get(e.rank)) is not None and e.evidence.source != kept.evidence.source:
            out.folded[e.rank] = out.folded.get(e.rank, 0) + (e.rule_id == DUMP)
            continue  # an earlier dump of the rank: its latest shows where it got
        f = e.fields
        if e.rule_id == DUMP:
            out.dumps.setdefault(e.rank, e.evidence)
            continue
        key = _pg_key(f.get("fr_pg", ""), f.get("fr_pg_desc", ""))
        group = out.groups.get(key)
        if group is None:
            group = out.groups[key] = GroupProgress(key, f.get("fr_pg", ""), f.get("fr_pg_desc", ""), key == "pg:0")
        p = group.member(e.rank)
        p.dump = p.dump or e.evidence
        if e.rule_id == GROUP:
            _group(group, p, f)
        elif e.rule_id == ENTRY:
            op = _op(e)
            if op.since is not None:
                times.append(op.since)
            if f.get("fr_kept", "").startswith("in-flight"):
                p.pending.append(op)
            elif f.get("fr_kept") == "last-completed":
                p.last_done = op
    for e in dumped:  # dump events name their rank's dump; the dump event comes with them
        if e.rule_id == DUMP and e.rank is not None and out.dumps.get(e.rank) == e.evidence:
            first = e.fields.get("fr_first_record", "")
            if first.isdigit() and int(first) > 0:
                for group in out.groups.values():
                    if e.rank in group.by_rank:
                        group.by_rank[e.rank].wrapped = True
    for group in out.groups.values():
        for p in group.by_rank.values():
            p.pending.sort(key=lambda o: (o.seq is None, o.seq or 0))
    _logs(out, groups)
    _ras(out, events)
    out.latest = max(times) if times else None
    return out


def _int(text: str | None) -> int | None:
    return int(text) if text and text.lstrip("-").isdigit() and len(text) < 24 else None


def _group(group: GroupProgress, p: RankProgress, f: dict[str, str]) -> None:
    p.enqueued, p.started, p.completed = (_int(f.get("fr_last_enqueued")), _int(f.get("fr_last_started")),
                                          _int(f.get("fr_last_completed")))
    p.first_seq, p.last_seq = _int(f.get("fr_first_seq")), _int(f.get("fr_last_seq"))
    if p.first_seq is not None and p.first_seq > 1:
        p.wrapped = True
    if f.get("fr_ops"):
        try:
            p.timeline = parse_timeline(f["fr_ops"], f.get("fr_sigs", ""))
        except (ValueError, IndexError):
            p.timeline = {}
    ranks = [int(r) for r in f.get("fr_pg_ranks", "").split(",") if r.isdigit()]
    if ranks and not group.ranks:
        group.ranks = ranks


def _op(e: Event) -> Op:
    f = e.fields
    p2p = f.get("fr_is_p2p") == "1"
    try:
        frames = json.loads(f.get("fr_frames") or "[]")
        stack = [(str(n), str(fn), ln if isinstance(ln, int) else None) for n, fn, ln in frames]
    except (ValueError, TypeError):
        stack = []
    created = _int(f.get("fr_created_ns"))
    timeout = _int(f.get("fr_timeout_ms"))
    dtypes = ",".join(json.loads(f["fr_in_dtypes"])) if f.get("fr_in_dtypes", "").startswith("[") else ""
    return Op(seq=_int(f.get("fr_p2p_seq" if p2p else "fr_seq")), p2p=p2p,
              op=f.get("fr_op", "?") + (f" {f['fr_p2p_peers']}" if f.get("fr_p2p_peers") else ""),
              sizes=f.get("fr_in_sizes", ""), dtypes=dtypes, state=f.get("fr_state", ""),
              since=created / 1e9 if created else None, timeout_s=timeout / 1000 if timeout else None,
              stack=stack, evidence=e.evidence)


def _logs(out: Progress, groups: dict[str, ProcessGroup]) -> None:
    for key, pg in groups.items():
        group = out.groups.get(key)
        if group is None:
            group = out.groups[key] = GroupProgress(key, key.partition(":")[2], pg.desc or "", pg.default)
        group.desc = group.desc or pg.desc or ""
        for rank, m in pg.members.items():
            p = group.member(rank)
            group.log_members.append(rank)
            p.log_enqueued, p.log_completed = m.enqueued, m.completed
            p.log_stuck_seq, p.log_stuck_op, p.log_timeouts = m.stuck_seq, m.stuck_op, m.timeouts


def _ras(out: Progress, events: list[Event]) -> None:
    for e in [e for e in events if e.family == "ras" or e.rule_id == "ras-rank-launched-up-to"]:
        if e.family == "ras" and "snapshot" in e.fields:
            _ras_count(out, e)
        if e.rule_id != "ras-rank-launched-up-to" or not e.fields.get("comm_id"):
            continue
        rank = e.about[0] if len(e.about) == 1 else e.rank
        count = _int(e.fields.get("seq"))
        if rank is None or count is None:
            continue
        key = f"comm:{e.fields['comm_id']}"
        group = out.groups.get(key) or out.groups.setdefault(key, GroupProgress(key, e.fields["comm_id"], "", False))
        p = group.member(rank)
        p.ras_launched = max(p.ras_launched or 0, count)


def _ras_count(out: Progress, e: Event) -> None:
    f = e.fields
    if e.rule_id not in ("ras-op-count-group", "ras-rank-launched-up-to") or not f.get("seq", "").isdigit():
        return
    key = (f.get("comm_id", ""), f.get("collective", ""))
    counts = out.ras.setdefault(f["snapshot"], {})
    count = counts.get(key) or counts.setdefault(key, RasCount(*key))
    if e.rule_id == "ras-op-count-group":
        count.groups[int(f["seq"])] += int(f.get("ranks_count", "1"))
    else:
        count.listed[f.get("pg_rank", "")] = int(f["seq"])
        count.lines[f.get("pg_rank", "")] = e


def describe(group: GroupProgress, limit: int = 4) -> str:
    """`tp (ranks 4-5): rank 5 never enqueued ALL_REDUCE #41; rank 4 waiting in ALL_REDUCE #41 since …`."""
    from triage.ranks import fmt_ranks

    members = sorted(group.by_rank)
    head = f"{group.desc or group.key} (ranks {fmt_ranks(group.ranks or members)})"
    parts: list[str] = []
    waiting = [group.by_rank[r] for r in members if group.by_rank[r].waiting]
    target = next((p.oldest for p in waiting if p.oldest is not None), None)
    top = max((p.reached or 0 for p in waiting), default=None)
    for rank in members:
        p = group.by_rank[rank]
        if p.waiting and p.oldest is not None:
            op = p.oldest
            since = f" since {clock(op.since)}" if op.since is not None else ""
            limit_s = f" (timeout {op.timeout_s:g} s)" if op.timeout_s else ""
            parts.append(f"rank {rank} waiting in {op.label}{since}{limit_s}")
        elif p.waiting and p.log_stuck_seq is not None:
            parts.append(f"rank {rank} timed out in {(p.log_stuck_op or 'collective').upper()} #{p.log_stuck_seq}")
        elif p.waiting:
            parts.append(f"rank {rank} waiting (enqueued {p.reached}, completed "
                         f"{p.completed if p.has_dump else p.log_completed})")
        elif p.idle and top is not None and (p.reached or 0) < top:
            what = target.label if target is not None else f"#{top}"
            parts.append(f"rank {rank} never enqueued {what} (last enqueued {p.reached}, all of it completed)")
    if not parts:
        done = {group.by_rank[r].reached for r in members}
        parts.append("nothing in flight" + (f" (all at {done.pop()})" if len(done) == 1 else ""))
    more = f"; … {len(parts) - limit} more" if len(parts) > limit else ""
    return f"{head}: " + "; ".join(parts[:limit]) + more


def clock(t: float) -> str:
    """`12:34:56.789` (UTC)."""
    import time

    return time.strftime("%H:%M:%S", time.gmtime(t)) + f".{int((t % 1) * 1000):03d}"
