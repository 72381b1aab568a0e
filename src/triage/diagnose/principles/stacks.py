"""Live stacks: where each rank's threads were when the job stopped progressing (docs/watch.md §3).

`triage watch` takes every rank's Python stacks (py-spy) when it sees a hang; the stack rules
(rules/stack/) and triage.parse.pyspy turn each rank's dump into one `stack-dump` event saying
whether the rank waits inside a collective (or on its device) or is elsewhere: its own code, data
loading, checkpoint I/O, a lock, a sleep, an exception. Read together:

- ranks waiting in a collective while a few others are outside any: the ones outside are what the
  others wait for (their stacks say where they are);
- every rank inside a collective, but not the same one: the minority took another code path;
- every rank inside the same collective, with no progress: nothing in Python holds them up; the
  hang is below it, on the device or network side — a lead, not a culprit.

Stacks are read only as evidence of a failure: beside `triage watch`'s own stall line, or beside
lines that show one (a timeout, an error). A snapshot of a healthy job says nothing.
"""

from __future__ import annotations

from triage.diagnose.context import Context, minority
from triage.diagnose.principles.principle import Principle
from triage.model import Category, Culprit, Event, Evidence, Hypothesis, Kind, Phase
from triage.parse.pyspy import INSIDE, RULE_ID
from triage.ranks import fmt_ranks

# One or two ranks outside any collective while the others wait in one, every rank's stack taken.
OUTSIDE_SCORE = 0.85
# The same, but more ranks outside, or some ranks' stacks missing (absence is not evidence).
OUTSIDE_WEAK_SCORE = 0.6
# Every rank in a collective, a minority in another one than the rest.
MISMATCH_SCORE = 0.7
# Every rank waiting in the same collective: a lead to the device or network side, no culprit.
ALL_WAITING_SCORE = 0.45
STALL_RULE = "stack-watch-stalled"
KERNEL_RULES = "stack-kernel-"  # a rank's state, wchan and syscall in a snapshot (rankN.proc.txt)
# The kernel's waits that say what a rank outside any collective is held by, the most telling first.
_KERNEL_ORDER = ("stack-kernel-lock-file", "stack-kernel-io-uninterruptible", "stack-kernel-io-pipe-socket",
                 "stack-kernel-lock-futex", "stack-kernel-io-poll", "stack-kernel-sleep", "stack-kernel-running")
_FAILURE = (Kind.TIMEOUT, Kind.ERROR, Kind.PEER_ERROR, Kind.CULPRIT_NAMED)
_QUOTED = 5  # frames quoted per culprit
# Calls that wait on peers while communicators are made: a hang there is in comm_init.
_INIT_CALLS = ("init_process_group", "new_group", "_new_group_with_tag", "_store_based_barrier",
               "ncclCommInitRank", "HcclCommInitRootInfo", "HcclCommInitClusterInfo")
_WORDS = {"python": "running its own code", "data-loading": "in data loading",
          "checkpoint-io": "in checkpoint I/O", "exception": "handling an exception",
          "lock": "blocked on a lock", "sleep": "sleeping", "unknown": "with no Python frame"}


def dumps_by_rank(ctx: Context) -> dict[int, Event]:
    """Each rank's latest stack dump."""
    found: dict[int, Event] = {}
    for rank, state in ctx.job.ranks.items():
        dumps = [e for e in state.events if e.rule_id == RULE_ID and "stack_state" in e.fields]
        if dumps:
            found[rank] = max(dumps, key=lambda e: (e.time or 0.0, e.evidence.source))
    return found


def stack_evidence(event: Event, limit: int = _QUOTED) -> list[Evidence]:
    """The frames a dump event quotes, as lines of its source."""
    quoted = []
    for entry in event.fields.get("stack", "").splitlines()[:limit]:
        number, _, text = entry.partition("\t")
        if number.isdigit():
            quoted.append(Evidence(event.evidence.source, int(number), text, rule_id=RULE_ID))
    return quoted or [event.evidence]


