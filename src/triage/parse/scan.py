"""Turn one source's text into events: literal prefilter → rules → events.

The hot path. Text is scanned a chunk at a time by one pass that finds the lines holding any of
the rules' prefilter literals (`triage.parse.needles`: hyperscan, or a Python fallback), so the
great majority of lines (NCCL INFO noise, training progress) is never split into a line or touched
by a rule regex. Only those lines are peeled of their launcher prefixes and tried against the
rules that name a literal they hold.

The world is open: a candidate line that its own format marks as an error (see `triage.parse.marks`)
and that no rule explains becomes an UNEXPLAINED event. The markers' literals and shapes join the
literals, so finding those lines costs the same single pass.
"""

from __future__ import annotations

import codecs
import contextvars
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

import regex

from triage.model import Event, Evidence, Identity
from triage.parse import copies
from triage.parse import events as make
from triage.parse.marks import (
    MARKER_LITERALS,
    MARKER_SHAPES,
    TRACEBACK,
    Mark,
    classify,
    exception_end,
)
from triage.parse.needles import LiteralFinder, literal_finder
from triage.parse.prefix import Peeled, clean, peel
from triage.parse.repeats import Repeats
from triage.rules import MATCH_TIMEOUT_S, Rule

MAX_LINE = 16 << 10  # longer lines are cut before any regex sees them
_JOIN_LINES = 2  # a hard-wrapped line is tried joined with up to this many following lines
_TRACEBACK_LINES = 200  # how far after `Traceback (most recent call last):` its last line is sought
_TRACEBACK_STRAYS = 3  # unindented lines of the same writer passed over before giving up on it
# Regex time one source may spend. Past it, the rules that spent the most (a catastrophic user
# regex) are dropped for the rest of that source, which is reported; the cheap rules go on.
REGEX_BUDGET_S = 5.0
_HEAVY_SHARE = 0.1  # a rule that spent this share of the budget is one that spent the most

