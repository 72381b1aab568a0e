"""NCCL RAS snapshots read as an engineer reads them (docs/prior-art.md §A4, docs/formats.md §4).

Each dump (`triage ras collect`, `ncclras`) is a snapshot of the running job. What one snapshot
says is weighed by what the others say:

- a process RAS considers DEAD is the prime suspect; one it could not reach, or whose
  communicator data is missing, is unresponsive (stuck, or on its way to dead);
- operation counts are read by majority per communicator and collective (the job's progress
  model, triage.job.progress.RasCount, holds them per snapshot): the minority *behind*
  are stragglers only when the counts stay the same across snapshots (the job is stuck); counts
  that move are a busy job, and a minority *ahead* has merely issued the next collective;
- ranks still in INIT or FINALIZE while others run are a transition, an alarm only when they
  stay there across snapshots.

RAS speaks in communicator ranks; the peer pass (triage.job.peers) has turned the rank each line
describes into a global rank (`Event.about`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from triage.diagnose.context import Context, evidence_of
from triage.diagnose.principles.principle import Principle
from triage.job import Job
from triage.job.progress import RasCount
from triage.model import Category, Culprit, Event, Hypothesis, Kind, Phase
from triage.ranks import fmt_ranks

# The last snapshot shows a process RAS considers dead.
DEAD_SCORE = 0.9
# It got no data from a process in several snapshots in a row / in one.
UNRESPONSIVE_AGAIN_SCORE = 0.85
UNRESPONSIVE_SCORE = 0.7
# A rank reports an error of its own.
REPORTED_ERROR_SCORE = 0.85
# A minority stayed behind the majority's operation count, nothing moving between snapshots / in
# one snapshot, which cannot tell a stuck job from a busy one.
STRAGGLERS_SCORE = 0.85
STRAGGLERS_ONE_SNAPSHOT_SCORE = 0.45
# Ranks still initialising in every snapshot while the others run.
STUCK_IN_INIT_SCORE = 0.8
# Leads that name no rank: an even split of operation counts, or a few ranks ahead of stuck others.
NO_MAJORITY_SCORE = 0.3
AHEAD_ONLY_SCORE = 0.3
# An excerpt that names one communicator and nothing of the job's size (no logs, no table): its
# communicator ranks are read as the job's (true when it is the world's), a capped reading.
ONE_COMMUNICATOR_SCORE = 0.6
# The processes named sit on every host the job has: the host names no one; only a lead.
EVERY_HOST_SCORE = 0.45


@dataclass
class Snapshot:
    name: str
    time: float | None
    events: list[Event] = field(default_factory=list)

    def named(self, *states: str) -> list[Event]:
        return [e for e in self.events if e.kind is Kind.CULPRIT_NAMED and e.fields.get("exception") in states]

    def timed_out(self) -> bool:
        """RAS timed out gathering this snapshot's data: a process did not answer (TIMEOUT block)."""
        return any(e.rule_id == "ras-timeouts" for e in self.events)


@dataclass
class _Index:
    """What every question about one job's RAS snapshots reads: built once per job."""

    job: Job
    snapshots: list[Snapshot]


_INDEX: list[_Index] = []  # the last job's: a verbose dump of a large job asks thousands of times


def _index(ctx: Context) -> _Index:
    if _INDEX and _INDEX[0].job is ctx.job:
        return _INDEX[0]
    by_name: dict[str, Snapshot] = {}
    for event in ctx.job.events:
        if event.family == "ras" and "snapshot" in event.fields:
            snap = by_name.setdefault(event.fields["snapshot"], Snapshot(event.fields["snapshot"], event.time))
            snap.events.append(event)
    ordered = sorted(by_name.values(), key=lambda s: (s.time if s.time is not None else float("inf"), s.name))
    _INDEX[:] = [_Index(ctx.job, ordered)]
    return _INDEX[0]


def snapshots(ctx: Context) -> list[Snapshot]:
    """The RAS dumps of the job, oldest first (by the time each was taken, else by name)."""
    return _index(ctx).snapshots


