"""Host slots: (host, local rank) pairs known somewhere give the rank elsewhere, with host names
that several nodes share kept apart per node."""

from __future__ import annotations

from collections import Counter, defaultdict

from triage.identity.state import State, launcher_record, still_unknown
from triage.ingest import identity as layout


def from_host_slots(state: State) -> None:
    """(host, local rank) → global rank, from the pairs known elsewhere (launcher records too).

    Cloned images report one hostname (`localhost`, `vm`) on every node: when one host name holds
    one local rank as two global ranks, seen in two nodes' files, the name is shared, and the
    launcher's layout (a folder per node, a console per node) tells the nodes apart. Slots of such
    a host are kept per node, so that lines of different nodes never merge.
    """
    scope_of = _node_scopes(state)
    # (host, local rank, rank, node scope), each once, in the order first seen (the first slot wins).
    seen: dict[tuple[str, int, int, str], None] = {}
    for event in state.events:
        ident = event.identity
        if ident.rank is not None and ident.host and ident.local_rank is not None:
            seen[ident.host, ident.local_rank, ident.rank,
                 scope_of.get(event.evidence.source, event.evidence.source)] = None
        if launcher_record(event):
            scope = scope_of.get(event.evidence.source, event.evidence.source)
            local, rank = int(event.fields["local_rank"]), int(event.fields["rank"])
            seen[event.fields["host"].split(".")[0], local, rank, scope] = None
            # The agent's record speaks of its own machine, whatever the folder that holds its
            # console is called (`node01/` for a machine whose hostname is `vm`).
            group = state.group(event)
            if group is not None and group.host:
                seen[group.host, local, rank, scope] = None
    for key, ident in state.writers.identities.items():
        if ident.rank is not None and ident.host and ident.local_rank is not None:
            seen[ident.host, ident.local_rank, ident.rank, scope_of.get(key, key)] = None
    shared = _shared_hostnames(list(seen))
    slots: dict[tuple[str, str | None, int], int] = {}
    for host, local, rank, scope in seen:
        slots.setdefault((host, scope if host in shared else None, local), rank)
    # Hosts with some known slots: rank = base + local rank (static, homogeneous launches).
    bases: dict[tuple[str, str | None], Counter[int]] = defaultdict(Counter)
    for (name, node_scope, slot_local), slot_rank in slots.items():
        bases[(name, node_scope)][slot_rank - slot_local] += 1

    # With one host known in the whole job (one host's console, pasted), a line that names no
    # host is from that host.
    known_hosts = {host for host, _, _ in slots} | {
        i.host for i in state.writers.identities.values() if i.host}
    only_host = next(iter(known_hosts)) if len(known_hosts) == 1 else None

    def lookup(host: str | None, local: int | None, source: str,
               key: str | None = None) -> tuple[int, str] | None:
        host = host or only_host
        if host is None or local is None:
            return None
        # A host name that several nodes report: the node is the one whose files hold the line.
        node = (host, scope_of.get(source, source) if host in shared else None)
        if (slot := (host, node[1], local)) in slots:
            return slots[slot], "host and local rank, matched elsewhere"
        if bases.get(node):
            base = bases[node].most_common(1)[0][0]
            rank = base + local
            if rank >= 0 and (not state.world_size or rank < state.world_size):
                return rank, "host's rank base plus local rank"
            # Slots that no static launch gives (local rank 1000 holding rank 3): the arithmetic
            # would give a negative or out-of-world rank, so none is given and the clash is said.
            if key is not None:
                known = ", ".join(f"local rank {lr} is rank {r}" for (h, sc, lr), r in sorted(
                    slots.items(), key=str) if (h, sc) == node and r - lr == base)
                state.conflict(key, f"rank: on {host} {known[:200]}, so local rank {local} would be rank "
                               f"{rank}, which no job has; its rank is left unknown")
        return None

    for key, ident in state.writers.identities.items():
        if ident.rank is None and (found := lookup(ident.host, ident.local_rank, key, key)):
            ident.rank, ident.learnt_from["rank"] = found
    for event in still_unknown(state):
        ident = event.identity
        # Launcher lines about a worker: `failed (exitcode: -9) local_rank: 3 (pid: 4242)`.
        worker = ident.local_rank
        if worker is None and event.fields.get("local_rank", "").isdigit():
            worker = int(event.fields["local_rank"])
        if found := lookup(ident.host, worker, event.evidence.source):
            ident.rank, ident.learnt_from["rank"] = found


def _node_scopes(state: State) -> dict[str, str]:
    """Which node's files each source (and source group) is among, as the layout shows it: the
    first folder below the ones every source shares (`x/console.log`, `x/logs/…/attempt_0/1/…`),
    or the file itself when the nodes' consoles lie side by side (`vm-a.log`, `vm-b.log`)."""
    names = sorted(state.writers.group_of)  # every source's name, and every event's (identity.resolve)
    shared = layout.shared_folders(names)
    scopes: dict[str, str] = {}
    for name in names:
        parts = name.replace("\\", "/").replace("!", "/").split("/")
        scopes[name] = "/".join(parts[:shared + 1])
    for name, key in state.writers.group_of.items():
        scopes.setdefault(key, scopes.get(name, name))
    return scopes


def _shared_hostnames(seen: list[tuple[str, int, int, str]]) -> set[str]:
    """Host names that stand for several nodes: one local rank of the name is two global ranks, each
    seen in another node's files."""
    ranks_at: dict[tuple[str, int], dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for host, local, rank, scope in seen:
        ranks_at[(host, local)][rank].add(scope)
    shared: set[str] = set()
    for (host, _), by_rank in ranks_at.items():
        if len(by_rank) > 1 and len(set().union(*by_rank.values())) > 1:
            shared.add(host)
    return shared
