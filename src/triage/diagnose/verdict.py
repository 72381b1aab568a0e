"""Weigh the hypotheses into one verdict — or an honest "inconclusive" naming what is missing."""

from __future__ import annotations

from collections import Counter

from triage.diagnose.consistency import check, clearing, contested, ledger, unsupported
from triage.diagnose.context import Context
from triage.diagnose.facts import rank_facts
from triage.diagnose.isolation import isolated
from triage.diagnose.principles import PRINCIPLES
from triage.job import Job, separate_runs
from triage.model import (
    Category,
    Culprit,
    Hypothesis,
    Kind,
    Phase,
    PrincipleFailure,
    Status,
    Verdict,
)
from triage.ranks import fmt_ranks

# Below this, a winner is reported as inconclusive: a wrong culprit stated with confidence is
# the worst output this tool can produce.
CONFIDENT = 0.5
# No rank logged an error, a timeout or a failed exit, and no principle sees a failure: certain.
CERTAIN = 1.0
# Below this, a diagnosed verdict still says what evidence would settle it.
SURE = 0.75
# Each other candidate naming the same culprits adds this to the winner's score.
AGREEMENT_BONUS = 0.05
# A rival naming other culprits within this of the winner's score costs it RIVAL_PENALTY: two
# principles point at different culprits with the same strength.
RIVAL_MARGIN = 0.05
RIVAL_PENALTY = 0.3
# Sources that disagree and that no fact settles: the strongest reading is a lead, no more.
CONFLICT_SCORE = 0.45
# No verdict is certain: the winner's score is kept at most this.
MAX_CONFIDENCE = 0.99
# How many agreeing principles the winner's reasoning names.
AGREEMENTS_SAID = 2
# A line no rule knows but that its format marks as an error counts: the world is open.
_FAILURE_KINDS = (Kind.TIMEOUT, Kind.ERROR, Kind.PEER_ERROR, Kind.CULPRIT_NAMED, Kind.UNEXPLAINED)

_ADVICE = {
    Category.HUNG_PROCESS: [
        "Look at the last lines of the culprit's log: what was it doing (data loading, checkpoint, "
        "a code path the others did not take)?",
        "Next run: TORCH_NCCL_TRACE_BUFFER_SIZE=2000 (flight recorder) and TORCH_NCCL_DESYNC_DEBUG=1; "
        "py-spy dump --pid <pid> on a hung rank shows where it is stuck.",
    ],
    Category.CRASHED_PROCESS: [
        "Read the culprit's traceback or exit signal; a SIGKILL (-9) is usually the kernel's OOM "
        "killer (check `dmesg` on its host) or the scheduler.",
    ],
    Category.OOM: [
        "Reduce the culprit's memory: batch size, activation checkpointing, or balance the data "
        "so that one rank does not get the largest samples.",
    ],
    Category.DEVICE_ERROR: [
        "Check the culprit's GPU: `nvidia-smi -q -d ECC,PAGE_RETIREMENT`, Xid errors in `dmesg`; "
        "drain the node if the hardware is at fault, then rerun with CUDA_LAUNCH_BLOCKING=1.",
    ],
    Category.NETWORK_FAULT: [
        "Check the named host's NICs and links (`ibstat`, `ibv_devinfo`, switch port counters) and "
        "run `triage repro` across the suspect hosts.",
    ],
    Category.COLLECTIVE_MISMATCH: [
        "The ranks took different code paths: look for rank-dependent branches, uneven data "
        "(one rank with an extra batch) or a collective inside a condition.",
    ],
    Category.CONFIG_MISMATCH: [
        "Compare the culprit's environment (MASTER_ADDR/PORT, NCCL_SOCKET_IFNAME, versions) with "
        "the others'.",
    ],
}

