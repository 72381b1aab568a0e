"""Process groups and communicators, and how far each member got in each.

A PyTorch process group (`[PG ID 2 PG GUID 3(tp) Rank 1]`) or an NCCL communicator (`commId`)
has its own collective sequence: SeqNum 57 of the `tp` group has nothing to do with SeqNum 57 of
the default group. So progress (last enqueued, completed, the collective a rank timed out in) is
kept per (group, rank), and the lagging-rank and mismatch reasoning happens inside one group.
"""

from __future__ import annotations

from triage.identity import group_ref
from triage.model import Event, Kind, Member, ProcessGroup

DEFAULT = "pg:0"
_GROUP_OR_SEQUENCE = frozenset({"pg_key", "seq", "enqueued", "completed"})


def build_groups(events: list[Event], world_size: int | None) -> dict[str, ProcessGroup]:
    """The groups seen in the events, with each member's progress in each.

    The events are the identity stage's: it named the group of every line that speaks of one in
    its `pg_key` field, so a line without one speaks of none (and is not asked again)."""
    groups: dict[str, ProcessGroup] = {}
    # The lines with a writer that name a group or track a sequence, and their group, asked once.
    refs = [(rank, event, group_ref(event, world_size) if "pg_key" in event.fields else None)
            for event in events if (rank := event.identity.rank) is not None
            and not event.fields.keys().isdisjoint(_GROUP_OR_SEQUENCE)]
    # A watchdog line carries only the work's `[Rank r]`; the lines around it carry the group.
    # Pair them by (rank, SeqNum).
    seq_group: dict[tuple[int, str], str] = {}
    for rank, event, ref in refs:
        if "seq" in event.fields and ref is not None and ref.key != "pg:?":
            seq_group.setdefault((rank, event.fields["seq"]), ref.key)
    for rank, event, ref in refs:
        tracks = "seq" in event.fields or "enqueued" in event.fields or "completed" in event.fields
        if ref is None and not tracks:
            continue
        unnamed = ref is not None and ref.key == "pg:?"
        if unnamed:
            ref = None  # a sub-group the line does not name: the lines around it may
        if ref is None:
            key = seq_group.get((rank, event.fields.get("seq", "")), DEFAULT)
            if unnamed and key == DEFAULT:
                continue  # not the default group's sequence, and no other to key it by
            if (group := groups.get(key)) is None:
                group = groups[key] = ProcessGroup(key=key, default=key == DEFAULT)
        else:
            if (group := groups.get(ref.key)) is None:
                group = groups[ref.key] = ProcessGroup(key=ref.key, default=ref.default)
            group.desc = group.desc or ref.desc
            group.size = group.size or ref.size
        member = group.member(rank)
        if ref is not None and ref.group_rank is not None and member.group_rank is None:
            member.group_rank = ref.group_rank
        _track(member, event)
    if world_size and DEFAULT in groups:
        groups[DEFAULT].size = world_size
    return groups


def _track(member: Member, event: Event) -> None:
    fields = event.fields
    if event.kind is Kind.TIMEOUT:
        member.timeouts.append(event)
        if fields.get("seq", "").isdigit():
            seq = int(fields["seq"])
            if member.stuck_seq is None or seq < member.stuck_seq:
                member.stuck_seq = seq
                member.stuck_op = fields.get("op") or member.stuck_op
            elif seq == member.stuck_seq and fields.get("op") and not member.stuck_op:
                member.stuck_op = fields["op"]
    for key in ("enqueued", "completed"):
        value = fields.get(key, "")
        # 2.3 prints garbage or -1 for "last completed" at times (docs/formats.md §1.5): ignore those.
        if value.isdigit() and len(value) < 12:
            current = getattr(member, key)
            setattr(member, key, max(current, int(value)) if current is not None else int(value))
