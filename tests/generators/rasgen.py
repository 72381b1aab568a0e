"""Deterministic generator of NCCL RAS status dumps for a described job state.

NCCL's RAS thread (NCCL >= 2.24) answers ``ncclras`` / ``echo verbose status | nc localhost 28028`` /
``triage ras collect`` with a report of the whole job: a job summary, a table of the communicators,
then Errors (processes missing or DEAD, communicators INCOMPLETE or in ERROR) and Warnings (TIMEOUT,
MISMATCH of status or of operation counts).  This module describes a job state (processes, the
communicators with their ranks, each rank's status and per-collective counts, who did not answer
and who is dead) and renders what NCCL prints for it, byte for byte, in each format:

- text of NCCL 2.24 / 2.25 (``render_text`` with ``version="2.25.1"``);
- text of NCCL 2.26+ (verbose or not; ``(%.2fs)`` up to 2.28.3, ``(%.3fs)`` from 2.28.7);
- JSON of NCCL 2.28.7+ (``render_json``; 2.28.7-2.28.9 omit a comma in each ``missing_ranks``
  entry, so their document does not parse when a rank is missing: reproduced);
- monitor-mode event lines of NCCL 2.29+ (``monitor_line``).

Everything follows ``src/ras/client_support.cc`` of the NVIDIA/nccl tags v2.24.3-1, v2.25.1-1,
v2.26.2-1, v2.28.7-1, v2.28.9-1, v2.29.7-1 and v2.30.7-1 (= master at the time of writing):
``rasClientRunInit`` (header, job summary), ``rasClientRunComms`` (table, Errors, Warnings),
``rasClientBreakDownErrors``, ``rasCountIsOutlier`` (which per-rank lines are printed: a group of
one always; otherwise at most 10 ranks and at most 25% of the communicator, verbose: under 50%),
the ``json*`` writers and ``rasClientsNotifyEvent``.  Where NCCL's order is not defined (qsort of
equal keys), communicators are taken in NCCL's data order (by hash).

Only regular jobs are rendered (the same number of processes on every node, the same number of GPUs
per process); NCCL prints other tables for irregular ones.  Not rendered either: the text of 2.26.x
to 2.28.x when a communicator misses ranks and another follows it in NCCL's data order, which those
versions garble (their walk over the gathered data skips the missing-rank records: the later
communicators are read from the wrong place; fixed in 2.29.2).

Checked against a real NCCL: ``from_json`` turns a JSON dump back into a Snapshot, and the text and
JSON that NCCL 2.28.9 printed at the same moments (tests/fixtures/ras-captured-nccl2.28.9) are
rendered byte for byte (tests/test_ras_truth.py).

Usage, as a library::

    import rasgen
    procs = rasgen.processes(["10.1.0.1", "10.1.0.2"], gpus=8, seed=3)
    world = rasgen.world(procs, 0x6D4A1F0E22C3B5A7, Broadcast=3, AllReduce=4100)
    snap = rasgen.Snapshot(time=1_767_225_600.25, version="2.26.2", processes=procs,
                           comms=[world], dead=frozenset({procs[13].pid}))
    text = rasgen.render_text(snap)
    name = rasgen.file_name(snap, "text")     # ras-20260101T000000.250000Z.txt

or ``python -m generators.rasgen --demo`` (from tests/) to print one dump of each format.  The bundles
built with it are written by tests/generators/make_ras.py.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

# ncclFunc_t 0..4 (NCCL_NUM_FUNCTIONS == 5): the collectives RAS counts (src/init.cc ncclFuncStr).
FUNCS = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce")

# ncclResult_t values as RAS names them (client_support.cc ncclErrorToString).
ERRORS = {
    1: "Unhandled CUDA error",
    2: "System error",
    3: "Internal error",
    4: "Invalid argument",
    5: "Invalid usage",
    6: "Remote process error",
    7: "NCCL operation in progress",
}
IN_PROGRESS = 7  # ncclInProgress: init_state of a rank still initializing

# Communicator status bits (rasACStatus) and their names; 2.24/2.25 call bit 0 UNKNOWN, 2.26+ NOCOMM.
NOCOMM, INIT, RUNNING, FINALIZE, ABORT = 1, 2, 4, 8, 16
STATUS_NAMES = ("NOCOMM", "INIT", "RUNNING", "FINALIZE", "ABORT")
STATUS_NAMES_224 = ("UNKNOWN", "INIT", "RUNNING", "FINALIZE", "ABORT")
# Communicator error bits (rasACError), the index into the Errors column's strings.
MISMATCH, ERROR, INCOMPLETE = 1, 2, 4
ERROR_COLUMN = (
    "OK",
    "MISMATCH",
    "ERROR",
    "ERROR,MISMATCH",
    "INCOMPLETE",
    "INCOMPLETE,MISMATCH",
    "INCOMPLETE,ERROR",
    "INCOMPLETE,ERROR,MISMATCH",
)

DETAIL_THRESHOLD = 10  # RAS_CLIENT_DETAIL_THRESHOLD
OUTLIER_FRACTION = 0.25  # RAS_CLIENT_OUTLIER_FRACTION
VERBOSE_OUTLIER_FRACTION = 0.5  # RAS_CLIENT_VERBOSE_OUTLIER_FRACTION

MONITOR_BANNER = (
    "RAS Monitor Mode - watching for peer changes (Ctrl+C to exit)...\n"
    "================================================================\n"
)  # ncclras -m prints it on stderr (src/ras/client.cc, 2.29+)


# --------------------------------------------------------------------------------------------
# The job state


@dataclass(frozen=True)
class Process:
    """One process of the job as RAS knows it (a rasPeerInfo): its node address, pid and GPUs."""

    ip: str
    pid: int
    gpus: tuple[int, ...]  # CUDA device numbers
    nvml: tuple[int, ...] | None = None  # NVML numbers, when CUDA_VISIBLE_DEVICES renumbers them
    host_hash: int = 0  # getHostHash() and getPidHash(): the JSON's secondary_hash of a
    pid_hash: int = 0  # communicator is rank 0's, each plus the communicator's hash

    @property
    def nvml_devs(self) -> tuple[int, ...]:
        return self.nvml if self.nvml is not None else self.gpus


@dataclass
class Rank:
    """One rank of a communicator: the process driving it and what that process reports."""

    rank: int  # rank within the communicator
    process: Process
    gpu: int  # CUDA device
    nvml: int | None = None  # NVML device (None: the same as gpu)
    counts: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)  # launched collectives, FUNCS order
    init_state: int = 0  # ncclResult_t: 0 initialized, 7 still initializing, else the init error
    async_error: int = 0  # ncclCommGetAsyncError
    finalize_called: bool = False
    destroy_flag: bool = False
    abort_flag: bool = False
    member: bool = True  # False: the process answers but no longer has this communicator (NOCOMM)

    @property
    def nvml_dev(self) -> int:
        return self.gpu if self.nvml is None else self.nvml

    @property
    def status(self) -> int:
        """The rank's status bit, as rasClientRunComms derives it."""
        if self.abort_flag:
            return ABORT
        if self.finalize_called or self.destroy_flag:
            return FINALIZE
        return RUNNING if self.init_state == 0 else INIT