def kernel_wait(ctx: Context, rank: int, dump: Event) -> tuple[str, list[Evidence]]:
    """What the kernel said of a rank in the snapshot its dump is from (its wait, its system call),
    in words, with the lines that say so; ("", []) when nothing telling."""
    folder = dump.evidence.source.rpartition("/")[0]
    state = ctx.job.ranks.get(rank)
    lines = [e for e in (state.events if state else []) if e.rule_id.startswith(KERNEL_RULES)
             and e.evidence.source.rpartition("/")[0] == folder]
    waits = sorted((e for e in lines if e.rule_id in _KERNEL_ORDER), key=lambda e: _KERNEL_ORDER.index(e.rule_id))
    if not waits:
        return "", []
    call = next((e for e in lines if e.rule_id == "stack-kernel-syscall"), None)
    words = waits[0].message + (f", in the system call {call.fields['syscall']}" if call else "")
    return words, [e.evidence for e in [waits[0], *([call] if call else [])]]


def _phase(ctx: Context, culprits: list[int], waiting: list[Event]) -> Phase:
    """Where the logs place it; else where the waiting ranks wait: making communicators, or in
    collectives once they were made."""
    phase = ctx.phase(culprits) if culprits else ctx.phase()
    if phase is not Phase.UNKNOWN or not waiting:
        return phase
    calls = [e.fields.get("stack_call", "") for e in waiting]
    if all(any(c.startswith(i) for i in _INIT_CALLS) for c in calls):
        return Phase.COMM_INIT
    return Phase.EXECUTION


def _where(event: Event) -> str:
    frames = [t.partition("\t")[2] for t in event.fields.get("stack", "").splitlines()[:3]]
    thread = event.fields.get("thread", "its main thread")
    return f"{thread} at {' <- '.join(frames)}" if frames else thread


def stack_dumps(ctx: Context) -> Hypothesis | None:
    dumps = dumps_by_rank(ctx)
    stalled = ctx.job.of_rules(STALL_RULE)
    if len(dumps) < 2 or not (stalled or ctx.job.of_kinds(*_FAILURE)):
        return None
    inside = {r: e for r, e in dumps.items() if e.fields["stack_state"] in INSIDE}
    outside = {r: e for r, e in dumps.items() if e.fields["stack_state"] not in INSIDE}
    expected = ctx.expected or sorted(dumps)
    without = [r for r in expected if r not in dumps]
    said = ""
    if stalled:
        fields = stalled[-1].fields
        kind = f"an {fields['hang_kind']} hang" if fields.get("hang_kind") in ("idle", "all-waiting") else \
            f"a {fields['hang_kind']} hang" if fields.get("hang_kind") else "a hang"
        window = (f"{fields['hang_kind']} window {fields.get('window_s', '?')} s: {fields['window_why']}"
                  if fields.get("window_why") else f"stall window {fields.get('window_s', '?')} s")
        said = (f"triage watch saw {kind}, no progress for {fields.get('quiet_s', '?')} s ({window}), and took "
                "every rank's stack. ")
    if inside and outside:
        return _outside(ctx, inside, outside, without, said)
    if not inside:
        return None
    calls = {r: e.fields.get("stack_call", "?") for r, e in inside.items()}
    odd, common = minority(calls, 3)
    if odd:
        culprits = [Culprit(kind="rank", rank=r, host=ctx.host_of(r),
                            reason=f"its stack is in {calls[r]} while the others are in {common}",
                            evidence=stack_evidence(inside[r])) for r in odd]
        return Hypothesis(
            name="stack-collective-mismatch", score=MISMATCH_SCORE, category=Category.COLLECTIVE_MISMATCH,
            phase=_phase(ctx, odd, list(inside.values())), culprits=culprits,
            reasoning=f"{said}Every rank's stack is inside a collective, but rank"
                      f"{'s' if len(odd) > 1 else ''} {fmt_ranks(odd)} in "
                      f"{', '.join(sorted({calls[r] for r in odd}))} while the others are in {common}: "
                      "they took another code path.")
    if len(set(calls.values())) != 1 or without:
        return None
    return Hypothesis(
        name="stack-all-waiting", score=ALL_WAITING_SCORE, category=Category.HUNG_PROCESS,
        phase=_phase(ctx, [], list(inside.values())), culprits=[],
        reasoning=f"{said}Every rank's stack ({fmt_ranks(sorted(dumps))}) waits inside the same "
                  f"collective, {common}, and none progressed: nothing in Python holds them up, so "
                  "the hang is below it, on the device or network side (a GPU, a link, NCCL/HCCL "
                  "itself).",
        advice=["Take NCCL RAS status (`triage ras collect`) or a flight-recorder dump while it hangs, "
                "and check the devices (nvidia-smi, npu-smi) and links of the hosts involved."])


