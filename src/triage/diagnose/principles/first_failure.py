"""A rank failed by itself before the others timed out: its own error, crash, OOM or exit came first.

The ranks whose own failures (not a timeout, not a lost peer) came first, within a second of each
other, are the cause; the others' errors follow from them. How strong that is depends on when it
came (before any wait, with no waits at all, or after the waits began), on whether a rule knows the
lines, and on whether the other ranks' logs are here to show that none of them failed earlier.
"""

from __future__ import annotations

from triage.diagnose.context import Context, failure_category, rank_culprit
from triage.diagnose.facts import RankFacts, is_crash_exit, is_hard_exit
from triage.diagnose.phase import holds_start
from triage.diagnose.principles.principle import Principle
from triage.model import Category, Event, Hypothesis, Kind
from triage.ranks import fmt_ranks

# One rank failed before anyone waited: the strongest sign there is.
BEFORE_WAITS_SCORE = 0.9
# One rank failed and no rank waited at all.
NO_WAITS_SCORE = 0.85
# One rank failed after the waits began: it may be one more consequence.
AFTER_WAITS_SCORE = 0.7
# Most ranks failed alike: a job-wide fault, not one rank.
JOB_WIDE_SCORE = 0.35
# A few ranks failed together.
FEW_RANKS_SCORE = 0.6
# More than this share of the ranks failing alike is a job-wide fault.
JOB_WIDE_SHARE = 0.5
# At most this when the only failure is a launcher's "exited with 1" and no line of its own says
# why: before every other rank's trouble, and after it.
BARE_EXIT_BEFORE_WAITS_CAP = 0.7
BARE_EXIT_CAP = 0.55
# At most this when only lines no rule knows say it failed: evidence, but weak.
UNKNOWN_LINES_CAP = 0.55
# At most this when only the failing rank's own log is here: a fault local by nature, or another.
ONLY_LOG_LOCAL_CAP = 0.65
ONLY_LOG_CAP = 0.5
# Failures this close to the first (s) are the same event seen twice; a failure this close to the
# first wait still came before it.
SAME_EVENT_S = 1.0
# Families whose timeouts are a watchdog's: it aborts its process (SIGABRT, exit -6) after them.
_WATCHDOGS = ("pytorch",)


def first_failure(ctx: Context) -> Hypothesis | None:
    failed = own_failures(ctx)
    if not failed:
        return None
    times = {r: min((e.time for e in own if e.time is not None), default=None) for r, own in failed.items()}
    timed = sorted((t, r) for r, t in times.items() if t is not None)
    if timed:
        first_time = timed[0][0]
        # Ranks that failed within a second of the first are the same event seen twice.
        winners = [r for t, r in timed if t - first_time <= SAME_EVENT_S]
        winners += [r for r in failed if times[r] is None and len(failed) == 1]
    else:
        winners = sorted(failed)
    waits = wait_times(ctx)
    before_waits = timed and waits and timed[0][0] <= min(waits) + SAME_EVENT_S
    share = len(failed) / max(1, len(ctx.expected))
    if len(winners) == 1:
        # Failing before anyone waited is the strongest sign there is; with no waits at all it
        # is strong too; after the waits began, it may be one more consequence.
        score = BEFORE_WAITS_SCORE if before_waits else NO_WAITS_SCORE if not waits else AFTER_WAITS_SCORE
    elif share > JOB_WIDE_SHARE:
        score = JOB_WIDE_SCORE  # most ranks failed alike: a job-wide fault, not one rank
    else:
        score = FEW_RANKS_SCORE
    events = [e for r in winners for e in failed[r]]
    category = failure_category(events)
    known = all(any(e.kind is not Kind.UNEXPLAINED for e in failed[r]) for r in winners)
    if all(e.kind is Kind.EXIT and not is_crash_exit(e) for e in events):
        # A launcher's "exited with 1", and no line of its own says why: strong only when it came
        # before every other rank's trouble, as other ranks' own lines show it (a wait whose writer
        # is not known may be the exiting rank's own timeout, which its exit 1 then only follows).
        known_waits = [f.first_wait_time for f in ctx.facts.values() if f.first_wait_time is not None]
        before_known = bool(timed and known_waits and timed[0][0] <= min(known_waits) + SAME_EVENT_S)
        score = min(score, BARE_EXIT_BEFORE_WAITS_CAP if before_known else BARE_EXIT_CAP)
    elif not known:
        score = min(score, UNKNOWN_LINES_CAP)
    elif not _others_logged(ctx, winners):
        # Only the failing rank's own log: a fault local by nature still names it, but nothing
        # shows that no other rank failed earlier.
        score = min(score, ONLY_LOG_LOCAL_CAP if _local_by_nature(events) else ONLY_LOG_CAP)
    culprits = [
        rank_culprit(ctx, r, f"failed first: {_headline(failed[r]).message}",
                     _own_lines_first(failed[r])) for r in sorted(winners)
    ]
    when = " before any peer timed out" if before_waits else ""
    rank_word = "rank" if len(winners) == 1 else "ranks"
    return Hypothesis(
        name="first-failure",
        score=score,
        category=category,
        phase=ctx.phase(winners, events),
        culprits=culprits,
        reasoning=f"{rank_word.capitalize()} {fmt_ranks(winners)} failed by {'itself' if len(winners) == 1 else 'themselves'}"
                  f"{when} ({_headline(events).message}); the other ranks' errors follow from it.",
    )


