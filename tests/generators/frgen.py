"""Flight-recorder dumps for a described job state, in the pickle form torch writes (version "2.10").

The real dumps in tests/fixtures/fr-* come from gloo runs (make_fr.py), where every entry stays
`scheduled` and only `pg_status` says what completed. This module writes what a rank's recorder holds
for any state, NCCL's way (entries `scheduled` → `started` → `completed`, `pg_config` with each group's
members) or gloo's (every entry `scheduled`, the groups' members not stated): one entry per collective
of each group the rank belongs to, the newest `keep` of them, and `pg_status` with the group's last
enqueued, started and completed sequence numbers.

    state = {"0": GroupState("default_pg", [0, 1, 2, 3], {0: Progress(24), 1: Progress(24, "started"), …})}
    doc = frgen.dump(rank=1, groups=state, backend="nccl")
    Path("comm_lib_trace_rank_1").write_bytes(pickle.dumps(doc, protocol=2))
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VERSION = "2.10"
T0_NS = 1_790_000_000_000_000_000
STEP_NS = 50_000_000  # one collective every 50 ms
TIMEOUT_MS = 600_000


@dataclass
class Progress:
    """One rank's place in one group: `completed` collectives done, the next one in flight or not."""

    completed: int
    in_flight: str | None = None  # None | "scheduled" | "started": collective completed+1 enqueued


@dataclass
class GroupState:
    desc: str
    members: list[int]  # global ranks
    progress: dict[int, Progress]  # by global rank (members only)
    pg_id: int = 0  # the process-local id in its members
    numel: dict[int, int] = field(default_factory=dict)  # size of collective #seq (default 1024)
    odd_numel: dict[tuple[int, int], int] = field(default_factory=dict)  # (rank, seq) -> its own size
    op: str = "all_reduce"


def _entry(name: str, group: GroupState, rank: int, seq: int, state: str, record: int) -> dict[str, Any]:
    created = T0_NS + seq * STEP_NS
    numel = group.odd_numel.get((rank, seq), group.numel.get(seq, 1024))
    return {
        "frames": [{"name": "train_step", "filename": "/job/train.py", "line": 41},
                   {"name": "<module>", "filename": "/job/train.py", "line": 90}],
        "record_id": record, "pg_id": group.pg_id, "process_group": (name, group.desc),
        "thread_name": "pt_main_thread", "thread_id": "139872334567168",
        "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq, "profiling_name": f"nccl:{group.op}",
        "time_created_ns": created, "input_sizes": [[numel]], "input_dtypes": ["Float"],
        "output_sizes": [[numel]], "output_dtypes": ["Float"], "state": state,
        "time_discovered_started_ns": created + 1_000_000 if state in ("started", "completed") else None,
        "time_discovered_completed_ns": created + 5_000_000 if state == "completed" else None,
        "retired": state == "completed", "timeout_ms": TIMEOUT_MS, "is_p2p": False,
    }


def dump(rank: int, groups: dict[str, GroupState], *, backend: str = "nccl", keep: int = 2000) -> dict[str, Any]:
    """The dump rank `rank` writes: every group it is a member of, the newest `keep` entries."""
    entries: list[tuple[int, dict[str, Any]]] = []
    config: dict[str, Any] = {}
    status: dict[str, Any] = {}
    for name, group in groups.items():
        if rank not in group.progress:
            continue
        p = group.progress[rank]
        last = p.completed + (1 if p.in_flight else 0)
        for seq in range(1, last + 1):
            state = "completed" if seq <= p.completed else (p.in_flight or "scheduled")
            if backend == "gloo":
                state = "scheduled"  # gloo never moves an entry on: pg_status says what completed
            entries.append((T0_NS + seq * STEP_NS, _entry(name, group, rank, seq, state, 0)))
        config[name] = {"name": name, "desc": group.desc, "ranks": str(group.members)}
        status[str(group.pg_id)] = {
            "last_enqueued_collective": last,
            "last_started_collective": last if p.in_flight == "started" and backend == "nccl" else -1,
            "last_completed_collective": p.completed,
        }
    entries.sort(key=lambda te: te[0])
    kept = [e for _, e in entries][-keep:] if keep else []
    for i, e in enumerate(kept):
        e["record_id"] = len(entries) - len(kept) + i
    if backend == "gloo":
        config = {"": {"name": "", "desc": "", "ranks": "[]"}}  # gloo (torch 2.13) states no members
    return {"version": VERSION, "pg_config": config, "comm_lib_version": "2.21.5" if backend == "nccl" else "",
            "pg_status": status, "entries": kept}


def write(path: Path, doc: dict[str, Any]) -> None:
    path.write_bytes(pickle.dumps(doc, protocol=2))