@dataclass
class Comm:
    """A communicator: its hash (RAS's commHash) and all its ranks, by communicator rank."""

    hash: int
    ranks: list[Rank]

    @property
    def size(self) -> int:
        return len(self.ranks)


@dataclass
class Snapshot:
    """What RAS sees at one moment; `time` is when the client sent STATUS (UTC epoch seconds)."""

    time: float
    version: str  # NCCL version, e.g. "2.26.2"
    processes: list[Process]  # every process of the job (rasPeers), dead ones included
    comms: list[Comm]
    cuda: str = "12.8"  # CUDA NCCL was compiled with
    runtime: int = 12080  # cudaRuntimeGetVersion
    driver: int = 12080  # cudaDriverGetVersion
    unresponsive: frozenset[int] = frozenset()  # pids that did not answer (not yet dead)
    dead: frozenset[int] = frozenset()  # pids RAS considers dead
    verbose: bool = False  # VERBOSE STATUS (ncclras -v)
    timeouts: int = 0  # communication timeouts while gathering the data
    seconds: float = 0.01  # how long gathering the data took
    utc_offset: int = 0  # the answering process's local time - UTC, seconds (JSON, monitor stamps)

    def answered(self, process: Process) -> bool:
        return process.pid not in self.unresponsive and process.pid not in self.dead


