"""Flight-recorder dumps read per process group (docs/design.md §4; docs/flight-recorder.md).

The job's progress model (triage.job.progress) holds, per group and rank, what each dump says: the
group's last enqueued and completed work, the signature of every collective by sequence number,
and the entries still in flight with their times and stacks. Read as an engineer reads it:

- a different op, size or dtype at one sequence number of one group: a collective mismatch; the
  odd rank is the one outside a clear majority, wherever its file sorts (fr_trace blames whoever
  disagrees with the first file). Every mismatching number is counted; a few are shown;
- in the group that stalled first (its oldest work in flight is the oldest of all), a member with
  nothing in flight (last enqueued = last completed) behind the members that wait is stalled on the
  CPU side, unless it waits in another group itself (then it is the cascade, and that group is
  read); its last completed op's stack says where it was;
- a member with no dump while the others wait on it: the prime suspect (a process that died writes
  no dump), and the dump is reported missing;
- every member in flight at the same collective, none behind: the collective itself did not finish
  (GPU side: a kernel that never completed; network side: a link) — a lead only, with what would
  tell which;
- nothing in flight anywhere: the dumps show no stalled collective. gloo records no entry for a
  send or recv, so a P2P hang is invisible in gloo dumps: said, not guessed. Where every rank left a
  dump, every group ends at one collective for all its members and the groups' status counts no op
  the entries do not hold (no P2P), the dumps show completed work: no failure by themselves;
- a member with a symmetric collective (all-reduce, barrier …) in flight that a peer completed is
  not waiting (the dump caught it before it marked the op done), where every member left a dump and
  a log: gloo counts a failed work as completed, and only the logs say whether one failed.

Beside its candidate it says of each member what the dumps show (`member_evidence`): a member with
work in flight in a group where another member is behind it, or left no dump, waited on that member.
The verdict clears it of any candidate that names it, unless its own log shows it failing.

The phase: a stall at the first collective of a group (sequence 1, the buffer not wrapped) is
`operator_load`, later ones `execution`.
"""

from __future__ import annotations

from collections import Counter

from triage.diagnose.context import Context, minority
from triage.diagnose.principles.principle import Principle
from triage.job.progress import GroupProgress, Op, Progress, RankProgress, clock, describe
from triage.model import Category, Culprit, Evidence, Hypothesis, MemberEvidence, Phase, Stance
from triage.ranks import fmt_ranks

MISMATCH_SCORE = 0.85
STALLED_SCORE = 0.8
NO_DUMP_SCORE = 0.7
NO_DUMP_QUIET_SCORE = 0.55  # no dump, and the others stopped at one collective but show no wait
EVERYWHERE_SCORE = 0.35  # a lead: the collective did not finish anywhere
QUIET_SCORE = 0.3  # a lead: nothing in flight in any dump
MISMATCHES_SHOWN = 3
CASCADE_SHOWN = 3
# Ops whose ranks may pass different sizes (uneven splits): only op and dtypes must agree.
_UNEVEN = ("all_to_all", "alltoall", "gather", "scatter", "send", "recv")
NAMES = ("fr-mismatch", "fr-stalled-rank", "fr-no-dump", "fr-in-flight-everywhere", "fr-nothing-in-flight")
P2P_NOTE = ("gloo records no flight-recorder entry for a send or recv (it only counts them in the group's "
            "status), so a hang in point-to-point ops cannot be seen in gloo dumps")


def fr_dumps(ctx: Context) -> Hypothesis | None:
    found = _fr_dumps(ctx)
    if found is not None and (folded := ctx.job.progress.folded):
        ranks = sorted(folded)
        found.reasoning += (f" Rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)} left more than one dump "
                            f"({sum(folded.values()) + len(ranks)} in all): each rank's latest was read as where it got.")
    return found


def _fr_dumps(ctx: Context) -> Hypothesis | None:
    prog = ctx.job.progress
    if not prog.has_dumps:
        return None
    groups = [g for g in prog.groups.values() if g.dumped]
    if found := _mismatch(ctx, groups):
        return found
    waits = _waiting(ctx, groups)
    stalled = sorted((g for g in groups if waits[g.key]),
                     key=lambda g: (g.stalled_since() or float("inf"), not g.default, g.key))
    if not stalled:
        return _quiet(ctx, prog, groups)
    waits_in = {r: g for g in reversed(stalled) for r in sorted(waits[g.key])}
    lead: Hypothesis | None = None
    for i, group in enumerate(stalled):
        found = _stall(ctx, prog, group, waits_in, sorted(waits[group.key]))
        if found is None:
            continue
        if found.culprits or lead is None:
            others = [g for g in stalled if g is not group]
            if others:
                found.reasoning += " " + _cascade(group, others, i)
        if found.culprits:
            return found
        lead = lead or found
    return lead