# Ascend jobs: the same categories, checked with CANN's tools and HCCL's settings.
_ADVICE_HCCL = {
    Category.HUNG_PROCESS: [
        "Read the culprit's plog and training log (`grep -rn ERROR debug/plog/plog-<pid>_*`): what was it "
        "doing (data loading, checkpoint, a code path the others did not take)? `py-spy dump --pid <pid>` "
        "on a hung rank shows where it is stuck.",
        "HCCL_CONNECT_TIMEOUT bounds link set-up and HCCL_EXEC_TIMEOUT execution waits: raise them only "
        "if the culprit was merely late.",
    ],
    Category.CRASHED_PROCESS: [
        "Read the culprit's traceback or exit signal; a SIGKILL (-9) is usually the kernel's OOM killer "
        "(`dmesg` on its server) or the scheduler. Before rerunning, check its device for leftover "
        "processes with `npu-smi info`.",
    ],
    Category.DEVICE_ERROR: [
        "Check the culprit's NPU: `npu-smi info -t health -i <card>`, `npu-smi info -t ecc -i <card>`, its "
        "device logs (`msnpureport -f`); drain the server if the hardware is at fault. A process left on "
        "the device (`npu-smi info`, EJ0001) must be killed before the next run.",
    ],
    Category.NETWORK_FAULT: [
        "Check both devices' parameter-plane link: `hccn_tool -i <dev> -link -g` (up/down), "
        "`hccn_tool -i <dev> -net_health -g`, `hccn_tool -i <dev> -ping -g address <peer device ip>`, "
        "`hccn_tool -i <dev> -stat -g` (error counters), and the TLS switch on both ends "
        "(`hccn_tool -i <dev> -tls -g`).",
        "For failures at communicator init, check HCCL_IF_IP / HCCL_SOCKET_IFNAME on each server: the "
        "root's address must be reachable from every server.",
    ],
    Category.COLLECTIVE_MISMATCH: [
        "The ranks ran different operators: compare each rank's tag and index (`grep -rn 'opData "
        "information' debug/`, the EI0002/EI0005 lines) and look for rank-dependent branches or uneven data.",
    ],
    Category.CONFIG_MISMATCH: [
        "Compare the culprit's settings with the others': RANK_TABLE_FILE, HCCL_IF_IP / "
        "HCCL_SOCKET_IFNAME, HCCL_CONNECT_TIMEOUT, HCCL_EXEC_TIMEOUT, the TLS switch "
        "(`hccn_tool -i <dev> -tls -g`), CANN and driver versions (`npu-smi info`).",
    ],
}

def diagnose(job: Job) -> Verdict:
    verdict = _diagnose(job)
    if runs := separate_runs(job.events):
        # Unrelated jobs in one folder merge into one nonsense job unless the report says so.
        verdict.reasoning = (f"These logs look like more than one job: {'; '.join(runs)}. Analyse each "
                             f"job's logs on their own. " + verdict.reasoning)
        verdict.missing.insert(0, "one job's logs at a time: " + "; ".join(runs))
    return verdict


def _diagnose(job: Job) -> Verdict:
    facts = rank_facts(job)
    ctx = Context(job=job, facts=facts)
    failed: list[PrincipleFailure] = []
    verdict = _weigh(ctx, failed)
    if failed:
        verdict.failed = failed
        names = ", ".join(f"{f.principle} ({f.error})" for f in failed)
        verdict.reasoning = (f"The verdict may be incomplete: principle{'s' if len(failed) > 1 else ''} {names} "
                             "failed and the others decided without it. " + verdict.reasoning)
    return verdict