def vtuple(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split(".")[:3])


# --------------------------------------------------------------------------------------------
# Building blocks for jobs


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


# --------------------------------------------------------------------------------------------
# Small formatting helpers (client_support.cc)


def _ip_key(ip: str) -> tuple[int, ...]:
    """ncclSocketsHostCompare: memcmp of the address bytes (IPv4 before IPv6)."""
    if ":" in ip:
        return (1, *(int(x or "0", 16) for x in ip.split(":")))
    return (0, *(int(x) for x in ip.split(".")))


def _plural(n: int, word: str, suffix: str = "s") -> str:
    return f"{n} {word}{suffix if n > 1 else ''}"


def _devs(devs: Iterable[int]) -> str:
    return ",".join(str(d) for d in sorted(devs))


def _gpu_devs(p: Process) -> str:
    """rasGpuDevsToString: CUDA devices, then ` (NVML …)` when they differ."""
    s = _devs(p.gpus)
    if sorted(p.nvml_devs) != sorted(p.gpus):
        s += f" (NVML {_devs(p.nvml_devs)})"
    return s


def _rank_gpu(r: Rank) -> str:
    """rasGpuToString of one rank."""
    return f"{r.gpu}" + (f" (NVML {r.nvml_dev})" if r.nvml_dev != r.gpu else "")


def _peer(p: Process) -> str:
    """The `Process … managing GPU…` description (also rasPeerInfoToString of 2.29+)."""
    s = "s" if len(p.gpus) > 1 else ""
    return f"Process {p.pid} on node {p.ip} managing GPU{s} {_gpu_devs(p)}"


def _managed(r: Rank) -> str:
    return f"GPU {_rank_gpu(r)} managed by process {r.process.pid} on node {r.process.ip}"


def is_outlier(count: int, verbose: bool, total: int | None = None) -> bool:
    """rasCountIsOutlier: whether RAS lists the members of a group of `count` one by one."""
    if count == 1:
        return True
    if verbose:
        return count < total * VERBOSE_OUTLIER_FRACTION if total is not None else True
    return count <= DETAIL_THRESHOLD and (total is None or count <= total * OUTLIER_FRACTION)


def _high_bit(status: int) -> int:
    """Index of the highest status bit (what the table's Status column shows)."""
    return status.bit_length() - 1


# --------------------------------------------------------------------------------------------
# Per-communicator analysis (rasClientRunComms, first half)


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


# --------------------------------------------------------------------------------------------
# Text


def render_text(s: Snapshot) -> str:
    """The report `ncclras` prints for this state (STATUS, or VERBOSE STATUS when s.verbose)."""
    v = vtuple(s.version)
    if v < (2, 24):
        raise ValueError(f"NCCL {s.version} has no RAS (2.24+)")
    old = v < (2, 26)
    out: list[str] = [
        f"NCCL version {s.version} compiled with CUDA {s.cuda}\n",
        f"CUDA runtime version {s.runtime}, driver version {s.driver}\n\n",
    ]
    out.append(_job_summary(s))
    out.append("\nCommunicators...")
    out.append(f" ({s.seconds:.3f}s)\n" if v >= (2, 28, 7) else f" ({s.seconds:.2f}s)\n")
    out.append("=============\n\n")
    groups = _groups([_analyze(s, c, old) for c in sorted(s.comms, key=lambda c: c.hash)])
    out.append(_table(s, groups, old))
    out.append("\nErrors\n======\n\n")
    out.append(_job_errors(s))
    for gi, group in enumerate(groups):
        for ci, a in enumerate(group):
            out.append(_comm_errors(s, a, gi, ci, old))
    out.append("Warnings\n========\n\n")
    if s.timeouts > 0:
        out.append(
            "TIMEOUT\n  Encountered "
            f"{_plural(s.timeouts, 'communication timeout')} while gathering communicator data\n\n"
        )
    for gi, group in enumerate(groups):
        for ci, a in enumerate(group):
            if a.errors & MISMATCH:
                out.append(_mismatch(s, a, gi, ci, old))
    return "".join(out)