# ------------------------------------------------------------------------------------------
# A collective mismatch


def _comparable(sig: str) -> str:
    op = sig.split(" in=", 1)[0]
    if any(u in op for u in _UNEVEN):
        parts = sig.split(" ")
        return " ".join([op] + [p.split(":", 1)[-1] for p in parts[1:] if ":" in p])
    return sig


def _mismatch(ctx: Context, groups: list[GroupProgress]) -> Hypothesis | None:
    best: tuple[GroupProgress, int, list[int], str, dict[int, str]] | None = None
    counted = 0
    no_majority: tuple[GroupProgress, int, dict[int, str]] | None = None
    for group in groups:
        seqs = Counter(s for r in group.dumped for s in group.by_rank[r].timeline)
        for seq in sorted(s for s, n in seqs.items() if n >= 2):
            sigs = {r: group.by_rank[r].timeline[seq] for r in group.dumped
                    if group.by_rank[r].timeline.get(seq, "?") != "?"}
            if len({_comparable(s) for s in sigs.values()}) < 2:
                continue
            counted += 1
            odd, common = minority({r: _comparable(s) for r, s in sigs.items()}, 3)
            if odd and best is None:
                best = (group, seq, odd, next(s for s in sigs.values() if _comparable(s) == common), sigs)
            elif not odd and no_majority is None:
                no_majority = (group, seq, sigs)
    if best is None:
        if no_majority is None:
            return None
        group, seq, sigs = no_majority
        return Hypothesis(
            name="fr-mismatch", score=EVERYWHERE_SCORE, category=Category.COLLECTIVE_MISMATCH,
            phase=_phase(group, seq), culprits=[],
            reasoning=f"The flight-recorder dumps disagree on collective #{seq} of {group.label}: "
                      + "; ".join(f"rank {r}: {s}" for r, s in sorted(sigs.items())[:4])
                      + ". No majority says which rank is odd: the dumps of the group's other members would.")
    group, seq, odd, common, sigs = best
    culprits = []
    for r in odd:
        p = group.by_rank[r]
        op = _op_at(p, seq)
        culprits.append(Culprit(kind="rank", rank=r, host=ctx.host_of(r),
                                reason=f"collective #{seq} of {group.label} is {sigs[r]} where "
                                       f"{len(sigs) - len(odd)} ranks have {common}",
                                evidence=[op.evidence] if op else _dump_ev(p)))
    more = f" ({counted} sequence numbers disagree in all)" if counted > 1 else ""
    return Hypothesis(
        name="fr-mismatch", score=MISMATCH_SCORE, category=Category.COLLECTIVE_MISMATCH,
        phase=_phase(group, seq), culprits=culprits,
        reasoning=f"In the flight-recorder dumps, {len(sigs) - len(odd)} of {len(sigs)} ranks of {group.label} "
                  f"ran {common} as collective #{seq}; rank{'s' if len(odd) > 1 else ''} {fmt_ranks(odd)} ran "
                  + "; ".join(f"{sigs[r]}" for r in odd[:MISMATCHES_SHOWN])
                  + f"{more}: a collective mismatch, the odd rank{'s' if len(odd) > 1 else ''} by majority "
                    "(whatever order the files sort in).")


def _op_at(p: RankProgress, seq: int) -> Op | None:
    return next((o for o in p.pending + ([p.last_done] if p.last_done else []) if o.seq == seq and not o.p2p), None)


def _dump_ev(p: RankProgress) -> list[Evidence]:
    """The dump as a whole, where its entries give nothing to cite: only as a line a reader can open
    (the parser's dump- and group-level events stand at line 0, the file as a whole)."""
    return [p.dump] if p.dump and p.dump.line >= 1 else []


