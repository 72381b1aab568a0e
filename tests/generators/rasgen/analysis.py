"""Per-communicator analysis (``rasClientRunComms``, first half): status, errors, the table's groups."""

from __future__ import annotations

from dataclasses import dataclass

from .formatting import _high_bit
from .model import ERROR, IN_PROGRESS, INCOMPLETE, MISMATCH, NOCOMM, Comm, Rank, Snapshot


@dataclass
class _Aux:
    comm: Comm
    reported: list[Rank]  # ranks whose data arrived
    missing: list[Rank]  # the others, by communicator rank
    status: int = 0
    errors: int = 0
    n_incomplete: int = 0  # missing because their process did not answer
    nodes: int = 0
    per_node: tuple[int, int] = (0, 0)


def _analyze(s: Snapshot, comm: Comm, old: bool) -> _Aux:
    reported = [r for r in comm.ranks if r.member and s.answered(r.process)]
    missing = [r for r in comm.ranks if not (r.member and s.answered(r.process))]
    aux = _Aux(comm, reported, missing)
    job_incomplete = bool(s.unresponsive) or bool(s.dead)
    if missing and old:
        # 2.24/2.25 cannot tell why a rank is missing: any missing process makes it INCOMPLETE.
        if job_incomplete:
            aux.errors |= INCOMPLETE
            aux.n_incomplete = len(missing)
        else:
            aux.errors |= MISMATCH
            aux.status |= NOCOMM
    for r in missing if not old else ():
        if s.answered(r.process):  # answered, but not as a member of this communicator
            aux.errors |= MISMATCH
            aux.status |= NOCOMM
        else:
            aux.errors |= INCOMPLETE
            aux.n_incomplete += 1
    per_ip: dict[str, int] = {}
    for r in reported:
        per_ip[r.process.ip] = per_ip.get(r.process.ip, 0) + 1
        aux.status |= r.status
        if r.init_state not in (0, IN_PROGRESS) or r.async_error not in (0, IN_PROGRESS):
            aux.errors |= ERROR
    first = reported[0] if reported else None
    if first is not None:
        if old and any(sum(r.counts) != sum(first.counts) for r in reported):
            aux.errors |= MISMATCH
        if not old and any(r.counts != first.counts for r in reported):
            aux.errors |= MISMATCH
    if bin(aux.status).count("1") > 1:
        aux.errors |= MISMATCH
    aux.nodes = len(per_ip)
    aux.per_node = (min(per_ip.values(), default=0), max(per_ip.values(), default=0))
    return aux


def _group_key(a: _Aux) -> tuple[int, int, int, int]:
    """What puts communicators in one row of the table: size, nodes, top status, errors."""
    return (a.comm.size, a.nodes, _high_bit(a.status), a.errors)


def _groups(auxes: list[_Aux]) -> list[list[_Aux]]:
    """Sort the communicators (rasAuxCommsCompareRev) and cut them into the table's groups.

    Largest first, then more nodes, higher status, more errors, more ranks missing; equal keys
    keep NCCL's data order (by hash).
    """
    ordered = sorted(
        auxes,
        key=lambda a: (*(-x for x in _group_key(a)), len(a.reported), a.comm.hash),
    )
    groups: list[list[_Aux]] = []
    for a in ordered:
        if groups and _group_key(groups[-1][0]) == _group_key(a):
            groups[-1].append(a)
        else:
            groups.append([a])
    return groups
