"""Process groups: which group a line speaks of (`[PG ID 2 PG GUID 3(tp) Rank 1]`, communicator
fields), and the writer's rank inside it."""

from __future__ import annotations

from dataclasses import dataclass

from triage.identity.state import State
from triage.lazy_regex import lazy_compile
from triage.model import Event

# `[PG ID 2 PG GUID 3(tp) Rank 1]` (2.5+), `[PG 3 (tp) Rank 1]` / `[PG 3 Rank 1]` (2.2-2.4).
_PG_PREFIX = lazy_compile(
    r"\[(?:PG ID (?P<pg_id>\d+) PG GUID (?P<guid>[^\s(\]]+)(?:\((?P<desc>[^)\]]*)\))?"
    r"|PG (?P<name>[^\s(\]]+)(?: \((?P<desc2>[^)\]]*)\))?) Rank (?P<pg_rank>\d+)\]"
)
# The `pg` field some rules capture: `3(tp)`, `0 (default_pg)`, `0`.
_PG_FIELD = lazy_compile(r"^(?P<guid>[^\s(]+)\s?(?:\((?P<desc>[^)]*)\))?$")
_DEFAULT_DESCS = {"default_pg", "undefined", ""}


@dataclass
class GroupRef:
    """Which process group a line speaks of, and the writer's rank inside it."""

    key: str  # `pg:<guid>` for a PyTorch process group, `comm:<commId>` for an NCCL communicator
    default: bool  # the world group (PyTorch default_pg, or a communicator of world size)
    desc: str | None = None
    group_rank: int | None = None
    size: int | None = None


def group_ref(event: Event, world_size: int | None = None) -> GroupRef | None:
    """The process group an event speaks of, from its `[PG … Rank r]` prefix or its fields."""
    fields = event.fields
    if "pg_key" in fields:
        return GroupRef(key=fields["pg_key"], default=fields["pg_key"] in ("pg:0", "pg:default_pg"),
                        desc=fields.get("pg_desc"),
                        group_rank=int(fields["pg_rank"]) if fields.get("pg_rank") else None)
    if fields.get("comm_id") and fields.get("nranks", "").isdigit():
        size = int(fields["nranks"])
        rank = fields.get("rank", "")
        return GroupRef(key=f"comm:{fields['comm_id']}", default=size == world_size,
                        group_rank=int(rank) if rank.isdigit() else None, size=size)
    m = _PG_PREFIX.search(event.evidence.text) if "PG " in event.evidence.text else None
    if m is not None:
        guid = m["guid"] or m["name"]
        desc = m["desc"] if m["desc"] is not None else m["desc2"]
        return _pg_ref(guid, desc, int(m["pg_rank"]))
    if (pg := fields.get("pg")) and (f := _PG_FIELD.match(pg.strip())):
        rank = fields.get("rank", "")
        return _pg_ref(f["guid"], f["desc"], int(rank) if rank.isdigit() else None)
    return None


def _pg_ref(guid: str, desc: str | None, group_rank: int | None) -> GroupRef:
    desc = (desc or "").strip()
    default = desc == "default_pg" or (guid == "0" and desc in _DEFAULT_DESCS)
    return GroupRef(key="pg:0" if default else f"pg:{guid}", default=default,
                    desc=desc if desc not in _DEFAULT_DESCS else ("default_pg" if default else None),
                    group_rank=group_rank)


def from_group_prefixes(state: State) -> None:
    """`[PG ID 2 PG GUID 3(tp) Rank 1]`: the group and the writer's rank inside it, on the event."""
    for event in state.events:
        ref = group_ref(event, state.world_size)
        stated = event.fields.get("rank", "")
        if ref is None and stated.isdigit() and event.identity.rank is not None and (
                "rank" in event.identity.learnt_from and int(stated) != event.identity.rank
                and event.family in ("pytorch", "store", "gloo")):
            # `[rank5]: Rank 1 successfully reached monitoredBarrier … from rank 0`: the message
            # speaks in a sub-group (group rank 1), so the ranks it names are not global ones.
            event.fields["pg_key"] = "pg:?"
            event.fields["pg_rank"] = stated
            event.names_group_ranks = True
            continue
        if ref is None:
            continue
        event.fields.setdefault("pg_key", ref.key)
        if ref.desc:
            event.fields.setdefault("pg_desc", ref.desc)
        if ref.group_rank is not None:
            event.fields.setdefault("pg_rank", str(ref.group_rank))