def _phase(group: GroupProgress, seq: int | None) -> Phase:
    """The first collective of a group is where its connections are set up."""
    wrapped = any(p.wrapped for p in group.by_rank.values())
    return Phase.OPERATOR_LOAD if seq == 1 and not wrapped else Phase.EXECUTION


# ------------------------------------------------------------------------------------------
# A stall

# Collectives that complete on one member only once every member has joined: a peer that completed
# one shows that the others' copy, still in flight in their dumps, was joined too (the dump caught
# them before they marked it done). Rooted ones (broadcast, reduce, gather, scatter) may complete
# on one member before the others.
_JOINED_BY_ALL = ("all_reduce", "allreduce", "barrier", "all_gather", "allgather", "reduce_scatter",
                  "all_to_all", "alltoall")


def _waiting(ctx: Context, groups: list[GroupProgress]) -> dict[str, set[int]]:
    """Per group, the members with work in flight that no peer's dump shows finished. A peer's
    completion counts only where every member left a dump and a log of its own: gloo counts a work
    that failed (a peer died, sizes differed) as completed too, and only the logs say whether one failed."""
    logged = _logged(ctx)
    out: dict[str, set[int]] = {}
    for group in groups:
        waiting = {r for r in group.dumped if group.by_rank[r].waiting}
        members = _members(ctx, group)
        if waiting and all(r in group.by_rank and group.by_rank[r].has_dump for r in members) and set(members) <= logged:
            # The two furthest collectives completed, with who completed them (a member's own does not count).
            done = sorted(((d.seq, r) for r in group.dumped
                           if (d := group.by_rank[r].last_done) is not None and not d.p2p and d.seq is not None),
                          reverse=True)[:2]
            waiting = {r for r in waiting if not _joined(group.by_rank[r].oldest, r, done)}
        out[group.key] = waiting
    return out


def _joined(o: Op | None, rank: int, done: list[tuple[int, int]]) -> bool:
    """A symmetric collective in flight that a peer completed: every member joined it."""
    if o is None or o.seq is None or o.p2p or not any(k in o.op.lower() for k in _JOINED_BY_ALL):
        return False
    return any(seq >= o.seq for seq, r in done if r != rank)


def _members(ctx: Context, group: GroupProgress) -> list[int]:
    """Who belongs to the group: as stated (pg_config), the whole job for the default group, else
    the ranks whose dumps list it (gloo states no membership)."""
    if group.ranks:
        return sorted(group.ranks)
    if group.default:
        return ctx.expected
    return sorted(group.by_rank)


