"""Fold a crash loop: events of one source that are the same but for their time become one event.

A rank in a crash loop prints one error line thousands or millions of times, each copy in its own
envelope: the time advances, the writer (rank prefix, host, pid, tid) stays. Each copy would be one
more event for the job model, the diagnosis and every report to carry, and one more trip through
the rules. So, per source, where events are produced:

- an event that is the same as an earlier one of the source but for its time (same rule, message,
  fields, writer, family, and line text once its time stamps are blanked: `clock.stamp_spans`) is not
  kept again; the first one counts it (`Event.count`) and notes the last one's line and time
  (`Event.last_line`, `Event.last_time`). Its `time` stays the first copy's, which is all that the
  diagnosis reads. A copy more than `EPISODE_GAP_S` after the last one is another episode (a
  restart, a later run): a new event.
- a line whose events depend on nothing but its own text (every rule that may explain it matched
  the line alone: no block of following lines, no hard-wrap join, no traceback to look ahead for)
  is remembered by that text with its time stamps blanked, which keeps the writer the envelope
  names. The next copy is counted on those events without a rule being tried again: a dict
  look-up, and its time read by the clock code for `last_time`. A line some rule only failed to
  explain was also tried glued to the next lines (a hard wrap): it is remembered with the text of
  those lines (their stamps blanked too), and a copy counts only when followed by the same.
- that a line's events depend on its time only through `Event.time` is not assumed but seen: a
  line is recalled for a copy of different time only once a first such copy, tried by the rules
  in full, gave the same events (the fold key) with each event's time the line's own clock. A rule
  that puts the time into its message does not pass, and its lines are tried one by one.

Lines that differ in more than time (a counter in the message: a SeqNum, a retry count) are other
events: they are kept one by one, in time linear in their number. Both memories are bounded: past
their size, lines and events are simply not folded any more. What a log without repeats pays is
kept small: a line is remembered only once a line of its length came before, a line that ends
unlike every remembered one is no copy (its last characters tell,
before its stamps are looked for), and the stamps of the lines after a remembered one are blanked
only once a copy of it comes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from triage.model import Event
from triage.parse.clock import stamp_spans, stamp_time

MAX_LINES = 4096  # distinct lines remembered per source, with their events
MAX_KEYS = 1 << 16  # distinct events remembered per source, to fold the same ones
# A copy this long after the last one is not the same crash loop going on: a restart, or a later
# run appended to the file (the job stage tells runs hours apart by their events' times).
EPISODE_GAP_S = 3600.0
_CACHED = 64  # lines whose stamps are kept taken apart: a line is also read in its forerunners' context
_TAIL = 16  # a line's last characters: no remembered line ends so, no copy of one (see `Repeats.tails`)

Stamp = tuple[float, bool] | None  # a line's clock: (time, whether it gave the year), or None


@dataclass
class _Line:
    """A remembered line: the fold keys of its events, and what decides whether a copy may be
    counted on them."""

    events: list[Event]  # what the first copy gave
    keys: list[Hashable] | None  # their fold keys, once needed
    open_world: bool  # an error mark no rule explains: see `Repeats.again`
    line: str  # the first copy as written
    after: str | bool  # the text of the lines after it as written, or False where they do not matter
    clock: int | None  # which of its stamps is its events' time (-1: they have none; None: no stamp is)
    stamp: Stamp  # what that stamp says
    seen: bool = False  # a copy of another time gave the same events: copies are counted
    varies: bool = False  # one gave other events: only exact copies are counted


class Repeats:
    """What one source has produced so far, to fold what repeats it."""

    def __init__(self) -> None:
        # line text without its stamps -> the text of the lines after it without theirs (False:
        # they do not matter) -> the line remembered
        self.lines: dict[str, dict[str | bool, _Line]] = {}
        # line text without its stamps -> lines remembered with the text after them, that text's
        # stamps not blanked yet: done when a copy of the line comes (most lines have none)
        self.unsettled: dict[str, list[_Line]] = {}
        self.size = 0
        self.keys: dict[Hashable, Event] = {}
        # An event's key but for its line's text (`_rough_key`) -> the one event kept under it whose
        # whole key is not computed yet (None: computed, it is in `keys`). Blanking a line's stamps
        # is most of a key's cost, and most events of a log are the only ones of their rough key.
        self.rough: dict[Hashable, Event | None] = {}
        self._unkeyed = 0  # events in `rough`: kept, their key not in `keys` yet
        self.frozen = False  # a rule was dropped for this source (regex budget): nothing is recalled
        self._split: dict[str, _Split] = {}  # the last few lines taken apart
        # The last _TAIL characters of the lines remembered, where no stamp is among them: a line
        # that ends otherwise is no copy, without being taken apart. None: some stamp was.
        self.tails: set[str] | None = set()
        self._last: _Split | None = None  # the last line taken apart
        # The lengths of the lines met: a line is remembered only once one of its length came
        # before (a copy, stamps and all, is as long), so most lines of a log without repeats are
        # never taken apart. Its copies are counted on it from the third on; the second is tried
        # in full, which gives the same events.
        self.met: set[int] = set()
        # What `again` counted the last line on, where that line was the remembered one as written
        # (the same text, the same lines after it): its copies that follow may be counted in bulk.
        self.exact: tuple[_Line, list[Event], float | None] | None = None
        # What `again` counted the last line on, where that line was a copy of another time: its
        # copies of other times that follow may be counted in bulk too (`stamped_copies`).
        self.stamped: tuple[_Line, list[Event], _Split] | None = None
        self._shapes: dict[tuple[str, str], CopyShape] = {}  # see `stamped_copies`

    def again(self, line: str, line_no: int, start: int, handled: set[int], end: int,
              context: Callable[[int], str | None]) -> bool:
        """Count a copy of a remembered line on its events; False when the line is not known.

        `context(end)` gives the text of the lines after it, for a line remembered with them."""
        self.exact = self.stamped = None
        if self.frozen or not self.size or (self.tails is not None and line[-_TAIL:] not in self.tails):
            return False
        split = self._split.get(line) or self._stamps(line)
        masked, pieces = split[0], split[1]
        by_context = self._by_context(masked)
        if by_context is None:
            return False
        known = by_context.get(False)
        after: str | bool = False
        if known is None and (text := context(end)) is not None:
            after = text
            known = by_context.get(self._unstamped(text))
        if known is None:
            return False
        exact = known.line == line and known.after == after
        if exact:
            stamp = known.stamp  # the very same text: the same time
        elif known.seen and not known.varies and known.clock is not None and known.clock < len(pieces):
            stamp = stamp_time(pieces[known.clock]) if known.clock >= 0 else None
        else:
            return False  # not known yet to depend on its time through `Event.time` alone
        firsts: list[Event] = []
        for key in self._keys(known):
            first = self.keys.get(key)
            if first is None and self.rough.get(key[0]) is not None:  # type: ignore[index]
                self._settle(key[0])  # type: ignore[index]
                first = self.keys.get(key)
            if first is None or (stamp is not None and _later_episode(first, stamp)):
                return False  # tried in full: its events are new ones
            firsts.append(first)
        if known.open_world:
            # An error mark no rule explains: reported unless the line was part of an earlier
            # line's record, exactly as the line's own visit would decide.
            if start in handled:
                return True
            if firsts:
                handled.add(start)
        when = stamp[0] if stamp else None
        for first in firsts:
            _count(first, 1, line_no, when if when is not None else first.time)
        if exact:
            self.exact = (known, firsts, when)
        else:
            self.stamped = (known, firsts, split)
        return True

    def exact_after(self) -> str | bool:
        """The lines after it that the line just counted exactly was remembered with (False: none)."""
        assert self.exact is not None  # noqa: S101
        return self.exact[0].after

    def count_copies(self, copies: int, line_no: int) -> None:
        """Count `copies` more copies, as written, of the line `again` just counted exactly (see
        `exact`), the last one on line `line_no`: each would be counted so, one by one."""
        assert self.exact is not None  # noqa: S101
        _, firsts, when = self.exact
        for first in firsts:
            _count(first, copies, line_no, when if when is not None else first.time)

    def stamped_copies(self) -> tuple[CopyShape, str, str | bool] | None:
        """For the line `again` just counted as a copy of another time: the shape of a line that,
        met next, would be counted so too; the line with its stamps blanked; and the text of the
        lines after it the line was remembered with, stamps blanked too (False: none). None where
        there is none.

        Such a line is the same text but for the digits of its stamps, each stamp's digits where
        this one has them (so it is taken apart the same way: `_stamps`), and its clock's date and
        hour the same: copies less than an hour apart are never another episode.
        """
        if self.stamped is None:
            return None
        known, _, (masked, _, spans, _, line) = self.stamped
        fixed = -1, -1  # the clock's date and hour: kept as written
        if known.clock is not None and known.clock >= 0:
            start, end = spans[known.clock]
            colon = line.find(":", start, end)
            if colon < 0:
                return None
            fixed = start, colon + 1
        key = masked, line[fixed[0]:fixed[1]] if fixed[0] >= 0 else ""
        shape = self._shapes.get(key)
        if shape is None:
            varies = {j for start, end in spans for j in range(start, end)
                      if line[j] in _DIGITS and not fixed[0] <= j < fixed[1]}
            low, high = min(varies, default=0), max(varies, default=-1) + 1
            shape = CopyShape(
                "".join("[0-9]" if j in varies else re.escape(c) for j, c in enumerate(line)), low, high,
                tuple((j, None if j in varies else line[j]) for j in range(low, high)))
            if len(self._shapes) >= _CACHED:
                self._shapes.clear()
            self._shapes[key] = shape
        return shape, masked, self._unstamped(known.after) if isinstance(known.after, str) else False

    def count_stamped(self, copies: int, line_no: int, last: str) -> None:
        """Count `copies` more copies of other times of the line `again` just counted so (see
        `stamped_copies`), the last one, `last`, on line `line_no`: each would be counted so, one
        by one, and only the last one's time stays."""
        assert self.stamped is not None  # noqa: S101
        known, firsts, split = self.stamped
        stamp = None
        if known.clock is not None and known.clock >= 0:
            start, end = split[2][known.clock]
            stamp = stamp_time(last[start:end])
        when = stamp[0] if stamp else None
        for first in firsts:
            _count(first, copies, line_no, when if when is not None else first.time)

    def remember(self, line: str, events: list[Event], open_world: bool, after: str | bool) -> None:
        """Note a line whose events its text decides, with the text of the lines after it where
        that mattered (see the module's doc)."""
        if self.frozen:
            return
        if len(line) not in self.met:  # the first line of its length: no copy of it came before
            if len(self.met) < MAX_LINES:
                self.met.add(len(line))
            return
        masked, pieces, spans, *_ = self._stamps(line)
        clock = _clock(events, pieces)
        by_context = self._by_context(masked)
        known = None
        if by_context is not None:
            known = by_context.get(self._unstamped(after) if isinstance(after, str) else False)
        if known is None:
            if self.size >= MAX_LINES:
                return
            stamp = stamp_time(pieces[clock]) if clock is not None and clock >= 0 else None
            entry = _Line(events, None, open_world, line, after, clock, stamp)
            if isinstance(after, str):
                self.unsettled.setdefault(masked, []).append(entry)
            else:
                self.lines.setdefault(masked, {})[False] = entry
            self.size += 1
            if spans and spans[-1][1] > len(line) - _TAIL:
                self.tails = None
            elif self.tails is not None:
                self.tails.add(line[-_TAIL:])
        elif known.line != line or known.after != after:  # a copy of another time: see the doc
            if (clock is not None and clock == known.clock and open_world == known.open_world
                    and [self._key(event) for event in events] == self._keys(known)):
                known.seen = True
            else:
                known.varies = True

    def fold(self, events: list[Event]) -> list[Event]:
        """The events not seen before; those that were are counted on their first copy."""
        new: list[Event] = []
        for event in events:
            rough = self._rough_key(event)
            if rough not in self.rough:  # the first of its rough key: nothing to fold it on
                if len(self.keys) + self._unkeyed < MAX_KEYS:
                    self.rough[rough] = event
                    self._unkeyed += 1
                new.append(event)
                continue
            self._settle(rough)
            key = (rough, self._masked(event))
            first = self.keys.get(key)
            if first is None or _later_episode(first, (event.time, True) if event.time is not None else None):
                if first is not None or len(self.keys) + self._unkeyed < MAX_KEYS:
                    self.keys[key] = event
                new.append(event)
            elif first is not event:
                _count(first, event.count, event.last_line or event.evidence.line,
                       event.last_time if event.last_time is not None else event.time)
        return new

    def _stamps(self, line: str) -> _Split:
        """The line taken apart: its text without its stamps, and the stamps.

        A crash loop's next copy has its stamps where the last one had them, as wide, and the
        rest the same: taken apart by comparing it with that one (the stamps' pattern tells
        digits from each other by none but their class), else by the pattern."""
        split = self._split.get(line)
        if split is not None:
            return split
        last = self._last
        if last is not None and last[2] and len(line) == len(last[4]):
            masked, _, spans, shape, before = last
            a, b = spans[0][0], spans[-1][1]
            if line[b:] == before[b:] and line[:a] == before[:a] and line[a:b].translate(_ZEROS) == shape:
                split = (masked, [line[s:e] for s, e in spans], spans, shape, line)
        if split is None:
            spans = stamp_spans(line)
            ends = [0] + [e for _, e in spans]
            masked = "\x00".join(line[ends[i]:s] for i, (s, _) in enumerate(spans)) + "\x00" + line[ends[-1]:] \
                if spans else line
            shape = line[spans[0][0]:spans[-1][1]].translate(_ZEROS) if spans else ""
            split = (masked, [line[s:e] for s, e in spans], spans, shape, line)
        if len(self._split) >= _CACHED:
            self._split.clear()
        self._split[line] = self._last = split
        return split

    def _by_context(self, masked: str) -> dict[str | bool, _Line] | None:
        """The lines remembered whose text without stamps is `masked`, by the text after them."""
        for entry in self.unsettled.pop(masked, ()):
            after = self._unstamped(entry.after) if isinstance(entry.after, str) else False
            self.lines.setdefault(masked, {}).setdefault(after, entry)
        return self.lines.get(masked)

    def _keys(self, entry: _Line) -> list[Hashable]:
        """The keys of a remembered line's events, each in `keys` where its event was kept."""
        if entry.keys is None:
            entry.keys = [self._key(event) for event in entry.events]
        return entry.keys

    def _key(self, event: Event) -> Hashable:
        """All of an event but its line number and its time: equal keys, the same event.

        The line's text counts with its time stamps blanked, and a `time` field (a rule's own
        reading of the clock, which `Event.time` holds) not at all."""
        return self._rough_key(event), self._masked(event)

    def _rough_key(self, event: Event) -> Hashable:
        """An event's key (`_key`) but for its line's text: events of equal keys have equal ones."""
        who = event.identity
        ev = event.evidence
        fields = event.fields
        if "time" in fields:
            fields = {k: v for k, v in fields.items() if k != "time"}
        return (event.rule_id, event.kind, event.phase, event.severity, event.message,
                (who.rank, who.local_rank, who.host, who.pid, who.device, tuple(who.learnt_from.items())),
                tuple(fields.items()), event.time is None, event.time_has_year, event.family, event.category,
                ev.source, ev.rule_id)

    def _masked(self, event: Event) -> str:
        text = event.evidence.text
        return (self._split.get(text) or self._stamps(text))[0]

    def _settle(self, rough: Hashable) -> None:
        """Put the event kept under a rough key into `keys`, under its whole key."""
        kept = self.rough.get(rough)
        if kept is not None:
            self.rough[rough] = None
            self._unkeyed -= 1
            self.keys[(rough, self._masked(kept))] = kept

    def _unstamped(self, text: str) -> str:
        """The text of a line or a few with their time stamps blanked, from the lines' cache."""
        split = self._split
        masked = [(split.get(part) or self._stamps(part))[0] for part in text.split("\n")]
        return masked[0] if len(masked) == 1 else "\n".join(masked)