def _weigh(ctx: Context, failed: list[PrincipleFailure]) -> Verdict:
    job, facts = ctx.job, ctx.facts
    bad_exits = [e for f in facts.values() for e in f.self_failures if e.kind is Kind.EXIT]
    # Principles that see a failure no log shows run first: with none, nothing failed.
    found = {p.name: isolated(failed, p, p.run, ctx) for p in PRINCIPLES if p.fails_without_logged_failure}
    resolved = {id(e) for h in found.values() if h is not None and not h.shows_failure for e in h.accounts_for}
    failing = [e for e in job.of_kinds(*_FAILURE_KINDS) if id(e) not in resolved]
    if not failing and not bad_exits and all(h is None or not h.shows_failure for h in found.values()):
        if job.of_kinds(Kind.CONSEQUENCE):
            return _inconclusive(ctx, [], ["the job was ended (cancelled, aborted) but no rank "
                                          "logged an error or a timeout"])
        healthy = " ".join(h.reasoning for h in found.values() if h is not None)
        return Verdict(status=Status.NO_FAILURE, phase=Phase.UNKNOWN, category=Category.UNKNOWN,
                       confidence=CERTAIN, culprits=[], advice=[],
                       reasoning=("Nothing failed that the job did not come through. " + healthy) if healthy
                       else "No rank logged an error, a timeout or a failed exit.")
    for p in PRINCIPLES:
        if p.name not in found:
            found[p.name] = isolated(failed, p, p.run, ctx)
    said = [m for p in PRINCIPLES if p.evidence is not None for m in (isolated(failed, p, p.evidence, ctx) or [])]
    # A reading of a healthy source is no candidate: it names no one, and said the job did its work.
    proposed = [h for p in PRINCIPLES if (h := found[p.name]) is not None and h.shows_failure]
    members = ledger(proposed, said)
    cleared = clearing(ctx, said)
    checked = check(proposed, cleared)
    candidates = checked.kept
    candidates.sort(key=lambda h: h.score, reverse=True)  # stable: ties keep the registry's order
    if not candidates:
        undecided = _inconclusive(ctx, [], _missing(ctx))
        undecided.lost = checked.dropped
        for p in PRINCIPLES:  # what a principle with no candidate still says (RAS saw a healthy job)
            if p.remark is not None and (said_ := isolated(failed, p, p.remark, ctx, None, found[p.name])):
                undecided.reasoning += " " + said_
        undecided.ledger = members
        return undecided
    winner = _corroborate(candidates)
    lost = [h for h in candidates if h is not winner] + checked.dropped
    for p in PRINCIPLES:
        if p.remark is not None and (said_ := isolated(failed, p, p.remark, ctx, winner, found[p.name])):
            winner.reasoning += " " + said_
    if conflict := contested(winner, checked.dropped, members, cleared) or unsupported(ctx, winner, members, SURE):
        winner.score = min(winner.score, CONFLICT_SCORE)
        winner.reasoning = conflict + " " + winner.reasoning
    if winner.score < CONFIDENT:
        undecided = _inconclusive(ctx, candidates, _missing(ctx))
        undecided.lost += checked.dropped
        undecided.ledger = members
        return undecided
    culprits = _with_host(ctx, winner.culprits)
    _set_roles(ctx, culprits)
    advice = _fr_advice(job, winner, list((_ADVICE_HCCL if _ascend(job) else _ADVICE).get(winner.category, [])))
    return Verdict(
        status=Status.DIAGNOSED,
        phase=winner.phase if winner.phase is not Phase.TEARDOWN else Phase.UNKNOWN,
        category=winner.category,
        confidence=round(winner.score, 2),
        culprits=culprits,
        reasoning=winner.reasoning,
        advice=advice,
        missing=_missing(ctx, winner) if winner.score < SURE else [],
        hypothesis=winner.name,
        lost=lost,
        ledger=members,
    )


# The flight-recorder settings that make a job leave dumps (docs/flight-recorder.md).
FR_SETTINGS = ("Next run, make every rank leave a flight-recorder dump: TORCH_FR_BUFFER_SIZE=2000 (alias "
               "TORCH_NCCL_TRACE_BUFFER_SIZE), TORCH_NCCL_DUMP_ON_TIMEOUT=1, TORCH_FR_DUMP_TEMP_FILE=<a directory "
               "every node can write and you can collect>/comm_lib_trace_rank_ and TORCH_NCCL_ENABLE_TIMING=1 "
               "(started vs scheduled); then run triage on the dumps with the logs. py-spy dump --pid <pid> on a "
               "hung rank shows where it is stuck.")
FR_READ = ("The flight-recorder evidence above cites dump:entry; the culprit's last completed op's stack is the "
           "code it ran last. py-spy dump --pid <pid> on a rank still hung shows where it is now.")


def _fr_advice(job: Job, winner: Hypothesis, advice: list[str]) -> list[str]:
    """A hang with no dumps: name the settings that leave them; a verdict from dumps: how to read them."""
    if winner.category is not Category.HUNG_PROCESS or _ascend(job):
        return advice
    if not job.progress.has_dumps:
        return [a if not a.startswith("Next run: TORCH_NCCL_TRACE_BUFFER_SIZE") else FR_SETTINGS for a in advice]
    if winner.name.startswith("fr-"):
        return [a if not a.startswith("Next run: TORCH_NCCL_TRACE_BUFFER_SIZE") else FR_READ for a in advice]
    return advice


def _names(h: Hypothesis) -> set[tuple[str, int | None, str | None]]:
    return {(c.kind, c.rank, c.host) for c in h.culprits}