def wait_times(ctx: Context) -> list[float]:
    """When each rank first waited, and every timeout or lost-peer line whose writer is not known
    (an interleaved console's unprefixed lines): the waits began at the earliest of them."""
    times = [f.first_wait_time for f in ctx.facts.values() if f.first_wait_time is not None]
    times += [e.time for e in ctx.job.of_kinds(*_WAITS) if e.time is not None and e.rank is None]
    return times


_WAITS = (Kind.TIMEOUT, Kind.PEER_ERROR)


def own_failures(ctx: Context) -> dict[int, list[Event]]:
    """Each rank's own failures, less the launcher's records of exits that were not its own.

    A record of a rank's exit says that it failed by itself only where nothing else explains it. A
    rank the launcher had sent its closing signal was still alive when another one failed: whatever
    it exited with (-15, -6 from an abort already under way, -9 after the grace period), it is a
    victim. A bare `exitcode: 1` says that the process raised; only its own lines say whether it
    raised a timeout of its own or an error, so it counts where they are in what was handed over (a
    log of its own, or a log that holds the job's start and so its traceback), not in an excerpt cut
    after them. A SIGABRT (-6) is the watchdog's when the job shows the watchdog at work (another
    rank's watchdog timeout, another rank aborted too), unless it came clearly before them. A hard
    signal nobody sent (SIGKILL, SIGSEGV) stays the rank's own."""
    if not any(e.kind is Kind.EXIT for f in ctx.facts.values() for e in f.self_failures):
        return {r: f.self_failures for r, f in ctx.facts.items() if f.self_failures}
    whole = holds_start(ctx.job)
    aborted = {r for r, f in ctx.facts.items() if any(_aborted(e) for e in f.exits)}
    # When each rank's watchdog first timed out, earliest first (one whose time is not known may
    # have come before anything).
    watchdog = sorted((min((e.time for e in waits if e.time is not None), default=float("-inf")), r)
                      for r, f in ctx.facts.items()
                      if (waits := [e for e in f.timeouts if e.family in _WATCHDOGS]))
    found: dict[int, list[Event]] = {}
    for rank, f in ctx.facts.items():
        seen = [t for t, r in watchdog[:2] if r != rank]
        others_aborted = len(aborted) > (rank in aborted)
        own = [e for e in f.self_failures
               if e.kind is not Kind.EXIT or _own_exit(e, f, whole, seen[0] if seen else None, others_aborted)]
        if own:
            found[rank] = own
    return found


def _own_exit(event: Event, f: RankFacts, whole: bool, watchdog: float | None, others_aborted: bool) -> bool:
    """`watchdog`: when another rank's watchdog first timed out (-inf when its time is not known),
    None when no other rank's did."""
    if _sent_closing_signal(f):
        return False
    if is_hard_exit(event):
        return True
    if _aborted(event):
        if watchdog is None and not others_aborted:
            return True
        return (not others_aborted and event.time is not None and watchdog is not None
                and event.time + SAME_EVENT_S < watchdog)
    return f.state.has_log or whole


def _sent_closing_signal(f: RankFacts) -> bool:
    """The launcher sent this rank its closing signal (it does so only to processes still alive)."""
    return any(e.kind is Kind.CONSEQUENCE and e.fields.get("signal") for e in f.state.events)


def _aborted(event: Event) -> bool:
    return is_crash_exit(event) and not is_hard_exit(event)


def _own_lines_first(events: list[Event]) -> list[Event]:
    """The rank's own lines before a launcher's record of its exit: they say why."""
    return sorted(events, key=lambda e: e.kind is Kind.EXIT)


def _headline(events: list[Event]) -> Event:
    return _own_lines_first(events)[0]


def _others_logged(ctx: Context, ranks: list[int]) -> bool:
    return any(f.state.has_log for r, f in ctx.facts.items() if r not in ranks)


_LOCAL_CATEGORIES = (Category.OOM, Category.DEVICE_ERROR, Category.CRASHED_PROCESS,
                     Category.CONFIG_MISMATCH)


def _local_by_nature(events: list[Event]) -> bool:
    """GPU errors, OOM, a crash or abort of the process, invalid usage, an exception of its own."""
    return any(e.kind is not Kind.UNEXPLAINED and (e.category in _LOCAL_CATEGORIES or e.category is None)
               for e in events)


PRINCIPLE = Principle(
    name="first-failure", emits=("first-failure",), run=first_failure,
    summary="A rank failed by itself (an error of its own, a crash, an OOM, a failed exit) before the "
            "others timed out or lost it: the ranks whose own failure came first, within a second of each "
            "other, are the cause, and the others' errors follow from it. Strongest when it came before "
            "any rank waited; weaker after the waits began, when most ranks failed alike (a job-wide "
            "fault), when only lines no rule knows or a bare launcher exit say it failed, or when only its "
            "own log is here. The waits begin at the first wait or timeout line in the job, its writer known "
            "or not. The launcher's exit records are read for what they are: a rank it had sent its closing "
            "signal is a victim whatever it exited with; a bare `exitcode: 1` counts only where the rank's own "
            "lines are here (its log, or a log that holds the job's start); a SIGABRT (-6) amid other ranks' "
            "watchdog timeouts or aborts is the watchdog's abort, unless it came clearly before them; a hard "
            "signal nobody sent (SIGKILL, SIGSEGV) stays the rank's own.")
