"""Small formatting helpers of ``client_support.cc``: addresses, GPUs, processes, plurals, local times,
and which members of a group RAS lists one by one (``rasCountIsOutlier``)."""

from __future__ import annotations

import time
from collections.abc import Iterable

from .model import DETAIL_THRESHOLD, OUTLIER_FRACTION, VERBOSE_OUTLIER_FRACTION, Process, Rank


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

def _local(t: float, offset: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(int(t) + offset))
