"""A flight-recorder dump as events of family `fr`, compact enough for thousands of ranks.

A dump holds up to TORCH_FR_BUFFER_SIZE entries (2,000 by default) per rank; one event per entry
would make a 1,000-rank job two million events. So a dump gives (docs/formats.md §1.6.1):

- `fr-dump`: one per dump: its version, form, entry count and record range (a first record above
  0 means the ring buffer wrapped: its start was dropped);
- `fr-group`: one per process group: config (name, desc, ranks), status (last enqueued, started,
  completed), the ranges of sequence numbers its entries cover, and the signature of every
  collective in the buffer as runs (`fr_ops` over `fr_sigs`), so that an op, size or dtype that
  differs at one sequence number anywhere in the buffer can be found across ranks without the
  entries themselves;
- `fr-entry`: the entries that matter, per group: those not known to be complete (at most
  MAX_IN_FLIGHT: the first and the last halves), and the last LAST_DONE before them, with sizes,
  dtypes, state, times, timeout and the innermost frames.

All values are strings in `fields` (the field registry, triage.fields, says what each holds), so
the events go through a `triage extract` unchanged. Every event is INFO: nothing here is a
failure by itself; the progress model and the principles read them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from triage.model import Event, Evidence, Identity, Kind, Phase

if TYPE_CHECKING:  # the dump's reader is imported where a dump is read (triage.parse.fr)
    from triage.parse.fr.dump import Dump, Entry, Group

FAMILY = "fr"
DUMP, GROUP, ENTRY = "fr-dump", "fr-group", "fr-entry"
MAX_IN_FLIGHT = 64  # per group: the first and last 32 of those not known to be complete
LAST_DONE = 4  # per group: the last entries known complete before what is in flight
MAX_RUNS = 4096  # per group: runs of `fr_ops`
MAX_SIGS = 512  # per group: distinct signatures; the rest read as `?`
TEXT = 300  # an evidence text is cut here


def build(source: str, dump: Dump, rank: int | None, rank_how: str | None) -> list[Event]:
    identity = _identity(rank, rank_how)
    out = [_dump_event(source, dump, rank, identity)]
    by_group: dict[str, list[Entry]] = {}
    for entry in dump.entries:
        by_group.setdefault(entry.pg_name, []).append(entry)
    for name, group in {**dump.groups, **{f"#{k}": g for k, g in dump.status_only.items()}}.items():
        entries = by_group.get(name, []) if not name.startswith("#") else []
        out.append(_group_event(source, group, entries, identity))
        out.extend(_entry_event(source, e, why, identity) for e, why in tail(group, entries))
    return out


def latest_dumps(events: list[Event]) -> dict[int, Event]:
    """The dump event of each rank that left several (a periodic dumper, a dump at the timeout and one
    at the exit, `triage watch`'s snapshots): the latest, by the newest time its entries state, then
    by its last record id (a process's records only grow). Ranks with one dump are not listed."""
    dumps: dict[int, list[Event]] = {}
    for e in events:
        if e.family == "fr" and e.rule_id == DUMP and e.rank is not None:
            dumps.setdefault(e.rank, []).append(e)
    return {rank: max(ds, key=_dump_order) for rank, ds in dumps.items() if len({d.evidence.source for d in ds}) > 1}


def _dump_order(dump: Event) -> tuple[float, int]:
    record = dump.fields.get("fr_last_record", "")
    return dump.time or 0.0, int(record) if record.isdigit() else -1


def _identity(rank: int | None, how: str | None) -> Identity:
    if rank is None:
        return Identity()
    return Identity(rank=rank, learnt_from={"rank": how or "flight-recorder dump file name"})


def _event(rule: str, source: str, line: int, text: str, message: str, identity: Identity,
           fields: dict[str, str], time_ns: int | None) -> Event:
    return Event(rule_id=rule, kind=Kind.INFO, phase=Phase.UNKNOWN, severity="info", message=message,
                 identity=Identity(identity.rank, learnt_from=dict(identity.learnt_from)),
                 evidence=Evidence(source, line, text[:TEXT], rule_id=rule),
                 fields={k: v for k, v in fields.items() if v != ""},
                 time=time_ns / 1e9 if time_ns else None, family=FAMILY)


def _dump_event(source: str, dump: Dump, rank: int | None, identity: Identity) -> Event:
    records = [e.record_id for e in dump.entries if e.record_id is not None]
    times = [e.created_ns for e in dump.entries if e.created_ns]
    version = dump.version or "pre-2024"
    groups = len(dump.groups) + len(dump.status_only)
    fields = {"fr_version": version, "fr_form": dump.form, "fr_entries": str(len(dump.entries)),
              "fr_groups": str(groups), "fr_lib_version": dump.lib_version or "",
              "fr_file_rank": "" if rank is None else str(rank),
              "fr_first_record": str(min(records)) if records else "",
              "fr_last_record": str(max(records)) if records else ""}
    span = f", records {fields['fr_first_record']}-{fields['fr_last_record']}" if records else ""
    text = (f"flight-recorder dump, version {version} ({dump.form}): {len(dump.entries)} entries in "
            f"{groups} process groups{span}" + (f", comm lib {dump.lib_version}" if dump.lib_version else ""))
    return _event(DUMP, source, 0, text, text, identity, fields, max(times) if times else None)


def _group_event(source: str, group: Group, entries: list[Entry], identity: Identity) -> Event:
    colls = [e for e in entries if not e.is_p2p]
    p2p = [e for e in entries if e.is_p2p]
    seqs = [e.seq for e in colls if e.seq is not None]
    p2ps = [e.p2p_seq for e in p2p if e.p2p_seq is not None]
    ops = [e.op_id for e in entries if e.op_id is not None]
    fields = {
        "fr_pg": group.name, "fr_pg_desc": group.desc or "", "fr_pg_id": group.pg_id or "",
        "fr_pg_ranks": ",".join(map(str, group.ranks)) if group.ranks else "",
        "fr_pg_size": str(len(group.ranks)) if group.ranks else "",
        "fr_last_enqueued": _num(group.last_enqueued), "fr_last_started": _num(group.last_started),
        "fr_last_completed": _num(group.last_completed), "fr_entries": str(len(entries)),
        "fr_first_seq": _num(min(seqs) if seqs else None), "fr_last_seq": _num(max(seqs) if seqs else None),
        "fr_first_p2p": _num(min(p2ps) if p2ps else None), "fr_last_p2p": _num(max(p2ps) if p2ps else None),
        "fr_first_op_id": _num(min(ops) if ops else None), "fr_last_op_id": _num(max(ops) if ops else None),
        "fr_timeout_ms": _num(entries[-1].timeout_ms if entries else None),
    }
    fields.update(timeline(colls, "seq", "fr_ops", "fr_sigs"))
    fields.update(timeline(p2p, "p2p_seq", "fr_p2p_ops", "fr_p2p_sigs"))
    who = f"process group {group.name}" + (f" ({group.desc})" if group.desc else "")
    status = ", ".join(f"{k} {v}" for k, v in (("last enqueued", fields["fr_last_enqueued"]),
                                                ("started", fields["fr_last_started"]),
                                                ("completed", fields["fr_last_completed"])) if v)
    span = f"collectives #{fields['fr_first_seq']}-#{fields['fr_last_seq']}" if seqs else "no collectives"
    ranks = f", ranks [{fields['fr_pg_ranks']}]" if group.ranks and len(group.ranks) <= 16 else (
        f", {len(group.ranks)} ranks" if group.ranks else "")
    text = f"{who}{ranks}: {status or 'no status'}; {len(entries)} entries, {span}"
    return _event(GROUP, source, 0, text, text, identity, fields,
                  max((e.created_ns for e in entries if e.created_ns), default=None))


def done(entry: Entry, group: Group) -> bool:
    """Known complete: its state says so, or the group's last completed count is at or past it.

    gloo's pg_status counts every op (op_id: send and recv too), NCCL's the collectives; an entry
    is taken as complete only when both its op_id and its sequence number are within the count, so
    an entry in doubt is kept as possibly in flight."""
    if entry.state == "completed":
        return True
    last = group.last_completed
    if last is None or last < 0 or entry.seq is None:
        return False
    key = entry.p2p_seq if entry.is_p2p else entry.seq
    return key is not None and key <= last and (entry.op_id is None or entry.op_id <= last)


def tail(group: Group, entries: list[Entry]) -> list[tuple[Entry, str]]:
    """The entries of a group worth an event each, in buffer order, with why each was kept."""
    pending = [e for e in entries if not done(e, group)]
    kept: dict[int, tuple[Entry, str]] = {}
    half = MAX_IN_FLIGHT // 2
    for i, e in enumerate(pending):
        if len(pending) <= MAX_IN_FLIGHT or i < half or i >= len(pending) - half:
            kept[e.index] = (e, "in-flight")
    first_pending = pending[0].index if pending else None
    before = [e for e in entries if done(e, group) and (first_pending is None or e.index < first_pending)]
    for e in before[-LAST_DONE:]:
        kept[e.index] = (e, "last-completed")
    if len(pending) > MAX_IN_FLIGHT:
        e = pending[half]
        kept[e.index] = (e, f"in-flight; {len(pending) - MAX_IN_FLIGHT} more not kept")
    return [kept[i] for i in sorted(kept)]


def _entry_event(source: str, e: Entry, why: str, identity: Identity) -> Event:
    kept = e.frames
    frames = [[f.name, f.filename, f.line] for f in kept] if kept is not None else None
    fields = {
        "fr_pg": e.pg_name, "fr_pg_desc": e.pg_desc, "fr_entry": str(e.index), "fr_record": _num(e.record_id),
        "fr_seq": _num(e.seq), "fr_p2p_seq": _num(e.p2p_seq), "fr_op_id": _num(e.op_id),
        "fr_op": e.op, "fr_backend": e.backend, "fr_p2p_peers": e.p2p_peers or "",
        "fr_is_p2p": "" if e.is_p2p is None else str(int(e.is_p2p)),
        "fr_in_sizes": _json(e.in_sizes), "fr_out_sizes": _json(e.out_sizes),
        "fr_in_dtypes": _json(e.in_dtypes), "fr_out_dtypes": _json(e.out_dtypes),
        "fr_state": e.state or "", "fr_created_ns": _num(e.created_ns), "fr_started_ns": _num(e.started_ns),
        "fr_completed_ns": _num(e.completed_ns),
        "fr_duration_ms": "" if e.duration_ms is None else f"{e.duration_ms:g}",
        "fr_timeout_ms": _num(e.timeout_ms), "fr_frames": _json(frames),
        "fr_frames_total": str(e.frames_total) if kept is not None else "",
        "fr_thread": e.thread or "", "fr_kept": why,
    }
    seq = f"#{e.seq}" if not e.is_p2p else f"p2p #{e.p2p_seq}"
    where = f"pg {e.pg_name}" + (f"({e.pg_desc})" if e.pg_desc else "")
    sizes = _json(e.in_sizes) or "?"
    dtypes = ",".join(e.in_dtypes or []) or "?"
    top = next((f for f in kept or [] if "/torch/" not in f.filename), None)
    at = f" at {top.filename.rsplit('/', 1)[-1]}:{top.line} ({top.name})" if top else ""
    text = (f"entry {e.index}: record {_num(e.record_id) or '?'} {where} {e.profiling_name} {seq} "
            f"op_id {_num(e.op_id) or '?'} {e.state or '?'} in {sizes} {dtypes}{at}")
    message = f"{e.profiling_name} {seq} in {where}: {e.state or 'state unknown'} ({why}), in {sizes} {dtypes}"
    return _event(ENTRY, source, e.index + 1, text, message, identity, fields, e.created_ns)


def signature(e: Entry) -> str:
    """What must agree across the ranks of a collective: the op, sizes and dtypes."""
    return (f"{e.op}{' ' + e.p2p_peers if e.p2p_peers else ''} in={_compact(e.in_sizes)}:{','.join(e.in_dtypes or [])}"
            f" out={_compact(e.out_sizes)}:{','.join(e.out_dtypes or [])}")


def _compact(sizes: list[list[int]] | None) -> str:
    """`[[4,1024]]`, as `_json` writes it, at a fraction of its cost (ints only: str() is exact)."""
    return "" if sizes is None else str(sizes).replace(" ", "")


def timeline(entries: Iterable[Entry], key: str, ops_field: str, sigs_field: str) -> dict[str, str]:
    """Runs of consecutive sequence numbers with one signature: `1-40:0,41:1` over a list of them.

    Several entries at one number (coalesced ops, from 2.7) read as one signature, joined by ` + `.
    """
    at: dict[int, list[str]] = {}
    for e in entries:
        seq = getattr(e, key)
        if seq is not None:
            at.setdefault(seq, []).append(signature(e))
    if not at:
        return {}
    sigs: dict[str, int] = {}
    runs: list[list[int]] = []
    cut = False
    for seq in sorted(at):
        sig = " + ".join(at[seq])
        index = sigs.setdefault(sig, len(sigs)) if (sig in sigs or len(sigs) < MAX_SIGS) else -1
        if runs and runs[-1][1] == seq - 1 and runs[-1][2] == index:
            runs[-1][1] = seq
        elif len(runs) < MAX_RUNS:
            runs.append([seq, seq, index])
        else:
            cut = True
            break
    text = ",".join(f"{a}{'-' + str(b) if b != a else ''}:{'?' if i < 0 else i}" for a, b, i in runs)
    return {ops_field: text + (",…" if cut else ""), sigs_field: json.dumps(list(sigs), separators=(",", ":"))}


def parse_timeline(ops: str, sigs: str) -> dict[int, str]:
    """`fr_ops` and `fr_sigs` back to {sequence number: signature} (`?`: not kept)."""
    table = json.loads(sigs) if sigs else []
    out: dict[int, str] = {}
    for run in ops.split(","):
        if not run or run == "…":
            continue
        span, _, index = run.partition(":")
        first, _, last = span.partition("-")
        sig = "?" if index == "?" else table[int(index)]
        for seq in range(int(first), int(last or first) + 1):
            out[seq] = sig
    return out


def _num(value: int | None) -> str:
    return "" if value is None else str(value)


def _json(value: object) -> str:
    return "" if value is None else json.dumps(value, separators=(",", ":"))