def _job_summary(s: Snapshot) -> str:
    per_node: dict[str, int] = {}
    for p in s.processes:
        per_node[p.ip] = per_node.get(p.ip, 0) + 1
    gpus = {len(p.gpus) for p in s.processes}
    if len(set(per_node.values())) != 1 or len(gpus) != 1:
        raise ValueError(
            "rasgen renders regular jobs only (same processes per node, GPUs per process)"
        )
    total_gpus = sum(len(p.gpus) for p in s.processes)
    return (
        "Job summary\n===========\n\n"
        "  Nodes  Processes         GPUs  Processes     GPUs\n"
        "(total)   per node  per process    (total)  (total)\n"
        f"{len(per_node):7d}  {next(iter(per_node.values())):9d}  {next(iter(gpus)):11d}  "
        f"{len(s.processes):9d}  {total_gpus:7d}\n"
    )


def _table(s: Snapshot, groups: list[list[_Aux]], old: bool) -> str:
    head = (
        "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n"
        "    #  in group  per comm  per node  per comm  in group\n"
    )
    if not groups:
        return (head if old else "") + "No communicator data collected!\n"
    names = STATUS_NAMES_224 if old else STATUS_NAMES
    rows = [head]
    for gi, group in enumerate(groups):
        lo = min(a.per_node[0] for a in group)
        hi = max(a.per_node[1] for a in group)
        per_node = f"{lo}" if lo == hi else f"{lo}-{hi}"
        in_group = len({(r.process.pid, r.nvml_dev) for a in group for r in a.reported})
        first = group[0]
        rows.append(
            f"{gi:5d}  {len(group):8d}  {first.nodes:8d}  {per_node:>8s}  {first.comm.size:8d}  "
            f"{in_group:8d}  {names[_high_bit(first.status)]:>8s}  {ERROR_COLUMN[first.errors]:>6s}\n"
        )
    return "".join(rows)


def _process_list(procs: list[Process]) -> str:
    return "".join(f"  {_peer(p)}\n" for p in sorted(procs, key=lambda p: (_ip_key(p.ip), p.pid)))


def _job_errors(s: Snapshot) -> str:
    out = []
    missing = [p for p in s.processes if p.pid in s.unresponsive and p.pid not in s.dead]
    if missing:
        out.append(
            "INCOMPLETE\n  Missing communicator data from "
            f"{_plural(len(missing), 'job process', 'es')}\n"
        )
        if is_outlier(len(missing), s.verbose):
            out.append(_process_list(missing))
        out.append("\n")
    dead = [p for p in s.processes if p.pid in s.dead]
    if dead:
        verb = "es are" if len(dead) > 1 else " is"
        out.append(
            f"DEAD\n  {len(dead)} job process{verb} considered dead (unreachable via the RAS network)\n"
        )
        if is_outlier(len(dead), s.verbose):
            out.append(_process_list(dead))
        out.append("\n")
    return "".join(out)


def _comm_errors(s: Snapshot, a: _Aux, gi: int, ci: int, old: bool) -> str:
    out = []
    tag = f"#{gi}-{ci} ({a.comm.hash:016x})"
    if a.errors & INCOMPLETE:
        n = a.n_incomplete
        out.append(f"{tag} INCOMPLETE\n  Missing communicator data from {_plural(n, 'rank')}\n")
        if is_outlier(n, s.verbose):
            if old:
                listed = ",".join(str(r.rank) for r in a.missing)
                out.append(f"  The missing rank{'s' if n > 1 else ''}: {listed}\n")
            else:
                out.extend(
                    f"  Rank {r.rank} -- {_managed(r)}\n"
                    for r in a.missing
                    if not s.answered(r.process)
                )
        out.append("\n")
    if a.errors & ERROR:
        out.append(f"{tag} ERROR\n")
        for what, attr in (("Initialization", "init_state"), ("Asynchronous", "async_error")):
            codes = [getattr(r, attr) for r in a.reported]
            n = sum(c not in (0, IN_PROGRESS) for c in codes)
            if n:
                out.append(f"  {what} error{'s' if n > 1 else ''} on {_plural(n, 'rank')}\n")
                out.append(_break_down(s, a, attr))
        out.append("\n")
    return "".join(out)