def _stall(ctx: Context, prog: Progress, group: GroupProgress,
           waits_in: dict[int, GroupProgress], waiting: list[int]) -> Hypothesis | None:
    if not waiting:
        return None
    target = Counter((o.label, o.seq) for r in waiting if (o := group.by_rank[r].oldest) is not None)
    label, seq = target.most_common(1)[0][0] if target else ("the next collective", None)
    top = max(group.by_rank[r].reached or 0 for r in waiting)
    behind = [r for r in group.dumped if group.by_rank[r].idle and (group.by_rank[r].reached or 0) < top]
    elsewhere = [r for r in behind if r in waits_in and waits_in[r] is not group]
    stalled = [r for r in behind if r not in elsewhere]
    since = min((o.since for r in waiting if (o := group.by_rank[r].oldest) and o.since), default=None)
    when = f" since {clock(since)}" if since else ""
    waiters = f"rank{'s' if len(waiting) > 1 else ''} {fmt_ranks(waiting)} waited in {label}{when}"
    if stalled:
        culprits = [_stalled_culprit(ctx, group, r, label, since) for r in stalled]
        return Hypothesis(
            name="fr-stalled-rank", score=STALLED_SCORE, category=Category.HUNG_PROCESS,
            phase=_phase(group, seq), culprits=culprits,
            reasoning=f"In the flight-recorder dumps of {group.label}, {waiters} (enqueued, not completed); "
                      f"rank{'s' if len(stalled) > 1 else ''} {fmt_ranks(stalled)} had nothing in flight (last "
                      f"enqueued = last completed = {', '.join(str(group.by_rank[r].reached) for r in stalled)}): "
                      f"{'they' if len(stalled) > 1 else 'it'} stopped on the CPU side before enqueuing {label} "
                      "(data loading, a checkpoint, a code path the others did not take)."
                      + _elsewhere(elsewhere, waits_in))
    members = _members(ctx, group)
    no_dump = [r for r in members if r not in prog.dumps and r not in group.dumped]
    if no_dump:
        culprits = [Culprit(kind="rank", rank=r, host=ctx.host_of(r),
                            reason=f"left no flight-recorder dump while {waiters}",
                            evidence=[ev for w in waiting[:2] for ev in _wait_ev(group, w)])
                    for r in no_dump]
        return Hypothesis(
            name="fr-no-dump", score=NO_DUMP_SCORE, category=Category.HUNG_PROCESS,
            phase=_phase(group, seq), culprits=culprits,
            reasoning=f"In the flight-recorder dumps of {group.label}, {waiters}; rank"
                      f"{'s' if len(no_dump) > 1 else ''} {fmt_ranks(no_dump)} left no dump: a process that died "
                      "or never got to dump writes none, so it is the prime suspect (its dump or its log would "
                      "say whether it crashed or hung)." + _elsewhere(elsewhere, waits_in))
    if elsewhere:
        return None  # the members it waits on wait in another group: that group is read
    if len(waiting) < len(members) or len(target) != 1:
        done = [r for r in members if r in group.by_rank and r not in waiting]
        return Hypothesis(
            name="fr-in-flight-everywhere", score=QUIET_SCORE, category=Category.HUNG_PROCESS,
            phase=_phase(group, seq), culprits=[],
            reasoning=f"In the flight-recorder dumps of {group.label}, {waiters}, while rank"
                      f"{'s' if len(done) != 1 else ''} {fmt_ranks(done) or 'none'} had nothing in flight and were "
                      "not behind them: no member of the dumps read stopped short. If the group has members "
                      "these dumps do not name (gloo states no membership; pass --world-size), their dumps "
                      "would show who.")
    if len(waiting) == len(members) and len(target) == 1:
        return Hypothesis(
            name="fr-in-flight-everywhere", score=EVERYWHERE_SCORE, category=Category.HUNG_PROCESS,
            phase=_phase(group, seq), culprits=[],
            reasoning=f"Every member of {group.label} ({fmt_ranks(members)}) enqueued {label} and none completed "
                      f"it (the earliest enqueued it{when}): no rank stopped short, so the collective itself "
                      "did not finish: on the GPU side (a kernel that never completed on one rank) or the "
                      "network side (a link). What would tell which: TORCH_NCCL_ENABLE_TIMING=1 (an entry "
                      "`started` on some ranks and `scheduled` on others), NCCL RAS or the NCCL INFO/WARN "
                      "lines (a link or peer named), `py-spy dump` of each rank, the ranks' logs (which "
                      "rank's timeout fired first).")
    return None


def _stalled_culprit(ctx: Context, group: GroupProgress, rank: int, label: str, since: float | None) -> Culprit:
    p = group.by_rank[rank]
    last = p.last_done
    quiet = ""
    if last is not None and last.since is not None:
        gap = f", {since - last.since:.1f} s before the others enqueued {label}" if since and since > last.since else ""
        limit = f" (timeout {last.timeout_s:g} s)" if last.timeout_s else ""
        quiet = f"; quiet since its {last.label} at {clock(last.since)}{gap}{limit}"
    stack = f", last completed {last.label} {last.sizes} from {last.where()}" if last and last.stack else (
        f", last completed {last.label} {last.sizes}" if last else "")
    return Culprit(kind="rank", rank=rank, host=ctx.host_of(rank),
                   reason=f"nothing in flight in {group.label} (last enqueued = last completed = {p.reached}) "
                          f"while the others waited in {label}{stack}{quiet}",
                   evidence=[last.evidence] if last else _dump_ev(p))


def _wait_ev(group: GroupProgress, rank: int) -> list[Evidence]:
    o = group.by_rank[rank].oldest
    return [o.evidence] if o else _dump_ev(group.by_rank[rank])


def _elsewhere(ranks: list[int], waits_in: dict[int, GroupProgress]) -> str:
    if not ranks:
        return ""
    return " " + "; ".join(f"rank {r} was itself waiting in {waits_in[r].label}" for r in ranks[:CASCADE_SHOWN]) + \
        " (a cascade, not a cause)."


