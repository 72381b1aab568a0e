"""The silent rank: every other rank timed out or lost a peer, and one did not say a word about it.

A rank that hung (or crashed without a line) is the one the others wait for, and it is the one
rank that reports no timeout. A rank the launcher stopped after another failed is explained by
that, not silent by itself; a rank that left no log at all is named only when it is the only
candidate. One rank's log, with a world size no line states (only the highest rank seen), makes no
rank silent: the ranks it lacks are a guess from that one file, and absence in a partial log is not
evidence.
"""

from __future__ import annotations

from triage.diagnose.context import Context, evidence_of
from triage.diagnose.facts import is_victim_exit
from triage.diagnose.principles.principle import Principle
from triage.model import Category, Culprit, Hypothesis, MemberEvidence, Stance
from triage.ranks import fmt_ranks

# A few silent ranks with a log of their own, and every other rank's log here.
SILENT_WITH_LOG_SCORE = 0.8
# The same, but some ranks left no log: one of them may be the silent one.
SILENT_SOME_LOGS_MISSING_SCORE = 0.55
# Only ranks with no log at all are silent (they crashed or hung before writing, or were not collected).
SILENT_WITHOUT_LOG_SCORE = 0.65
# A rank that reported the wait itself: evidence against its having stopped first, but weak (in NCCL the
# rank behind times out too, in its own earlier collective), so it clears no one.
REPORTED_WAIT_WEIGHT = 0.3


def silent_rank(ctx: Context) -> Hypothesis | None:
    waiters = ctx.waiters()
    if not waiters or not ctx.job.world_size:
        return None
    if _world_guessed_from_one_log(ctx):
        return None
    failed = {r for r, f in ctx.facts.items() if f.self_failures}
    waiting = set(waiters)
    silent = [r for r in ctx.expected if r not in waiting and r not in failed]
    if not silent:
        return None
    timed_out = [r for r in waiters if ctx.facts[r].timeouts]
    if failed or not timed_out:
        # After a rank crashed, or when the others lost their peers at once rather than timing
        # out, the launcher tears the rest down: a rank it stopped (SIGTERM) before it had time to
        # time out is explained by that, not silent by itself.
        silent = [r for r in silent if not ctx.facts[r].stopped_by_launcher]
        if not silent:
            return None
    with_log = [r for r in silent if ctx.facts[r].state.has_log]
    without_log = [r for r in silent if not ctx.facts[r].state.has_log]
    n = len(ctx.expected)
    small = max(2, n // 10)
    phase = ctx.phase(silent)
    if with_log and len(with_log) <= small:
        score = SILENT_WITH_LOG_SCORE if not without_log else SILENT_SOME_LOGS_MISSING_SCORE
        sample = [e for r in waiters[:1] for e in (ctx.facts[r].timeouts + ctx.facts[r].peer_errors)[:1]]
        culprits = [
            Culprit(kind="rank", rank=r, host=ctx.host_of(r),
                    reason="did not report the timeout every other rank reported; its last lines "
                           "show where it stopped",
                    evidence=ctx.facts[r].state.last_lines[:2] + evidence_of(sample, 1))
            for r in with_log
        ]
        exited = [r for r in with_log if any(not is_victim_exit(e) for e in ctx.facts[r].exits)]
        category = Category.CRASHED_PROCESS if exited else Category.HUNG_PROCESS
        reasoning = (f"{len(waiters)} of {n} ranks timed out or lost a peer; rank"
                     f"{'s' if len(with_log) > 1 else ''} {fmt_ranks(with_log)} did not, so "
                     f"{'they were' if len(with_log) > 1 else 'it was'} the one the others waited for.")
    elif without_log and len(without_log) <= max(1, n // 16) and not with_log:
        score = SILENT_WITHOUT_LOG_SCORE
        culprits = [Culprit(kind="rank", rank=r, host=ctx.host_of(r),
                            reason="left no log while every other rank reported a timeout")
                    for r in without_log]
        category = Category.UNKNOWN
        reasoning = (f"{len(waiters)} of {n} ranks timed out or lost a peer; rank"
                     f"{'s' if len(without_log) > 1 else ''} {fmt_ranks(without_log)} left no log at all: "
                     "it crashed or hung before writing anything, or its log was not collected.")
    else:
        return None
    reasoning += _where_waiting_began(ctx)
    return Hypothesis(name="silent-rank", score=score, category=category, phase=phase,
                      culprits=culprits, reasoning=reasoning)


def _world_guessed_from_one_log(ctx: Context) -> bool:
    """One rank's log, and a world size no line states (only the highest rank seen): the ranks
    "missing" from it are a guess from that one file, and absence in a partial log is not evidence."""
    with_log = sum(1 for f in ctx.facts.values() if f.state.has_log)
    return with_log <= 1 and ctx.job.world_size_from in (None, "highest rank seen")


def _where_waiting_began(ctx: Context) -> str:
    """Which group and collective the first rank to give up was waiting in."""
    firsts = []
    for group in ctx.job.groups.values():
        for member in group.members.values():
            for event in member.timeouts:
                if member.stuck_seq is not None:
                    when = event.time if event.time is not None else float("inf")
                    firsts.append((when, group.default, member.rank, group, member))
    if not firsts:
        return ""
    *_, group, member = min(firsts, key=lambda f: f[:3])
    op = f"{member.stuck_op} " if member.stuck_op else ""
    text = f" The waiting began in {op}SeqNum {member.stuck_seq} of {group.label}"
    if not group.default:
        peers = sorted(r for r, m in group.members.items() if m.stuck_seq == member.stuck_seq)
        text += (f", where rank{'s' if len(peers) > 1 else ''} {fmt_ranks(peers)} timed out first: "
                 "the hang is inside that group")
    return text + "."


def reported_waits(ctx: Context) -> list[MemberEvidence]:
    """The ranks whose own log reports the wait (a timeout, a lost peer) and no failure of their own."""
    items = []
    for rank in ctx.waiters():
        f = ctx.facts[rank]
        lines = f.timeouts + f.peer_errors + f.detections
        if f.self_failures or not lines:
            continue
        items.append(MemberEvidence(kind="rank", rank=rank, host=ctx.host_of(rank), stance=Stance.AGAINST,
                                    source="silent-rank", weight=REPORTED_WAIT_WEIGHT, citation=lines[0].evidence,
                                    fact=f"reported the wait itself ({lines[0].message})"))
    return items


PRINCIPLE = Principle(
    name="silent-rank", emits=("silent-rank",), run=silent_rank, evidence=reported_waits,
    summary="Every other rank timed out or lost a peer, and a few ranks did not: the silent ones are what "
            "the others waited for (hung, or gone without a line), and their last lines show where they "
            "stopped. Ranks the launcher stopped after another rank failed are not silent by themselves. "
            "When only ranks with no log at all are silent, they are named, more weakly. One rank's log with a "
            "world size no line states (only the highest rank seen) makes no rank silent: the ranks it lacks "
            "are a guess from that one file. The reasoning says in which group and collective the waiting "
            "began. Of every rank whose log reports the wait itself it says so, a weak fact against it that "
            "clears no one (in NCCL the rank behind times out too).")