def _outside(ctx: Context, inside: dict[int, Event], outside: dict[int, Event], without: list[int],
             said: str) -> Hypothesis | None:
    if len(outside) > len(inside):
        return None  # most ranks are elsewhere: no collective the rest waits in
    few = len(outside) <= max(2, len(inside) // 4)
    score = OUTSIDE_SCORE if few and not without else OUTSIDE_WEAK_SCORE
    calls = sorted({e.fields.get("stack_call", "?") for e in inside.values()})
    culprits = []
    for rank, event in sorted(outside.items()):
        state = _WORDS.get(event.fields["stack_state"], event.fields["stack_state"])
        call = f" ({event.fields['stack_call']})" if event.fields.get("stack_call") else ""
        kernel, kernel_lines = kernel_wait(ctx, rank, event)
        if kernel and event.fields["stack_state"] in ("python", "unknown"):
            # The kernel knows better than "its own code" what holds it (or that it runs).
            state, call = (f"{state}, {kernel}" if kernel_lines[0].rule_id == "stack-kernel-running" else kernel), ""
        elif kernel:
            call += f"; the kernel: {kernel}"
        culprits.append(Culprit(
            kind="rank", rank=rank, host=ctx.host_of(rank),
            reason=f"its stack is outside any collective, {state}{call}: {_where(event)}",
            evidence=kernel_lines + stack_evidence(event)))
    ranks = sorted(outside)
    reasoning = (f"{said}Rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)} "
                 f"{'are' if len(ranks) > 1 else 'is'} outside any collective while rank"
                 f"{'s' if len(inside) > 1 else ''} {fmt_ranks(sorted(inside))} wait in "
                 f"{' / '.join(calls)}: the others wait for {'them' if len(ranks) > 1 else 'it'}. "
                 + " ".join(f"Rank {c.rank}: {c.reason}." for c in culprits))
    if without:
        reasoning += f" Ranks {fmt_ranks(without)} have no stack here."
    return Hypothesis(name="stack-outside-collective", score=score, category=Category.HUNG_PROCESS,
                      phase=_phase(ctx, ranks, list(inside.values())), culprits=culprits,
                      reasoning=reasoning)


PRINCIPLE = Principle(
    name="stack-dumps", emits=("stack-outside-collective", "stack-collective-mismatch", "stack-all-waiting"),
    run=stack_dumps, fails_without_logged_failure=True,
    summary="Each rank's live stack (py-spy, taken by `triage watch` when the job stopped progressing, read "
            "by the stack rules), beside watch's stall line or lines that show a failure: the few ranks "
            "outside any collective while the others wait in one are the culprits, their stacks quoted with "
            "what the kernel says holds them (a file lock, uninterruptible I/O, a sleep: wchan, State, syscall); "
            "ranks all in collectives but a minority in another one is a collective mismatch; every rank "
            "in the same collective is a lead to the device or network side, too weak to name a rank.")
