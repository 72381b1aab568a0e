"""Structure-aware variations of real flight-recorder dumps: well-formed pickles with changed contents.

The byte-level classes reach the pickle checker and the field reader, rarely past them: a flipped
byte makes a pickle that is refused. These cases keep every dump a valid dump (loaded with triage's
own safe loader, changed as Python data, written back as a protocol-2 pickle as torch writes it) and
change what it says: entries dropped or cut (the ring buffer wrapped), states, sequence ids, sizes and
ops changed, groups and ranks moved, ranks' dumps missing or duplicated, `pg_status` inconsistent with
the entries. The job's logs go with the dumps half of the time, so the verdict stage sees dumps and
logs that may disagree. Every case is one job: the dumps of one fixture bundle.
"""

from __future__ import annotations

import pickle
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .cases import FIXTURES

_PREFIX = "comm_lib_trace_rank_"
_STATES = ("scheduled", "started", "completed")
_OPS = ("all_reduce", "broadcast", "all_gather", "reduce_scatter", "barrier", "allreduce_coalesced")
Dump = dict[str, Any]


def dump_bundles() -> list[Path]:
    """The fixture bundles that hold pickle dumps (each a job): their `logs` folders."""
    return sorted({FIXTURES / p.relative_to(FIXTURES).parts[0] / "logs"
                   for p in FIXTURES.glob("*/logs/**/comm_lib_trace_rank_*") if p.is_file() and p.suffix != ".json"})


def _load(path: Path) -> Dump:
    from triage.parse.fr.safe_pickle import load  # the project's own safe loader: no code runs

    doc: Dump = load(path.read_bytes())
    return doc


def _rank_of(path: Path) -> int:
    return int(path.name.rsplit("_", 1)[1])


# ------------------------------------------------------------------------------------------
# Mutations: each changes the job's dumps in place (rank -> dump) and says what it did.


def _entries(rng: random.Random, dumps: dict[int, Dump]) -> tuple[int, list[dict[str, Any]]]:
    rank = rng.choice(sorted(dumps))
    return rank, dumps[rank].setdefault("entries", [])