def _break_down(s: Snapshot, a: _Aux, attr: str) -> str:
    """rasClientBreakDownErrors: the most frequent error first (lowest code on ties)."""
    tally = dict.fromkeys(range(1, IN_PROGRESS), 0)
    for r in a.reported:
        if getattr(r, attr) in tally:
            tally[getattr(r, attr)] += 1
    out = []
    while any(tally.values()):
        code = max(tally, key=lambda c: (tally[c], -c))
        n = tally.pop(code)
        if n > 1:
            out.append(f"  {n} ranks reported {ERRORS[code]}\n")
        if is_outlier(n, s.verbose):
            for r in a.reported:
                if getattr(r, attr) == code:
                    said = f" reported {ERRORS[code]}" if n == 1 else ""
                    out.append(f"  Rank {r.rank}{said} -- {_managed(r)}\n")
    return "".join(out)


def _count_groups(entries: list[tuple[int, Rank | None]]) -> list[tuple[int, list[Rank | None]]]:
    """Group (value, rank) by value; most frequent first, then the larger value (rasValCountsCompareRev)."""
    by: dict[int, list[Rank | None]] = {}
    for value, r in entries:
        by.setdefault(value, []).append(r)
    return sorted(by.items(), key=lambda kv: (-len(kv[1]), -kv[0]))


def _mismatch(s: Snapshot, a: _Aux, gi: int, ci: int, old: bool) -> str:
    out = [f"#{gi}-{ci} ({a.comm.hash:016x}) MISMATCH\n"]
    size = a.comm.size
    names = STATUS_NAMES_224 if old else STATUS_NAMES
    if bin(a.status).count("1") > 1:
        out.append("  Communicator ranks have different status\n")
        entries: list[tuple[int, Rank | None]] = [(_high_bit(r.status), r) for r in a.reported]
        if old:  # every missing rank is UNKNOWN (a placeholder without process information)
            entries += [(0, None)] * (size - len(a.reported))
        else:  # NOCOMM: the process answered without this communicator
            entries += [(0, r) for r in a.missing if s.answered(r.process)]
        for value, ranks in _count_groups(entries):
            n = len(ranks)
            if n > 1:
                out.append(f"  {n} ranks have status {names[value]}\n")
            if not is_outlier(n, s.verbose, size):
                continue
            if old and value == 0:
                listed = ",".join(str(r.rank) for r in a.missing)
                out.append(
                    f"  The unknown ranks: {listed}\n"
                    if n > 1
                    else f"  Rank {listed} has status {names[0]}\n"
                )
                continue
            for r in sorted((r for r in ranks if r is not None), key=lambda r: r.rank):
                said = f" has status {names[value]}" if n == 1 else ""
                out.append(f"  Rank {r.rank}{said} -- {_managed(r)}\n")
    if old:
        out.append(_count_block(s, a, "collective", [sum(r.counts) for r in a.reported], old))
        out.append("\n")  # 2.24/2.25 close every MISMATCH block with a blank line
    else:
        for fi, func in enumerate(FUNCS):
            values = [r.counts[fi] for r in a.reported]
            if len(set(values)) > 1:
                # 2.26+ close each count block, not the status block: a MISMATCH of status
                # alone runs into the next block without a blank line.
                out.append(_count_block(s, a, func, values, old) + "\n")
    return "".join(out)


def _count_block(s: Snapshot, a: _Aux, func: str, values: list[int], old: bool) -> str:
    if len(set(values)) < 2:
        return ""
    out = [f"  Communicator ranks have different {func} operation counts\n"]
    for value, ranks in _count_groups(list(zip(values, a.reported, strict=True))):
        n = len(ranks)
        none = value == 0 and not old  # 2.26+ word it "not launched any operations"
        if n > 1:
            out.append(
                f"  {n} ranks have not launched any operations\n"
                if none
                else f"  {n} ranks have launched up to operation {value}\n"
            )
        if not is_outlier(n, s.verbose, a.comm.size):
            continue
        for r in sorted((r for r in ranks if r is not None), key=lambda r: r.rank):
            if n > 1:
                said = ""
            elif none:
                said = " has not launched any operations"
            else:
                said = f" has launched up to operation {value}"
            out.append(f"  Rank {r.rank}{said} -- {_managed(r)}\n")
    return "".join(out)


