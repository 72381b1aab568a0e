"""What a RAS bundle's builder returns (Built: its files and its truth), and the truth's shape."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from generators import rasgen
from generators.rasgen import Process, Snapshot


@dataclass
class Built:
    files: dict[str, str]  # path under logs/ -> content
    truth: dict[str, Any]


def iso(t: float) -> str:
    """2026-01-12T03:17:01.734112Z (the same rounding as the snapshot file names)."""
    s = rasgen.stamp(t)
    return f"{s[0:4]}-{s[4:6]}-{s[6:8]}T{s[9:11]}:{s[11:13]}:{s[13:]}Z"


def fmt_name(s: Snapshot, fmt: str) -> str:
    """The format label the truth uses for a snapshot."""
    v = rasgen.vtuple(s.version)
    if fmt == "json":
        return "ras-json-2.28.7-invalid" if v < (2, 29) else "ras-json-2.28.7"
    base = "ras-text-2.24" if v < (2, 26) else "ras-text-2.26"
    return base + ("-verbose" if s.verbose else "")


def snapshot_files(snaps: Sequence[Snapshot], fmt: str) -> dict[str, str]:
    return {f"ras/{rasgen.file_name(s, fmt)}": rasgen.render(s, fmt) for s in snaps}


def who(p: Process) -> dict[str, Any]:
    return {"pid": p.pid, "host_ip": p.ip, "gpu": p.gpus[0]}


def truth(
    status: str,
    phase: str,
    category: str,
    culprits: Sequence[int],
    named: Sequence[Process],
    snaps: Sequence[Snapshot],
    fmt: str,
    files: dict[str, str],
    disagreement: bool = False,
    extra_formats: Sequence[str] = (),
    **facts: Any,
) -> dict[str, Any]:
    formats = sorted({fmt_name(s, fmt) for s in snaps} | set(extra_formats))
    return {
        "status": status,
        "phase": phase,
        "category": category,
        "culprit_ranks": list(culprits),
        "culprit_processes": [who(p) for p in named],
        "disagreement": disagreement,
        "formats": formats,
        "nccl_version": snaps[0].version,
        "snapshots": [
            {
                "file": f"ras/{rasgen.file_name(s, fmt)}",
                "sent": iso(s.time),
                "format": fmt_name(s, fmt),
                "verbose": s.verbose,
            }
            for s in snaps
        ],
        "facts": facts,
        "files": sorted(files),
    }