@dataclass(frozen=True)
class CopyShape:
    """The lines that are copies of one line but for its stamps' digits (`Repeats.stamped_copies`),
    as a regex (`re`) and as columns: those from `low` to `high` hold a digit where the column says
    None, else the character it says; the others are the line's own."""

    pattern: str
    low: int
    high: int
    columns: tuple[tuple[int, str | None], ...]


# A line taken apart (see `Repeats._stamps`): the line with its stamps blanked (each a NUL), its
# stamps, where they are, the line from its first stamp to the end of its last with every digit a
# 0, and the line. (A tuple: one is made for every line of a crash loop.)
_Split = tuple[str, list[str], list[tuple[int, int]], str, str]


_ZEROS = str.maketrans("123456789", "000000000")
_DIGITS = frozenset("0123456789")


def _clock(events: list[Event], pieces: list[str]) -> int | None:
    """Which of a line's stamps its events' time is: -1 where they have none, None where it is
    none of them (a rule's own reading of another clock)."""
    times = {(event.time, event.time_has_year) for event in events}
    if not times or times == {(None, True)}:
        return -1
    if len(times) == 1:
        (when,) = times
        for at, piece in enumerate(pieces):
            if stamp_time(piece) == when:
                return at
    return None


def _count(first: Event, copies: int, line_no: int, when: float | None) -> None:
    first.count += copies
    first.last_line = line_no
    if when is not None and first.time is not None:
        first.span = round(when - first.time, 6)  # microseconds: the finest clock here


def _later_episode(first: Event, stamp: Stamp) -> bool:
    """Whether a copy at `stamp` comes so long after the last one that it is another episode."""
    if stamp is None or first.time is None:
        return False
    return stamp[0] - (first.time + first.span) > EPISODE_GAP_S
