"""Ranks that disagree on what they run: the collective, its arguments, or how their links are secured.

Where ranks disagree, the majority is taken as the program's intent and the few that differ as the
cause; the ranks that merely detected the difference are not. Four sources say what each rank ran:
the collective each timed out in at one SeqNum, TORCH_DISTRIBUTED_DEBUG=DETAIL's fingerprints (or,
without them, the collective each failing traceback ends in), HCCL's comparison of a collective's
arguments as two ranks build a link (EI0005), and the devices' TLS switches.
"""

from __future__ import annotations

from collections import defaultdict

from triage.diagnose.context import Context, groups_by_progress, minority, rank_culprit
from triage.diagnose.principles.principle import Principle
from triage.job import INIT_CALLS
from triage.job.peers import ranks_at
from triage.lazy_regex import lazy_compile
from triage.model import Category, Event, Hypothesis
from triage.ranks import fmt_ranks

# Inside one group, a few ranks timed out at the same SeqNum in another collective than the rest.
SEQ_MISMATCH_SCORE = 0.85
# TORCH_DISTRIBUTED_DEBUG=DETAIL's fingerprints: a few ranks were about to run another collective.
FINGERPRINT_MISMATCH_SCORE = 0.9
# Without fingerprints: a few ranks' tracebacks end in another collective than the rest.
TRACEBACK_MISMATCH_SCORE = 0.7
# HCCL compared a collective argument: a few ranks hold the odd value.
PARAMETER_MISMATCH_SCORE = 0.9
# The same, for the operation itself, while a rank logged nothing: the ranks met at different
# points of the program, so the mismatch may follow from what held the others back.
OPERATION_MISMATCH_SILENT_SCORE = 0.6
# HCCL found an argument inconsistent and no majority says which rank is odd.
PARAMETER_NO_MAJORITY_SCORE = 0.5
# A few devices' TLS switch differs from the others', on ranks a failing link involves.
TLS_MISMATCH_SCORE = 0.85


def collective_mismatch_at_seq(ctx: Context) -> Hypothesis | None:
    """Inside one group, ranks that timed out at the same SeqNum in a different collective."""
    for group in groups_by_progress(ctx):
        by_seq: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
        for rank, m in group.members.items():
            if m.stuck_seq is not None and m.stuck_op:
                by_seq[m.stuck_seq][m.stuck_op].append(rank)
        for seq, ops in sorted(by_seq.items()):
            if len(ops) < 2:
                continue
            majority_op = max(ops, key=lambda op: len(ops[op]))
            odd = sorted(r for op, ranks in ops.items() if op != majority_op for r in ranks)
            if len(odd) >= len(ops[majority_op]):
                continue
            where = "" if group.default else f" of {group.label}"
            culprits = [rank_culprit(ctx, r, f"was in {group.members[r].stuck_op} at SeqNum {seq}"
                                     f"{where} while the others were in {majority_op}",
                                     group.members[r].timeouts)
                        for r in odd]
            events = [e for r in odd for e in group.members[r].timeouts]
            return Hypothesis(
                name="collective-mismatch",
                score=SEQ_MISMATCH_SCORE,
                category=Category.COLLECTIVE_MISMATCH,
                phase=ctx.phase(odd, events),
                culprits=culprits,
                reasoning=f"At SeqNum {seq}{where}, {len(ops[majority_op])} ranks ran {majority_op} "
                          f"but rank{'s' if len(odd) > 1 else ''} {fmt_ranks(odd)} ran something "
                          "else: the ranks issued different collectives, so none could complete.",
            )
    return None