@dataclass
class _Finding:
    category: Category
    score: float
    what: str  # one sentence
    events: list[Event]
    ranks: set[int] = field(default_factory=set)
    processes: set[tuple[str, str, str]] = field(default_factory=set)  # unmapped (pid, ip, gpu)
    phase: Phase = Phase.UNKNOWN
    # The process (pid, ip, gpu) of a rank whose own line names none, known from the job-level block.
    process_of: dict[int, tuple[str, str, str]] = field(default_factory=dict)
    remark: str = ""  # how the ranks were read, or why the process names no one
    read_as: dict[int, int] = field(default_factory=dict)  # id(event) -> its communicator rank read as the job's

    def about(self, event: Event) -> tuple[int, ...]:
        """The job's ranks an event is about: the peer pass's, or this finding's reading."""
        return event.about or ((self.read_as[id(event)],) if id(event) in self.read_as else ())


def ras_status(ctx: Context) -> Hypothesis | None:
    finding = _read(ctx)
    if finding is None:
        return _resolved(ctx)
    culprits = []
    for r in sorted(finding.ranks):
        about = [e for e in finding.events if r in finding.about(e)] or finding.events
        f = about[0].fields
        pid, ip = f.get("culprit_pid") or f.get("pid"), f.get("culprit_ip") or f.get("ip")
        gpu = f.get("culprit_device") or f.get("device")
        if not pid and r in finding.process_of:
            pid, ip, gpu = finding.process_of[r]
        # The DEAD/unreachable line of the same process is evidence too.
        about += [e for e in finding.events if e not in about and pid and e.fields.get("culprit_pid") == pid]
        process = f"process {pid} on {ip}, GPU {gpu}: " if pid else ""
        culprits.append(Culprit(kind="rank", rank=r, host=ctx.host_of(r) or ip, reason=process + finding.what,
                                evidence=evidence_of(about)))
    culprits += [Culprit(kind="host", host=ip, reason=f"process {pid} (GPU {gpu}): {finding.what}",
                         evidence=evidence_of(finding.events)) for pid, ip, gpu in sorted(finding.processes)]
    if not finding.ranks and finding.processes and _every_host(ctx, {ip for _, ip, _ in finding.processes}):
        pids = ", ".join(f"{pid} on {ip}" for pid, ip, _ in sorted(finding.processes))
        finding.score = min(finding.score, EVERY_HOST_SCORE)
        finding.remark = (f" RAS names process {pids}, but not its rank, and that host is every host of the job: "
                          "naming it names every rank. The ranks' own logs (their pids) or RAS's JSON say which "
                          "rank the process ran.")
    return Hypothesis(name="ras-status", score=finding.score, category=finding.category, phase=finding.phase,
                      culprits=culprits, reasoning=finding.what + finding.remark)


def _resolved(ctx: Context) -> Hypothesis | None:
    """Snapshots of one incident that ends well: processes that did not answer (INCOMPLETE, missing
    ranks, timeouts gathering data), then a last snapshot in which every communicator runs without an
    error. NCCL's RAS guide: a transient state that a repeated query resolves can be ignored."""
    snaps = snapshots(ctx)
    if len(snaps) < 2:
        return None
    last, earlier = snaps[-1], snaps[:-1]
    groups = [e for e in last.events if e.rule_id == "ras-comm-group"]
    if not groups or any(e.fields.get("errors", "OK") != "OK" or e.fields.get("comm_status") != "RUNNING"
                         for e in groups):
        return None
    if any(e.kind is not Kind.INFO for e in last.events):
        return None
    troubled = [e for s in earlier for e in s.events if e.kind is not Kind.INFO]
    if not troubled or any(e.kind is not Kind.CULPRIT_NAMED or e.fields.get("exception") not in ("unresponsive", "missing")
                           for e in troubled):
        return None  # a dead process, an error, a count behind: not a transient
    ranks = sorted({r for e in troubled for r in e.about})
    who = f"rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)}" if ranks else "a process"
    return Hypothesis(
        name="ras-status", score=0.0, category=Category.UNKNOWN, phase=Phase.UNKNOWN, culprits=[],
        shows_failure=False, accounts_for=troubled,
        reasoning=f"RAS got no data from {who} in {len(earlier)} snapshot{'s' if len(earlier) > 1 else ''}, then "
                  f"the last one ({len(snaps)} in all) shows every communicator running without an error: the "
                  "process answered again, a transient state, not a failure.")


def _every_host(ctx: Context, ips: set[str]) -> bool:
    """The addresses RAS names are every node the job has (RAS's job summary counts them; the ranks'
    logs place every rank on them)."""
    nodes = [int(e.fields["node_count"]) for s in snapshots(ctx) for e in s.events
             if e.rule_id == "ras-job-summary" and e.fields.get("node_count", "").isdigit()]
    if nodes and len(ips) >= max(nodes):
        return True
    hosts = {s.host for s in ctx.job.ranks.values()}
    named = {ctx.job.ip_hosts.get(ip, ip) for ip in ips}
    return bool(hosts) and None not in hosts and hosts <= named


