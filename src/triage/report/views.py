"""What every formatter shows, derived once from a Report: hosts, victims, evidence, per-rank timeline.

Formatters read a `ReportView` and lay it out; none of them recomputes who the victims are or which
rule a line came from, so `markdown`, `github`, `junit` and `sarif` cannot disagree.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from triage.job.config import build_config
from triage.job.progress import build_progress, describe
from triage.model import Culprit, Decision, Event, Evidence, Kind, Report, Status
from triage.ranks import fmt_ranks

ARCHIVE_SEP = "!"  # a source inside an archive is named `archive!member`
_TIMELINE_KINDS = (Kind.ERROR, Kind.TIMEOUT, Kind.PEER_ERROR, Kind.CULPRIT_NAMED, Kind.EXIT,
                   Kind.UNEXPLAINED)
_TIMELINE_MAX = 8  # events per rank: the first ones tell the story
FAILING_ROLES = ("culprit", "failed", "victim")
GRID_ROW = 32  # ranks per grid row when hosts are unknown


@dataclass(frozen=True)
class Location:
    """Where an evidence line lives, in a form a reader can follow."""

    file: str  # the file on disk: the log, or the archive that holds it
    member: str | None  # the path inside that archive, if any
    line: int

    @property
    def label(self) -> str:
        """`path:line`, or `archive → member:line`."""
        if self.member is not None:
            return f"{self.file} → {self.member}:{self.line}"
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Finding:
    """One evidence line of the verdict, with the rule that matched it and whom it accuses."""

    evidence: Evidence
    rule_id: str | None
    culprit: str  # who the line is evidence against, as the report names it (`rank 11 (node-b)`)
    rank: int | None
    location: Location
    count: int = 1  # the line and its copies but for their time (a crash loop), folded where read
    last_line: int | None = None  # the last copy's line, when there were several
    first_time: float | None = None  # the first and the last copy's times, where they differ
    last_time: float | None = None

    @property
    def repeats(self) -> str:
        """`repeated N times, last at line L, from T1 to T2` for a line a crash loop printed again;
        else ""."""
        return repeats_label(self.count, self.last_line, self.first_time, self.last_time)

    @property
    def during(self) -> str:
        """` from T1 to T2` where the copies' times differ; else ""."""
        return time_span(self.first_time, self.last_time)


def repeats_label(count: int, last_line: int | None, first_time: float | None = None,
                  last_time: float | None = None) -> str:
    if count <= 1:
        return ""
    return (f"repeated {count:,} times" + (f", last at line {last_line}" if last_line else "")
            + (f",{span}" if (span := time_span(first_time, last_time)) else ""))


def time_span(first: float | None, last: float | None) -> str:
    """` from 10:00:01 to 10:12:41` (dates shown where the two days differ), or ""."""
    if first is None or last is None or round(first) == round(last):
        return ""
    same_day = int(first) // 86400 == int(last) // 86400
    shown = "%H:%M:%S" if same_day else "%Y-%m-%d %H:%M:%S"
    return (f" from {time.strftime(shown, time.gmtime(int(first)))}"
            f" to {time.strftime(shown, time.gmtime(int(last)))}")


def repeated(events: list[Event]) -> dict[tuple[str, int], Event]:
    """(source, line) -> the event read there that stands for several identical lines."""
    return {(e.evidence.source, e.evidence.line): e for e in events if e.count > 1}


@dataclass
class RankView:
    rank: int
    host: str | None
    role: str  # culprit | victim | failed | ok | missing | unknown
    milestone: str | None
    step: int | None
    timeline: list[Event] = field(default_factory=list)  # its notable events, earliest first
    last_lines: list[Evidence] = field(default_factory=list)


@dataclass
class ReportView:
    report: Report
    status: Status
    status_label: str  # DIAGNOSED | INCONCLUSIVE | NO FAILURE
    headline: str  # one line: status, culprit, phase, category
    culprits: list[str]  # each culprit named, with its reason
    hosts: dict[str, list[int]]  # host -> its ranks
    victims: list[int]
    findings: list[Finding]
    ranks: list[RankView]
    # Per process group, how far its members got (dumps, logs, RAS): the groups that matter, one line each.
    progress: list[str] = field(default_factory=list)
    # Settings the ranks state differently (`nccl: 2.28.9 on ranks 0-2; 2.27.5 on rank 3`).
    config: list[str] = field(default_factory=list)
    # What to do next, in one line (`requeue-excluding gpu-node-03 (ranks 16-23)`); None without a decision.
    decision: str | None = None

    @property
    def version(self) -> str:
        return self.report.version


