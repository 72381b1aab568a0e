"""Algorithm and bus bandwidth as nccl-tests defines them, and what a GPU fabric should reach.

nccl-tests (doc/PERFORMANCE.md): algbw = S / t; for all-reduce busbw = algbw x 2(n-1)/n, the
figure that is comparable with the hardware's link speed whatever the number of ranks. GB/s is
10^9 bytes per second, as nccl-tests prints it.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from dataclasses import dataclass

import regex

from triage.repro.options import format_size

GB = 1e9
# Expected figures only mean something for messages this large: peak needs them (nccl-tests #212).
MIN_COMPARABLE_SIZE = 64 << 20
SLOW_FRACTION = 0.5  # flag a fabric that reaches less than half of the low end of its expectation


def gbps(value: float) -> str:
    """GB/s in fixed notation: two decimals, more for the small figures of CPUs (up to six)."""
    if value <= 0:
        return "0.00"
    decimals = max(2, min(6, 2 - math.floor(math.log10(value))))
    return f"{value:.{decimals}f}"


def bus_factor(world_size: int) -> float:
    """All-reduce moves 2(n-1)/n of the data over each rank's links (0 for a single rank)."""
    return 2 * (world_size - 1) / world_size if world_size > 0 else 0.0


@dataclass
class Row:
    size: int  # bytes per rank
    seconds: float  # average time of one all-reduce
    algbw: float  # GB/s
    busbw: float  # GB/s


def row(size: int, seconds: float, world_size: int) -> Row:
    algbw = size / seconds / GB if seconds > 0 else 0.0
    return Row(size, seconds, algbw, algbw * bus_factor(world_size))


@dataclass
class Expectation:
    label: str  # e.g. `8x NVIDIA H100 80GB HBM3 over NVLink`
    low: float  # GB/s busbw a healthy system reaches at large sizes (ring algorithm)
    high: float  # GB/s with the best algorithm (e.g. NVLS)
    source: str


# (GPU name fragment, interconnect) -> busbw range in GB/s at >= 1 GiB messages, single node.
_TABLE: list[tuple[str, str, float, float, str]] = [
    ("H200", "nvlink", 360.0, 475.0, "nccl-tests #272: 8x H200 peak about 475 GB/s"),
    ("H100", "nvlink", 360.0, 480.0,
     "nccl-tests #212: 8x H100 about 480 GB/s with NVLS, about 370 GB/s with rings"),
    ("A100", "nvlink", 180.0, 230.0, "A100 NVLink3 (600 GB/s): about 230 GB/s all-reduce busbw"),
    ("", "pcie", 15.0, 22.0, "PCIe Gen4/Gen5 x16 between GPUs: about 20 GB/s busbw"),
]


def expectation(gpu_name: str | None, interconnect: str | None, world_size: int,
                nodes: int) -> tuple[Expectation | None, str]:
    """The figure to compare with, or None and why there is none."""
    if gpu_name is None:
        return None, "gloo on CPU: no reference figure (CPU all-reduce speed depends on the host)"
    if nodes > 1:
        return None, (f"{nodes} nodes: the figure depends on the NICs (about 24 GB/s busbw per "
                      "400 Gb/s NIC); compare nodes with --bisect")
    for fragment, fabric, low, high, source in _TABLE:
        if fragment in gpu_name and interconnect == fabric:
            label = f"{world_size}x {gpu_name} over {'NVLink' if fabric == 'nvlink' else 'PCIe'}"
            return Expectation(label, low, high, source), ""
    return None, f"no reference figure for {gpu_name} over {interconnect or 'an unknown link'}"


@dataclass
class Shortfall:
    row: Row
    expected: Expectation

    @property
    def percent(self) -> int:
        return round(100 * self.row.busbw / self.expected.low)


def shortfall(rows: list[Row], expected: Expectation | None) -> Shortfall | None:
    """The largest comparable size when it reaches less than SLOW_FRACTION of the expectation."""
    comparable = [r for r in rows if r.size >= MIN_COMPARABLE_SIZE]
    if expected is None or not comparable:
        return None
    biggest = max(comparable, key=lambda r: r.size)
    if biggest.busbw < SLOW_FRACTION * expected.low:
        return Shortfall(biggest, expected)
    return None


def comparable_note(rows: list[Row], expected: Expectation | None) -> str:
    if expected is not None and not any(r.size >= MIN_COMPARABLE_SIZE for r in rows):
        return (f"sizes up to {format_size(max(r.size for r in rows))} cannot approach peak; "
                f"add a size of at least {format_size(MIN_COMPARABLE_SIZE)} (e.g. --sizes 1M,1G)")
    return ""


_NVLINK = regex.compile(r"\bNV\d+\b")


def interconnect() -> str | None:
    """`nvlink` when `nvidia-smi topo -m` shows NVLink between GPUs, `pcie` when it shows none."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "topo", "-m"], capture_output=True, text=True, timeout=10,
                             check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    if not out.strip():
        return None
    return "nvlink" if _NVLINK.search(out) else "pcie"