def _read(ctx: Context) -> _Finding | None:
    snaps = snapshots(ctx)
    if not snaps:
        return None
    return (_dead_or_missing(ctx, snaps) or _reported_errors(ctx, snaps) or _stragglers(ctx, snaps)
            or _stuck_in_init(ctx, snaps))


def _known_ranks(ctx: Context) -> dict[tuple[str, str], int]:
    """(communicator, communicator rank) -> the job's rank, as any snapshot placed it: a later snapshot
    of one incident may lack the table of communicators the earlier one placed its ranks by."""
    return {(e.fields["comm_id"], e.fields["pg_rank"]): e.about[0] for s in snapshots(ctx) for e in s.events
            if len(e.about) == 1 and e.fields.get("comm_id") and e.fields.get("pg_rank")}


def _place(ctx: Context, snap: Snapshot, events: list[Event], finding: _Finding) -> _Finding:
    known = _known_ranks(ctx)
    for event in events:
        key = (event.fields.get("comm_id", ""), event.fields.get("pg_rank", ""))
        if not event.about and key in known:
            finding.read_as[id(event)] = known[key]
        if event.about or key in known:
            finding.ranks.update(finding.about(event))
        else:
            f = event.fields
            pid, ip = f.get("culprit_pid") or f.get("pid", ""), f.get("culprit_ip") or f.get("ip", "")
            if pid:
                finding.processes.add((pid, ip, f.get("culprit_device") or f.get("device", "?")))
    if not finding.ranks:
        _one_communicator(ctx, snap, events, finding)
    # A process RAS names both as dead and as a communicator's missing rank is one culprit.
    if finding.ranks:
        finding.processes = {p for p in finding.processes
                             if not any(_pid_of(ctx, r) == p[0] for r in finding.ranks)}
        _one_process_one_rank(snap, events, finding)
    # The latest snapshot that says where the job stood (a DEAD block alone says nothing of it).
    finding.phase = next((p for s in [snap, *reversed(snapshots(ctx))] if (p := _phase(s)) is not Phase.UNKNOWN),
                         Phase.UNKNOWN)
    return finding


def _one_communicator(ctx: Context, snap: Snapshot, events: list[Event], finding: _Finding) -> None:
    """An excerpt (the guide's blocks, a paste) that speaks of one communicator and says nothing of
    the job: no log, no world size, no table of communicators. Its ranks are read as the job's, the
    reading a person makes (a job's one communicator is its world), at a capped score."""
    if ctx.job.world_size or any(s.has_log for s in ctx.job.ranks.values()):
        return
    if any(e.rule_id in ("ras-comm-group", "ras-job-summary") for e in snap.events):
        return  # the dump says the communicators' sizes: the peer pass read them
    comms = {e.fields.get("comm_id") for e in snap.events if e.fields.get("comm_id")}
    ranks = {int(e.fields["pg_rank"]) for e in events if e.fields.get("pg_rank", "").isdigit()}
    if len(comms) != 1 or not ranks:
        return
    finding.read_as = {id(e): int(e.fields["pg_rank"]) for e in events if e.fields.get("pg_rank", "").isdigit()}
    finding.ranks.update(ranks)
    finding.score = min(finding.score, ONE_COMMUNICATOR_SCORE)
    (comm,) = comms
    finding.remark = (f" RAS speaks in communicator ranks; this dump names one communicator ({comm}) and nothing "
                      f"here says the job's size, so its rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(sorted(ranks))} "
                      f"{'are' if len(ranks) > 1 else 'is'} read as the job's (right when that communicator is the world's; the ranks' logs "
                      "would confirm it).")


def _one_process_one_rank(snap: Snapshot, events: list[Event], finding: _Finding) -> None:
    """A job-level block naming one process (DEAD, INCOMPLETE) and communicator blocks missing one
    rank with no process of its own (the 2.24-2.25 `The missing rank: 21`): one process, one culprit."""
    named = {(e.fields.get("culprit_pid", ""), e.fields.get("culprit_ip", ""), e.fields.get("culprit_device", "?"))
             for e in snap.events if e.rule_id in ("ras-dead-processes", "ras-incomplete-processes")}
    bare = {r for e in events if e.rule_id == "ras-missing-ranks" for r in finding.about(e)}
    if len(named) != 1 or len(finding.ranks) != 1 or finding.ranks != bare or finding.processes - named:
        return
    (process,) = named
    finding.processes.discard(process)
    finding.process_of[next(iter(bare))] = process


