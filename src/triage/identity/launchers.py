"""Launchers' consoles and records: which consoles mix workers, and the pids their records (and the
ranks' own lines) tie to ranks."""

from __future__ import annotations

from collections import defaultdict

from triage.identity.state import (
    LAUNCHERS,
    PID_OWN,
    PID_RECORD,
    State,
    launcher_record,
    set_once,
    still_unknown,
)
from triage.model import Kind


def from_launcher_consoles(state: State) -> None:
    """A launcher console whose own lines name several workers (local ranks, pids it signals) mixes
    their output: a `[rankN]:` prefix is that line's writer only, an unprefixed line's is unknown."""
    workers: dict[str, set[str]] = defaultdict(set)
    signalled: list[tuple[str, str]] = []
    for event in state.of_families(*LAUNCHERS):
        key, fields = state.writers.group_of[event.evidence.source], event.fields
        if fields.get("local_rank", "").isdigit():
            workers[key] |= {str(int(fields["local_rank"])), "pid " + fields.get("pid", "?")}
        elif event.kind is Kind.CONSEQUENCE and fields.get("pid", "").isdigit():
            signalled.append((key, "pid " + fields["pid"]))  # `Sending process 4242 closing signal`
    for key, pid in signalled:
        workers[key].add(pid if pid in workers[key] else pid + " (signalled)")
    state.interleaved |= {key for key, named in workers.items()
                          if sum(not n.startswith("pid ") or n.endswith("(signalled)") for n in named) > 1}


_EXIT = Kind.EXIT  # read once per event below: bound once (an enum class attribute is slow on 3.11)


def from_pids(state: State) -> None:
    """A pid seen with a rank is that rank everywhere: NCCL_DEBUG_FILE files, plogs, agent lines."""
    pid_ranks: dict[int, set[int]] = defaultdict(set)
    recorded: set[int] = set()  # pids a launcher's record names with their rank
    own: set[int] = set()  # pids seen on the rank's own lines
    for event in state.events:
        if event.identity.pid is not None and event.identity.rank is not None:
            pid_ranks[event.identity.pid].add(event.identity.rank)
            own.add(event.identity.pid)
        if event.family != "hccl" and event.kind is not _EXIT:
            continue  # neither a footer nor a launcher's record
        pid, rank = event.fields.get("pid", ""), event.fields.get("rank", "")
        if event.family == "hccl" and pid.isdigit() and rank.isdigit() and "pg_rank" not in event.fields:
            # torch_npu's footer names a process and its rank: `(PID:3215080, Device:3, RankID:3)`
            pid_ranks[int(pid)].add(int(rank))
        elif launcher_record(event) and pid.isdigit():
            # torchrun's failure record: `rank : 3 (local_rank: 3)` / `exitcode : -15 (pid: 4242)`
            pid_ranks[int(pid)].add(int(rank))
            recorded.add(int(pid))
    for ident in state.writers.identities.values():
        if ident.pid is not None and ident.rank is not None:
            pid_ranks[ident.pid].add(ident.rank)
    known = {pid: next(iter(ranks)) for pid, ranks in pid_ranks.items()
             if len(ranks) == 1}  # a pid reused by two ranks (two hosts) says nothing
    def how(pid: int) -> str:
        return PID_OWN if pid in own or pid not in recorded else PID_RECORD

    for key, ident in state.writers.identities.items():
        if ident.rank is None and ident.pid in known:
            set_once(state, key, ident, "rank", known[ident.pid], how(ident.pid))
    for event in still_unknown(state):
        ident = event.identity
        pid = event.fields.get("pid", "")
        for candidate in (ident.pid, int(pid) if pid.isdigit() else None):
            if candidate is not None and candidate in known:
                ident.rank = known[candidate]
                ident.learnt_from["rank"] = how(candidate)
                break
