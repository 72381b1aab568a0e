"""`--format json`: the report as one versioned JSON object (schema: schemas/report-v1.schema.json)."""

from __future__ import annotations

import json
import time
from typing import Any, TextIO

from triage.job.config import build_config
from triage.job.progress import Op, RankProgress, build_progress, describe
from triage.model import (
    Culprit,
    Decision,
    Event,
    Evidence,
    Hypothesis,
    MemberEvidence,
    Report,
    Unexplained,
)
from triage.report import indented_json
from triage.report.views import ReportView, repeated
from triage.unexplained import format_time, rule_command

SCHEMA_VERSION = 1


def to_dict(report: Report) -> dict[str, Any]:
    verdict = report.verdict
    hosts: dict[str, list[int]] = {}
    folded = repeated(report.events)
    for rank, state in report.ranks.items():
        if state.host:
            hosts.setdefault(state.host, []).append(rank)
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "triage", "version": report.version},
        "verdict": {
            "status": verdict.status.value,
            "phase": verdict.phase.value,
            "category": verdict.category.value,
            "confidence": verdict.confidence,
            "culprits": [_culprit(c, folded) for c in verdict.culprits],
            "reasoning": verdict.reasoning,
            "advice": verdict.advice,
            "missing": verdict.missing,
            "hypothesis": verdict.hypothesis,
            "hypotheses_lost": [_hypothesis(h, folded) for h in verdict.lost],
            "ledger": [_member_evidence(m) for m in verdict.ledger],
            "failed_principles": [{"principle": f.principle, "error": f.error} for f in verdict.failed],
        },
        "decision": decision_dict(report.decision) if report.decision is not None else None,
        "world_size": {"value": report.world_size, "from": report.world_size_from},
        "hosts": [{"host": h, "ranks": r} for h, r in sorted(hosts.items())],
        "ranks": [
            {
                "rank": rank,
                "host": state.host,
                "local_rank": state.local_rank,
                "role": state.role,
                "has_log": state.has_log,
                "events": len(state.events),
                "first_event": _first_event(state.events),
                "milestone": state.milestone.label if state.milestone is not None else None,
                "milestone_evidence": (_evidence(state.milestone_evidence)
                                       if state.milestone_evidence else None),
                "step": state.step,
                "tore_down": state.tore_down,
            }
            for rank, state in report.ranks.items()
        ],
        "sources": [
            {
                "name": s.name,
                "rank": s.identity.rank,
                "local_rank": s.identity.local_rank,
                "host": s.identity.host,
                "device": s.identity.device,
                "identity_from": s.identity.learnt_from,
                "lines": s.lines,
                "bytes": s.bytes,
                "events": s.events,
                "notes": s.notes,
                "conflicts": s.conflicts,
            }
            for s in report.sources if s.skipped is None
        ],
        "groups": [
            {
                "key": g.key, "default": g.default, "desc": g.desc, "size": g.size,
                "members": [{"rank": m.rank, "group_rank": m.group_rank, "enqueued": m.enqueued,
                             "completed": m.completed, "stuck_seq": m.stuck_seq,
                             "stuck_op": m.stuck_op} for _, m in sorted(g.members.items())],
            }
            for g in report.groups.values()
        ],
        "progress": _progress(report),
        "config": [{"key": i.key, "values": [{"value": v, "ranks": r} for v, r in i.values.items()],
                    "minority": i.minority, "majority": i.majority} for i in build_config(report.events)],
        "errors": [{"source": s.name, "reason": s.skipped} for s in report.sources if s.skipped],
        "unexplained": [_unexplained(u) for u in report.unexplained],
    }


def decision_dict(d: Decision) -> dict[str, Any]:
    return {"action": d.action, "requeue": d.requeue,
            "exclude": [{"kind": e.kind, "host": e.host, "rank": e.rank, "peer": e.peer, "peer_rank": e.peer_rank,
                         "why": e.why} for e in d.exclude],
            "hosts": d.hosts, "ranks": d.ranks, "env": d.env, "reason": d.reason, "policy_row": d.rule,
            "exit_code": d.exit_code}


def _progress(report: Report) -> list[dict[str, Any]]:
    prog = build_progress(report.events, report.groups)
    if not prog.has_dumps:
        return []  # the log-read groups are in `groups`
    shown = sorted(prog.groups.values(), key=lambda g: (not g.dumped, g.stalled_since() or float("inf"), g.key))
    return [{"key": g.key, "desc": g.desc, "default": g.default, "ranks": g.ranks,
             "stalled_since": _utc(g.stalled_since()), "summary": describe(g),
             "members": [_member(p) for _, p in sorted(g.by_rank.items())]} for g in shown]


