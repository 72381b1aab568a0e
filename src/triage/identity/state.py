"""What the identity stage's resolvers share: the state they fill, and how they record what they learn."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from operator import attrgetter

from triage.event_index import EventIndex
from triage.model import Event, Identity, Kind, SourceInfo

# Launchers whose lines speak of the workers they run.
LAUNCHERS = ("torchrun", "slurm")
PID_OWN = "pid seen in the rank's own lines"
PID_RECORD = "pid in the launcher's record of the rank"


@dataclass
class Writers:
    """The outcome of the stage: one identity per source group, and how sources group."""

    group_of: dict[str, str]  # source name -> group key (files one process wrote together)
    identities: dict[str, Identity]  # group key -> its writer
    conflicts: dict[str, list[str]] = field(default_factory=dict)  # group key -> what disagreed

    def of_source(self, name: str) -> Identity:
        return self.identities.get(self.group_of.get(name, name), Identity())


@dataclass
class State:
    """What the resolvers read and fill, in order: the sources, their events, the writers so far.

    The events are indexed once by family and by kind, so that a resolver that asks about a few
    families or kinds reads those events only, in the events' order, not every event of the job.
    """

    sources: list[SourceInfo]
    events: list[Event]
    world_size: int | None
    writers: Writers
    interleaved: set[str] = field(default_factory=set)  # groups whose lines come from many writers
    _by_family: EventIndex[str] = field(init=False, repr=False)
    _by_kind: EventIndex[Kind] = field(init=False, repr=False)
    # The events whose rank was unknown when last asked (a rank once learnt is never unlearnt).
    _unknown: list[Event] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_family = EventIndex(self.events, attrgetter("family"))
        self._by_kind = EventIndex(self.events, attrgetter("kind"))
        self._unknown = [e for e in self.events if e.identity.rank is None]

    def of_families(self, *families: str) -> list[Event]:
        """The events of these families, in the events' order."""
        return self._by_family.of(*families)

    def of_kinds(self, *kinds: Kind) -> list[Event]:
        """The events of these kinds, in the events' order."""
        return self._by_kind.of(*kinds)

    def group(self, event: Event) -> Identity | None:
        key = self.writers.group_of.get(event.evidence.source, event.evidence.source)
        return self.writers.identities.get(key)

    def conflict(self, key: str, text: str) -> None:
        notes = self.writers.conflicts.setdefault(key, [])
        if text not in notes:
            notes.append(text)


def still_unknown(state: State) -> Iterator[Event]:
    """Events whose rank is still unknown, after taking their file's if a resolver just found it."""
    remaining: list[Event] = []
    for event in state._unknown:
        if event.identity.rank is not None:
            continue
        group = state.group(event)
        if group is not None and group.rank is not None:
            event.identity = event.identity.merged_over(group)
            continue
        remaining.append(event)
        yield event
    state._unknown = remaining


def launcher_record(event: Event) -> bool:
    """A launcher's record of one worker: its host, global rank and local rank."""
    fields = event.fields
    return (event.kind is Kind.EXIT and {"host", "rank", "local_rank"} <= fields.keys()
            and fields["rank"].isdigit() and fields["local_rank"].isdigit())


# Families whose lines speak of a worker, and the ways a line's rank is learnt from what it says.
_SPEAKING_OF_WORKERS = (*LAUNCHERS, "ras")
_NAMED_RANKS = ("rank named in the message", "host and local rank, matched elsewhere",
                "host's rank base plus local rank", PID_OWN, PID_RECORD)


def about_another(event: Event) -> bool:
    """A launcher's or a tool's line about a worker (`exitcode: -9 … rank: 3`), filed under the rank
    it names: not a line that rank wrote."""
    return event.family in _SPEAKING_OF_WORKERS and event.identity.learnt_from.get("rank") in _NAMED_RANKS


def set_once(state: State, key: str, ident: Identity, name: str, value: int | str, how: str) -> None:
    """Learn `name` of a source group's writer, or report that it disagrees with what is known."""
    current = getattr(ident, name)
    if current is None:
        setattr(ident, name, value)
        ident.learnt_from[name] = how
    elif current != value:
        state.conflict(key, f"{name}: {ident.learnt_from.get(name, '?')} says {current}, "
                            f"{how} say {value}; kept {current}")


def note_disagreement(state: State, key: str, current: Identity, found: Identity, how: str) -> None:
    """Report each field that two signals about one source group give differently."""
    for name in ("rank", "local_rank", "host", "pid", "device"):
        a, b = getattr(current, name), getattr(found, name)
        if a is not None and b is not None and a != b:
            state.conflict(key, f"{name}: {current.learnt_from.get(name, '?')} says {a}, {how} says {b}")
