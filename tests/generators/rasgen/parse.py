"""Back from JSON (to check the renderers against what a real NCCL printed)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from .formatting import _ip_key
from .jobs import counts
from .model import FUNCS, Comm, Process, Rank, Snapshot


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
