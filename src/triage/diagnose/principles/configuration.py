"""Cross-rank configuration as a cause (triage.job.config): the minority that explains a failed set-up.

Ranks that load another NCCL (or CUDA) version, or use another NCCL_SOCKET_IFNAME / NCCL_IB_HCA, than
the majority cannot connect to them: a communicator init, or the first collective that sets up the
connections, fails or hangs. So a minority on such a key is named when the job failed in
`comm_init` or `operator_load`; later, a difference is reported beside the verdict (`config[]` in
the JSON, a line of the report) but is not the cause of a failure in steady state.
"""

from __future__ import annotations

from collections import defaultdict

from triage.diagnose.context import Context, evidence_of, minority
from triage.diagnose.principles.principle import Principle
from triage.identity import about_another
from triage.job.config import AFFECTS_INIT
from triage.model import (
    Category,
    Culprit,
    Event,
    Evidence,
    Hypothesis,
    Kind,
    MemberEvidence,
    Milestone,
    Phase,
    Stance,
)
from triage.ranks import fmt_ranks

CONFIG_MINORITY_SCORE = 0.7
# One rank's world is not the one the others completed init with: it waits for members that do not exist.
WORLD_MISMATCH_SCORE = 0.9
# How many of the ranks that completed init the reasoning names.
COMPLETED_SHOWN = 4