# --------------------------------------------------------------------------------------------
# JSON (2.28.7+: SET FORMAT json, ncclras -f json)


def _local(t: float, offset: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(int(t) + offset))


def render_json(s: Snapshot) -> str:
    """The JSON document of 2.28.7+ (communicators in NCCL's data order: by hash)."""
    v = vtuple(s.version)
    if v < (2, 28, 7):
        raise ValueError(f"NCCL {s.version} has no JSON output (2.28.7+)")
    comma_bug = v < (2, 29)  # 2.28.7-2.28.9: no comma after a missing rank's nvml_dev
    done = s.time + s.seconds  # the timestamp is taken when the data is in
    out = [
        "{\n",
        f'  "nccl_version": "{s.version}",\n',
        f'  "cuda_runtime_version": {s.runtime},\n',
        f'  "cuda_driver_version": {s.driver},\n',
        f'  "timestamp": "{_local(done, s.utc_offset)}",\n',
        f'  "communicators_count": {len(s.comms)},\n',
        '  "communicators": [\n',
    ]
    for ci, comm in enumerate(sorted(s.comms, key=lambda c: c.hash)):
        reported = [r for r in comm.ranks if r.member and s.answered(r.process)]
        missing = [r for r in comm.ranks if not (r.member and s.answered(r.process))]
        first = comm.ranks[0].process
        out.append(("" if ci == 0 else ",\n") + "    {\n")
        out.append(f'      "hash": "0x{comm.hash:x}",\n')
        # rank 0's peerInfo hashes, which NCCL offsets by the communicator's hash (init.cc fillInfo)
        host_hash, pid_hash = ((h + comm.hash) % 2**64 for h in (first.host_hash, first.pid_hash))
        out.append(f'      "secondary_hash": "0x{host_hash:x}:0x{pid_hash:x}",\n')
        out.append(f'      "size": {comm.size},\n')
        out.append(f'      "ranks_count": {len(reported)},\n')
        out.append(f'      "missing_ranks_count": {len(missing)},\n')
        out.append('      "ranks": [\n')
        for ri, r in enumerate(reported):
            out.append(("" if ri == 0 else ",\n") + "        {\n")
            out.append(_json_who(r, last_comma=True))
            out.append('          "status": {\n')
            out.append(f'            "init_state": {r.init_state},\n')
            out.append(f'            "async_error": {r.async_error},\n')
            out.append(f'            "finalize_called": {_bool(r.finalize_called)},\n')
            out.append(f'            "destroy_flag": {_bool(r.destroy_flag)},\n')
            out.append(f'            "abort_flag": {_bool(r.abort_flag)}\n')
            out.append("          },\n")
            out.append('          "collective_counts": {\n')
            out.append(
                ",\n".join(f'            "{f}": {n}' for f, n in zip(FUNCS, r.counts, strict=True))
                + "\n"
            )
            out.append("          }\n")
            out.append("        }")
        out.append("\n      ],\n")
        out.append('      "missing_ranks": [\n')
        for mi, r in enumerate(missing):
            out.append(("" if mi == 0 else ",\n") + "        {\n")
            out.append(_json_who(r, last_comma=not comma_bug))
            out.append('          "status": {\n')
            out.append(f'            "unresponsive": {_bool(not s.answered(r.process))},\n')
            out.append(f'            "considered_dead": {_bool(r.process.pid in s.dead)}\n')
            out.append("          }\n")
            out.append("        }")
        out.append("\n      ]\n")
        out.append("    }")
    out.append("\n  ],\n")
    out.append('  "ras": {\n')
    out.append(f'    "collection_time_sec": {s.seconds:.3f},\n')
    out.append(f'    "timeouts_count": {s.timeouts}\n')
    out.append("  }\n")
    out.append("}\n")
    return "".join(out)


def _bool(b: bool) -> str:
    return "true" if b else "false"