@dataclass
class Matcher:
    """The rules, indexed by their literals, and the engine that finds the lines holding one."""

    rules: list[Rule]
    engine: str | None = None  # see `literal_finder`; None: the fastest installed
    by_literal: dict[str, list[Rule]] = field(init=False)
    finder: LiteralFinder = field(init=False)
    last_line: list[tuple[Rule, LiteralFinder]] = field(init=False)  # `scan: last-line` rules
    max_block: int = field(init=False)
    _by_literals: dict[tuple[str, ...], list[Rule]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.by_literal = {}
        self._by_literals = {}
        # `scan: last-line` rules (progress lines, printed by the thousand) stay out of the
        # forward pass: each chunk is searched backwards for their last match instead.
        self.last_line = [(rule, literal_finder(rule.prefilter, engine=self.engine))
                          for rule in self.rules if rule.last_line_only]
        for rule in self.rules:
            if rule.last_line_only:
                continue
            for literal in rule.prefilter:
                self.by_literal.setdefault(literal, []).append(rule)
        for literal in MARKER_LITERALS:  # pseudo-literals: lines that may carry an error mark
            self.by_literal.setdefault(literal, [])
        self.finder = literal_finder(list(self.by_literal), MARKER_SHAPES, engine=self.engine)
        self.max_block = max((r.block.lines for r in self.rules if r.block), default=0)

    def candidates(self, line: str) -> list[Rule]:
        """The rules one of whose literals the line holds."""
        return self._rules_of(tuple(self.finder.present(line)))

    def candidates_at(self, start: int, line: str) -> list[Rule]:
        """`candidates(line)` for a line that the finder's last `line_starts` found at `start`."""
        return self._rules_of(tuple(self.finder.present_at(start, line)))

    def _rules_of(self, literals: tuple[str, ...]) -> list[Rule]:
        rules = self._by_literals.get(literals)
        if rules is None:
            rules = []
            for literal in literals:
                rules.extend(r for r in self.by_literal[literal] if r not in rules)
            if len(self._by_literals) < 4096:
                self._by_literals[literals] = rules
        return list(rules)


@dataclass
class RegexBudget:
    """Regex time spent on one source, per rule, and the rules dropped once it ran out."""

    limit: float = field(default_factory=lambda: REGEX_BUDGET_S)
    spent: float = 0.0
    # Searches are timed by the wall clock (cheap), but a budget runs out only once this process
    # has spent as much CPU time since the source began: on a busy machine the wall clock runs
    # ahead of the work, and a file would lose rules by chance.
    cpu_began: float = field(default_factory=time.process_time)
    check_at: float = -1.0  # `spent` past which the CPU time is looked at (first: the limit)
    by_rule: dict[str, float] = field(default_factory=dict)
    dropped: set[str] = field(default_factory=set)
    line: int = 0  # the line being scanned
    exceeded_at: int | None = None
    timeouts: int = 0  # searches cut by MATCH_TIMEOUT_S: they decided nothing

    def __post_init__(self) -> None:
        self.check_at = self.limit

    def search(self, rule: Rule, pattern: regex.Pattern[str], text: str,
               partial: bool = False) -> regex.Match[str] | None:
        if rule.id in self.dropped:
            return None
        began = time.perf_counter()
        try:
            if partial:
                return pattern.search(text, partial=True, timeout=MATCH_TIMEOUT_S)
            return pattern.search(text, timeout=MATCH_TIMEOUT_S)
        except TimeoutError:
            self.timeouts += 1
            return None
        finally:
            took = time.perf_counter() - began
            self.spent += took
            self.by_rule[rule.id] = self.by_rule.get(rule.id, 0.0) + took
            if self.spent > self.check_at:
                cpu = time.process_time() - self.cpu_began
                if cpu >= self.limit:
                    self._drop()
                    self.check_at = self.limit
                else:  # it cannot have spent the rest in less wall time than that
                    self.check_at = self.spent + self.limit - cpu

    def _drop(self) -> None:
        heavy = {r for r, t in self.by_rule.items() if t >= self.limit * _HEAVY_SHARE} - self.dropped
        if not heavy:  # no one rule stands out: every rule is slow on this source; drop them all
            heavy = set(self.by_rule) - self.dropped
        if self.exceeded_at is None:
            self.exceeded_at = self.line
        self.dropped |= heavy
        self.spent = sum(t for r, t in self.by_rule.items() if r not in self.dropped)


_BUDGET: contextvars.ContextVar[RegexBudget | None] = contextvars.ContextVar("regex_budget", default=None)


def _search(rule: Rule, text: str, pattern: regex.Pattern[str] | None = None) -> regex.Match[str] | None:
    """A rule's regex (or one of its block fields) on one line, charged to the source's budget."""
    budget = _BUDGET.get()
    if budget is None:
        try:
            return (pattern or rule.pattern).search(text, timeout=MATCH_TIMEOUT_S)
        except TimeoutError:
            return None
    return budget.search(rule, pattern or rule.pattern, text)


def _may_match_longer(rule: Rule, text: str) -> bool:
    """Whether `text` with more text glued after it could match the rule's regex (which `text` alone
    does not): a partial match, one that ran into the end of `text`; or a search cut short, which
    decides nothing. Where no start in `text` reaches its end, no text after it can make a match."""
    budget = _BUDGET.get()
    if budget is None:
        try:
            return rule.pattern.search(text, partial=True, timeout=MATCH_TIMEOUT_S) is not None
        except TimeoutError:
            return True
    timeouts = budget.timeouts
    return budget.search(rule, rule.pattern, text, partial=True) is not None or budget.timeouts != timeouts


@dataclass
class ScanStats:
    lines: int = 0
    bytes: int = 0
    replaced: bool = False  # the text was not valid UTF-8 somewhere
    last_line: tuple[int, str] | None = None  # the last non-blank line: what a silent rank did last
    cut_lines: int = 0  # lines longer than MAX_LINE that arrived across pieces: cut while read
    budget: RegexBudget = field(default_factory=RegexBudget)

    def notes(self) -> list[str]:
        """What the scan had to leave out of this source, in words."""
        notes = []
        if self.cut_lines:
            notes.append(f"{self.cut_lines} line{'s' if self.cut_lines != 1 else ''} longer than "
                         f"{MAX_LINE} characters {'were' if self.cut_lines != 1 else 'was'} cut to that "
                         "length")
        if self.budget.exceeded_at is not None:
            names = sorted(self.budget.dropped)
            notes.append(f"regex time budget ({self.budget.limit:g} s) exceeded at line "
                         f"{self.budget.exceeded_at}: rule{'s' if len(names) != 1 else ''} "
                         + ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
                         + " not tried on the rest of this source")
        return notes


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
    handled: set[int] = set()  # starts of carried lines already explained or marked
    repeats = Repeats()  # a crash loop's copies of one line: counted, not kept (triage.parse.repeats)
    pieces = iter(texts)
    piece = next(pieces, None)
    ended = False
    skipping = False  # inside a line already cut to MAX_LINE: its rest is dropped until "\n"
    while not ended:
        if piece is not None and skipping:
            # The rest of an overlong line: dropped unread, in bounded memory and linear time.
            newline = piece.find("\n")
            if newline < 0:
                piece = next(pieces, None)
                continue
            piece, skipping = piece[newline:], False
        # One piece ahead: the last piece is known as such, so the lines at its end are scanned
        # with it rather than carried into one more round.
        following = next(pieces, None) if piece is not None else None
        ended = following is None
        buffer = carry + piece if piece is not None else carry
        piece = following
        cut = buffer.rfind("\n") + 1
        if len(buffer) - cut > MAX_LINE:
            # A line without its newline yet, already longer than any rule looks at: keep its
            # first MAX_LINE characters (what a regex would see) and drop the rest as it comes.
            buffer = buffer[:cut + MAX_LINE]
            skipping = not ended
            stats.cut_lines += 1
        if ended:
            if buffer and not buffer.endswith("\n"):
                buffer += "\n"
            cut = len(buffer)
        elif cut == 0:
            carry = buffer
            continue
        token = _BUDGET.set(stats.budget)
        try:
            stop, events, newlines = _scan_buffer(matcher, source, base, buffer, cut, line_no, ended,
                                                  handled, repeats)
            # Line numbers below are counted back from `stop`: one pass over the buffer is enough.
            stop_line = line_no + newlines
            events += repeats.fold(_last_lines(matcher, source, base, buffer, stop, stop_line, handled))
        finally:
            _BUDGET.reset(token)
        repeats.frozen = repeats.frozen or bool(stats.budget.dropped)
        yield from events
        handled = {at - stop for at in handled if at >= stop}
        _note_last_line(buffer, stop, stop_line, stats)
        line_no = stop_line
        carry = buffer[stop:]
    stats.lines = line_no - 1


def _note_last_line(buffer: str, stop: int, stop_line: int, stats: ScanStats) -> None:
    end = stop
    for _ in range(64):  # trailing blank lines: look back a little, not forever
        start = buffer.rfind("\n", 0, max(0, end - 1)) + 1
        text = clean(buffer[start:end].rstrip("\n"))[:MAX_LINE]
        if text.strip():
            stats.last_line = (stop_line - buffer.count("\n", start, stop), text)
            return
        if start == 0:
            return
        end = start


def _scan_buffer(matcher: Matcher, source: str, base: Identity, buffer: str, cut: int,
                 first_line: int, ended: bool, handled: set[int],
                 repeats: Repeats) -> tuple[int, list[Event], int]:
    """Scan buffer[:cut] (whole lines); return where scanning stopped, the events found and the
    number of newlines before where it stopped.

    Scanning stops early, at the start of a line, when a rule on it needs more following lines
    than the buffer holds (or a traceback's last line lies beyond it): those lines are carried
    into the next round. `handled` holds the starts of lines that a rule's block or a hard-wrap
    join consumed, or that were already marked unexplained: no unexplained event comes from them.
    A line seen before, but for its time stamps, whose events its text alone decides is counted
    on them, and an event the same as an earlier one but for its time on that one (`repeats`).
    """
    events: list[Event] = []
    counted_to, line_no = 0, first_line
    budget = _BUDGET.get()
    tail = cut if ended else _tail_start(buffer, cut, max(matcher.max_block, _JOIN_LINES))

    def context(end: int) -> str | None:
        """The text of the lines a failed join read after the line ending at `end` (the
        _JOIN_LINES next ones); None where they are not all read yet."""
        last = end
        for _ in range(_JOIN_LINES):
            if last + 1 >= cut:
                return buffer[end + 1:cut] if ended else None
            last = buffer.find("\n", last + 1)
        return buffer[end + 1:last]

    # The candidate lines are found a window at a time, the first one small: where a crash loop's
    # copies are counted in bulk (`triage.parse.copies`), the window they fill is the only one searched.
    pos, window, resume = 0, _FIRST_WINDOW, 0
    while pos < cut:
        high = cut if cut - pos <= window else buffer.find("\n", pos + window - 1) + 1
        for start in matcher.finder.line_starts(buffer, high, pos):
            if start < resume:
                continue  # one of the copies counted in bulk
            end = buffer.find("\n", start)
            if end < 0:
                end = len(buffer)
            line = buffer[start:end][:MAX_LINE]
            line_no += buffer.count("\n", counted_to, start)
            counted_to = start
            if repeats.again(line, line_no, start, handled, end, context):
                # The copies after it, counted in bulk (a line cut to MAX_LINE is no whole copy).
                if (repeats.exact is not None or repeats.stamped is not None) and end - start < MAX_LINE:
                    count = copies.count_exact if repeats.exact is not None else copies.count_stamped
                    resume = count(repeats, buffer, line, end, cut, handled, line_no, _JOIN_LINES)
                    if resume > end + 1:  # so many lines of one width: their newlines need no count
                        line_no += (resume - end - 1) // (end - start + 1) + 1
                        counted_to = resume
                continue
            rules = (matcher.candidates_at(start, line) if end - start <= MAX_LINE
                     else matcher.candidates(line))
            if budget is not None:
                budget.line = line_no  # where the budget ran out, if it does here
            if end + 1 > tail and _needs_following(rules, line):
                return start, events, line_no - first_line
            peeled = peel(line)
            timeouts = budget.timeouts if budget is not None else 0
            decided: list[str] = []  # per rule: what decided it (see _match_line)
            found = (_match_line(rules, source, base, buffer, start, end, line_no, handled, peeled, decided)
                     if rules else [])
            if budget is not None and budget.timeouts != timeouts:
                decided.append("near")  # a search cut short decided nothing: not remembered
            if found and "near" not in decided:
                _remember(repeats, line, found, False, context(end) if "next" in decided else False)
            elif not found and start not in handled:
                alone: list[bool] = []
                opened = _open_world(matcher, source, base, buffer, start, end, line_no, handled, peeled,
                                     cut, ended, alone)
                if opened is None:  # a traceback whose last line is not in the buffer yet
                    return start, events, line_no - first_line
                if alone and "near" not in decided:
                    _remember(repeats, line, opened, True, context(end) if decided else False)
                found = opened
            events.extend(repeats.fold(found))  # a copy of an earlier event is counted on it
        pos, window = max(high, resume), window * _WINDOW_GROWTH
    return cut, events, line_no - first_line + buffer.count("\n", counted_to, cut)


_FIRST_WINDOW = 16 << 10  # characters searched for candidate lines first; each next window 8 times more
_WINDOW_GROWTH = 8


_LAST_LINE_TRIES = 64  # lines holding a literal but not matching, tried before giving up
_LAST_LINE_WRITERS = 256  # in a file that interleaves workers, matches looked at for more writers


def _remember(repeats: Repeats, line: str, events: list[Event], open_world: bool,
              after: str | bool | None) -> None:
    """`after`: the text of the lines after it that decided too; False where none did, None
    where they are not all read yet (then the line is not remembered)."""
    if after is not None:
        repeats.remember(line, events, open_world, after)


def _last_lines(matcher: Matcher, source: str, base: Identity, buffer: str, stop: int,
                stop_line: int, handled: set[int]) -> list[Event]:
    """The last line of buffer[:stop] that each `scan: last-line` rule matches, as an event.

    Walks back from the end with `str.rfind` over the rule's literals (C speed), trying the regex
    only on lines that hold one. In a file that interleaves several workers' lines (a launcher
    console: `[default3]:step 9 …`), the last line of each writer counts.
    """
    events: list[Event] = []
    for rule, finder in matcher.last_line:
        end, misses, matches = stop, 0, 0
        writers: set[tuple[int | None, int | None]] = set()
        for at in finder.backwards(buffer, stop):
            if at >= end:
                continue  # on a line already looked at
            if misses >= _LAST_LINE_TRIES or matches >= _LAST_LINE_WRITERS:
                break
            start = buffer.rfind("\n", 0, at) + 1
            line_end = buffer.find("\n", at)
            line_end = stop if line_end < 0 or line_end > stop else line_end
            end = start
            peeled = peel(buffer[start:line_end][:MAX_LINE])
            if _search(rule, peeled.text) is None:
                misses += 1
                continue
            matches += 1
            writer = (peeled.identity.rank, peeled.identity.local_rank)
            if writer in writers:
                continue
            writers.add(writer)
            line_no = stop_line - buffer.count("\n", start, stop)
            events += _match_line([rule], source, base, buffer, start, line_end, line_no,
                                  handled, peeled)
            if writer == (None, None):
                break  # one writer's file: its last line is all it takes
    return events


def _tail_start(buffer: str, cut: int, lines: int) -> int:
    """Where the last `lines` whole lines of buffer[:cut] begin."""
    pos = cut - 1
    for _ in range(lines):
        pos = buffer.rfind("\n", 0, pos)
        if pos < 0:
            return 0
    return pos + 1


def _needs_following(rules: list[Rule], line: str) -> bool:
    """Whether the lines after this one may decide what it means (block, hard wrap, record)."""
    if rules and (any(r.block for r in rules) or _needs_join(rules, line)):
        return True
    return _opens_record(line)


def _needs_join(rules: list[Rule], line: str) -> bool:
    text = peel(line[:MAX_LINE]).text
    return not any(_search(r, text) for r in rules)


def _following_at(buffer: str, end: int, count: int, limit: int = -1) -> list[tuple[int, str]]:
    """Up to `count` lines after the line ending at `end` (and before `limit`), with their starts."""
    lines: list[tuple[int, str]] = []
    pos = end + 1
    limit = len(buffer) if limit < 0 else limit
    while len(lines) < count and pos < limit:
        nxt = buffer.find("\n", pos)
        if nxt < 0:
            nxt = len(buffer)
        lines.append((pos, buffer[pos:nxt]))
        pos = nxt + 1
    return lines


def _match_line(rules: list[Rule], source: str, base: Identity, buffer: str, start: int,
                end: int, line_no: int, consumed: set[int], peeled: Peeled | None = None,
                decided: list[str] | None = None) -> list[Event]:
    """The rules' events on one line; adds to `consumed` the following lines they used, and to
    `decided`, per rule, what decided it: the line `alone`, the line and the `next` lines' text (a
    join tried in vain), or lines `near` it where they are (a join that matched, a block)."""
    raw = buffer[start:end][:MAX_LINE]
    peeled = peeled or peel(raw)
    text = peeled.text
    found: list[Event] = []
    extras: list[tuple[int, str]] | None = None  # the next lines, peeled once for every rule
    for rule in rules:
        match = _search(rule, text)
        joined_text = text
        joined: list[int] = []
        if decided is not None:
            decided.append("near" if rule.block else "alone" if match else "next")
        if match is None:
            # A hard-wrapped line: try it glued to the next ones from the same writer (where glued
            # text could match at all: most lines a rule's literal is on and its regex is not on
            # cannot, and their next lines are then neither peeled nor searched).
            if not _may_match_longer(rule, text):
                continue
            if extras is None:
                extras = [(at, peel(extra[:MAX_LINE]).text) for at, extra in
                          _following_at(buffer, end, _JOIN_LINES)]
            for at, extra in extras:
                joined_text += extra
                joined.append(at)
                if (match := _search(rule, joined_text)) is not None:
                    if decided is not None:
                        decided[-1] = "near"
                    break
            if match is None:
                continue
        fields = rule.captured(match)
        if make.absurd(fields):
            continue
        consumed.update(joined)
        cited = (line_no, raw)
        if rule.block:
            following = _following_at(buffer, end, rule.block.lines)
            fields.update(_block_fields(rule, following, consumed))
            cited = _cited_line(rule, following, line_no) or cited
            if make.absurd(fields):
                continue
        event = make.event(rule, source, base, peeled.identity, raw, line_no, text, fields)
        if cited[0] != line_no:  # the line that shows the failure, not the record's first
            event.evidence = Evidence(source, cited[0], cited[1].strip()[:300], rule_id=rule.id)
        found.append(event)
    return found


def _cited_line(rule: Rule, lines: list[tuple[int, str]], line_no: int) -> tuple[int, str] | None:
    """The line of the block's `cite` field, numbered from the record's first line."""
    if rule.block is None or rule.block.cite is None:
        return None
    for offset, (_, line) in enumerate(lines, 1):
        text = peel(line[:MAX_LINE]).text
        if any((m := _search(rule, text, p)) and m.groupdict().get(rule.block.cite) for p in rule.block.fields):
            return line_no + offset, line[:MAX_LINE]
    return None


def _block_fields(rule: Rule, lines: list[tuple[int, str]], consumed: set[int]) -> dict[str, str]:
    fields: dict[str, str] = {}
    patterns = rule.block.fields if rule.block else ()
    for at, line in lines:
        text = peel(line[:MAX_LINE]).text
        for pattern in patterns:
            if m := _search(rule, text, pattern):
                consumed.add(at)  # part of the record: explained with it
                for key, value in m.groupdict().items():
                    if value is not None and key not in fields:
                        fields[key] = value.strip()
    return fields


def _open_world(matcher: Matcher, source: str, base: Identity, buffer: str, start: int, end: int,
                line_no: int, handled: set[int], peeled: Peeled, cut: int, ended: bool,
                direct: list[bool] | None = None) -> list[Event] | None:
    """An UNEXPLAINED event for a line that its format marks as an error and no rule explained.

    None: the line opens a traceback whose last line may lie beyond buffer[:cut] (whole lines), and
    more text is coming. `direct` gets True when the line's text alone decided (no traceback, no
    record read on).
    """
    raw = buffer[start:end][:MAX_LINE]
    text = peeled.text
    if "Traceback (most recent call last)" in text and TRACEBACK.match(text):
        return _traceback_end(matcher, source, base, buffer, end, line_no, peeled.text, peeled.identity,
                              handled, cut, ended)
    mark = classify(text)
    if direct is not None and (mark is None or not _record_head(mark)):
        direct.append(True)
    if mark is None:
        return []
    if _record_head(mark):
        # A multi-line record (the desync report): its text is on the continuation lines.
        more = _continuation(matcher, source, base, buffer, end, line_no)
        if more is None:
            return []  # a rule knows the record
        mark = replace(mark, message=more)
    handled.add(start)
    return [make.unexplained(mark, source, base, peeled.identity, raw, line_no, text)]


def _record_head(mark: Mark) -> bool:
    """A c10 line whose message is only its process-group prefix: the record goes on below."""
    return mark.marker == "c10-error" and not mark.message.strip()


def _opens_record(line: str) -> bool:
    if not line.rstrip().endswith("]") or ("[E" not in line and "[F" not in line):
        return False
    mark = classify(peel(line).text)
    return mark is not None and _record_head(mark)


def _continuation(matcher: Matcher, source: str, base: Identity, buffer: str, end: int,
                  line_no: int) -> str | None:
    """The first continuation line of a record whose first line holds no message (indented lines
    after it), or None when a rule explains one of them."""
    first = ""
    lines = _following_at(buffer, end, max(matcher.max_block, _JOIN_LINES))
    for offset, (at, raw) in enumerate(lines, start=1):
        text = peel(raw[:MAX_LINE]).text
        if not text[:1].isspace():
            break
        rules = matcher.candidates(raw[:MAX_LINE])
        if rules and _match_line(rules, source, base, buffer, at, at + len(raw), line_no + offset, set()):
            return None
        first = first or text.strip()
    return first


def _traceback_end(matcher: Matcher, source: str, base: Identity, buffer: str, end: int, line_no: int,
                   header: str, writer: Identity, handled: set[int], cut: int, ended: bool
                   ) -> list[Event] | None:
    """The last line of the traceback whose header ends at `end`, when no rule explains it.

    It is the first line after the header, from the same writer (interleaved ranks share a
    console), no more indented than the header, that reads as an exception (`Type: message`).
    The frames between are indented; a few other lines of that writer are passed over (a flushed
    print), more mean the traceback was cut off.
    """
    indent = len(header) - len(header.lstrip())
    strays = 0
    lines = _following_at(buffer, end, _TRACEBACK_LINES, len(buffer) if ended else cut)
    for offset, (at, raw) in enumerate(lines, start=1):
        peeled = peel(raw[:MAX_LINE])
        who = peeled.identity
        if (who.rank, who.local_rank) != (writer.rank, writer.local_rank):
            continue
        text = peeled.text
        if not text.strip() or len(text) - len(text.lstrip()) > indent:
            continue
        if TRACEBACK.match(text):
            return []  # another traceback began: it speaks for itself
        if (mark := exception_end(text)) is None:
            strays += 1
            if strays > _TRACEBACK_STRAYS:
                return []
            continue
        if at in handled:
            return []
        nxt = at + len(raw)
        rules = matcher.candidates(raw[:MAX_LINE])
        if rules and _match_line(rules, source, base, buffer, at, nxt, line_no + offset, set()):
            return []  # a rule knows it: the line's own visit reports it
        handled.add(at)
        return [make.unexplained(mark, source, base, who, raw[:MAX_LINE], line_no + offset, text)]
    if not ended and len(lines) < _TRACEBACK_LINES:
        return None  # the buffer ended first: decide when more has been read
    return []
