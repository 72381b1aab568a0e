"""How far each rank got: the few that stopped short of the collective the others wait in, or arrived late.

Progress is read as what is in flight. A rank with work enqueued above what it completed is waiting,
even when it enqueued less than its peers (a host sync such as `.item()` stops a rank enqueuing
early); the rank with nothing in flight while its peers wait on it stopped on the CPU side. An
enqueue gap alone is a lead, never a culprit stated with confidence. A straggler that was only slow
once arrives after its peers timed out and then fails too; its wait began long after theirs.

The reading of what is in flight is the job's progress model's (triage.job.progress: `in_flight`,
`idle`, each member's `log_waiting`/`log_idle`), read here from what the ranks' logs say of each
group; the flight-recorder principle reads the same model's dumps.
"""

from __future__ import annotations

from collections import Counter

from triage.diagnose.context import Context, rank_culprit
from triage.diagnose.principles.principle import Principle
from triage.job.progress import GroupProgress, idle, stated_count
from triage.model import Category, Event, Hypothesis, Kind
from triage.ranks import fmt_ranks

# A few ranks of one group stopped short: nothing in flight while the others waited (or, for the
# SeqNum they timed out at, behind the majority's).
LAGGING_RANK_SCORE = 0.75
# A few ranks enqueued less than the others, but had work in flight too (or it is not said): a lead.
ENQUEUE_GAP_SCORE = 0.4
# One rank's log alone: it was told another rank's collective timed out, with nothing in flight itself.
TOLD_WHILE_IDLE_SCORE = 0.55
# One rank began waiting long after the others had given up.
LATE_ARRIVAL_SCORE = 0.7
# A late arrival began waiting at least this long (s), and this share of the others' timeout, after them.
LATE_BY_AT_LEAST_S = 2.0
LATE_BY_TIMEOUT_SHARE = 0.25


