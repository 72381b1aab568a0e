"""Building blocks for jobs: processes, communicators and their collective counts."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

from .model import FUNCS, Comm, Process, Rank


def processes(
    ips: Sequence[str],
    gpus: int = 8,
    seed: int = 1,
    pids: Sequence[int] | None = None,
) -> list[Process]:
    """One process per GPU on each node (pids random unless given), in node order."""
    rng = random.Random(seed * 7727 + 3)  # noqa: S311 - reproducible, not secret
    out: list[Process] = []
    for n, ip in enumerate(ips):
        host_hash = rng.getrandbits(64)
        base = rng.randrange(100_000, 3_800_000)
        for g in range(gpus):
            i = n * gpus + g
            pid = pids[i] if pids is not None else base + 7 * g + rng.randrange(0, 5)
            out.append(Process(ip, pid, (g,), host_hash=host_hash, pid_hash=rng.getrandbits(64)))
    return out


def counts(**by_func: int) -> tuple[int, int, int, int, int]:
    """counts(AllReduce=4100, Broadcast=3) -> the 5-tuple in FUNCS order."""
    unknown = set(by_func) - set(FUNCS)
    if unknown:
        raise ValueError(f"unknown collectives {sorted(unknown)}; RAS counts {FUNCS}")
    b, r, ag, rs, ar = (by_func.get(f, 0) for f in FUNCS)
    return (b, r, ag, rs, ar)


def world(procs: Sequence[Process], hash: int, **by_func: int) -> Comm:
    """The world communicator: rank i is procs[i]'s first GPU, every rank at the same counts."""
    c = counts(**by_func)
    return Comm(hash, [Rank(i, p, p.gpus[0], counts=c) for i, p in enumerate(procs)])


def sub(procs: Sequence[Process], members: Sequence[int], hash: int, **by_func: int) -> Comm:
    """A communicator of the given global ranks (procs indices), in that order."""
    c = counts(**by_func)
    return Comm(
        hash, [Rank(i, procs[g], procs[g].gpus[0], counts=c) for i, g in enumerate(members)]
    )


def with_counts(comm: Comm, ranks: Iterable[int], **by_func: int) -> None:
    """Set the counts of some ranks (communicator ranks) of comm, keeping the other collectives'."""
    for r in ranks:
        old = dict(zip(FUNCS, comm.ranks[r].counts, strict=True))
        old.update(by_func)
        comm.ranks[r].counts = counts(**old)
