"""A tool already named the culprit: a desync report, monitoredBarrier, HCCL's heartbeat, a repro run.

The tool saw more than any one log (every rank's progress, the heartbeat of every device), so what it
names is taken at its word, except for the ranks it names that reported waiting on a peer
themselves, could not reach a negotiation root only its own server could reach, or left because of
a link error before the tool saw them go: those were held up, not the cause. RAS snapshots are
weighed together by their own principle (ras.py).
"""

from __future__ import annotations

from collections import defaultdict

from triage.diagnose.context import Context, evidence_of, failure_category, rank_culprit
from triage.diagnose.principles.principle import Principle
from triage.diagnose.principles.realigned import realigned_checks
from triage.diagnose.principles.waits import could_not_reach_root, mutual_pair
from triage.model import Category, Culprit, Event, Hypothesis, Kind, MemberEvidence, Stance
from triage.ranks import fmt_ranks

# A few ranks named (at most 2, or an eighth of the job): the tool's word is strong evidence.
FEW_NAMED_SCORE = 0.9
# Many ranks named: the tool saw a wide hang, not its one cause.
MANY_NAMED_SCORE = 0.6
# Several ranks named and none of their logs here: one may only have been held up by another.
UNLOGGED_NAMED_SCORE = 0.45


def named_by_tool(ctx: Context) -> Hypothesis | None:
    named: dict[int, list[Event]] = defaultdict(list)
    hosts: dict[str, list[Event]] = defaultdict(list)
    realigned = {id(e) for e in realigned_checks(ctx)}
    for event in ctx.job.of_kinds(Kind.CULPRIT_NAMED):
        if "snapshot" in event.fields:
            continue  # RAS snapshots are weighed together (principles/ras.py)
        if id(event) in realigned:
            continue  # a stall that the group came through: a later check passed (principles/realigned.py)
        if mutual_pair(ctx, event) is not None:
            continue  # both ends waited on each other: the link between them (device_link)
        ranks = list(event.about)
        for rank in ranks:
            named[rank].append(event)
        if not ranks and (host := event.fields.get("culprit_host")):
            hosts[host.split(".")[0]].append(event)
    if not named and not hosts:
        return None
    held_up = _held_up(ctx, named) + sorted(could_not_reach_root(ctx) & set(named)) + _hit_by_cqe_first(ctx, named)
    for rank in held_up:
        named.pop(rank, None)
    if not named and not hosts:
        return None
    events = [e for es in named.values() for e in es] + [e for es in hosts.values() for e in es]
    tools = sorted({e.rule_id for e in events})
    culprits = [
        rank_culprit(ctx, rank, f"{es[0].message} ({', '.join(sorted({e.rule_id for e in es}))})", es)
        for rank, es in sorted(named.items())
    ]
    culprits += [Culprit(kind="host", host=h, reason=f"named by {es[0].rule_id}",
                         evidence=evidence_of(es)) for h, es in sorted(hosts.items())]
    # What the named rank's own lines say it suffered (a rule that knows the failure) beats what
    # the naming tool says of it, which beats the tool's general category.
    own = [e for r in named if r in ctx.facts for e in ctx.facts[r].known_failures] or [
        e for r in named if r in ctx.facts for e in ctx.facts[r].peer_errors
        if e.category and _far_end_is_no_other_rank(e, r)]
    said = [c for e in events if (c := _named_as(e)) is not None]
    category = (failure_category(own) if own else said[0] if said else
                next((e.category for e in events if e.category), Category.HUNG_PROCESS))
    score = FEW_NAMED_SCORE if len(culprits) <= max(2, len(ctx.expected) // 8) else MANY_NAMED_SCORE
    unlogged = [r for r in named if r not in ctx.facts or not ctx.facts[r].state.has_log]
    if len(named) > 1 and len(unlogged) == len(named):
        # Several ranks named and none of their logs here: one may only have been held up by
        # another (a hang inside their sub-group); their logs would tell which.
        score = UNLOGGED_NAMED_SCORE
    who = fmt_ranks(list(named)) if named else ", ".join(hosts)
    return Hypothesis(
        name="named-by-tool",
        score=score,
        category=category,
        phase=ctx.phase(list(named), events),
        culprits=culprits,
        reasoning=f"{', '.join(tools)} named {'rank' if len(named) == 1 else 'ranks'} {who} "
                  "as the one(s) the others were waiting for." + (
                      f" It also named rank{'s' if len(held_up) > 1 else ''} {fmt_ranks(held_up)}, "
                      f"but {'those' if len(held_up) > 1 else 'that rank'} reported waiting on a "
                      f"peer {'themselves' if len(held_up) > 1 else 'itself'}: held up, not the "
                      "cause." if held_up else ""),
    )


# HCCL's heartbeat says what it found on the device it names (docs/prior-art.md §A7): a process that no
# longer beats (exited, or its network went), one whose operators stopped counting, a link error.
_EXCEPTION_CATEGORY = (("lost", Category.CRASHED_PROCESS), ("stuck", Category.HUNG_PROCESS),
                       ("cqe", Category.NETWORK_FAULT))


def _named_as(event: Event) -> Category | None:
    """The category a naming line itself gives its culprit (HCCL's exception type or status)."""
    text = event.fields.get("exception", "").lower()
    return next((c for word, c in _EXCEPTION_CATEGORY if word in text), None) if text else None


def _far_end_is_no_other_rank(event: Event, rank: int) -> bool:
    """A failure of the rank's own: an error, or a peer error whose far end is not another rank
    (`cannot reach negotiation root`: its own way out is what failed)."""
    return event.kind is not Kind.PEER_ERROR or not event.fields.get("peer_rank") or event.peer == rank


def _hit_by_cqe_first(ctx: Context, named: dict[int, list[Event]]) -> list[int]:
    """Ranks a heartbeat names that had themselves logged an error CQE before it: they left because
    of the link, and the heartbeat only saw them go (docs/prior-art.md §A7: CQE ranks above LOST)."""
    held = []
    for rank, events in named.items():
        if rank not in ctx.facts or not all(_named_as(e) is Category.CRASHED_PROCESS for e in events):
            continue
        cqes = [e for e in ctx.facts[rank].peer_errors if e.fields.get("peer_device")]  # error CQEs
        firsts = [e.time for e in cqes if e.time is not None]
        if firsts and any(e.time is None or e.time > min(firsts) for e in events):
            held.append(rank)
    return held


def _held_up(ctx: Context, named: dict[int, list[Event]]) -> list[int]:
    """Named ranks that themselves reported waiting while another named rank stayed silent."""
    if len(named) < 2:
        return []
    waiting = [r for r in named if r in ctx.facts and ctx.facts[r].reported_wait]
    silent = [r for r in named if r in ctx.facts and not ctx.facts[r].reported_wait
              and ctx.facts[r].state.has_log]
    return sorted(waiting) if silent else []


def waited_for_clients(ctx: Context) -> list[MemberEvidence]:
    """Ranks a tool's line names whose own log shows them waiting for store clients that never joined:
    the store's host publishes its own address only once every client has joined, so the others, who
    wait for that address, name it, while it waits, like them, for a member that never came."""
    named = {r for e in ctx.job.of_kinds(Kind.CULPRIT_NAMED) if "snapshot" not in e.fields
             for r in e.about}
    items = []
    for rank in sorted(named):
        f = ctx.facts.get(rank)
        line = next((e for e in f.timeouts if _clients_missing(e)), None) if f is not None else None
        if line is not None:
            items.append(MemberEvidence(
                kind="rank", rank=rank, host=ctx.host_of(rank), stance=Stance.AGAINST, source="named-by-tool",
                weight=FEW_NAMED_SCORE, clears=True, citation=line.evidence,
                fact=f"waited itself for store clients that never joined ({line.fields['clients_joined']} of "
                     f"{line.fields['clients_expected']}): it could not publish its address before they did"))
    return items


def _clients_missing(event: Event) -> bool:
    joined, expected = event.fields.get("clients_joined", ""), event.fields.get("clients_expected", "")
    return joined.isdigit() and expected.isdigit() and int(joined) < int(expected)


PRINCIPLE = Principle(
    name="named-by-tool", emits=("named-by-tool",), run=named_by_tool, evidence=waited_for_clients,
    summary="A tool that saw more than one log already named the rank, process or host the others were "
            "waiting for: PyTorch's desync report, monitoredBarrier, HCCL's heartbeat (`Cluster Exception "
            "Location`), a `triage repro` run. Its word is taken, less the named ranks that were themselves "
            "held up (they reported waiting on a peer, could not reach a negotiation root only its own "
            "server could reach, or logged an error CQE before the heartbeat saw them go). What the named "
            "rank's own lines say it suffered gives the category, before what the tool says of it. A named rank "
            "whose own log shows it waiting for store clients that never joined (the store's host, which "
            "publishes its address only once all have) is cleared.")