def _cascade(first: GroupProgress, others: list[GroupProgress], index: int) -> str:
    before = [g for g in others if (g.stalled_since() or float("inf")) < (first.stalled_since() or float("inf"))]
    after = [g for g in others if g not in before]
    parts = []
    if before:
        parts.append("Groups that stalled earlier without naming a rank: "
                     + "; ".join(describe(g) for g in before[:CASCADE_SHOWN]) + ".")
    if after:
        parts.append(f"{first.label.capitalize()} stalled first; after it: "
                     + "; ".join(describe(g) for g in after[:CASCADE_SHOWN])
                     + (f"; … {len(after) - CASCADE_SHOWN} more groups" if len(after) > CASCADE_SHOWN else "") + ".")
    return " ".join(parts)


def _quiet(ctx: Context, prog: Progress, groups: list[GroupProgress]) -> Hypothesis:
    ranks = sorted(prog.dumps)
    gloo = any("gloo" in (p.oldest or p.last_done or _NONE).evidence.text for g in groups for p in g.by_rank.values()
               if p.oldest or p.last_done)
    missing = [r for r in ctx.expected if r not in prog.dumps]
    default = next((g for g in groups if g.default), None)
    ends = {default.by_rank[r].reached for r in default.dumped} if default else set()
    if missing and default is not None and len(ends) == 1 and len(default.dumped) >= 2:
        end = next(iter(ends))  # the one collective every dump ends at (read once: ranks share it)
        last = next((p.last_done for r in default.dumped if (p := default.by_rank[r]).last_done), None)
        at = f" ({last.label})" if last else ""
        return Hypothesis(
            name="fr-no-dump", score=NO_DUMP_QUIET_SCORE, category=Category.HUNG_PROCESS,
            phase=_phase(default, last.seq if last else None),
            culprits=[Culprit(kind="rank", rank=r, host=ctx.host_of(r),
                              reason=f"left no flight-recorder dump; every rank that left one stopped at collective "
                                     f"{end}{at} of the default group",
                              evidence=[last.evidence] if last else []) for r in missing],
            reasoning=f"The flight-recorder dumps of rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)} all end "
                      f"at the same collective{at} with nothing in flight (gloo counts a work that failed, such as "
                      f"one whose peer died, as completed), and rank{'s' if len(missing) > 1 else ''} "
                      f"{fmt_ranks(missing)} left no dump: a process that died writes none, so "
                      f"{'they are' if len(missing) > 1 else 'it is'} the likeliest cause. Weaker than a wait: "
                      "the dumps do not show the others waiting on it.")
    if _completed(prog, groups, missing):
        return Hypothesis(
            name="fr-nothing-in-flight", score=QUIET_SCORE, category=Category.HUNG_PROCESS, phase=Phase.UNKNOWN,
            culprits=[], shows_failure=False,
            reasoning=f"The flight-recorder dumps of every rank ({fmt_ranks(ranks)}) show the work completed: in each "
                      "process group every member ended at the same collective with nothing in flight, and ran no "
                      "op the dumps do not record.")
    return Hypothesis(
        name="fr-nothing-in-flight", score=QUIET_SCORE, category=Category.HUNG_PROCESS, phase=Phase.UNKNOWN,
        culprits=[],
        reasoning=f"The flight-recorder dumps of rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)} show nothing "
                  "in flight in any process group: every collective each rank enqueued completed. If the job "
                  "hung, it hung outside the recorded collectives"
                  + (f": {P2P_NOTE}" if gloo else " (on the CPU before any rank enqueued more, or in an op the "
                     "recorder does not hold)")
                  + (f". Rank{'s' if len(missing) > 1 else ''} {fmt_ranks(missing)} left no dump." if missing else "."))


_NONE = Op(None, False, "", "", "", "", None, None, [], Evidence("", 0, ""))


def _logged(ctx: Context) -> set[int]:
    """The ranks with a log of their own besides their dump."""
    dumps = {ev.source for ev in ctx.job.progress.dumps.values()}
    return {e.rank for e in ctx.job.events
            if e.rank is not None and e.family != "fr" and e.evidence.source not in dumps}


