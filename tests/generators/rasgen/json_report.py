"""The JSON report of NCCL 2.28.7+ (``SET FORMAT json``, ``ncclras -f json``)."""

from __future__ import annotations

from .formatting import _local
from .model import FUNCS, Rank, Snapshot, vtuple


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
