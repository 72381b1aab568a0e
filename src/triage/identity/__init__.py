"""The identity stage: who wrote each source and each line, resolved in one place.

Every other stage only observes: ingest gives a source's display name, the scanner what each
line's launcher prefix and writer envelope say (`[rank3]:`, `[default3]:`, `host:pid:tid`) and what
the first lines of a source say. Here those observations are weighed by an ordered list of
resolvers, each filling only what is still unknown and recording how it learnt it:

  path → launcher consoles → first lines → line prefixes → triage.health lines
  → process-group prefixes → stated ranks → communicator lines → HCCL key info → host slots → pids
  → torchrun log dirs → (stated ranks settled)

What one line of a file establishes about its writer (the world communicator's `rank r nranks n`,
a `host:pid` prefix seen with a rank, `triage-health rank r:`) holds for the whole file and for that pid everywhere. Path
components that every source shares (the folder the user put the job in) never give a rank;
a host folder there still names the one host they all came from.
Two signals that disagree about a source are reported on that source, never silently resolved.
Adding a launcher or a family is one resolver in `RESOLVERS`.

One module per kind of resolver: `paths` (path, torchrun log dirs), `launchers` (launcher consoles,
pids), `prefixes` (line prefixes and envelopes, stated ranks), `process_groups`, `communicators`
(world communicator, HCCL key info), `hosts` (host slots, shared host names); `state` holds what
they share.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter

from triage.identity.communicators import from_communicators, from_key_info
from triage.identity.hosts import from_host_slots
from triage.identity.launchers import from_launcher_consoles, from_pids
from triage.identity.paths import from_log_dirs, from_path
from triage.identity.prefixes import (
    from_first_lines,
    from_health_lines,
    from_line_prefixes,
    from_stated_ranks,
    settle_stated_ranks,
)
from triage.identity.process_groups import GroupRef, from_group_prefixes, group_ref
from triage.identity.state import State, Writers, about_another
from triage.ingest import identity as layout
from triage.ingest.identity import group_key
from triage.model import Event, SourceInfo

_SOURCE = attrgetter("evidence.source")

__all__ = ["RESOLVERS", "GroupRef", "Writers", "about_another", "group_ref", "resolve"]


def resolve(events: list[Event], sources: list[SourceInfo], world_size: int | None) -> Writers:
    """Resolve every source's writer and every event's identity (events are updated in place)."""
    group_of = {s.name: group_key(s.name) for s in sources}
    for name in dict.fromkeys(map(_SOURCE, events)):  # each source's name once, in order
        if name not in group_of:
            group_of[name] = group_key(name)
    state = State(sources, events, world_size, Writers(group_of, {}))
    for resolver in RESOLVERS:
        resolver(state)
    for source in sources:
        source.identity = state.writers.of_source(source.name)
        source.conflicts = state.writers.conflicts.get(group_of[source.name], [])
        if source.identity.learnt_from.get("rank") == layout.ONE_NODE:
            note = layout.ONE_NODE_NOTE.format(rank=source.identity.rank)
            if note not in source.notes:
                source.notes.append(note)
    return state.writers


RESOLVERS: tuple[Callable[[State], None], ...] = (
    from_path, from_launcher_consoles, from_first_lines, from_line_prefixes, from_health_lines, from_group_prefixes,
    from_stated_ranks, from_communicators, from_key_info, from_host_slots, from_pids, from_log_dirs, settle_stated_ranks,
)