def _pid_of(ctx: Context, rank: int) -> str:
    for snap in snapshots(ctx):
        for event in snap.events:
            f = event.fields
            if rank in event.about and (pid := f.get("culprit_pid") or f.get("pid")):
                return pid
    return ""


def _phase(snap: Snapshot) -> Phase:
    """Execution once any rank launched an operation; init while ranks are still in INIT."""
    if any(e.rule_id == "ras-rank-launched-up-to" and e.fields.get("seq", "0") != "0" for e in snap.events) or \
            any(e.rule_id == "ras-op-count-group" and e.fields.get("seq", "0") != "0" for e in snap.events):
        return Phase.EXECUTION
    if any(e.fields.get("comm_status") == "INIT" for e in snap.events):
        return Phase.COMM_INIT
    if any(e.rule_id == "ras-comm-group" and e.fields.get("comm_status") == "RUNNING" for e in snap.events):
        return Phase.EXECUTION  # every communicator had finished init: the job was running
    return Phase.UNKNOWN


def _dead_or_missing(ctx: Context, snaps: list[Snapshot]) -> _Finding | None:
    last = snaps[-1]
    dead = last.named("dead")
    missing = last.named("unresponsive", "missing")
    if not dead and not missing:
        return None
    earlier = {(e.fields.get("culprit_pid"), e.fields.get("pg_rank")) for s in snaps[:-1]
               for e in s.named("unresponsive", "missing")}
    if dead:
        # (Two excerpts pasted in one file, the unresponsive block first, are that timeline too.)
        before = {(e.fields.get("culprit_pid"), e.evidence.source, e.evidence.line) for e in missing
                  if e.fields.get("exception") == "unresponsive"}
        was = [e for e in dead if any(pid == e.fields.get("culprit_pid") for pid, _ in earlier) or any(
            (pid, src) == (e.fields.get("culprit_pid"), e.evidence.source) and line < e.evidence.line
            for pid, src, line in before)]
        # Stopped, not died: RAS waited on it and timed out (a killed process closes its connections:
        # a real SIGKILL shows as missing data with no timeout, then dead).
        # (JSON says so of each process; a text snapshot says it in its TIMEOUT block.)
        unanswered: set[str | None] = set()
        for snap in snaps[:-1]:
            waited = snap.timed_out()  # once per snapshot: a large job's snapshot names thousands of ranks
            unanswered |= {e.fields.get("culprit_pid") for e in snap.named("unresponsive", "missing")
                           if waited or (e.rule_id == "ras-comm-incomplete" and e.fields.get("exception") == "unresponsive")}
        timed_out = [(t.evidence.source, t.evidence.line) for t in last.events if t.rule_id == "ras-timeouts"]
        unanswered |= {pid for pid, src, line in before if any(source == src and at > line for source, at in timed_out)}
        stopped = [e for e in was if e.fields.get("culprit_pid") in unanswered]
        # One timeline per process: not answering (RAS timed out gathering its data), then unreachable
        # after RAS's 60 s of retries: it stopped (the RAS guide's own example). Missing, then dead, with
        # no timeout: it died.
        what = ("RAS considers the process dead (unreachable via the RAS network)"
                + (", after it had stopped answering (RAS timed out waiting on it in an earlier snapshot, or the "
                   "block before): it stopped (hung or frozen) rather than died, whose connections would have "
                   "closed; its log, or `py-spy dump` on its node while it lives, says where, and" if stopped else
                   ", after an earlier snapshot missed its data: it died or stopped (its log or `dmesg` on its "
                   "node says which), and" if was else " and")
                + " the other ranks wait on it.")
        found = _Finding(Category.HUNG_PROCESS if stopped else Category.CRASHED_PROCESS, DEAD_SCORE, what,
                         dead + [e for e in missing if e not in dead])
        return _place(ctx, last, dead + missing, found)
    persistent = [e for e in missing if (e.fields.get("culprit_pid"), e.fields.get("pg_rank")) in earlier]
    what = ("RAS got no data from the process" + (f" in {len(snaps)} snapshots in a row" if persistent else "")
            + ": it is hung or unreachable, and its communicators are incomplete without it.")
    found = _Finding(Category.HUNG_PROCESS, UNRESPONSIVE_AGAIN_SCORE if persistent else UNRESPONSIVE_SCORE, what,
                     missing)
    return _place(ctx, last, missing, found)