def drop_entries(rng: random.Random, dumps: dict[int, Dump]) -> str:
    rank, entries = _entries(rng, dumps)
    n = rng.randint(1, max(1, len(entries) // 3))
    for _ in range(min(n, len(entries))):
        entries.pop(rng.randrange(len(entries)))
    return f"rank {rank}: {n} entries dropped"


def cut_entries(rng: random.Random, dumps: dict[int, Dump]) -> str:
    rank, entries = _entries(rng, dumps)
    keep = rng.randint(0, len(entries))
    head = rng.random() < 0.5  # the ring buffer wrapped (the oldest gone) or the dump was cut short
    entries[:] = entries[len(entries) - keep:] if head else entries[:keep]
    return f"rank {rank}: entries cut to the {'last' if head else 'first'} {keep}"


def change_state(rng: random.Random, dumps: dict[int, Dump]) -> str:
    rank, entries = _entries(rng, dumps)
    if not entries:
        return f"rank {rank}: no entry to change"
    e = rng.choice(entries[-8:])
    e["state"] = rng.choice(_STATES)
    t = e.get("time_created_ns") or 1_700_000_000_000_000_000
    e["time_discovered_started_ns"] = t + rng.randint(1, 10**9) if e["state"] != "scheduled" else None
    e["time_discovered_completed_ns"] = t + rng.randint(10**9, 10**10) if e["state"] == "completed" else None
    return f"rank {rank}: an entry's state set to {e['state']}"


def change_seq(rng: random.Random, dumps: dict[int, Dump]) -> str:
    rank, entries = _entries(rng, dumps)
    if not entries:
        return f"rank {rank}: no entry to renumber"
    e = rng.choice(entries)
    old = e.get("collective_seq_id", 0) or 0
    e["collective_seq_id"] = rng.choice([old + 1, old - 1, old + rng.randint(2, 50), 0, -1, old * 1000,
                                         entries[0].get("collective_seq_id", 0)])
    return f"rank {rank}: a sequence id {old} -> {e['collective_seq_id']}"


def shift_seqs(rng: random.Random, dumps: dict[int, Dump]) -> str:
    rank, entries = _entries(rng, dumps)
    by = rng.choice([-3, -1, 1, 2, 7])
    for e in entries:
        if isinstance(e.get("collective_seq_id"), int):
            e["collective_seq_id"] += by
    return f"rank {rank}: every sequence id shifted by {by}"


def change_sizes(rng: random.Random, dumps: dict[int, Dump]) -> str:
    rank, entries = _entries(rng, dumps)
    if not entries:
        return f"rank {rank}: no entry to resize"
    e = rng.choice(entries[-6:])
    sizes = rng.choice([[[rng.randint(0, 4096)]], [[]], [], [[1, 2], [3]], [[rng.randint(1, 9)] * 3]])
    e["input_sizes"] = sizes
    if rng.random() < 0.5:
        e["output_sizes"] = sizes
    return f"rank {rank}: an entry's sizes set to {sizes}"


def change_op(rng: random.Random, dumps: dict[int, Dump]) -> str:
    rank, entries = _entries(rng, dumps)
    if not entries:
        return f"rank {rank}: no entry to change"
    e = rng.choice(entries[-6:])
    backend = str(e.get("profiling_name", "gloo:x")).partition(":")[0] or "nccl"
    if rng.random() < 0.3:
        peer = rng.randint(0, 8)
        e["profiling_name"] = f"{backend}:{rng.choice(['send', 'recv'])} {rank}->{peer}"
        e["is_p2p"] = True
    else:
        e["profiling_name"] = f"{backend}:{rng.choice(_OPS)}"
    return f"rank {rank}: an entry's op set to {e['profiling_name']}"


def move_group(rng: random.Random, dumps: dict[int, Dump]) -> str:
    rank, entries = _entries(rng, dumps)
    if not entries:
        return f"rank {rank}: no entry to move"
    e = rng.choice(entries)
    pg = rng.choice([("0", "default_pg"), ("1", "pair0"), ("2", "pair1"), ("7", "tp"), ("", "")])
    e["process_group"] = pg
    e["pg_id"] = rng.choice([0, 1, 2, 7]) if pg[0] else 0
    return f"rank {rank}: an entry moved to group {pg}"


def status_inconsistent(rng: random.Random, dumps: dict[int, Dump]) -> str:
    rank = rng.choice(sorted(dumps))
    status = dumps[rank].setdefault("pg_status", {})
    key = rng.choice(sorted(status) or ["0"]) if rng.random() < 0.8 else str(rng.randint(0, 9))
    s = status.setdefault(key, {})
    for k in ("last_enqueued_collective", "last_started_collective", "last_completed_collective"):
        if rng.random() < 0.6:
            s[k] = rng.choice([-1, 0, 1, rng.randint(2, 40), 10**6, (s.get(k) or 0) + rng.randint(-3, 3)])
        elif rng.random() < 0.2:
            s.pop(k, None)
    return f"rank {rank}: pg_status[{key}] set to {s}"


def status_dropped(rng: random.Random, dumps: dict[int, Dump]) -> str:
    rank = rng.choice(sorted(dumps))
    dumps[rank]["pg_status"] = {}
    return f"rank {rank}: pg_status emptied"


def config_ranks(rng: random.Random, dumps: dict[int, Dump]) -> str:
    rank = rng.choice(sorted(dumps))
    config = dumps[rank].setdefault("pg_config", {})
    members = sorted(rng.sample(range(16), rng.randint(0, 6)))
    key = rng.choice(sorted(config) or ["0"])
    config[key] = {"name": key, "desc": rng.choice(["default_pg", "pair0", "tp", ""]), "ranks": str(members)}
    return f"rank {rank}: pg_config[{key!r}] ranks {members}"


def drop_rank(rng: random.Random, dumps: dict[int, Dump]) -> str:
    if len(dumps) < 2:
        return "one dump: none dropped"
    gone = rng.sample(sorted(dumps), rng.randint(1, len(dumps) - 1))
    for r in gone:
        del dumps[r]
    return f"dumps of ranks {sorted(gone)} left out"


def rename_rank(rng: random.Random, dumps: dict[int, Dump]) -> str:
    rank = rng.choice(sorted(dumps))
    new = rng.choice([r for r in range(max(dumps) + 3) if r not in dumps])
    dumps[new] = dumps.pop(rank)
    return f"rank {rank}'s dump named rank {new}"


def duplicate_rank(rng: random.Random, dumps: dict[int, Dump]) -> str:
    rank = rng.choice(sorted(dumps))
    new = rng.choice([r for r in range(max(dumps) + 3) if r != rank])
    dumps[new] = pickle.loads(pickle.dumps(dumps[rank]))  # noqa: S301 (a copy of our own data)
    return f"rank {rank}'s dump also written as rank {new}'s"


def empty_entries(rng: random.Random, dumps: dict[int, Dump]) -> str:
    rank = rng.choice(sorted(dumps))
    dumps[rank]["entries"] = []
    return f"rank {rank}: no entries"


def change_timeout(rng: random.Random, dumps: dict[int, Dump]) -> str:
    rank, entries = _entries(rng, dumps)
    value = rng.choice([0, 1, 5000, 1_800_000, 2**40, None])
    for e in entries[-rng.randint(1, 4):]:
        e["timeout_ms"] = value
    return f"rank {rank}: timeouts set to {value}"


def frames_changed(rng: random.Random, dumps: dict[int, Dump]) -> str:
    rank, entries = _entries(rng, dumps)
    for e in entries[-3:]:
        e["frames"] = rng.choice([[], None, [{"name": "x"}], [{"name": "f", "filename": "a.py", "line": -1}] * 20])
    return f"rank {rank}: frames of the last entries changed"


MUTATIONS: dict[str, Callable[[random.Random, dict[int, Dump]], str]] = {
    "drop_entries": drop_entries, "cut_entries": cut_entries, "change_state": change_state,
    "change_seq": change_seq, "shift_seqs": shift_seqs, "change_sizes": change_sizes, "change_op": change_op,
    "move_group": move_group, "status_inconsistent": status_inconsistent, "status_dropped": status_dropped,
    "config_ranks": config_ranks, "drop_rank": drop_rank, "rename_rank": rename_rank,
    "duplicate_rank": duplicate_rank, "empty_entries": empty_entries, "change_timeout": change_timeout,
    "frames_changed": frames_changed,
}


def vary(rng: random.Random, dumps: dict[int, Dump]) -> list[str]:
    """One to four mutations, applied in turn."""
    return [MUTATIONS[name](rng, dumps) for name in rng.choices(sorted(MUTATIONS), k=rng.randint(1, 4))]


def gen_dump_structure(rng: random.Random, root: Path) -> tuple[list[str], str]:
    """A fixture job's dumps, varied, written as protocol-2 pickles; its logs beside them half the time."""
    bundle = rng.choice(dump_bundles())
    files = sorted(p for p in bundle.rglob(f"{_PREFIX}*") if p.is_file() and p.suffix != ".json")
    dumps = {_rank_of(p): _load(p) for p in files}
    done = vary(rng, dumps)
    out = root / "logs"
    with_logs = rng.random() < 0.5
    if with_logs:
        shutil.copytree(bundle, out, ignore=shutil.ignore_patterns(f"{_PREFIX}*"))
    (out / "fr").mkdir(parents=True, exist_ok=True)
    for rank, doc in dumps.items():
        (out / "fr" / f"{_PREFIX}{rank}").write_bytes(pickle.dumps(doc, protocol=2))
    what = f"{bundle.parent.name}{' with its logs' if with_logs else ''}: " + "; ".join(done)
    return ["logs"], what