def _member(p: RankProgress) -> dict[str, Any]:
    return {"rank": p.rank, "sources": p.sources(), "waiting": p.waiting, "idle": p.idle,
            "enqueued": p.enqueued, "started": p.started, "completed": p.completed, "wrapped": p.wrapped,
            "in_flight": [_op(o) for o in p.pending], "last_completed": _op(p.last_done) if p.last_done else None,
            "log_enqueued": p.log_enqueued, "log_completed": p.log_completed, "log_stuck_seq": p.log_stuck_seq,
            "ras_launched": p.ras_launched, "dump": p.dump.source if p.dump else None}


def _op(o: Op) -> dict[str, Any]:
    return {"seq": o.seq, "p2p": o.p2p, "op": o.op, "sizes": o.sizes, "dtypes": o.dtypes, "state": o.state,
            "since": _utc(o.since), "timeout_s": o.timeout_s,
            "stack": [f"{n} ({f}:{ln})" for n, f, ln in o.stack],
            "evidence": f"{o.evidence.source}:{o.evidence.line}"}


def _utc(t: float | None) -> str | None:
    return None if t is None else time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int((t % 1) * 1000):03d}Z"


def _unexplained(u: Unexplained) -> dict[str, Any]:
    return {"signature": u.signature, "marker": u.marker, "family": u.family, "count": u.count,
            "ranks": u.ranks, "hosts": u.hosts, "first": _evidence(u.first),
            "first_time": format_time(u.first_time), "new_rule": rule_command(u.first.text)}


def _evidence(ev: Evidence, folded: dict[tuple[str, int], Event] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"source": ev.source, "line": ev.line, "text": ev.text, "rule": ev.rule_id}
    if folded and (event := folded.get((ev.source, ev.line))) is not None:
        doc.update(_repeats(event))  # a crash loop's line: how often, and its last copy's line
    return doc


def _repeats(event: Event) -> dict[str, Any]:
    if event.count <= 1:
        return {}
    doc: dict[str, Any] = {"count": event.count, "last_line": event.last_line}
    if event.span and event.last_time is not None:  # copies of other times: the last one's
        doc["last_time"] = format_time(event.last_time)
    return doc


def _culprit(c: Culprit, folded: dict[tuple[str, int], Event]) -> dict[str, Any]:
    return {"kind": c.kind, "rank": c.rank, "host": c.host, "peer": c.peer, "peer_rank": c.peer_rank,
            "reason": c.reason,
            "evidence": [_evidence(e, folded) for e in c.evidence]}


def _hypothesis(h: Hypothesis, folded: dict[tuple[str, int], Event]) -> dict[str, Any]:
    return {"name": h.name, "score": round(h.score, 2), "category": h.category.value,
            "phase": h.phase.value, "culprits": [_culprit(c, folded) for c in h.culprits],
            "reasoning": h.reasoning}


def _member_evidence(m: MemberEvidence) -> dict[str, Any]:
    return {"kind": m.kind, "rank": m.rank, "host": m.host, "stance": m.stance.value, "fact": m.fact,
            "source": m.source, "weight": m.weight, "clears": m.clears,
            "citation": f"{m.citation.source}:{m.citation.line}" if m.citation else None}


def _first_event(events: list[Any]) -> dict[str, Any] | None:
    for event in events:
        if event.kind.value in ("timeout", "error", "peer-error", "exit", "culprit-named"):
            where = {"source": event.evidence.source, "line": event.evidence.line, "text": event.evidence.text}
            return {"rule": event.rule_id, "kind": event.kind.value, "message": event.message, **where,
                    **_repeats(event)}
    return None


def write(report: Report, out: TextIO) -> None:
    # One string, one write: json.dump writes piece by piece, a system call each where stdout is
    # unbuffered (PYTHONUNBUFFERED=1, common in CI images): 290,000 of them for a 1,024-rank job.
    out.write(indented_json.dumps(to_dict(report)) + "\n")


class JsonFormat:
    name = "json"
    summary = "one versioned JSON object (schemas/report-v1.schema.json)"

    def write(self, view: ReportView, out: TextIO, *, color: bool | None = None) -> None:
        write(view.report, out)

    def write_error(self, message: str, version: str, out: TextIO) -> None:
        """The analysis did not run: `verdict` null, and the reason in `errors[]`."""
        json.dump({"schema_version": SCHEMA_VERSION, "tool": {"name": "triage", "version": version},
                   "verdict": None, "decision": None, "world_size": {"value": None, "from": None}, "hosts": [],
                   "ranks": [], "sources": [], "errors": [{"source": None, "reason": message}]},
                  out, indent=2, ensure_ascii=False)
        out.write("\n")


FORMATTER = JsonFormat()
