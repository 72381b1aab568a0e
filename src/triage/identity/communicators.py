"""Communicator lines: the world communicator's init line and HCCL's key info name a process's rank,
device and server."""

from __future__ import annotations

from collections import defaultdict

from triage.identity.state import State, set_once
from triage.model import Identity, Kind


def from_communicators(state: State) -> None:
    """In the world communicator (nranks == world size) the NCCL/HCCL rank is the global rank."""
    size = state.world_size
    if not size:
        return
    nranks = str(size)
    for event in state.of_kinds(Kind.INIT_START, Kind.INIT_DONE):
        fields = event.fields
        if fields.get("nranks") != nranks:
            continue
        if not fields.get("rank", "").isdigit():
            continue
        rank = int(fields["rank"])
        key = state.writers.group_of[event.evidence.source]
        if event.identity.rank is None:
            event.identity.rank = rank
            event.identity.learnt_from["rank"] = "rank in the world communicator's init line"
        elif event.identity.rank != rank:
            state.conflict(key, f"the world communicator says rank {rank}, the line's prefix "
                                f"rank {event.identity.rank}")
        if key not in state.interleaved:  # else the line's writer only: its pid carries it on
            ident = state.writers.identities.setdefault(key, Identity())
            set_once(state, key, ident, "rank", rank, "rank in the world communicator's init line")


def from_key_info(state: State) -> None:
    """HCCL's `[LocalRank Key Info]` names its process's device and server, for every file of it.

    One process writes several plogs (debug and run, rotated) and device logs (`device-<id>/
    device-<pid>_…`), all with its pid in their names; what one of them says of the process holds
    for all. Its userRank is the process's rank only when every communicator it joined gave the
    same one (a sub-communicator's userRank is a rank inside that group).
    """
    said: dict[tuple[str | None, int], dict[str, set[int | str]]] = defaultdict(lambda: defaultdict(set))
    for event in state.of_families("hccl"):
        fields = event.fields
        if event.kind is not Kind.INFO or "device" not in fields:
            continue
        group = state.group(event)
        pid = group.pid if group is not None and group.pid is not None else event.identity.pid
        if pid is None or not fields["device"].isdigit():
            continue
        facts = said[(group.host if group is not None else None, pid)]
        facts["device"].add(int(fields["device"]))
        if host := fields.get("ip"):  # hostIp: the server the process runs on
            facts["host"].add(host)
        if fields.get("rank", "").isdigit():
            facts["rank"].add(int(fields["rank"]))
    how = "HCCL [LocalRank Key Info] of its pid"
    for key, ident in state.writers.identities.items():
        if ident.pid is None:
            continue
        known = said.get((ident.host, ident.pid)) or said.get((None, ident.pid))
        if not known:
            continue
        for name in ("device", "host", "rank"):
            if len(known[name]) == 1 and (name != "host" or ident.host is None):
                set_once(state, key, ident, name, next(iter(known[name])), how)
    # Other processes' logs about a device (hccp_service's `device-<id>/` logs: its own pid) are
    # the rank's that drove that device on that server.
    slots: dict[tuple[str, int], set[int]] = defaultdict(set)
    for ident in state.writers.identities.values():
        if ident.host and ident.device is not None and ident.rank is not None:
            slots[(ident.host, ident.device)].add(ident.rank)
    for event in state.events:  # the rank table (RANK_TABLE_FILE): server id, device id, rank
        fields = event.fields
        if fields.get("table_rank", "").isdigit() and fields.get("device", "").isdigit() and fields.get("ip"):
            slots[(fields["ip"], int(fields["device"]))].add(int(fields["table_rank"]))
    for key, ident in state.writers.identities.items():
        if ident.rank is None and ident.host and ident.device is not None:
            ranks = slots.get((ident.host, ident.device), set())
            if len(ranks) == 1:
                set_once(state, key, ident, "rank", next(iter(ranks)),
                     "the rank that drove its device on its server (key info or rank table)")