def collective_mismatch_by_fingerprint(ctx: Context) -> Hypothesis | None:
    """Ranks that were about to run a different collective than the rest, by majority.

    Two sources say which collective each rank was in: TORCH_DISTRIBUTED_DEBUG=DETAIL's
    fingerprints (each line gives the writer's and one other rank's), and, without it, the
    collective each failing rank's traceback ends in.
    """
    fingerprints: dict[str, dict[int, str]] = defaultdict(dict)
    evidence: dict[int, list[Event]] = defaultdict(list)
    calls: dict[int, tuple[str, Event]] = {}
    for event in ctx.job.events:
        fields = event.fields
        if "fp_seq" in fields and "op" in fields:
            writer = event.rank if event.rank is not None else int(fields["fp_rank"])
            seq = fields["fp_seq"]
            # The writer's own fingerprint first: the other rank's can be garbled.
            fingerprints[seq][writer] = _signature(fields["op"], fields.get("shape"),
                                                   fields.get("dtype"))
            if fields.get("peer_op") and fields.get("peer_fp_seq") == seq and event.peer is not None:
                fingerprints[seq].setdefault(event.peer, _signature(
                    fields["peer_op"], fields.get("peer_shape"), fields.get("peer_dtype")))
            evidence[writer].append(event)
        elif "call" in fields and event.rank is not None and fields["call"] not in INIT_CALLS:
            calls[event.rank] = (fields["call"], event)  # the innermost frame comes last
    for seq, by_rank in sorted(fingerprints.items(), key=lambda kv: int(kv[0])):
        odd, common = minority(by_rank, minimum=3)
        if odd:
            events = [e for r in by_rank for e in evidence.get(r, [])]
            culprits = [rank_culprit(ctx, r, f"was about to run {by_rank[r]} as collective "
                                     f"{int(seq) + 1} while the others ran {common}",
                                     evidence.get(r) or events) for r in odd]
            return Hypothesis(
                name="collective-mismatch", score=FINGERPRINT_MISMATCH_SCORE, category=Category.COLLECTIVE_MISMATCH,
                phase=ctx.phase(odd, events), culprits=culprits,
                reasoning=f"TORCH_DISTRIBUTED_DEBUG=DETAIL compared the ranks' collective number "
                          f"{int(seq) + 1}: {len(by_rank) - len(odd)} ranks ran {common}, rank"
                          f"{'s' if len(odd) > 1 else ''} {fmt_ranks(odd)} "
                          f"{', '.join(sorted({by_rank[r] for r in odd}))}: the ranks took "
                          "different code paths.")
    by_call = {r: call for r, (call, _) in calls.items()}
    odd, common = minority(by_call, minimum=3)
    if odd and len(odd) <= max(1, len(ctx.expected) // 4):
        culprits = [rank_culprit(ctx, r, f"its traceback ends in {by_call[r]}() while the "
                                 f"others' end in {common}()", [calls[r][1]]) for r in odd]
        events = [calls[r][1] for r in odd]
        return Hypothesis(
            name="collective-mismatch", score=TRACEBACK_MISMATCH_SCORE, category=Category.COLLECTIVE_MISMATCH,
            phase=ctx.phase(odd, events), culprits=culprits,
            reasoning=f"When the job failed, {len(by_call) - len(odd)} ranks were blocked in "
                      f"{common}() but rank{'s' if len(odd) > 1 else ''} {fmt_ranks(odd)} in "
                      f"{', '.join(sorted({by_call[r] for r in odd}))}(): the ranks issued "
                      "different collectives, so none could complete.")
    return None


def _signature(op: str, shape: str | None, dtype: str | None) -> str:
    return f"{op}[{shape}]" + (f" {dtype}" if dtype else "") if shape is not None else op


def parameter_mismatch(ctx: Context) -> Hypothesis | None:
    """Ranks whose own value of a collective's parameter the others do not share (HCCL EI0005).

    Building a link, two ranks compare the collective they are about to run (tag, count, op,
    data type); each side logs its own value and the other's. The detecting ranks are not the
    cause: the cause is the rank whose own value is the odd one out.
    """
    own: dict[str, dict[int, str]] = defaultdict(dict)
    evidence: dict[int, list[Event]] = defaultdict(list)
    for event in ctx.job.events:
        fields = event.fields
        if "local_value" not in fields or event.rank is None:
            continue
        parameter = fields.get("parameter") or "parameter"
        own[parameter][event.rank] = fields["local_value"]
        evidence[event.rank].append(event)
    for parameter, by_rank in sorted(own.items()):
        if len(set(by_rank.values())) < 2:
            continue
        odd, common = minority(by_rank, minimum=3)
        events = [e for r in by_rank for e in evidence[r]]
        if odd:
            culprits = [rank_culprit(ctx, r, f"ran the collective with {parameter} {by_rank[r]} where the "
                                     f"others had {common}", evidence[r]) for r in odd]
            score, reasoning = PARAMETER_MISMATCH_SCORE, (
                f"HCCL compared the collective's {parameter} between ranks as they built links: rank"
                f"{'s' if len(odd) > 1 else ''} {fmt_ranks(odd)} had "
                f"{', '.join(sorted({by_rank[r] for r in odd}))}, the other {len(by_rank) - len(odd)} "
                f"reporting ranks {common}. The ranks that reported the mismatch only detected it.")
            if parameter in ("tag", "cmdType", "op") and (silent := _silent_besides(ctx, by_rank)):
                # Different operations meet where ranks are at different places in the program: the
                # ones ahead finished the step before, the others are held back, and a rank that
                # logged nothing at all is what holds them.
                score = OPERATION_MISMATCH_SILENT_SCORE
                reasoning += (f" But they differ in which operation they ran, and rank"
                              f"{'s' if len(silent) > 1 else ''} {fmt_ranks(silent)} logged nothing: "
                              "the ranks met at different points of the program, so the mismatch may "
                              "follow from what held the others back.")
        else:
            odd = sorted(by_rank)
            culprits = [rank_culprit(ctx, r, f"has {parameter} {by_rank[r]}; its peers disagree", evidence[r])
                        for r in odd]
            score, reasoning = PARAMETER_NO_MAJORITY_SCORE, (
                f"HCCL found the collective's {parameter} inconsistent ("
                + ", ".join(f"rank {r}: {v}" for r, v in sorted(by_rank.items()))
                + "), and no majority says which rank is the odd one.")
        return Hypothesis(name="parameter-mismatch", score=score, category=Category.COLLECTIVE_MISMATCH,
                          phase=ctx.phase(odd, events), culprits=culprits, reasoning=reasoning)
    return None


def _silent_besides(ctx: Context, reporting: dict[int, str]) -> list[int]:
    """Ranks with a log but no failure and no wait of their own, among those that did not report."""
    return sorted(r for r, f in ctx.facts.items() if f.state.has_log and not f.known_failures
                  and not f.reported_wait and r not in reporting)


def tls_mismatch(ctx: Context) -> Hypothesis | None:
    """Ranks whose TLS switch differs from the others' (HCCL): their links can never be built.

    Each device's HCCP logs its switch (`TLS SWITCH (1)`); HCCL itself may list the ranks by
    switch (EI0016). Links between ranks of different switches time out on both sides, on every
    rank alike, so the minority is the cause (HCCL DFX; ascend-fd's first socket check:
    docs/prior-art.md §A7 and §A8).
    """
    switch: dict[int, str] = {}
    evidence: dict[int, list[Event]] = defaultdict(list)
    for event in ctx.job.events:
        fields = event.fields
        if "tls_switch" in fields and event.rank is not None:
            switch[event.rank] = "on" if fields["tls_switch"] != "0" else "off"
            evidence[event.rank].append(event)
        if "tls_enabled" not in fields and "tls_disabled" not in fields:
            continue  # (most events: no regex pass over an empty list)
        for state, listed in (("on", fields.get("tls_enabled")), ("off", fields.get("tls_disabled"))):
            for ip, device in _ADDRESSES.findall(listed or ""):
                for rank in ranks_at(ctx.job, ip, device):  # a list of devices, not who the line is about
                    switch.setdefault(rank, state)
                    evidence[rank].append(event)
    odd, common = minority(switch, minimum=3)
    if not odd:
        return None
    # A switch that differs on a rank no failing link involves did not make these links fail.
    involved = set(ctx.waiters()) | {p for r in ctx.waiters() for e in ctx.facts[r].timeouts + ctx.facts[r].peer_errors
                                     if (p := e.peer) is not None}
    if not set(odd) & involved:
        return None
    waits = [e for r in ctx.waiters() for e in ctx.facts[r].timeouts[:1]]
    return Hypothesis(
        name="tls-mismatch", score=TLS_MISMATCH_SCORE, category=Category.CONFIG_MISMATCH,
        phase=ctx.phase(odd, waits or [e for r in odd for e in evidence[r]]),
        culprits=[rank_culprit(ctx, r, f"has TLS {switch[r]} where the others have it {common}", evidence[r])
                  for r in odd],
        reasoning=f"The devices' TLS switches differ: rank{'s' if len(odd) > 1 else ''} {fmt_ranks(odd)} "
                  f"{'have' if len(odd) > 1 else 'has'} TLS {switch[odd[0]]}, the other "
                  f"{len(switch) - len(odd)} ranks {common}. Links between the two can never be built, "
                  "so every rank times out building them; the minority is the one to change.")


_ADDRESSES = lazy_compile(r"([\d.]+)/(\d+)")  # EI0016's `[hostIp/deviceId]` entries


COLLECTIVE_MISMATCH_AT_SEQ = Principle(
    name="collective-mismatch-at-seq", emits=("collective-mismatch",), run=collective_mismatch_at_seq,
    summary="Inside one process group, ranks that timed out at the same SeqNum in a different collective than "
            "the majority issued another collective than the rest, so none could complete: the minority is "
            "the cause.")
COLLECTIVE_MISMATCH_BY_FINGERPRINT = Principle(
    name="collective-mismatch-by-fingerprint", emits=("collective-mismatch",),
    run=collective_mismatch_by_fingerprint,
    summary="TORCH_DISTRIBUTED_DEBUG=DETAIL compares the ranks' collective fingerprints (operation, shapes, "
            "dtypes): the few ranks that were about to run another collective than the majority took another "
            "code path. Without fingerprints, the collective each failing rank's traceback ends in says the "
            "same, more weakly.")
PARAMETER_MISMATCH = Principle(
    name="parameter-mismatch", emits=("parameter-mismatch",), run=parameter_mismatch,
    summary="Building a link, two HCCL ranks compare the collective they are about to run (tag, count, "
            "operation, data type; EI0005), and each logs its own value: the ranks whose own value the "
            "majority does not share are the cause, not the ones that detected it. When the operation "
            "itself differs while a rank logged nothing, the ranks met at different points of the program "
            "and the silent rank may be what held them; with no majority every reporting rank is named, weakly.")
TLS_MISMATCH = Principle(
    name="tls-mismatch", emits=("tls-mismatch",), run=tls_mismatch,
    summary="Each Ascend device's TLS switch is logged by HCCP (or listed by HCCL, EI0016); links between "
            "devices whose switches differ can never be built and time out on both ends. The minority "
            "switch, on a rank that a failing link involves, is the one to change.")
