"""Fold a crash loop: identical events of one source become one event with a count.

A rank in a crash loop prints one error line thousands or millions of times. Each copy would be one
more event for the job model, the diagnosis and every report to carry, and one more trip through
the rules. So, per source, where events are produced:

- an event identical to an earlier one of the source (same rule, message, fields, writer, time and
  line text: only its line number differs) is not kept again; the first one counts it
  (`Event.count`) and notes the last one's line (`Event.last_line`);
- a line whose events depend on nothing but its own text (every rule that may explain it matched
  the line alone: no block of following lines, no hard-wrap join, no traceback to look ahead for)
  is remembered with its events; the next copy of the line is counted on those events without a
  rule being tried again. A line some rule only failed to explain was also tried glued to the next
  lines (a hard wrap): it is remembered with the text of those lines, and a copy counts only when
  followed by the same. That keeps a crash loop's scan linear at a few dict look-ups a line.

Lines that differ (a timestamp or a counter that changes) are not identical events: they are kept
one by one, in time linear in their number. Both memories are bounded: past their size, lines and
events are simply not folded any more.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from triage.model import Event

MAX_LINES = 4096  # distinct lines remembered per source, with their events
MAX_KEYS = 1 << 16  # distinct events remembered per source, to fold the identical ones


class Repeats:
    """What one source has produced so far, to fold what repeats it."""

    def __init__(self) -> None:
        # line text -> the text of the lines after it (False: they do not matter) -> (its events,
        # whether they came from the open world: see `again`)
        self.lines: dict[str, dict[str | bool, tuple[list[Event], bool]]] = {}
        self.size = 0
        self.keys: dict[Hashable, Event] = {}
        self.frozen = False  # a rule was dropped for this source (regex budget): nothing is recalled

    def again(self, line: str, line_no: int, start: int, handled: set[int], end: int,
              context: Callable[[int], str | None]) -> bool:
        """Count a copy of a remembered line on its events; False when the line is not known.

        `context(end)` gives the text of the lines after it, for a line remembered with them."""
        by_context = self.lines.get(line)
        if by_context is None or self.frozen:
            return False
        known = by_context.get(False)
        if known is None and (after := context(end)) is not None:
            known = by_context.get(after)
        if known is None:
            return False
        events, open_world = known
        if open_world:
            # An error mark no rule explains: reported unless the line was part of an earlier
            # line's record, exactly as the line's own visit would decide.
            if start in handled:
                return True
            if events:
                handled.add(start)
        for event in events:
            event.count += 1
            event.last_line = line_no
        return True

    def remember(self, line: str, events: list[Event], open_world: bool,
                 after: str | bool) -> None:
        """Note a line whose events its text decides, with the text of the lines after it where
        that mattered (see the module's doc)."""
        if self.size < MAX_LINES and not self.frozen:
            self.lines.setdefault(line, {})[after] = (events, open_world)
            self.size += 1

    def fold(self, events: list[Event]) -> list[Event]:
        """The events not seen before; those that were are counted on their first copy."""
        new: list[Event] = []
        for event in events:
            key = _key(event)
            first = self.keys.get(key)
            if first is None:
                if len(self.keys) < MAX_KEYS:
                    self.keys[key] = event
                new.append(event)
            elif first is not event:
                first.count += event.count
                first.last_line = event.last_line or event.evidence.line
        return new


def _key(event: Event) -> Hashable:
    """All of an event but its line number: equal keys, identical events."""
    who = event.identity
    ev = event.evidence
    return (event.rule_id, event.kind, event.phase, event.severity, event.message,
            (who.rank, who.local_rank, who.host, who.pid, who.device, tuple(who.learnt_from.items())),
            tuple(event.fields.items()), event.time, event.time_has_year, event.family, event.category,
            ev.source, ev.text, ev.rule_id)