def _json_who(r: Rank, last_comma: bool) -> str:
    return (
        f'          "rank": {r.rank},\n'
        f'          "host": "{r.process.ip}",\n'
        f'          "pid": {r.process.pid},\n'
        f'          "cuda_dev": {r.gpu},\n'
        f'          "nvml_dev": {r.nvml_dev}{"," if last_comma else ""}\n'
    )


# --------------------------------------------------------------------------------------------
# Monitor mode (2.29+: MONITOR [lifecycle|trace|all], ncclras -m)

# event -> its group (PEER_DEAD and PEER_NEW are LIFECYCLE, the default; the rest need -m trace/all)
MONITOR_EVENTS = {
    "PEER_NEW": "LIFECYCLE",
    "PEER_DEAD": "LIFECYCLE",
    "PEER_CONNECTING": "TRACE",
    "PEER_CONNECTED": "TRACE",
    "PEER_UNRESPONSIVE": "TRACE",
    "PEER_RECOVERED": "TRACE",
    "PEER_RETRY": "TRACE",
    "PEER_KEEPALIVE_TIMEOUT": "TRACE",
    "PEER_TIMEOUT_DEAD": "TRACE",
    "PEER_SEND_STUCK": "TRACE",
    "PEER_INIT_TIMEOUT": "TRACE",
    "PEER_DISCONNECTED": "TRACE",
}


def monitor_line(
    t: float, event: str, process: Process | None, details: str = "", utc_offset: int = 0
) -> str:
    """One text event of monitor mode: `[{local time}] {EVENT}: {peer} {details}` (rasClientsNotifyEvent).

    Events with a peer and empty details (PEER_DEAD, PEER_NEW, PEER_CONNECTING) end in a space.
    """
    if event not in MONITOR_EVENTS:
        raise ValueError(f"unknown RAS event {event!r}")
    stamp = _local(t, utc_offset)
    if process is None:
        return f"[{stamp}] {event}: {details}\n"
    return f"[{stamp}] {event}: {_peer(process)} {details}\n"


def monitor_json(
    t: float, event: str, process: Process, details: str = "", utc_offset: int = 0
) -> str:
    """One JSON event of monitor mode (MONITOR with SET FORMAT json)."""
    return (
        "{\n"
        f'  "timestamp": "{_local(t, utc_offset)}",\n'
        f'  "group": "{MONITOR_EVENTS[event]}",\n'
        f'  "event": "{event}",\n'
        '  "peer": {\n'
        f'    "host": "{process.ip}",\n'
        f'    "pid": {process.pid},\n'
        f'    "cuda_devs": [{_devs(process.gpus)}],\n'
        f'    "nvml_devs": [{_devs(process.nvml_devs)}]\n'
        "  },\n"
        f'  "details": "{details}"\n'
        "}\n"
    )


# --------------------------------------------------------------------------------------------
# Back from JSON (to check the renderers against what a real NCCL printed)


def loads(text: str) -> dict[str, Any]:
    """A RAS JSON document, also as NCCL 2.28.7-2.28.9 write it (no comma after a missing rank's nvml_dev)."""
    try:
        data: dict[str, Any] = json.loads(text)
    except json.JSONDecodeError:
        data = json.loads(re.sub(r'("nvml_dev": \d+)\n(\s+"status": \{)', r"\1,\n\2", text))
    return data


