"""How far each rank got: the few that fell behind the others' collective count, or arrived late.

Collectives complete in order, so in one group the ranks whose sequence number stayed behind the
majority's are what the others waited for. A straggler that was only slow once arrives after its
peers timed out and then fails too; its wait began long after theirs.
"""

from __future__ import annotations

from collections import Counter

from triage.diagnose.context import Context, groups_by_progress, rank_culprit
from triage.diagnose.principles.principle import Principle
from triage.model import Category, Event, Hypothesis, Kind
from triage.ranks import fmt_ranks

# A few ranks of one group behind the majority's last enqueued or timed-out collective.
LAGGING_RANK_SCORE = 0.75
# One rank began waiting long after the others had given up.
LATE_ARRIVAL_SCORE = 0.7
# A late arrival began waiting at least this long (s), and this share of the others' timeout, after them.
LATE_BY_AT_LEAST_S = 2.0
LATE_BY_TIMEOUT_SHARE = 0.25


def lagging_rank(ctx: Context) -> Hypothesis | None:
    """Inside one group, the few members whose collective sequence fell behind the others'."""
    for group in groups_by_progress(ctx):
        for key, label in (("enqueued", "last enqueued"), ("stuck_seq", "timed-out SeqNum")):
            values = {r: getattr(m, key) for r, m in group.members.items()
                      if getattr(m, key) is not None}
            if len(values) < 3:
                continue
            common, count = Counter(values.values()).most_common(1)[0]
            behind = sorted(r for r, v in values.items() if v < common)
            if not behind or count < len(values) / 2 or len(behind) > max(2, len(values) // 10):
                continue
            where = "" if group.default else f" of {group.label}"
            culprits = [rank_culprit(ctx, r, f"{label} collective {values[r]}{where}, behind the "
                                     f"others' {common}",
                                     group.members[r].timeouts or ctx.facts[r].state.events[-1:])
                        for r in behind if r in ctx.facts]
            if not culprits:
                continue
            return Hypothesis(
                name="lagging-rank",
                score=LAGGING_RANK_SCORE,
                category=Category.HUNG_PROCESS,
                phase=ctx.phase(behind, [e for r in behind for e in group.members[r].timeouts]),
                culprits=culprits,
                reasoning=f"In {group.label}, {count} ranks reached collective {common} ({label}); "
                          f"rank{'s' if len(behind) > 1 else ''} {fmt_ranks(behind)} fell behind at "
                          f"{', '.join(str(values[r]) for r in behind)}, so the others waited on "
                          f"{'them' if len(behind) > 1 else 'it'}.",
            )
    return None


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
    name="lagging-rank", emits=("lagging-rank",), run=lagging_rank,
    summary="Inside one process group (the one whose waiting began first leading), a few members whose last "
            "enqueued collective, or the SeqNum they timed out at, is behind the majority's: collectives "
            "complete in order, so the others waited on them.")
LATE_ARRIVAL = Principle(
    name="late-arrival", emits=("late-arrival",), run=late_arrival,
    summary="Every rank reported a wait, but one began waiting long after the others, which had started "
            "within a short spread of each other and timed out: a straggler (slow data, a long checkpoint, a "
            "stall) that reached the collective after they gave up and failed only because they had gone.")