def _reported_errors(ctx: Context, snaps: list[Snapshot]) -> _Finding | None:
    last = snaps[-1]
    errors = [e for e in last.events if e.rule_id == "ras-rank-reported-error"]
    if not errors:
        return None
    category = next((e.category for e in errors if e.category), Category.CRASHED_PROCESS)
    what = f"RAS reports {errors[0].fields.get('error', 'an error')} on the rank itself (not a remote one)."
    found = _place(ctx, last, errors, _Finding(category, REPORTED_ERROR_SCORE, what, errors))
    if errors[0].phase is not Phase.UNKNOWN:
        found.phase = errors[0].phase
    return found


def _counts(ctx: Context, snap: Snapshot) -> dict[tuple[str, str], RasCount]:
    """Per (communicator, collective): its counts in this snapshot, read by majority in the job's
    progress model (triage.job.progress.RasCount)."""
    return ctx.job.progress.ras.get(snap.name, {})


def _stragglers(ctx: Context, snaps: list[Snapshot]) -> _Finding | None:
    """The minority behind the majority's operation count, when nothing moves between snapshots.

    Several communicators may show it: a tensor-parallel group whose one rank hangs is a whole
    group behind in the world communicator, and that one rank behind in its own. The smallest set
    is the cause; the larger ones wait on it.
    """
    last = _counts(ctx, snaps[-1])
    previous = _counts(ctx, snaps[-2]) if len(snaps) > 1 else None
    found: list[tuple[tuple[str, str], list[Event], set[int]]] = []
    ahead_only: list[tuple[str, str]] = []
    split: list[tuple[str, str]] = []
    for key, counts in last.items():
        common = counts.majority
        before = previous.get(key) if previous is not None else None
        if before is not None and (before.majority != common or any(
                before.listed.get(r, c) != c for r, c in counts.listed.items())):
            continue  # the counts moved: a busy job, not a stuck one (a text dump lists fewer ranks than JSON)
        if common is None:
            split.append(key)
            continue
        behind = counts.behind()
        if not behind:
            if counts.ahead():
                ahead_only.append(key)
            continue
        events = [counts.lines[r] for r in behind]
        mapped = {g for e in events for g in e.about}
        found.append((key, events, mapped))
    if not found:
        if split:
            comm = split[0][0]
            collectives = sorted({c for k, c in split if k == comm})
            what = (f"In communicator {comm}, the ranks split evenly between two {' and '.join(collectives)} "
                    "operation counts: they disagree on which collective comes next (a rank-dependent code path "
                    "or uneven data), and with no majority RAS cannot say which side is wrong. The per-rank logs "
                    "(or TORCH_DISTRIBUTED_DEBUG=DETAIL) say which collective each side called.")
            return _Finding(Category.COLLECTIVE_MISMATCH, NO_MAJORITY_SCORE, what, [], phase=Phase.EXECUTION)
        if ahead_only and previous is not None:
            comm, collective = ahead_only[0]
            what = (f"In communicator {comm}, nothing moved between {len(snaps)} snapshots and a few ranks are one "
                    f"{collective} ahead of the others: they issued the next collective, the others are blocked "
                    "on something RAS does not see (a rank outside these communicators, a host-side wait). The "
                    "ranks ahead are not the cause; the per-rank logs or a stack dump (py-spy) of the others are.")
            return _Finding(Category.HUNG_PROCESS, AHEAD_ONLY_SCORE, what, [], phase=Phase.EXECUTION)
        return None
    key, events, mapped = min(found, key=lambda f: (len(f[2]) if f[2] else len(f[1]) + 10**6, -len(f[1])))
    comm, collective = key
    common = last[key].majority
    listed = ", ".join(sorted((e.fields.get("pg_rank", "?") for e in events), key=lambda r: int(r) if r.isdigit() else 0))
    waiting = sorted({g for _, _, other in found if other > mapped for g in other} - mapped)
    also = (f" Ranks {fmt_ranks(waiting)}, behind in a larger communicator, wait on "
            f"{'them' if len(mapped) > 1 else 'it'}." if waiting else "")
    if previous is None:
        what = (f"In communicator {comm}, communicator ranks {listed} had launched fewer {collective} operations "
                f"than the others ({common}) — but one snapshot cannot tell a stuck job from a busy one: take "
                "another (`triage ras collect --every 30 --count 3`)." + also)
        return _place(ctx, snaps[-1], events, _Finding(Category.HUNG_PROCESS, STRAGGLERS_ONE_SNAPSHOT_SCORE, what, events))
    what = (f"In communicator {comm}, communicator ranks {listed} stayed behind the others' {collective} "
            f"operation count ({common}) in {len(snaps)} snapshots, and no count moved: the job is stuck and "
            f"{'they are' if len(events) > 1 else 'it is'} what the others wait for." + also)
    return _place(ctx, snaps[-1], events, _Finding(Category.HUNG_PROCESS, STRAGGLERS_SCORE, what, events))


