"""The events a scanned line becomes: a rule's match, or an UNEXPLAINED error line.

Who wrote the line is read from the line's own envelope where it carries one (NCCL `host:pid:tid`,
CANN `HCCL(pid,…)`), over what the launcher prefixes and the source said.
"""

from __future__ import annotations

from triage.lazy_regex import lazy_re
from triage.model import Event, Evidence, Identity, Kind, Phase
from triage.parse.clock import parse_time
from triage.parse.marks import UNEXPLAINED_RULE_ID, Mark, signature
from triage.parse.prefix import clean
from triage.rules import Rule, event_phase

_MAX_MESSAGE = 500  # an unexplained line's message is cut to this many characters

# Writer identity that the line itself carries after the launcher prefixes.
NCCL_WRITER = lazy_re(
    r"^(?:\[\d{4}-\d\d-\d\d[^\]]*\] )?(?P<host>[A-Za-z0-9][\w.-]*):(?P<pid>\d+):\d+ (?:\[\d+\] )?\S"
)
# CANN `[ERROR] HCCL(pid,name):`, MindSpore C++ `[ERROR] DEVICE(pid,tid,python):` and MindSpore's Python
# logger `[ERROR] ME(pid:thread,MainProcess):` (mindspore/log.py): the first number is the writer's pid.
_HCCL_WRITER = lazy_re(r"^\[[A-Z]+\]\s?[A-Z_]+\((?P<pid>\d+)[,:]")


def writer(identity: Identity, text: str) -> Identity:
    """Who wrote the line, from what its own envelope says (NCCL host:pid:tid, CANN pid)."""
    if " NCCL " in text and (m := NCCL_WRITER.match(text)):
        identity.host = identity.host or m["host"]
        identity.pid = identity.pid or int(m["pid"])
        identity.learnt_from.setdefault("host", "NCCL line prefix")
        identity.learnt_from.setdefault("pid", "NCCL line prefix")
    elif text[:1] == "[" and (m := _HCCL_WRITER.match(text)):
        identity.pid = identity.pid or int(m["pid"])
        identity.learnt_from.setdefault("pid", "CANN log line")
    return identity


def unexplained(mark: Mark, source: str, base: Identity, line_identity: Identity, raw: str,
                 line_no: int, text: str) -> Event:
    identity = writer(line_identity, text)
    when = parse_time(text)
    message = mark.message.strip()[:_MAX_MESSAGE]
    return Event(
        rule_id=UNEXPLAINED_RULE_ID,
        kind=Kind.UNEXPLAINED,
        phase=Phase.UNKNOWN,
        severity="error",
        message=message,
        identity=identity.merged_over(base),
        evidence=Evidence(source, line_no, clean(raw), rule_id=UNEXPLAINED_RULE_ID),
        fields={"marker": mark.marker, "signature": signature(message), "error": message},
        time=when[0] if when else None,
        time_has_year=when[1] if when else True,
        family=mark.family,
    )


# A number no log means: longer than any rank, pid, count or time. Python refuses to read one of
# over 4,300 digits (int() raises), and none of them can be a size either.
_HUGE_NUMBER = lazy_re(r"-?\d{31,}")


def absurd(fields: dict[str, str]) -> bool:
    """A field no line of the rule's format can hold (a number of 31 digits or more): the rule
    does not explain the line (what reads its fields may count on each one being there)."""
    return any(len(v) >= 31 and _HUGE_NUMBER.fullmatch(v) for v in fields.values())


def event(rule: Rule, source: str, base: Identity, line_identity: Identity, raw: str,
           line_no: int, text: str, fields: dict[str, str]) -> Event:
    identity = writer(line_identity, text)
    when = parse_time(fields["time"]) if "time" in fields else None
    when = when or parse_time(text)
    return Event(
        rule_id=rule.id,
        kind=rule.kind,
        phase=event_phase(rule, fields.get("phase")),
        severity=rule.severity,
        message=rule.render(fields),
        identity=identity.merged_over(base),
        evidence=Evidence(source, line_no, clean(raw), rule_id=rule.id),
        fields=fields,
        time=when[0] if when else None,
        time_has_year=when[1] if when else True,
        family=rule.family,
        category=rule.category,
    )