def _corroborate(candidates: list[Hypothesis]) -> Hypothesis:
    """The best candidate, made surer by others that agree and less sure by close rivals. What the
    agreeing candidates cite for the same culprits is cited beside the winner's own (logs and dumps
    that both name a rank: both lines)."""
    winner = candidates[0]
    names = _names(winner)
    agree = [h for h in candidates[1:] if _names(h) == names]
    rivals = [h for h in candidates[1:] if not (_names(h) & names)]
    score = winner.score + AGREEMENT_BONUS * len(agree)
    if rivals and rivals[0].score > winner.score - RIVAL_MARGIN + 1e-9:  # (1e-9: float rounding)
        score -= RIVAL_PENALTY
    winner.score = max(0.0, min(MAX_CONFIDENCE, score))
    if agree:
        winner.reasoning += " " + " ".join(
            f"It agrees with the {h.name} evidence." for h in agree[:AGREEMENTS_SAID])
        _cite_agreeing(winner, agree)
    return winner


def _cite_agreeing(winner: Hypothesis, agree: list[Hypothesis]) -> None:
    """Each culprit also cites the first line each agreeing source gives for it, when its own do not."""
    for culprit in winner.culprits:
        key = (culprit.kind, culprit.rank, culprit.host)
        for h in agree:
            other = next((c for c in h.culprits if (c.kind, c.rank, c.host) == key), None)
            extra = next((ev for ev in other.evidence if ev not in culprit.evidence), None) if other else None
            if extra is not None and not any(ev.source == extra.source for ev in culprit.evidence):
                culprit.evidence = [*culprit.evidence, extra]


def _with_host(ctx: Context, culprits: list[Culprit]) -> list[Culprit]:
    """When the culprits are exactly the ranks of one host, the host is the culprit."""
    ranks = {c.rank for c in culprits if c.kind == "rank" and c.rank is not None}
    hosts = ctx.job.hosts()
    if len(ranks) < 2 or len(hosts) < 2:
        return culprits
    for host, host_ranks in hosts.items():
        if set(host_ranks) == ranks:
            evidence = [ev for c in culprits for ev in c.evidence][:4]
            return [Culprit(kind="host", host=host, evidence=evidence,
                            reason=f"every rank of {host} ({fmt_ranks(sorted(ranks))}) and no other"),
                    *culprits]
    return culprits


def _set_roles(ctx: Context, culprits: list[Culprit]) -> None:
    culprit_ranks = {r for c in culprits for r in (c.rank, c.peer_rank) if r is not None}
    culprit_hosts = {c.host for c in culprits if c.kind in ("host", "link")}
    for rank, f in ctx.facts.items():
        state = f.state
        if rank in culprit_ranks or (culprit_hosts and state.host in culprit_hosts):
            state.role = "culprit"
        elif f.self_failures:
            state.role = "failed"
        elif f.reported_wait:
            state.role = "victim"
        elif not state.has_log:
            state.role = "missing"
        else:
            state.role = "ok"


def _ascend(job: Job) -> bool:
    """An Ascend job: its failures were logged by HCCL, CANN or torch_npu."""
    families = Counter(e.family for e in job.of_kinds(*_FAILURE_KINDS))
    return families["hccl"] > 0 and families["hccl"] >= sum(families.values()) / 2