def locate(evidence: Evidence) -> Location:
    archive, sep, member = evidence.source.partition(ARCHIVE_SEP)
    if sep and member:
        return Location(archive, member, evidence.line)
    return Location(evidence.source, None, evidence.line)


def who(c: Culprit) -> str:
    if c.kind == "link":
        if c.rank is not None:  # a link between two ranks' devices (HCCL)
            return f"link rank {c.rank} ({c.host}) ↔ {c.peer}"
        return f"link {c.peer} ↔ {c.host}"
    if c.kind == "host":
        return f"host {c.host}"
    return f"rank {c.rank}" + (f" ({c.host})" if c.host else "")


def build(report: Report) -> ReportView:
    v = report.verdict
    label = v.status.value.upper().replace("_", " ")
    named = ", ".join(who(c) for c in v.culprits)
    if v.status is Status.NO_FAILURE:
        headline = f"{label}: the logs show no failure"
    else:
        headline = (f"{label}: {named or 'culprit not settled'} — phase {v.phase.value}, "
                    f"{v.category.value}, confidence {v.confidence:.2f}")
    rule_of = {(e.evidence.source, e.evidence.line): e.rule_id for e in report.events}
    folded = repeated(report.events)
    findings = [
        Finding(evidence=ev, rule_id=ev.rule_id or rule_of.get((ev.source, ev.line)), culprit=who(c),
                rank=c.rank, location=locate(ev), **_repeats(folded.get((ev.source, ev.line))))
        for c in v.culprits for ev in c.evidence
    ]
    hosts: dict[str, list[int]] = {}
    for rank, state in sorted(report.ranks.items()):
        if state.host:
            hosts.setdefault(state.host, []).append(rank)
    ranks = [
        RankView(rank=rank, host=state.host, role=state.role,
                 milestone=state.milestone.label if state.milestone is not None else None,
                 step=state.step, timeline=_timeline(state.events), last_lines=list(state.last_lines))
        for rank, state in sorted(report.ranks.items())
    ]
    return ReportView(
        report=report, status=v.status, status_label=label, headline=headline,
        culprits=[f"{who(c)} — {c.reason}" for c in v.culprits], hosts=dict(sorted(hosts.items())),
        victims=[r.rank for r in ranks if r.role == "victim"], findings=findings, ranks=ranks,
        progress=progress_lines(report), config=[i.label() for i in build_config(report.events)],
        decision=decision_label(report.decision) if report.decision is not None else None,
    )


def decision_label(decision: Decision) -> str:
    """`requeue-excluding gpu-node-03 (ranks 16-23)`, `stop`, `requeue with the flight recorder on`."""
    text = decision.action
    n = len(decision.ranks)
    if decision.hosts:
        text += " " + ", ".join(decision.hosts) + (f" (rank{'s' if n > 1 else ''} {fmt_ranks(decision.ranks)})"
                                                   if n else "")
    elif decision.exclude:
        text += f" rank{'s' if n > 1 else ''} {fmt_ranks(decision.ranks)}"
    if decision.env:
        text += " with the flight recorder on"
    return text


PROGRESS_GROUPS = 6  # groups shown: those with work in flight or a member behind, earliest stall first


def progress_lines(report: Report) -> list[str]:
    """`pair1 (ranks 2-3): rank 3 never enqueued ALL_REDUCE #5 …; rank 2 waiting in ALL_REDUCE #5 since …`
    for the groups whose dumps or logs show work in flight (the groups that matter)."""
    prog = build_progress(report.events, report.groups)
    if not prog.has_dumps:
        return []
    shown = [g for g in prog.groups.values() if g.dumped and any(p.waiting for p in g.by_rank.values())]
    shown.sort(key=lambda g: (g.stalled_since() or float("inf"), g.key))
    lines = [describe(g) for g in shown[:PROGRESS_GROUPS]]
    if len(shown) > PROGRESS_GROUPS:
        lines.append(f"… {len(shown) - PROGRESS_GROUPS} more groups with work in flight (--format json lists them)")
    return lines or [f"no work in flight in any of the {len(prog.groups)} groups the dumps hold"]


