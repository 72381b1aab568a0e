"""Turn one source's text into events: literal prefilter → rules → events.

The hot path. Text is scanned a chunk at a time with one compiled alternation of every rule's
prefilter literals, so the great majority of lines (NCCL INFO noise, training progress) is never
split, decoded into a line or touched by a rule regex. Only lines holding a literal are peeled of
their launcher prefixes and tried against the rules that name that literal.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import regex

from triage.model import Event, Evidence, Identity
from triage.parse.clock import parse_time
from triage.parse.prefix import clean, peel
from triage.rules import Rule, event_phase

MAX_LINE = 16 << 10  # longer lines are cut before any regex sees them
_JOIN_LINES = 2  # a hard-wrapped line is tried joined with up to this many following lines

# Writer identity that the line itself carries after the launcher prefixes.
NCCL_WRITER = regex.compile(
    r"^(?:\[\d{4}-\d\d-\d\d[^\]]*\] )?(?P<host>[A-Za-z0-9][\w.-]*):(?P<pid>\d+):\d+ (?:\[\d+\] )?\S"
)
_HCCL_WRITER = regex.compile(r"^\[[A-Z]+\]\s?[A-Z_]+\((?P<pid>\d+),")


@dataclass
class Matcher:
    rules: list[Rule]
    prefilter: re.Pattern[str] = field(init=False)
    by_literal: dict[str, list[Rule]] = field(init=False)

    def __post_init__(self) -> None:
        self.by_literal = {}
        for rule in self.rules:
            for literal in rule.prefilter:
                self.by_literal.setdefault(literal, []).append(rule)
        # Longest literals first, so that the alternation reports the most specific one.
        literals = sorted(self.by_literal, key=len, reverse=True)
        self.prefilter = re.compile("|".join(re.escape(lit) for lit in literals))
        self.max_block = max((r.block.lines for r in self.rules if r.block), default=0)

    def candidates(self, line: str) -> list[Rule]:
        seen: list[Rule] = []
        for literal, rules in self.by_literal.items():
            if literal in line:
                seen.extend(r for r in rules if r not in seen)
        return seen


@dataclass
class ScanStats:
    lines: int = 0
    bytes: int = 0
    replaced: bool = False  # the text was not valid UTF-8 somewhere
    last_line: tuple[int, str] | None = None  # the last non-blank line: what a silent rank did last


def decode_chunks(chunks: Iterable[bytes], stats: ScanStats) -> Iterator[str]:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    for chunk in chunks:
        stats.bytes += len(chunk)
        text = decoder.decode(chunk)
        if "\ufffd" in text:
            stats.replaced = True
        yield text
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail


def scan_text(matcher: Matcher, source: str, base: Identity, texts: Iterable[str],
              stats: ScanStats) -> Iterator[Event]:
    """Events found in a stream of decoded text pieces (any split; lines may straddle pieces)."""
    carry = ""
    line_no = 1  # number of the first line of the buffer
    pieces = iter(texts)
    ended = False
    while not ended:
        piece = next(pieces, None)
        if piece is None:
            ended = True
            buffer = carry
            if buffer and not buffer.endswith("\n"):
                buffer += "\n"
        else:
            buffer = carry + piece
        cut = len(buffer) if ended else buffer.rfind("\n") + 1
        if cut == 0:
            carry = buffer
            continue
        stop, events = _scan_buffer(matcher, source, base, buffer, cut, line_no, ended)
        yield from events
        _note_last_line(buffer, stop, line_no, stats)
        line_no += buffer.count("\n", 0, stop)
        carry = buffer[stop:]
    stats.lines = line_no - 1


def _note_last_line(buffer: str, stop: int, first_line: int, stats: ScanStats) -> None:
    end = stop
    for _ in range(64):  # trailing blank lines: look back a little, not forever
        start = buffer.rfind("\n", 0, max(0, end - 1)) + 1
        text = clean(buffer[start:end].rstrip("\n"))[:MAX_LINE]
        if text.strip():
            stats.last_line = (first_line + buffer.count("\n", 0, start), text)
            return
        if start == 0:
            return
        end = start


def _scan_buffer(matcher: Matcher, source: str, base: Identity, buffer: str, cut: int,
                 first_line: int, ended: bool) -> tuple[int, list[Event]]:
    """Scan buffer[:cut] (whole lines); return where scanning stopped and the events found.

    Scanning stops early, at the start of a line, when a rule on it needs more following lines
    than the buffer holds: those lines are carried into the next round.
    """
    events: list[Event] = []
    pos = 0
    counted_to, line_no = 0, first_line
    search = matcher.prefilter.search
    tail = cut if ended else _tail_start(buffer, cut, max(matcher.max_block, _JOIN_LINES))
    while (m := search(buffer, pos, cut)) is not None:
        start = buffer.rfind("\n", 0, m.start()) + 1
        end = buffer.find("\n", m.end())
        if end < 0:
            end = len(buffer)
        if end + 1 > tail:
            rules = matcher.candidates(buffer[start:end])
            if any(r.block for r in rules) or _needs_join(rules, buffer[start:end]):
                return start, events
        line_no += buffer.count("\n", counted_to, start)
        counted_to = start
        events.extend(_match_line(matcher, source, base, buffer, start, end, line_no))
        pos = end + 1
    return cut, events


def _tail_start(buffer: str, cut: int, lines: int) -> int:
    """Where the last `lines` whole lines of buffer[:cut] begin."""
    pos = cut - 1
    for _ in range(lines):
        pos = buffer.rfind("\n", 0, pos)
        if pos < 0:
            return 0
    return pos + 1


def _needs_join(rules: list[Rule], line: str) -> bool:
    text = peel(line[:MAX_LINE]).text
    return not any(r.search(text) for r in rules)


def _following(buffer: str, end: int, count: int) -> list[str]:
    lines: list[str] = []
    pos = end + 1
    while len(lines) < count and pos < len(buffer):
        nxt = buffer.find("\n", pos)
        if nxt < 0:
            nxt = len(buffer)
        lines.append(buffer[pos:nxt])
        pos = nxt + 1
    return lines


def _match_line(matcher: Matcher, source: str, base: Identity, buffer: str, start: int,
                end: int, line_no: int) -> list[Event]:
    raw = buffer[start:end][:MAX_LINE]
    rules = matcher.candidates(raw)
    if not rules:
        return []
    peeled = peel(raw)
    text = peeled.text
    found: list[Event] = []
    for rule in rules:
        match = rule.search(text)
        joined_text = text
        if match is None:
            # A hard-wrapped line: try it glued to the next ones from the same writer.
            for extra in _following(buffer, end, _JOIN_LINES):
                joined_text += peel(extra[:MAX_LINE]).text
                if (match := rule.search(joined_text)) is not None:
                    break
            if match is None:
                continue
        fields = {k: v for k, v in match.groupdict().items() if v is not None}
        if rule.block:
            fields.update(_block_fields(rule, _following(buffer, end, rule.block.lines)))
        found.append(_event(rule, source, base, peeled.identity, raw, line_no, text, fields))
    return found


def _block_fields(rule: Rule, lines: list[str]) -> dict[str, str]:
    assert rule.block is not None
    fields: dict[str, str] = {}
    for line in lines:
        text = peel(line[:MAX_LINE]).text
        for pattern in rule.block.fields:
            if m := pattern.search(text):
                for key, value in m.groupdict().items():
                    if value is not None and key not in fields:
                        fields[key] = value.strip()
    return fields


def _event(rule: Rule, source: str, base: Identity, line_identity: Identity, raw: str,
           line_no: int, text: str, fields: dict[str, str]) -> Event:
    identity = line_identity
    if (m := NCCL_WRITER.match(text)) and " NCCL " in text:
        identity.host = identity.host or m["host"]
        identity.pid = identity.pid or int(m["pid"])
        identity.learnt_from.setdefault("host", "NCCL line prefix")
        identity.learnt_from.setdefault("pid", "NCCL line prefix")
    elif m := _HCCL_WRITER.match(text):
        identity.pid = identity.pid or int(m["pid"])
        identity.learnt_from.setdefault("pid", "CANN log line")
    when = parse_time(fields["time"]) if "time" in fields else None
    when = when or parse_time(text)
    return Event(
        rule_id=rule.id,
        kind=rule.kind,
        phase=event_phase(rule),
        severity=rule.severity,
        message=rule.render(fields),
        identity=identity.merged_over(base),
        evidence=Evidence(source, line_no, clean(raw)),
        fields=fields,
        time=when[0] if when else None,
        time_has_year=when[1] if when else True,
        family=rule.family,
        category=rule.category,
    )