def config_minority(ctx: Context) -> Hypothesis | None:
    phase = ctx.phase()
    if phase not in (Phase.COMM_INIT, Phase.OPERATOR_LOAD):
        return None
    for item in ctx.config():
        if item.key not in AFFECTS_INIT or not item.minority:
            continue
        if len(item.minority) > max(2, len(ctx.expected) // 4):
            continue  # a large minority is a split, not an odd node
        culprits = [Culprit(kind="rank", rank=r, host=ctx.host_of(r),
                            reason=f"{item.key} is {_value(item.values, r)} where the others have {item.majority}",
                            evidence=[item.evidence[r]] if r in item.evidence else [])
                    for r in item.minority]
        return Hypothesis(
            name="config-minority", score=CONFIG_MINORITY_SCORE, category=Category.CONFIG_MISMATCH, phase=phase,
            culprits=culprits,
            reasoning=f"The job failed setting up communication ({phase.value}), and rank"
                      f"{'s' if len(item.minority) > 1 else ''} {fmt_ranks(item.minority)} differ from the others in "
                      f"{item.label()}: processes that load another NCCL version or use another network interface "
                      "cannot connect to the rest.")
    return None


def _value(values: dict[str, list[int]], rank: int) -> str:
    return next((v for v, rs in values.items() if rank in rs), "?")


def remark(ctx: Context, winner: Hypothesis | None, own: Hypothesis | None) -> str | None:
    """A configuration minority beside a verdict it does not decide."""
    if winner is own and own is not None:
        return None
    odd = [i for i in ctx.config() if i.minority]
    if not odd:
        return None
    named = {c.rank for c in (winner.culprits if winner else [])}
    said = "; ".join(
        f"{i.label()}" + (" (the culprit's own)" if named & set(i.minority) else "") for i in odd[:3])
    return f"Configuration differs across ranks: {said}."


PRINCIPLE = Principle(
    name="config-minority", emits=("config-minority",), run=config_minority, remark=remark,
    summary="Cross-rank configuration (NCCL and CUDA versions from the banners, a dump's comm_lib_version, the "
            "NCCL_*/TORCH_NCCL_*/HCCL_* settings the logs echo, timeouts and group membership from dumps): when the "
            "job failed in comm_init or operator_load, the few ranks with another NCCL/CUDA version or another "
            "NCCL_SOCKET_IFNAME/NCCL_IB_HCA are named (config_mismatch); otherwise a difference is reported beside "
            "the verdict, not as its cause.")


# ------------------------------------------------------------------------------------------
# The world itself: one rank launched with another world size


_COMMUNICATOR_INITS = frozenset({Kind.INIT_START, Kind.INIT_DONE})


def _stated_worlds(ctx: Context) -> dict[int, Event]:
    """The world size each rank's own lines state (a world-size line, its largest communicator's
    size), with the line that states it."""
    stated: dict[int, Event] = {}
    for rank, f in ctx.facts.items():
        for event in f.state.events:
            size = event.fields.get("world_size") or (
                event.fields.get("nranks") if event.kind in _COMMUNICATOR_INITS else None)
            if not size or about_another(event):
                continue
            if size.isdigit() and int(size) >= 1 and (
                    rank not in stated or int(size) > _size(stated[rank])):
                stated[rank] = event
    return stated


def _size(event: Event) -> int:
    return int(event.fields.get("world_size") or event.fields.get("nranks") or 0)


def _beyond(ctx: Context) -> tuple[dict[int, list[Event]], list[int]]:
    """Members that ranks waited for at init and that no rank with a log is, beyond the highest rank
    with one (waiter -> its lines naming them); and the ranks that completed init all the same. A
    communicator's init needs every member's address: a rank that completed it did so in a world
    without the members another rank still waits for."""
    logged = [r for r, f in ctx.facts.items() if f.state.has_log]
    if not logged or ctx.job.world_size_from not in (None, "highest rank seen"):
        return {}, []
    top = max(logged)
    waits: dict[int, list[Event]] = defaultdict(list)
    for rank in logged:
        for event in ctx.facts[rank].state.events:
            named = set(event.about) | ({event.peer} if event.peer is not None else set())
            if event.phase is Phase.COMM_INIT and named and all(n > top for n in named):
                waits[rank].append(event)
    completed = [r for r in logged if r not in waits
                 and (m := ctx.facts[r].state.milestone) is not None and m >= Milestone.INIT_DONE]
    return (dict(waits), completed) if waits and completed else ({}, [])


def world_mismatch(ctx: Context) -> Hypothesis | None:
    stated = _stated_worlds(ctx)
    odd, common = minority({r: str(_size(e)) for r, e in stated.items()}, 3)
    if odd and len(odd) <= max(1, len(stated) // 4):
        culprits = [Culprit(kind="rank", rank=r, host=ctx.host_of(r),
                            reason=f"its world size is {_size(stated[r])} where {len(stated) - len(odd)} ranks have "
                                   f"{common}", evidence=[stated[r].evidence]) for r in odd]
        return Hypothesis(
            name="world-mismatch", score=WORLD_MISMATCH_SCORE, category=Category.CONFIG_MISMATCH,
            phase=ctx.phase(odd), culprits=culprits,
            reasoning=f"Rank{'s' if len(odd) > 1 else ''} {fmt_ranks(odd)} started with a world size of "
                      f"{', '.join(sorted({str(_size(stated[r])) for r in odd}))} where the other ranks state "
                      f"{common}: a process launched with another WORLD_SIZE (or rendezvous) waits for members "
                      "the others' world does not have.")
    waits, completed = _beyond(ctx)
    if not waits:
        return None
    ghosts = sorted({n for es in waits.values() for e in es for n in (*e.about, e.peer) if n is not None})
    done = f"rank{'s' if len(completed) > 1 else ''} {fmt_ranks(completed[:COMPLETED_SHOWN])}" + (
        " …" if len(completed) > COMPLETED_SHOWN else "")
    culprits = [Culprit(kind="rank", rank=r, host=ctx.host_of(r),
                        reason=f"waited at init for rank{'s' if len(ghosts) > 1 else ''} {fmt_ranks(ghosts)}, "
                               f"beyond the world rank{'s' if len(completed) > 1 else ''} {fmt_ranks(completed)} "
                               "completed init with: its world size differs",
                        evidence=evidence_of(es, 2) + _milestone(ctx, completed[:1]))
                for r, es in sorted(waits.items())]
    odd = sorted(waits)
    return Hypothesis(
        name="world-mismatch", score=WORLD_MISMATCH_SCORE, category=Category.CONFIG_MISMATCH,
        phase=Phase.COMM_INIT, culprits=culprits,
        reasoning=f"Rank{'s' if len(odd) > 1 else ''} {fmt_ranks(odd)} waited at init for rank"
                  f"{'s' if len(ghosts) > 1 else ''} {fmt_ranks(ghosts)}, which left no log and is beyond every "
                  f"rank that did, while {done} completed init: a communicator's init needs every member's "
                  f"address, so their world has no rank {fmt_ranks(ghosts)}. The odd one is the rank that waits: "
                  "it was launched with another world size (WORLD_SIZE, or a rendezvous of its own). No line "
                  "states the world size: pass --world-size N if ranks are missing from these logs.")


def _milestone(ctx: Context, ranks: list[int]) -> list[Evidence]:
    return [ev for r in ranks if (ev := ctx.facts[r].state.milestone_evidence) is not None]


def world_evidence(ctx: Context) -> list[MemberEvidence]:
    """Members outside the world the ranks agree on: no culprit can be one of them."""
    waits, completed = _beyond(ctx)
    ghosts = sorted({n for es in waits.values() for e in es for n in (*e.about, e.peer) if n is not None})
    cite = _milestone(ctx, completed[:1])
    return [MemberEvidence(
        kind="rank", rank=g, host=None, stance=Stance.AGAINST, source="world-mismatch", weight=WORLD_MISMATCH_SCORE,
        clears=True, citation=cite[0] if cite else None,
        fact=f"is not a member of the world rank{'s' if len(completed) > 1 else ''} {fmt_ranks(completed)} completed "
             "init with (it left no log, and init needs every member)") for g in ghosts]


WORLD_MISMATCH = Principle(
    name="world-mismatch", emits=("world-mismatch",), run=world_mismatch, evidence=world_evidence,
    summary="The world itself: a few ranks whose own lines state another world size than the others' (a world-size "
            "line, their largest communicator) are named (config_mismatch); and with no world size stated, a rank "
            "that waits at init for members beyond every rank with a log while other ranks completed init is the "
            "odd one, launched with another WORLD_SIZE (a communicator's init needs every member's address, so the "
            "members it waits for are not in the others' world; they are cleared as culprits).")