def _completed(prog: Progress, groups: list[GroupProgress], missing: list[int]) -> bool:
    """Dumps that show a job that did its work: every rank left one, and in every group every member
    ended at the same collective with nothing in flight and ran no op the entries do not hold. gloo
    counts its sends and recvs in the group's status but records no entry for them (P2P_NOTE): a
    status ahead of the last collective's number means P2P ops ran, and a P2P hang cannot be ruled out."""
    if missing or not prog.dumps:
        return False
    for g in groups:
        if len({g.by_rank[r].reached for r in g.dumped}) > 1:
            return False
        if any((p := g.by_rank[r]).enqueued is None or p.last_seq is None or p.enqueued > p.last_seq
               for r in g.dumped):
            return False
    return True


# ------------------------------------------------------------------------------------------
# Agreement with the rest


def remark(ctx: Context, winner: Hypothesis | None, own: Hypothesis | None) -> str | None:
    """Dumps, logs and RAS in one verdict, or the disagreement said."""
    if own is None or winner is None or winner is own:
        return None
    theirs = {c.rank for c in winner.culprits if c.rank is not None}
    mine = {c.rank for c in own.culprits if c.rank is not None}
    if not mine:
        return "The flight-recorder dumps name no rank: " + own.reasoning.split(": ", 1)[-1] if \
            own.name == "fr-nothing-in-flight" else f"The flight-recorder dumps: {own.reasoning}"
    if mine == theirs:
        return None  # agreement is said by the verdict ("It agrees with the fr-… evidence.")
    return (f"The flight-recorder dumps disagree: they point at rank{'s' if len(mine) > 1 else ''} "
            f"{fmt_ranks(sorted(mine))} ({own.name}: {own.reasoning})")


def member_evidence(ctx: Context) -> list[MemberEvidence]:
    """What the dumps say of each member, whoever the candidate names: a member with work in flight in
    a group where another member is behind it, or left no dump, waited on that member (it is cleared of
    having stopped; its own logged failure, if any, still counts); a member that completed more of a
    group than a peer got further than it."""
    prog = ctx.job.progress
    if not prog.has_dumps:
        return []
    items: list[MemberEvidence] = []
    cleared: set[int] = set()
    groups = sorted((g for g in prog.groups.values() if g.dumped), key=lambda g: (not g.default, g.key))
    waits = _waiting(ctx, groups)
    for group in groups:
        members = _members(ctx, group)
        no_dump = [r for r in members if r not in prog.dumps and r not in group.dumped]
        idle = sorted(((group.by_rank[o].reached or 0), o) for o in group.dumped if group.by_rank[o].idle)
        for r in sorted(waits[group.key]):
            p = group.by_rank[r]
            if r in cleared or p.oldest is None:
                continue
            behind = [o for reached, o in idle if reached < (p.reached or 0)]
            if not behind and not no_dump:
                continue
            them = behind or no_dump
            many = len(them) > 1
            why = ("were" if many else "was") + " behind it" if behind else "left no dump"
            cleared.add(r)
            items.append(MemberEvidence(
                kind="rank", rank=r, host=ctx.host_of(r), stance=Stance.AGAINST, source="fr-dumps",
                weight=STALLED_SCORE, clears=True, citation=p.oldest.evidence,
                fact=f"waited in {p.oldest.label} of {group.label} with it in flight (enqueued, not completed) while "
                     f"rank{'s' if many else ''} {fmt_ranks(them)} {why}: it waited on {'them' if many else 'it'}"))
    return items


PRINCIPLE = Principle(
    name="fr-dumps", emits=NAMES, run=fr_dumps, fails_without_logged_failure=True, remark=remark,
    evidence=member_evidence,
    summary="Flight-recorder dumps, per process group aligned by sequence number: a different op, size or dtype "
            "at one sequence number names the odd rank by majority (`fr-mismatch`); in the group that stalled "
            "first, a member with nothing in flight behind the members that wait stopped on the CPU side "
            "(`fr-stalled-rank`, with the stack of its last completed op), unless it waits in another group (the "
            "cascade); a member with no dump while the others wait is the prime suspect (`fr-no-dump`); every "
            "member in flight at one collective is a GPU- or network-side lead (`fr-in-flight-everywhere`); "
            "nothing in flight anywhere is said, with why gloo dumps cannot show a P2P hang "
            "(`fr-nothing-in-flight`), and is no failure where every rank's dump ends each group at one "
            "collective with no unrecorded P2P op. A stall at a group's first collective is operator_load. "
            "Of every member it says whether it waited with work in flight while a peer was behind it or left "
            "no dump: such a member is cleared of any candidate naming it.")
