"""Errors that no rule knows: fold them for the report, and draft the rule that would know them.

The scanner turns a line that its own format marks as an error, and that no rule explains, into an
UNEXPLAINED event (see `triage.parse.marks`). `summarize` folds those events by signature (the
message with what varies across ranks and runs folded into placeholders), so one unknown NCCL
warning logged by 512 ranks reads as one entry. `draft_rule` turns one such line into a valid rule
document (`triage rules new --from-line`): the line's envelope and launcher prefixes are stripped,
its varying parts become patterns, and its longest stable literal becomes the prefilter.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import regex

from triage.lazy_regex import lazy_compile
from triage.model import Event, Identity, Kind, Unexplained
from triage.parse.marks import Mark, classify, pieces, signature
from triage.parse.prefix import peel
from triage.parse.scan import Matcher, ScanStats, scan_text
from triage.rules import Rule

MAX_SIGNATURES = 50  # distinct signatures kept in a report: the most frequent, then the earliest


def summarize(events: Iterable[Event], limit: int = MAX_SIGNATURES) -> list[Unexplained]:
    """The UNEXPLAINED events folded by (marker, signature): most frequent first, then earliest."""
    groups: dict[tuple[str, str], list[Event]] = {}
    for event in events:
        if event.kind is Kind.UNEXPLAINED:
            key = (event.fields.get("marker", ""), event.fields.get("signature") or event.message)
            groups.setdefault(key, []).append(event)
    out: list[Unexplained] = []
    for (marker, sig), members in groups.items():
        first = min(members, key=_when)
        out.append(Unexplained(
            signature=sig,
            marker=marker,
            family=first.family,
            count=sum(e.count for e in members),
            ranks=sorted({e.identity.rank for e in members if e.identity.rank is not None}),
            hosts=sorted({e.identity.host for e in members if e.identity.host}),
            first=first.evidence,
            first_time=first.time,
        ))
    out.sort(key=lambda u: (-u.count, u.first_time is None, u.first_time or 0.0, u.first.source,
                            u.first.line))
    return out[:limit]


def _when(event: Event) -> tuple[bool, float, str, int]:
    return (event.time is None, event.time or 0.0, event.evidence.source, event.evidence.line)


def rule_command(line: str) -> str:
    """The command that drafts a rule for `line`, quoted for a POSIX shell."""
    return f"triage rules new --from-line {shlex.quote(line)}"


def format_time(seconds: float | None) -> str | None:
    """A wall-clock time as the logs wrote it (no time zone: the logs mostly give none)."""
    if seconds is None:
        return None
    whole = int(seconds)
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
    millis = round((seconds - whole) * 1000)
    return f"{text}.{millis:03d}" if 0 < millis < 1000 else text


# --- drafting a rule from a line ---------------------------------------------------------------

# What each kind of varying part becomes in a regex: the shape of the text, with its digit runs free.
_DIGITS = lazy_compile(r"\d+")
_HEX = lazy_compile(r"[0-9a-fA-F]+")
_MIN_LITERAL = 4  # a shorter literal would make every noise line a candidate
_ID_WORD = lazy_compile(r"[A-Za-z][A-Za-z0-9]*")


class DraftError(ValueError):
    """The line cannot be turned into a rule (the message says why)."""


@dataclass(frozen=True)
class Draft:
    rule_id: str
    document: dict[str, Any]  # the rule, as its YAML file holds it
    mark: Mark | None  # how the line's format marked it, when it did


def draft_rule(line: str, *, rule_id: str | None = None, family: str | None = None,
               families: Iterable[str] = (), taken: Iterable[str] = ()) -> Draft:
    """A rule document that matches `line` (and the same message from any rank or run).

    `families` are the valid family names, `taken` the rule ids already in use (a generated id
    avoids them; a given one must not be among them).
    """
    line = line.rstrip("\r\n")
    if "\n" in line:
        raise DraftError("give one line: the rule matches a single log line")
    text = peel(line).text
    if not text.strip():
        raise DraftError("the line is empty once its launcher prefixes are stripped")
    mark = classify(text)
    message, anchor = _message_of(text, mark)
    body, literal = _pattern(message)
    if literal is None:
        raise DraftError("the message has no stable literal of at least "
                         f"{_MIN_LITERAL} characters to prefilter on; write this rule by hand")
    pattern = anchor + body
    compiled = regex.compile(pattern)
    if compiled.search(text) is None:  # pragma: no cover - a bug in the generator, not the input
        raise DraftError(f"internal error: the drafted regex {pattern!r} does not match the line")
    near = _near_miss(text, mark, literal, compiled)
    families = tuple(families)
    fam = family or (mark.family if mark else "python")
    if families and fam not in families:
        if family:
            raise DraftError(f"--family must be one of {', '.join(families)}, not {family!r}")
        fam = "python"
    sig = signature(message)
    taken = set(taken)
    if rule_id is None:
        rule_id = _make_id(fam, message, taken)
    elif not regex.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", rule_id):
        raise DraftError(f"--id must be kebab-case (a-z, 0-9, single dashes), not {rule_id!r}")
    elif rule_id in taken:
        raise DraftError(f"rule id {rule_id!r} is already used by a rule triage loads; pick another --id")
    marker = mark.marker if mark else "no error mark"
    document: dict[str, Any] = {
        "id": rule_id,
        "title": _clip(f"{sig} (generated, edit me)", 120),
        "family": fam,
        "kind": "error",
        "phase": "any",
        "severity": "error",
        "status": "generated by `triage rules new`: edit before relying on it",
        "prefilter": [literal],
        "regex": pattern,
        "message": _clip(sig, 200).replace("{", "{{").replace("}", "}}"),
        "explain": {
            "meaning": (f"GENERATED from one log line ({marker}); edit this text. The line's own format "
                        f"marks it as an error and no built-in rule knew it: {sig}"),
            "causes": "Not known yet: write what usually causes this message.",
            "next_steps": ("This rule was generated and should be edited: check its regex against the same "
                           "message on other ranks and runs, set kind (error, timeout, peer-error, "
                           "consequence, info …), phase and category, and write here what to do when the "
                           "line appears. Until then the line only counts as an error of this rank."),
        },
        "examples": {
            "match": [{"line": line}],
            "nomatch": [near],
        },
    }
    return Draft(rule_id=rule_id, document=document, mark=mark)


def _message_of(text: str, mark: Mark | None) -> tuple[str, str]:
    """(the message to generalise, the regex of what precedes it in the peeled line)."""
    if mark is None:
        return text.strip(), r"^\s*"
    message = mark.message.strip()
    if mark.marker == "cann-error" and " " in message and message.split(" ", 1)[0].isupper():
        message = message.split(" ", 1)[1]  # the module name is in the envelope, not the message
    if message and message in text:
        return message, mark.anchor
    return text.strip(), r"^\s*"


def _pattern(message: str) -> tuple[str, str | None]:
    """(a regex matching the message with its varying parts free, the longest literal in it)."""
    out: list[str] = []
    literals: list[str] = []
    cut = list(pieces(message))
    for i, (kind, text) in enumerate(cut):
        if kind is None:
            out.append(_literal_regex(text))
            glued_before = i > 0 and not text[:1].isspace()
            glued_after = i + 1 < len(cut) and not text[-1:].isspace()
            literals.extend(_stable(part, glued_before, glued_after) for part in re.split(r"\s{2,}", text))
        elif kind in ("addr", "id"):
            out.append(("0x" if text.startswith("0x") else "") + r"[0-9a-fA-F-]+")
        elif kind == "ip" and ":" in text and "." not in text:
            out.append(r"[0-9a-fA-F:]+(?:<\d+>)?")
        else:
            out.append(_shape(text))
    literal = max(literals, key=len, default="")
    return "".join(out), literal if len(literal) >= _MIN_LITERAL else None


def _stable(text: str, glued_before: bool, glued_after: bool) -> str:
    """The part of a literal run that does not vary with its neighbours: a word glued to a number
    (`node-` of `node-07`, `step_` of `step_1200`) is likely a host or path that changes too."""
    words = text.split(" ")
    if glued_after and len(words) > 1:
        words = words[:-1]
    if glued_before and len(words) > 1:
        words = words[1:]
    return " ".join(words).strip(" :;,.-=|")


def _literal_regex(text: str) -> str:
    parts = re.split(r"(\s+)", text)
    return "".join(r"\s+" if part.isspace() else regex.escape(part) for part in parts if part)


def _shape(text: str) -> str:
    """A regex for text of this shape: its digit runs free, the rest as written."""
    out, pos = [], 0
    for m in _DIGITS.finditer(text):
        out.append(regex.escape(text[pos:m.start()]))
        out.append(r"\d+")
        pos = m.end()
    out.append(regex.escape(text[pos:]))
    return "".join(out)


def _near_miss(text: str, mark: Mark | None, literal: str, compiled: regex.Pattern[str]) -> str:
    """A line that holds the prefilter literal and must not match: the same line marked as no
    error where the format has a severity, else the message quoted inside another line."""
    options = [mark.near_miss] if mark and mark.near_miss else []
    options += [f"note: {text.strip()}", f"{literal} (quoted in another message)", literal]
    for option in options:
        if literal in option and compiled.search(peel(option).text) is None:
            return option
    raise DraftError("could not build a near miss that the drafted regex rejects; write this rule by hand")


def _make_id(family: str, message: str, taken: set[str]) -> str:
    words = [w.lower() for kind, text in pieces(message) if kind is None for w in _ID_WORD.findall(text)]
    words = [w for w in words if len(w) > 1][:5] or ["unexplained"]
    base = "-".join([family, *words])[:60].strip("-")
    base = re.sub(r"-+", "-", base)
    rule_id, n = base, 2
    while rule_id in taken:
        rule_id, n = f"{base}-{n}", n + 1
    return rule_id


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"



def render_rule(draft: Draft) -> str:
    """The YAML text of a drafted rule, with a header saying where it came from."""
    import yaml  # here: an analysis writes no YAML

    body = yaml.safe_dump(draft.document, sort_keys=False, allow_unicode=True, width=1 << 16,
                          default_flow_style=False)
    return ("# Generated by `triage rules new --from-line`. Edit it: the regex, kind, phase and the\n"
            "# explanation are a first guess. `triage analyze --rules <this folder>` loads it.\n" + body)


def example_problems(rule: Rule) -> list[str]:
    """Where the rule's own examples disagree with it, run through the real scanner (the checks of
    `triage rules test`)."""
    from triage.rule_examples import failures_of  # here: an analysis drafts no rule

    return [f"{f.where}: {f.detail}" for f in failures_of([rule])]


def explained_by(line: str, rules: list[Rule]) -> list[str]:
    """The ids of the rules that already fire on `line`."""
    events = scan_text(Matcher(rules), "line", Identity(), [line + "\n"], ScanStats())
    return sorted({e.rule_id for e in events if e.kind is not Kind.UNEXPLAINED})
