"""The job: what every source says of the whole job, put together (built by `triage.job.build`)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from operator import attrgetter

from triage.event_index import EventIndex
from triage.job.progress import Progress
from triage.model import Event, Kind, ProcessGroup, RankState

# A world size is a number a log or a user states, never an allocation size: up to this many ranks
# every rank gets a state (the grid shows each); beyond it only ranks with a log, an event or a name
# do, and the others are kept as ranges (`Job.unlisted`).
DENSE_RANKS = 8192


@dataclass
class Job:
    ranks: dict[int, RankState]
    world_size: int | None
    world_size_from: str | None
    events: list[Event]  # every event, in time order where times are known
    ip_hosts: dict[str, str] = field(default_factory=dict)  # address -> host name
    groups: dict[str, ProcessGroup] = field(default_factory=dict)  # process groups seen
    # Ranks of a world larger than DENSE_RANKS that left no log and no event: (first, last) ranges.
    unlisted: list[tuple[int, int]] = field(default_factory=list)
    # Each group's progress from dumps, logs and RAS together (triage.job.progress).
    progress: Progress = field(default_factory=Progress)
    # The events by kind, rule and family, indexed when first asked (the events no longer change then).
    _by_kind: EventIndex[Kind] | None = field(default=None, init=False, repr=False, compare=False)
    _by_rule: EventIndex[str] | None = field(default=None, init=False, repr=False, compare=False)
    _by_family: EventIndex[str] | None = field(default=None, init=False, repr=False, compare=False)

    def of_kinds(self, *kinds: Kind) -> list[Event]:
        """The events of these kinds, in time order."""
        if self._by_kind is None:
            self._by_kind = EventIndex(self.events, attrgetter("kind"))
        return self._by_kind.of(*kinds)

    def of_rules(self, *rule_ids: str) -> list[Event]:
        """The events these rules made, in time order."""
        if self._by_rule is None:
            self._by_rule = EventIndex(self.events, attrgetter("rule_id"))
        return self._by_rule.of(*rule_ids)

    def of_families(self, *families: str) -> list[Event]:
        """The events of these families, in time order."""
        if self._by_family is None:
            self._by_family = EventIndex(self.events, attrgetter("family"))
        return self._by_family.of(*families)

    def hosts(self) -> dict[str, list[int]]:
        by_host: dict[str, list[int]] = defaultdict(list)
        for rank, state in sorted(self.ranks.items()):
            if state.host:
                by_host[state.host].append(rank)
        return dict(by_host)
