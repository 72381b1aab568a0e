"""Paths: what a source's path says of its writer, and torchrun's `--log-dir` layout."""

from __future__ import annotations

from collections import defaultdict

from triage.identity.state import State, launcher_record, note_disagreement, set_once, still_unknown
from triage.ingest import identity as layout
from triage.ingest.identity import identity_from_path
from triage.lazy_regex import lazy_compile
from triage.model import Identity, Kind

_TORCHRUN_LAYOUT = lazy_compile(r"attempt_\d+[/!]\d+[/!](?:stdout|stderr|error)\.(?:log|json)$")


def from_path(state: State) -> None:
    """The source's path, less the folders that every source shares."""
    names = [s.name for s in state.sources]
    shared = layout.shared_folders(names)
    for source in state.sources:
        parts = source.name.replace("\\", "/").replace("!", "/").split("/")
        keep = shared
        if "attempt_" in source.name and _TORCHRUN_LAYOUT.search(source.name):
            keep = min(keep, len(parts) - 3)  # `attempt_0/<local_rank>/stderr.log` is one writer's
        own = "/".join(parts[max(0, keep):])
        key = state.writers.group_of[source.name]
        found = identity_from_path(own)
        if found.host is None and keep > 0:
            # A host folder above every source still says which one host they all came from;
            # only rank words there would mislead (`hang-rank2/` is not rank 2's folder).
            full = identity_from_path(source.name)
            if full.host is not None:
                found.host = full.host
                found.learnt_from["host"] = full.learnt_from["host"] + " (shared by every source)"
        if found.host is None and source.identity.host is not None:
            # Stated with the source itself (`triage extract --host NAME`), where the path says nothing.
            found.host = source.identity.host
            found.learnt_from["host"] = source.identity.learnt_from.get("host", "stated")
        current = state.writers.identities.get(key)
        if current is not None:
            note_disagreement(state, key, current, found, "path")
            found = current.merged_over(found)
        state.writers.identities[key] = found


def from_log_dirs(state: State) -> None:
    """torchrun's `--log-dir` layout names a file's local rank; its node's base gives the rank.

    The files under one `<run_id>_<rand>/` are one node's workers: where some are known by rank,
    the others are that base (rank - local rank) plus their local rank. Where none is and the job
    shows one node (one log dir, one host at most, no rank that differs from its local rank), the
    local rank is the rank, and the identity says it was taken so.
    """
    by_dir: dict[str, list[tuple[str, Identity]]] = defaultdict(list)
    for key, ident in state.writers.identities.items():
        if ident.learnt_from.get("local_rank") == layout.TORCHRUN_LOCAL and (d := layout.log_dir(key)) is not None:
            by_dir[d].append((key, ident))
    hosts = {i.host for i in state.writers.identities.values() if i.host}
    offset = False  # a rank that is not its local rank: a node not the first
    for e in state.events:
        ident = e.identity
        if ident.host:
            hosts.add(ident.host)
        if ident.rank is not None and ident.local_rank is not None and ident.rank != ident.local_rank:
            offset = True
    offset |= any(launcher_record(e) and e.fields["rank"] != e.fields["local_rank"] for e in state.of_kinds(Kind.EXIT))
    single = len(by_dir) == 1 and len(hosts) <= 1 and not offset
    for members in by_dir.values():
        bases = {i.rank - i.local_rank for _, i in members if i.rank is not None and i.local_rank is not None}
        for key, ident in members:
            if ident.rank is not None or ident.local_rank is None or not (len(bases) == 1 or (single and not bases)):
                continue
            base, how = (next(iter(bases)), layout.NODE_BASE) if bases else (0, layout.ONE_NODE)
            rank = base + ident.local_rank
            if rank >= 0 and not (state.world_size and rank >= state.world_size):
                set_once(state, key, ident, "rank", rank, how)
    list(still_unknown(state))  # the files' lines take their writer's rank