def _stuck_in_init(ctx: Context, snaps: list[Snapshot]) -> _Finding | None:
    """Ranks still in INIT in every snapshot while the others run; one snapshot is a transition."""
    if len(snaps) < 2:
        return None
    def in_init(snap: Snapshot) -> dict[tuple[str, str], Event]:
        return {(e.fields.get("comm_id", ""), e.fields.get("pg_rank", "")): e for e in snap.events
                if e.rule_id == "ras-rank-status" and e.fields.get("comm_status") == "INIT"}
    stuck = set(in_init(snaps[-1]))
    for snap in snaps[:-1]:
        stuck &= set(in_init(snap))
    if not stuck:
        return None
    events = [in_init(snaps[-1])[k] for k in sorted(stuck)]
    what = (f"RAS shows {len(stuck)} rank(s) still initialising their communicator in {len(snaps)} snapshots "
            "while the others run: they never finished init.")
    found = _place(ctx, snaps[-1], events, _Finding(Category.HUNG_PROCESS, STUCK_IN_INIT_SCORE, what, events))
    found.phase = Phase.COMM_INIT
    return found


def disagreement(ctx: Context, winner: Hypothesis | None, ras: Hypothesis | None) -> str | None:
    """What to say when RAS (its candidate `ras`) and the logs point different ways, or RAS saw nothing wrong.

    A healthy snapshot never outweighs a timeout or an error in the same job's logs: the verdict
    stands on the logs and says that RAS saw nothing (NCCL's own tracker has RAS saying OK while
    PyTorch timed out).
    """
    snaps = snapshots(ctx)
    if not snaps or (winner is not None and winner.name == "ras-status"):
        return None
    named = {c.rank for c in winner.culprits if c.rank is not None} if winner is not None else set()
    if ras is None:
        failed = sorted(r for r, f in ctx.facts.items() if f.reported_wait or f.self_failures)
        logged = (f", while rank{'s' if len(failed) > 1 else ''} {fmt_ranks(failed)} logged a timeout or a "
                  "failure" if failed else ", while the logs show a failure")
        return (f"RAS and the logs disagree: RAS ({len(snaps)} snapshot{'s' if len(snaps) > 1 else ''}) "
                f"saw no dead, missing or stuck rank{logged}. A snapshot taken before the failure, or while "
                "the hung collective's communicator was not yet in trouble, shows a healthy job: the logs "
                "decide.")
    ras_ranks = {c.rank for c in ras.culprits if c.rank is not None}
    if ras_ranks and named and not ras_ranks & named:
        return (f"RAS and the logs disagree: RAS points at rank{'s' if len(ras_ranks) > 1 else ''} "
                f"{fmt_ranks(sorted(ras_ranks))} ({ras.reasoning})")
    return None


PRINCIPLE = Principle(
    name="ras-status", emits=("ras-status",), run=ras_status, fails_without_logged_failure=True,
    remark=disagreement,
    summary="NCCL RAS snapshots (`triage ras collect`, `ncclras`) of the running job, weighed together as an "
            "engineer reads them: a process RAS considers dead is the prime suspect; one it got no data "
            "from is hung or unreachable, more surely when it stays so across snapshots; a rank reporting an "
            "error of its own is named; the minority behind the majority's operation count is the straggler "
            "only when no count moves between snapshots; ranks still initialising in every snapshot never "
            "finished init. Snapshots of one incident are one timeline: a rank placed by an earlier snapshot "
            "stays placed, and processes that did not answer, then answer in a last snapshot in which every "
            "communicator runs without an error, are a transient, no failure. It counts as a failure even when "
            "no log shows one, and when another principle wins, the verdict says where RAS disagrees.")
