"""The verdict's next step: the first policy row that holds gives the action; the culprits give
what to exclude (their nodes or links) and the ranks to drop.

It reads the Verdict and the Job after the diagnosis (hosts of the culprit ranks, the events behind
the evidence: a signal, a rule's category) and changes neither.
"""

from __future__ import annotations

from triage.decision.policy import Policy, Row
from triage.fields import signal_name
from triage.job import Job
from triage.model import Decision, Event, Exclusion, Kind, Status, Verdict
from triage.report.views import who


def decide(verdict: Verdict, job: Job, policy: Policy) -> Decision:
    facts = _Facts(verdict, job)
    row = next(r for r in policy.rows if _holds(r, verdict, facts, policy))  # the last row always holds
    exclude = _exclusions(verdict, job) if row.action == "requeue-excluding" else []
    decision = Decision(action=row.action, reason="", rule=row.id, exclude=exclude, ranks=_ranks(exclude, job),
                        env=dict(policy.flight_recorder_env) if row.flight_recorder else {},
                        exit_code=policy.exit_codes[row.action])
    decision.reason = row.reason.format_map({
        "culprits": ", ".join(who(c) for c in verdict.culprits) or "the job",
        "hosts": ", ".join(decision.hosts) or _hosts_of(verdict, job),
        "category": verdict.category.value.replace("_", " "),
        "phase": verdict.phase.value,
        "confidence": f"{verdict.confidence:.2f}",
        "signal": ", ".join(facts.signals) or "a signal",
        "env": " ".join(f"{k}={v}" for k, v in policy.flight_recorder_env.items()),
    })
    return decision


class _Facts:
    """What the conditions read, gathered once: the culprits' evidence, their events, their signals."""

    def __init__(self, verdict: Verdict, job: Job) -> None:
        lines = {(ev.source, ev.line) for c in verdict.culprits for ev in c.evidence}
        behind = [e for e in job.events if (e.evidence.source, e.evidence.line) in lines]
        ranks = {c.rank for c in verdict.culprits if c.rank is not None}
        own = [e for r in ranks if r in job.ranks for e in job.ranks[r].events]
        failures = [e for e in own if e.kind in (Kind.ERROR, Kind.EXIT)]
        self.lines = [ev.text for c in verdict.culprits for ev in c.evidence]
        # The rules of the evidence, and of the culprit ranks' own errors and exits (a rank another
        # tool named still logged its own exception).
        self.rules = {ev.rule_id for c in verdict.culprits for ev in c.evidence if ev.rule_id} | \
            {e.rule_id for e in [*behind, *failures]}
        self.categories = {e.category.value for e in [*behind, *own] if e.category is not None}
        exits = [e for e in [*behind, *own] if e.kind is Kind.EXIT or "signal" in e.fields]
        self.signals = list(dict.fromkeys(s for e in exits if (s := _signal(e)) is not None))


def _signal(event: Event) -> str | None:
    if "signal" in event.fields:
        return signal_name(event.fields["signal"])
    code = event.fields.get("exitcode", "")
    if code.startswith("-") and code[1:].isdigit():  # torchrun: a negative exit code is the signal
        return signal_name(code[1:])
    return None


def _holds(row: Row, verdict: Verdict, facts: _Facts, policy: Policy) -> bool:
    when = row.when
    if "status" in when and verdict.status.value not in when["status"]:
        return False
    if "confident" in when:
        confident = verdict.status is not Status.INCONCLUSIVE and verdict.confidence >= policy.confident
        if verdict.status is Status.NO_FAILURE:
            confident = True  # nothing failed: certain, whatever the threshold
        if confident != when["confident"]:
            return False
    if "category" in when and verdict.category.value not in when["category"]:
        return False
    if "culprit_kind" in when and not any(c.kind in when["culprit_kind"] for c in verdict.culprits):
        return False
    if "signal" in when and not set(facts.signals) & set(when["signal"]):
        return False
    if "evidence_rule" in when and not row.rule_matches(facts.rules):
        return False
    if "evidence_category" in when and not facts.categories & set(when["evidence_category"]):
        return False
    return row.text is None or row.text_matches(facts.lines)


def _exclusions(verdict: Verdict, job: Job) -> list[Exclusion]:
    """Each culprit as something to go without: its node where known, else the rank itself."""
    out: list[Exclusion] = []
    for c in verdict.culprits:
        why = f"{verdict.category.value.replace('_', ' ')}: {c.reason}"
        if c.kind == "link":
            # A link between two ranks' devices names its ends as `host, device N`: their nodes come
            # from the job; a link between two hosts names the hosts themselves.
            host = _host(job, c.rank) if c.rank is not None else c.host
            peer = _host(job, c.peer_rank) if c.peer_rank is not None else c.peer
            out.append(Exclusion(kind="link", host=host, rank=c.rank, peer=peer, peer_rank=c.peer_rank, why=why))
            continue
        host = c.host or _host(job, c.rank)
        if host is not None:
            out.append(Exclusion(kind="host", host=host, rank=c.rank, why=why))
        elif c.rank is not None:
            out.append(Exclusion(kind="rank", rank=c.rank, why=why + " (its node is not known)"))
    return out


def _host(job: Job, rank: int | None) -> str | None:
    state = job.ranks.get(rank) if rank is not None else None
    return state.host if state is not None else None


def _hosts_of(verdict: Verdict, job: Job) -> str:
    hosts = dict.fromkeys(h for c in verdict.culprits if (h := c.host or _host(job, c.rank)))
    return ", ".join(hosts) or "its node"


def _ranks(exclude: list[Exclusion], job: Job) -> list[int]:
    """The global ranks to drop: an excluded node's every rank, a link's two ends, a rank itself."""
    by_host = job.hosts()
    ranks: set[int] = set()
    for e in exclude:
        if e.kind == "host" and e.host in by_host:
            ranks.update(by_host[e.host])
        elif e.kind == "link" and e.rank is not None:
            ranks.add(e.rank)
            if e.peer_rank is not None:
                ranks.add(e.peer_rank)
        elif e.kind == "link":  # between two hosts: the ranks at both ends
            ranks.update(r for h in (e.host, e.peer) if h in by_host for r in by_host[h])
        if e.rank is not None:
            ranks.add(e.rank)
    return sorted(ranks)

