"""Events indexed once by one of their attributes (family, kind, rule), for the stages that ask.

The identity resolvers and the principles each ask about a few families, kinds or rules of a job
that holds tens of thousands of events. Asking each question of every event costs a pass over all
of them per question (and on Python 3.11 each `Kind.X` read is a metaclass attribute hook); the
index is one pass, and a question then reads only the events it is about, in the list's order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from triage.model import Event

K = TypeVar("K", bound=Hashable)


class EventIndex(Generic[K]):
    """The positions of a list's events by `key(event)`; the list must not change afterwards."""

    def __init__(self, events: list[Event], key: Callable[[Event], K]) -> None:
        positions: dict[K, list[int]] = defaultdict(list)
        for i, event in enumerate(events):
            positions[key(event)].append(i)
        self._events, self._positions = events, dict(positions)

    def of(self, *keys: K) -> list[Event]:
        """The events whose key is one of `keys`, in the list's order."""
        found = [self._positions[k] for k in dict.fromkeys(keys) if k in self._positions]
        if len(found) == 1:
            return [self._events[i] for i in found[0]]
        return [self._events[i] for i in sorted(i for positions in found for i in positions)]
