"""An excerpt that names the peer: the lines at hand say which rank their writer waited on or lost.

When only one rank's log (or a screen excerpt whose writer is not even known) is at hand, the other
principles have nothing to compare it with: no silent rank among logs that are not here, no first
failure but the writer's. Yet a failure line often names the far end: HCCL's LINK_ERROR_INFO row
whose link timed out (`dest_ip(user_rank)`, whatever `MyRole` says), a notify wait's `remote rank
[N]` (EI0002), a link that could not be built (`remoteUserrank`, beside EI0006), NCCL's `Connection
closed by remote peer <addr>` or gloo's `Connection closed by peer [addr]` where the address is one
rank's. The peer pass (triage.job.peers) has put that far end in global ranks (`Event.peer`).

That peer is the lead, named at a capped score: the writer may wait on a rank that was itself held
up by another, and only the peer's own log can say which. So the principle stands back when the
peer's log is here (its own lines decide: the silent rank, its own failure, the wait chain), and
when the lines name several peers (no one lead). A peer named in a line that is not a failure (an
INFO connect line) names no one: only timeouts and lost peers count. HCCL's waits of a known writer
are the wait chain's (waits.py) while several ranks' logs are here; with one rank's log alone the
chain is one wait, and its end is this lead (one reading, one cap, one `missing`).
"""

from __future__ import annotations

from collections import defaultdict

from triage.diagnose.context import Context, evidence_of, rank_culprit
from triage.diagnose.principles.principle import Principle
from triage.model import Category, Culprit, Event, Hypothesis, Kind
from triage.ranks import fmt_ranks

# One peer named by the failure lines at hand, its own log not here: a lead, below what a log of
# the peer itself would give (first-failure's ONLY_LOG_LOCAL_CAP is 0.65; a stated culprit at 0.7
# or more needs more than one side of a wait).
PEER_NAMED_SCORE = 0.6
# The families whose lines name peers in their own right; RAS describes ranks (`Event.about`) and is
# weighed by its own principle.
_WAITS = (Kind.TIMEOUT, Kind.PEER_ERROR)
# Families whose lost connection names the far process's address (NCCL's sockets, gloo's pairs).
_ADDRESS_FAMILIES = ("nccl", "gloo")


def _mismatch_report(event: Event) -> bool:
    """A line that compares the writer's collective with a peer's (TORCH_DISTRIBUTED_DEBUG=DETAIL's
    `… but Rank 0 is running collective …`, a received size that differs) reports that two ranks
    disagree, not that one waited on the other: of two parties, it names neither as the odd one."""
    return "fp_seq" in event.fields or event.category in (Category.COLLECTIVE_MISMATCH,
                                                          Category.CONFIG_MISMATCH)


def one_log_at_hand(ctx: Context) -> bool:
    """At most one rank's log is here: its lines can name a peer, but no other log can confirm it."""
    return sum(1 for f in ctx.facts.values() if f.state.has_log) <= 1