def from_json(
    text: str, cuda: str, verbose: bool = False, seconds: float | None = None
) -> Snapshot:
    """The state a JSON dump describes, to render as text (the JSON lacks the CUDA NCCL was built with).

    Processes are known only through the ranks they drive, and a process that is in no
    communicator does not appear: good enough for the jobs NCCL's own dumps come from.
    """
    d = loads(text)
    procs: dict[int, Process] = {}
    unresponsive: set[int] = set()
    dead: set[int] = set()
    comms = []
    for c in d["communicators"]:
        hh, ph = (int(x, 16) for x in c["secondary_hash"].split(":"))
        ranks = []
        for e in sorted(c["ranks"] + c["missing_ranks"], key=lambda e: e["rank"]):
            p = procs.setdefault(e["pid"], Process(e["host"], e["pid"], (e["cuda_dev"],)))
            if e["rank"] == 0:  # the secondary hash is rank 0's, each plus the communicator's hash
                h = int(c["hash"], 16)
                p = procs[e["pid"]] = replace(
                    p, host_hash=(hh - h) % 2**64, pid_hash=(ph - h) % 2**64
                )
            st = e["status"]
            if "unresponsive" in st:  # a missing rank
                if st["considered_dead"]:
                    dead.add(p.pid)
                elif st["unresponsive"]:
                    unresponsive.add(p.pid)
                ranks.append(
                    Rank(e["rank"], p, e["cuda_dev"], e["nvml_dev"], member=st["unresponsive"])
                )
            else:
                c5 = counts(**{f: e["collective_counts"].get(f, 0) for f in FUNCS})
                ranks.append(
                    Rank(
                        e["rank"],
                        p,
                        e["cuda_dev"],
                        e["nvml_dev"],
                        c5,
                        st["init_state"],
                        st["async_error"],
                        st["finalize_called"],
                        st["destroy_flag"],
                        st["abort_flag"],
                    )
                )
        comms.append(Comm(int(c["hash"], 16), ranks))
    for comm in comms:  # the processes as finally known (hashes of rank 0s)
        for r in comm.ranks:
            r.process = procs[r.process.pid]
    return Snapshot(
        time=0.0,
        version=d["nccl_version"],
        processes=sorted(procs.values(), key=lambda p: (_ip_key(p.ip), p.pid)),
        comms=comms,
        cuda=cuda,
        runtime=d["cuda_runtime_version"],
        driver=d["cuda_driver_version"],
        unresponsive=frozenset(unresponsive),
        dead=frozenset(dead),
        verbose=verbose,
        timeouts=d["ras"]["timeouts_count"],
        seconds=d["ras"]["collection_time_sec"] if seconds is None else seconds,
    )


# --------------------------------------------------------------------------------------------
# Snapshot files


def stamp(t: float) -> str:
    """20260101T000000.250000 for a UTC epoch time (microseconds)."""
    whole = int(t)
    us = round((t - whole) * 1e6)
    if us == 1_000_000:
        whole, us = whole + 1, 0
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(whole)) + f".{us:06d}"


def file_name(s: Snapshot, fmt: str) -> str:
    """The name `triage ras collect` gives a snapshot: ras-<UTC time STATUS was sent>Z.txt|.json."""
    ext = {"text": "txt", "json": "json"}[fmt]
    return f"ras-{stamp(s.time)}Z.{ext}"


def render(s: Snapshot, fmt: str) -> str:
    return render_text(s) if fmt == "text" else render_json(s)


# --------------------------------------------------------------------------------------------
# Demo


def demo() -> dict[str, str]:
    """One dump per format for a 2 x 2 job whose process of rank 3 died."""
    procs = processes(["10.1.0.1", "10.1.0.2"], gpus=2, seed=3)
    w = world(procs, 0x6D4A1F0E22C3B5A7, Broadcast=3, AllReduce=4100)
    dead = frozenset({procs[3].pid})
    out = {}
    for version, fmt in (("2.25.1", "text"), ("2.26.2", "text"), ("2.28.9", "json")):
        snap = Snapshot(
            time=1_767_225_600.25, version=version, processes=procs, comms=[w], dead=dead
        )
        out[f"{version} {fmt} {file_name(snap, fmt)}"] = render(snap, fmt)
    out["2.29.7 monitor"] = monitor_line(1_767_225_590.0, "PEER_DEAD", procs[3])
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--demo", action="store_true", help="print one dump of each format")
    args = ap.parse_args(argv)
    if not args.demo:
        ap.print_help()
        return 0
    for what, text in demo().items():
        sys.stdout.write(f"----- {what}\n{text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = [
    "FUNCS",
    "Comm",
    "Process",
    "Rank",
    "Snapshot",
    "counts",
    "file_name",
    "from_json",
    "is_outlier",
    "loads",
    "monitor_json",
    "monitor_line",
    "processes",
    "render",
    "render_json",
    "render_text",
    "stamp",
    "sub",
    "with_counts",
    "world",
]