def _repeats(event: Event | None) -> dict[str, Any]:
    if event is None:
        return {}
    return {"count": event.count, "last_line": event.last_line,
            "first_time": event.time if event.last_time is not None else None, "last_time": event.last_time}


def _timeline(events: list[Event]) -> list[Event]:
    notable = [e for e in events if e.kind in _TIMELINE_KINDS or _fr_in_flight(e)]
    timed = sorted((e for e in notable if e.time is not None), key=lambda e: e.time or 0.0)
    untimed = [e for e in notable if e.time is None]
    return (timed + untimed)[:_TIMELINE_MAX]


def _fr_in_flight(event: Event) -> bool:
    """A flight-recorder entry still in flight when the dump was written: on the rank's timeline."""
    return event.rule_id == "fr-entry" and event.fields.get("fr_kept", "").startswith("in-flight")


def victims_line(view: ReportView) -> str | None:
    if not view.victims or view.status is not Status.DIAGNOSED:
        return None
    n = len(view.victims)
    return (f"{n} rank{'s' if n != 1 else ''} ({fmt_ranks(view.victims)}) timed out or lost a peer "
            "because of it")


@dataclass(frozen=True)
class GridRow:
    """One row of the rank picture: a host's ranks (in rank order), or a block of GRID_ROW ranks."""

    label: str
    roles: list[str]
    ranks: list[int]


@dataclass(frozen=True)
class GridFold:
    """Consecutive grid rows whose roles are identical, shown as one (a 1,024-rank job fits a screen)."""

    rows: list[GridRow]
    by_host: bool

    @property
    def label(self) -> str:
        return self.rows[0].label if len(self.rows) == 1 else f"{self.rows[0].label} … {self.rows[-1].label}"

    @property
    def ranks(self) -> list[int]:
        return [r for row in self.rows for r in row.ranks]

    @property
    def count(self) -> str:
        """`97 hosts, ` for a fold of several hosts, else empty."""
        return f"{len(self.rows)} hosts, " if len(self.rows) > 1 and self.by_host else ""


def grid(report: Report) -> list[GridFold]:
    """The host-by-local-rank picture, runs of identical rows folded (terminal and html draw it)."""
    by_host = all(s.host for s in report.ranks.values())
    rows = _host_rows(report) if by_host else _block_rows(report)
    folds: list[GridFold] = []
    i = 0
    while i < len(rows):
        j = i
        while j + 1 < len(rows) and rows[j + 1].roles == rows[i].roles:
            j += 1
        folds.append(GridFold(rows[i:j + 1], by_host))
        i = j + 1
    return folds


def _host_rows(report: Report) -> list[GridRow]:
    by_host: dict[str, list[tuple[int, str]]] = {}
    for rank, state in report.ranks.items():
        by_host.setdefault(state.host or "?", []).append((rank, state.role))
    rows = []
    for host, members in by_host.items():
        members.sort()
        rows.append(GridRow(host, [role for _, role in members], [r for r, _ in members]))
    return rows


def _block_rows(report: Report) -> list[GridRow]:
    ranks = sorted(report.ranks)
    rows = []
    for i in range(0, len(ranks), GRID_ROW):
        chunk = ranks[i:i + GRID_ROW]
        rows.append(GridRow(f"ranks {chunk[0]}-{chunk[-1]}", [report.ranks[r].role for r in chunk], chunk))
    return rows


def job_size(report: Report) -> str:
    """`16 ranks`; a size only guessed from the highest rank seen is not stated as known."""
    n = report.world_size
    if not n:
        return "world size unknown"
    if report.world_size_from == "highest rank seen":
        return f"world size unknown ({n} rank{'s' if n != 1 else ''} seen)"
    return f"{n} rank{'s' if n != 1 else ''}"