def _missing(ctx: Context, winner: Hypothesis | None = None) -> list[str]:
    notes: list[str] = []
    job = ctx.job
    if winner is not None and winner.name == "peer-named":
        ranks = sorted(c.rank for c in winner.culprits if c.rank is not None)
        if ranks:
            notes.append(f"the log of rank {fmt_ranks(ranks)}, the peer these lines name, would confirm whether "
                         "it failed by itself or was held up by another rank")
        else:
            hosts = ", ".join(c.host for c in winner.culprits if c.host)
            notes.append(f"the logs of the ranks on {hosts}, the far end these lines name, would say which of "
                         "them failed and why")
    if job.progress.has_dumps and (no_dump := [r for r in ctx.expected if r not in job.progress.dumps]):
        notes.append(f"the flight-recorder dump{'s' if len(no_dump) > 1 else ''} of rank{'s' if len(no_dump) > 1 else ''} "
                     f"{fmt_ranks(no_dump)} {'are' if len(no_dump) > 1 else 'is'} missing (dumps of ranks "
                     f"{fmt_ranks(sorted(job.progress.dumps))} were read)")
    no_log = [r for r, s in job.ranks.items() if not s.has_log]
    # A world too large to list rank by rank keeps the ranks nothing mentions as ranges.
    ranges = [str(a) if a == b else f"{a}-{b}" for a, b in job.unlisted]
    if no_log or ranges:
        listed = ", ".join(filter(None, [fmt_ranks(no_log), *ranges[:8]])) + (" …" if len(ranges) > 8 else "")
        many = len(no_log) + sum(b - a + 1 for a, b in job.unlisted) > 1
        notes.append(f"logs of rank{'s' if many else ''} {listed} are missing (world size "
                     f"{job.world_size} from {job.world_size_from})")
    size_unknown = not job.world_size_from or job.world_size_from == "highest rank seen"
    logged = [r for r, s in job.ranks.items() if s.has_log]
    if size_unknown and len(logged) == 1:
        notes.append(f"only rank {logged[0]}'s log is here: the other ranks' logs would confirm which rank failed "
                     "or stopped first (or pass --world-size N)")
    elif size_unknown and not logged:
        notes.append("no line here says which rank wrote it: each rank's own log (per-rank files, `[rankN]:` "
                     "prefixes) would confirm which rank failed or stopped first (or pass --world-size N)")
    elif size_unknown:
        notes.append("the world size is not stated in the logs: pass --world-size N")
    waiters = ctx.waiters()
    if _reported_category(ctx) is Category.COLLECTIVE_MISMATCH:
        notes.append("the ranks ran collectives of different sizes or kinds, and the logs do not say "
                     "which rank was odd: rerun with TORCH_DISTRIBUTED_DEBUG=DETAIL")
    if waiters and len(waiters) == len(ctx.expected) and len(logged) > 1 and _ascend(job):
        notes.append("every rank reported a timeout: the HCCL heartbeat's `Cluster Exception Location` "
                     "(CANN 7+, run/plog) or each rank's task-exception index shows who was behind")
    elif waiters and len(waiters) == len(ctx.expected) and len(logged) > 1:
        notes.append("every rank reported a timeout: enable TORCH_NCCL_DESYNC_DEBUG=1 or the "
                     "flight recorder (TORCH_NCCL_TRACE_BUFFER_SIZE) to see who was behind")
    return notes


def _inconclusive(ctx: Context, candidates: list[Hypothesis], missing: list[str]) -> Verdict:
    _set_roles(ctx, [])
    phase = ctx.phase()
    if phase is Phase.UNKNOWN and candidates:
        phase = candidates[0].phase  # where the strongest lead, too weak to name anyone, places it
    return Verdict(
        status=Status.INCONCLUSIVE,
        phase=phase,
        category=candidates[0].category if candidates else _reported_category(ctx),
        confidence=round(candidates[0].score, 2) if candidates else 0.0,
        culprits=[],
        reasoning=_undecided(ctx, candidates),
        advice=["Collect the missing evidence and run triage again."] if missing else [],
        missing=missing or ["no rank's log shows where the failure began"],
        lost=candidates,
    )


def _reported_category(ctx: Context) -> Category:
    """What the waiting ranks' own lines say went wrong, when no culprit could be named."""
    counts = Counter(e.category for f in ctx.facts.values() for e in f.timeouts + f.peer_errors
                     if e.category is not None)
    return counts.most_common(1)[0][0] if counts else Category.UNKNOWN


def _undecided(ctx: Context, candidates: list[Hypothesis]) -> str:
    """Say what is known, and why it does not name a culprit."""
    waiters = ctx.waiters()
    no_log = [r for r, s in ctx.job.ranks.items() if not s.has_log]
    parts = ["The evidence does not settle which rank broke the job."]
    if waiters:
        known = ctx.job.world_size_from not in (None, "highest rank seen")
        total = ctx.job.world_size or len(ctx.expected)
        parts.append(f"{len(waiters)} of {total} ranks timed out or lost a peer" if known else
                     f"{len(waiters)} rank{'s' if len(waiters) != 1 else ''} here timed out or lost a peer")
        if no_log:
            many = len(no_log) > 1
            parts[-1] += f"; rank{'s' if many else ''} {fmt_ranks(no_log)} left no log here"
            # Only a stated world size makes a rank without a log a rank that said nothing: one
            # inferred from the highest rank seen says no more than that the rank exists.
            if known:
                parts[-1] += ", and the culprit is likely among them" if many else ", and it is likely the culprit"
        parts[-1] += "."
    said = [f"rank {r}: {lines[0].message}" for r in sorted(waiters)[:4]
            if (lines := ctx.facts[r].timeouts + ctx.facts[r].peer_errors)]
    if said and not candidates:
        parts.append(f"What they said: {'; '.join(said)}{' …' if len(waiters) > 4 else ''}.")
    if candidates:
        names = ", ".join(f"{h.name} ({h.score:.2f})" for h in candidates[:3])
        parts.append(f"Leads too weak or in conflict: {names}; the strongest: {candidates[0].reasoning}")
    return " ".join(parts)
