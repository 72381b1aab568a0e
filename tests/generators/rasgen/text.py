"""The text report of ``ncclras`` (STATUS / VERBOSE STATUS), NCCL 2.24 to 2.29+."""

from __future__ import annotations

from .analysis import _analyze, _Aux, _groups
from .formatting import _high_bit, _ip_key, _managed, _peer, _plural, is_outlier
from .model import (
    ERROR,
    ERROR_COLUMN,
    ERRORS,
    FUNCS,
    IN_PROGRESS,
    INCOMPLETE,
    MISMATCH,
    STATUS_NAMES,
    STATUS_NAMES_224,
    Process,
    Rank,
    Snapshot,
    vtuple,
)


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