def lagging_rank(ctx: Context) -> Hypothesis | None:
    """Inside one group, the few members that stopped short of the collective the others wait in.

    Progress is read as what is in flight: a member whose last enqueued work is above its last
    completed one (or that timed out in a work) is waiting, whatever its counts — a host sync such as
    `.item()` stops a rank enqueuing early. The member with nothing in flight (last enqueued equal to
    last completed) while the others wait stopped on the CPU side: that one is named. A gap in
    enqueued counts among members all in flight is only a lead. Before any rank logged a failure,
    only one rank's log told of another's timeout while idle counts (told_while_idle).
    """
    if not ctx.job.of_kinds(*_FAILED) and not any(
            e.kind is Kind.EXIT for f in ctx.facts.values() for e in f.self_failures):
        return told_while_idle(ctx)
    lead: Hypothesis | None = None
    for group in ctx.job.progress.by_first_log_wait():
        for key, label in (("log_enqueued", "last enqueued"), ("log_stuck_seq", "timed-out SeqNum")):
            values = {r: v for r in group.log_members if (v := getattr(group.by_rank[r], key)) is not None}
            if len(values) < 3:
                continue
            common, count = Counter(values.values()).most_common(1)[0]
            behind = sorted(r for r, v in values.items() if v < common)
            if not behind or count < len(values) / 2 or len(behind) > max(2, len(values) // 10):
                continue
            behind = [r for r in behind if r in ctx.facts]
            if not behind:
                continue
            if key == "log_enqueued":
                found = _stalled(ctx, group, behind, values, common, count)
                if found is not None and found.score >= ENQUEUE_GAP_SCORE:
                    return found
                lead = lead or found
                continue
            return _behind(ctx, group, behind, values, common, count, label, LAGGING_RANK_SCORE)
    return lead or told_while_idle(ctx)


# What makes a job failed by its logs alone (as the verdict asks before any principle has a say).
_FAILED = (Kind.TIMEOUT, Kind.ERROR, Kind.PEER_ERROR, Kind.CULPRIT_NAMED, Kind.UNEXPLAINED)


def told_while_idle(ctx: Context) -> Hypothesis | None:
    """One rank's log alone, whose lines say another rank's collective timed out (PyTorch's dump
    signal `… due to a collective timeout from rank 1 …`) while this rank had nothing in flight
    (`Last enqueued NCCL work: 5, last completed NCCL work: 5`) and no wait or failure of its own:
    the others timed out waiting in a collective this rank never enqueued. It is the lead, capped:
    its own log cannot show what the others waited in."""
    if sum(1 for f in ctx.facts.values() if f.state.has_log) != 1:
        return None
    ((rank, f),) = [(r, f) for r, f in ctx.facts.items() if f.state.has_log]
    if f.reported_wait or f.self_failures:
        return None
    told = [e for e in f.state.events if e.kind is Kind.CONSEQUENCE and _told_by_another(e, rank)
            and idle(stated_count(e.fields.get("enqueued")), stated_count(e.fields.get("completed")))]
    if not told:
        return None
    e = told[-1]
    who = f"rank {e.fields['detector_rank']}"
    return Hypothesis(
        name="lagging-rank", score=TOLD_WHILE_IDLE_SCORE, category=Category.HUNG_PROCESS,
        phase=ctx.phase([rank], [e]),
        culprits=[rank_culprit(ctx, rank, f"nothing in flight (last enqueued {e.fields['enqueued']} = last "
                               f"completed) when {who} timed out in a collective", [e])],
        reasoning=f"Rank {rank}'s log says {who}'s collective timed out, while rank {rank} had nothing in "
                  f"flight (last enqueued {e.fields['enqueued']} = last completed) and timed out in nothing "
                  f"itself: the others waited in a collective it never enqueued, so it is the one that "
                  "stopped. Only its log is here; the others' would confirm what they waited in.")


def _told_by_another(event: Event, rank: int) -> bool:
    """A line that says another rank's collective timed out (not this rank's own)."""
    detector = event.fields.get("detector_rank", "")
    return detector.isdigit() and int(detector) != rank


def _stalled(ctx: Context, group: GroupProgress, behind: list[int], enqueued: dict[int, int],
             common: int, count: int) -> Hypothesis | None:
    """Of the members whose last enqueued work is behind, those with nothing in flight while the
    others wait; or, when every one of them is in flight too, a lead only."""
    waiting = [r for r in group.log_members if r not in behind and group.by_rank[r].log_waiting]
    if not waiting:
        return None  # nobody waits on anyone: a snapshot of a moving job
    stopped = [r for r in behind if group.by_rank[r].log_idle]
    label = _label(ctx, group)
    if stopped:
        where = "" if group.default else f" of {label}"
        culprits = [rank_culprit(ctx, r, f"nothing in flight: last enqueued collective {enqueued[r]}{where} "
                                 f"is also its last completed, while the others waited in the next",
                                 _progress_lines(ctx, group, r)) for r in stopped]
        return Hypothesis(
            name="lagging-rank", score=LAGGING_RANK_SCORE, category=Category.HUNG_PROCESS,
            phase=ctx.phase(stopped, [e for r in stopped for e in group.by_rank[r].log_timeouts]),
            culprits=culprits,
            reasoning=f"In {label}, {len(waiting)} ranks had work in flight (enqueued above completed) "
                      f"and waited; rank{'s' if len(stopped) > 1 else ''} {fmt_ranks(stopped)} had nothing in flight "
                      f"(last enqueued {', '.join(str(enqueued[r]) for r in stopped)} = last completed): "
                      f"{'they' if len(stopped) > 1 else 'it'} stopped on the CPU side before enqueuing the "
                      "collective the others waited in.")
    in_flight = [r for r in behind if group.by_rank[r].log_waiting]
    hypothesis = _behind(ctx, group, behind, enqueued, common, count, "last enqueued", ENQUEUE_GAP_SCORE)
    hypothesis.reasoning = (
        f"In {label}, rank{'s' if len(behind) > 1 else ''} {fmt_ranks(behind)} enqueued less than the "
        f"others ({', '.join(str(enqueued[r]) for r in behind)} against {common}), but "
        + (f"{'they' if len(in_flight) > 1 else 'it'} had work in flight and waited like the rest (a host sync "
           "such as `.item()` stops a rank enqueuing early)" if len(in_flight) == len(behind) else
           "whether that work was in flight is not said")
        + ": an enqueue gap alone does not show who stopped.")
    return hypothesis


def _behind(ctx: Context, group: GroupProgress, behind: list[int], values: dict[int, int], common: int,
            count: int, label: str, score: float) -> Hypothesis:
    where = "" if group.default else f" of {_label(ctx, group)}"
    culprits = [rank_culprit(ctx, r, f"{label} collective {values[r]}{where}, behind the others' {common}",
                             group.by_rank[r].log_timeouts or ctx.facts[r].state.events[-1:])
                for r in behind]
    return Hypothesis(
        name="lagging-rank",
        score=score,
        category=Category.HUNG_PROCESS,
        phase=ctx.phase(behind, [e for r in behind for e in group.by_rank[r].log_timeouts]),
        culprits=culprits,
        reasoning=f"In {_label(ctx, group)}, {count} ranks reached collective {common} ({label}); "
                  f"rank{'s' if len(behind) > 1 else ''} {fmt_ranks(behind)} fell behind at "
                  f"{', '.join(str(values[r]) for r in behind)}, so the others waited on "
                  f"{'them' if len(behind) > 1 else 'it'}.",
    )


def _label(ctx: Context, group: GroupProgress) -> str:
    """The group as the logs name it (`the default process group`, `process group tp (PG GUID 3)`)."""
    logged = ctx.job.groups.get(group.key)
    return logged.label if logged is not None else group.label


def _progress_lines(ctx: Context, group: GroupProgress, rank: int) -> list[Event]:
    """The rank's lines that state its progress in this group, its last lines else."""
    member = group.by_rank[rank]
    lines = [e for e in ctx.facts[rank].state.events
             if e.fields.get("enqueued") == str(member.log_enqueued) and "completed" in e.fields]
    return lines[-1:] or ctx.facts[rank].state.events[-1:]


def late_arrival(ctx: Context) -> Hypothesis | None:
    """Every rank reported a wait, but one began waiting long after the others had given up.

    A straggler (a rank that was slow once, longer than the timeout) is not silent: it arrives at
    the collective after its peers timed out and then fails too (a timeout of its own, or "connection
    closed" from the peers that already left). Its wait began late: a timeout's wait began
    `timeout` before it fired; a lost peer is noticed as soon as the rank gets there.
    """
    waiters = ctx.waiters()
    if len(waiters) < 3 or len(waiters) < len(ctx.expected):
        return None  # a rank said nothing: that is the silent-rank principle's case
    starts: dict[int, tuple[float, Event]] = {}
    for rank in waiters:
        f = ctx.facts[rank]
        for event in sorted(f.timeouts + f.peer_errors, key=lambda e: e.time or 0.0):
            if event.time is None:
                continue
            start = event.time - _waited_s(event) if event.kind is Kind.TIMEOUT else event.time
            starts[rank] = (start, event)
            break
    if len(starts) < 3:
        return None
    ordered = sorted(starts.items(), key=lambda kv: kv[1][0])
    (last_rank, (last_start, last_event)), rest = ordered[-1], ordered[:-1]
    others = [start for _, (start, _) in rest]
    timeouts = [e for _, (_, e) in rest if e.kind is Kind.TIMEOUT]
    if not timeouts:
        return None
    timeout_s = max(_waited_s(e) for e in timeouts)
    spread = max(others) - min(others)
    gap = last_start - max(others)
    if gap < max(LATE_BY_AT_LEAST_S, LATE_BY_TIMEOUT_SHARE * timeout_s) or spread > gap / 2:
        return None
    return Hypothesis(
        name="late-arrival", score=LATE_ARRIVAL_SCORE, category=Category.HUNG_PROCESS,
        phase=ctx.phase([last_rank], [last_event]),
        culprits=[rank_culprit(ctx, last_rank, f"reached the collective {gap:.1f} s after the others "
                               f"had started waiting there (their timeout: {timeout_s:g} s)",
                               [last_event, timeouts[0]])],
        reasoning=f"{len(rest)} ranks began waiting in the same collective within {spread:.1f} s of "
                  f"each other and timed out after {timeout_s:g} s; rank {last_rank} got there "
                  f"{gap:.1f} s after them, so it was the one they waited for (a straggler: slow "
                  "data, a long checkpoint, a stall), and it failed only because they had gone.")


def _waited_s(event: Event) -> float:
    for key, scale in (("elapsed_ms", 1e-3), ("timeout_ms", 1e-3), ("timeout_s", 1.0)):
        value = event.fields.get(key, "")
        if value.isdigit():
            return int(value) * scale
    return 0.0


LAGGING_RANK = Principle(
    name="lagging-rank", emits=("lagging-rank",), run=lagging_rank, fails_without_logged_failure=True,
    summary="Inside one process group (the one whose waiting began first leading), a few members that "
            "stopped short: their last enqueued collective is behind the majority's with nothing in flight "
            "(last enqueued = last completed) while the others wait, or the SeqNum they timed out at is behind "
            "the majority's. Members behind in enqueued work but with work in flight were waiting too (a host "
            "sync stops a rank enqueuing early): that gap alone is only a lead (0.4). Before any rank logged a "
            "failure, one rank's log alone that says another rank's collective timed out while it had nothing "
            "in flight itself (last enqueued = last completed, no wait of its own) names it, capped (0.55): "
            "the others waited in a collective it never enqueued. In-flight is read from the job's progress "
            "model (what the ranks' logs say of each group).")
LATE_ARRIVAL = Principle(
    name="late-arrival", emits=("late-arrival",), run=late_arrival,
    summary="Every rank reported a wait, but one began waiting long after the others, which had started "
            "within a short spread of each other and timed out: a straggler (slow data, a long checkpoint, a "
            "stall) that reached the collective after they gave up and failed only because they had gone.")