def peer_named(ctx: Context) -> Hypothesis | None:
    named: dict[int, list[Event]] = defaultdict(list)
    alone = one_log_at_hand(ctx)
    for event in ctx.job.of_kinds(*_WAITS):
        if event.peer is None or event.family == "ras":
            continue
        if event.peer == event.rank:
            continue  # a "peer" error about the writer itself is its own failure (facts.py)
        if _mismatch_report(event):
            continue
        if event.family == "hccl" and event.rank is not None and not alone:
            # The wait chain follows HCCL's waits of known ranks (waits.py), one reading of a line;
            # with one rank's log alone, a chain is one wait, and its end is this lead.
            continue
        named[event.peer].append(event)
    if not named:
        return _host_named(ctx)
    if len(named) != 1:
        return None  # several peers: no one lead
    ((peer, events),) = named.items()
    if peer in ctx.facts and ctx.facts[peer].state.has_log:
        return None  # the peer's own lines are here and say more than its name in another's
    writers = sorted({e.rank for e in events if e.rank is not None})
    lost = any(e.kind is Kind.PEER_ERROR for e in events)
    in_comm = sorted({e.fields["pg_rank"] for e in events if e.fields.get("pg_rank", "").isdigit()})
    who = (f"Rank{'s' if len(writers) > 1 else ''} {fmt_ranks(writers)}" if writers else
           f"The writer of these lines (communicator rank {', '.join(in_comm)}; its global rank is not in them)"
           if in_comm else "The writer of these lines (its rank is not in them)")
    how = ("lost its connection to" if len(writers) <= 1 else "lost their connection to") if lost else "waited on"
    return Hypothesis(
        name="peer-named",
        score=PEER_NAMED_SCORE,
        # A peer that closed its connections went away (crashed, killed); one that never answered hung.
        category=Category.CRASHED_PROCESS if lost else Category.HUNG_PROCESS,
        phase=ctx.phase([peer], events),
        culprits=[rank_culprit(ctx, peer, f"named as the far end of a failed wait: {events[0].message}", events)],
        reasoning=f"{who} {how} rank {peer} ({events[0].message}), and rank {peer}'s own log is not here: "
                  f"it is the lead. Rank {peer} may itself have been held up by another rank; its log "
                  "would confirm whether it failed by itself.",
    )


def _host_named(ctx: Context) -> Hypothesis | None:
    """A lost connection whose far end is an address no rank here is known at (one rank's excerpt of
    a multi-node job): the process at that address went away, and its host is the lead."""
    hosts: dict[str, list[Event]] = defaultdict(list)
    for event in ctx.job.of_kinds(Kind.PEER_ERROR):
        if event.family not in _ADDRESS_FAMILIES:
            continue
        address = event.peer_host or event.fields.get("peer_ip") or ""
        writer = ctx.host_of(event.rank) if event.rank is not None else None
        if not address or address.startswith("127.") or address in ("::1", "localhost") or address == writer:
            continue
        hosts[address].append(event)
    if len(hosts) != 1:
        return None
    ((host, events),) = hosts.items()
    if any(s.host == host and s.has_log for s in ctx.job.ranks.values()):
        return None  # that host's own logs are here: they say more
    writers = sorted({e.rank for e in events if e.rank is not None})
    who = f"Rank{'s' if len(writers) > 1 else ''} {fmt_ranks(writers)}" if writers else "The writer of these lines"
    return Hypothesis(
        name="peer-named", score=PEER_NAMED_SCORE,
        # The line's rule says what a lost connection means (an IB completion error: the network);
        # else the process at the far end went away.
        category=next((e.category for e in events if e.category), Category.CRASHED_PROCESS if any(
            "closed" in e.message for e in events) else Category.UNKNOWN),
        phase=ctx.phase(None, events),
        culprits=[Culprit(kind="host", host=host, reason=f"the far end of a lost connection: {events[0].message}",
                          evidence=evidence_of(events))],
        reasoning=f"{who} lost {'its' if len(writers) <= 1 else 'their'} connection to the process at {host} "
                  f"({events[0].message}): that process went away (crashed, killed or aborted) or the way to it "
                  f"failed, and no log of {host} is here. It is the lead; the logs of the ranks on {host} would "
                  "say which one failed and why.")


PRINCIPLE = Principle(
    name="peer-named", emits=("peer-named",), run=peer_named,
    summary="The failure lines at hand (one rank's log, a screen excerpt) name the one rank their writer "
            "waited on or lost, and that rank's own log is not here: HCCL's LINK_ERROR_INFO row whose link "
            "timed out, a notify wait's remote rank (EI0002), a link that could not be built (beside "
            "EI0006), a connection closed by a peer whose address is one rank's (NCCL, gloo). That peer is "
            "the lead, at a capped score (it may have been held up by another; its log would say), and the "
            "verdict says which logs would confirm it. With only one rank's log at hand this lead stands in "
            "for the wait chain (one waiter cannot show where a chain ends). Lines that are not failures "
            "name no one; nor do mismatch reports (a DETAIL fingerprint, a received size that differs), which "
            "say two ranks disagree, not who waited on whom; several peers named make no lead.")
