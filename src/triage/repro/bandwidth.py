"""Algorithm and bus bandwidth as nccl-tests defines them, and what NCCL's links should reach.

nccl-tests (doc/PERFORMANCE.md): algbw = S / t; for all-reduce busbw = algbw x 2(n-1)/n, the
figure that is comparable with the hardware's link speed whatever the number of ranks. GB/s is
10^9 bytes per second, as nccl-tests prints it.

The reference follows the slowest kind of connection NCCL made (see transport.py), not the best
link the box has: P2P over NVLink or PCIe and NVLS have figures; SHM, sockets, CollNet and
networks without a known line rate have none, and say why. No figure is better than an invented one.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from triage.repro.options import format_size
from triage.repro.transport import Topology, read_topology

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
    label: str  # e.g. `8x NVIDIA H100 80GB HBM3 over NVLink (P2P)`
    low: float  # GB/s busbw a healthy system reaches at large sizes (ring algorithm)
    high: float  # GB/s with the best algorithm (e.g. NVLS)
    source: str


# GPU name fragment -> busbw range in GB/s at >= 1 GiB messages, one HGX node (NVSwitch), when
# NCCL's slowest hop is P2P over NVLink (or NVLS). PCIe and NVL boards share the fragments but not
# the fabric, so they are left out by name.
_NVLINK_TABLE: list[tuple[str, float, float, str]] = [
    ("H200", 360.0, 475.0, "nccl-tests #272: 8x H200 peak about 475 GB/s; rings as on H100"),
    ("H100", 360.0, 480.0,
     "nccl-tests #212: 8x H100 about 480 GB/s with NVLS, about 370 GB/s with rings"),
    ("A100", 180.0, 230.0, "A100 NVLink3 (600 GB/s): about 230 GB/s all-reduce busbw"),
]
# `NVIDIA H100 PCIe`, `NVIDIA A100-PCIE-40GB`, `NVIDIA H200 NVL`, `NVIDIA GH200 480GB`
_NOT_HGX = ("PCIE", "NVL", "GH200")

# NCCL's own model of a PCIe link (src/graph/topo.cc, kvDictPciGen, unchanged 2.18-2.30): usable
# rate per lane in units of 100 Mb/s by generation, and `width * speed / 80.0` GB/s for the link.
# Unknown speed falls back to Gen3 there; PCI_BW in src/graph/topo.h is that Gen3 x16 figure (12).
_PCIE_LANE = {1: 15, 2: 30, 3: 60, 4: 120, 5: 240, 6: 480}
_PCIE_FALLBACK_GEN = 3
_PCIE_LANES = 16


def _pcie(gpu_name: str, world_size: int, pcie: tuple[int, int] | None) -> Expectation:
    """What NCCL itself assumes a P2P ring over the GPUs' PCIe links can carry."""
    gen, lanes = pcie if pcie and pcie[0] in _PCIE_LANE and pcie[1] > 0 else (None, _PCIE_LANES)
    figure = lanes * _PCIE_LANE[gen or _PCIE_FALLBACK_GEN] / 80
    if gen is None:
        return Expectation(
            f"{world_size}x {gpu_name} over PCIe (P2P)", figure, figure,
            f"NCCL's model of a PCIe link of unknown speed (Gen3 x16, src/graph/topo.cc "
            f"kvDictPciGen fallback): {figure:g} GB/s, the conservative low end")
    return Expectation(
        f"{world_size}x {gpu_name} over PCIe Gen{gen} x{lanes} (P2P)", figure, figure,
        f"NCCL's model of a PCIe Gen{gen} x{lanes} link (src/graph/topo.cc kvDictPciGen: "
        f"{_PCIE_LANE[gen] / 10:g} Gb/s a lane) = {figure:g} GB/s")


def _network(gpu_name: str, transport: str, world_size: int, nodes: int,
             nic_gbps: float | None) -> tuple[Expectation | None, str]:
    """A network hop bounds busbw by the line rate of the NICs a node sends through."""
    if nic_gbps is None or nic_gbps <= 0:
        return None, (f"{transport}: no reference figure without the NICs' line rate (busbw can "
                      "reach at most the line rate of the NICs a node sends through); compare "
                      "nodes with --bisect")
    figure = nic_gbps / 8
    where = f" on {nodes} nodes" if nodes > 1 else ""
    return Expectation(
        f"{world_size}x {gpu_name}{where} over {transport} ({nic_gbps:g} Gb/s)", figure, figure,
        f"derived, not measured: {nic_gbps:g} Gb/s of NIC line rate per node / 8 = "
        f"{figure:g} GB/s, the ceiling of a ring's busbw across nodes (NCCL models a NIC as its port speed / 8, "
        "src/graph/topo.cc)"), ""


def expectation(gpu_name: str | None, transport: str | None, link: str | None, world_size: int,
                nodes: int, *, nic_gbps: float | None = None, pcie: tuple[int, int] | None = None,
                interfaces: Sequence[str] = ()) -> tuple[Expectation | None, str]:
    """The figure to compare with, or None and why there is none.

    `transport` is the slowest kind of connection NCCL made (transport.bottleneck), `link` what
    joins the GPUs of its P2P hops (`nvlink`, `pcie`; transport.p2p_link). Optional facts sharpen
    the answer: `nic_gbps` the NIC line rate per node in Gb/s, `pcie` the (generation, lanes) of
    the GPUs' PCIe links, `interfaces` the network devices NCCL listed (`lo:127.0.0.1`).
    """
    if gpu_name is None:
        return None, "gloo on CPU: no reference figure (CPU all-reduce speed depends on the host)"
    if transport is None:
        return None, ("no NCCL connection line in the logs (NCCL_DEBUG=INFO prints them): cannot "
                      "tell which links the all-reduce used, so no reference figure")
    if nodes > 1 and transport in ("P2P", "SHM", "NVLS") and link != "nvlink":
        return None, (f"{nodes} nodes, but the NCCL lines read show only {transport} connections: "
                      "the hops between nodes are not among them, so no reference figure")
    if transport == "NVLS" or (transport == "P2P" and link == "nvlink"):
        return _nvlink(gpu_name, transport, world_size)
    if transport == "P2P" and link == "pcie":
        return _pcie(gpu_name, world_size, pcie), ""
    if transport == "P2P":
        return None, ("P2P over a link nvidia-smi topo -m did not show: no reference figure "
                      "(NVLink and PCIe differ tenfold)")
    if transport == "SHM":
        return None, ("SHM (through host memory): no reference figure - this measures the host's "
                      "memory and its PCIe paths through the CPU, not the GPU's links")
    if transport == "NET/Socket":
        names = ", ".join(dict.fromkeys(i.split(":", 1)[0] for i in interfaces))
        return None, (f"NET/Socket (sockets{f' over {names}' if names else ''}): no reference "
                      "figure - this measures the host's network path, not the GPU's links")
    if transport == "CollNet":
        return None, ("CollNet (reduction in the network switches): no reference figure - it "
                      "depends on the switches' offload, not only on the links")
    if transport.startswith("NET/"):
        return _network(gpu_name, transport, world_size, nodes, nic_gbps)
    return None, f"{transport}: no reference figure"


def _nvlink(gpu_name: str, transport: str, world_size: int) -> tuple[Expectation | None, str]:
    board = gpu_name.upper()
    for fragment, low, high, source in _NVLINK_TABLE:
        if fragment in board and not any(other in board for other in _NOT_HGX):
            return Expectation(f"{world_size}x {gpu_name} over NVLink ({transport})", low, high,
                               source), ""
    return None, f"no reference figure for {gpu_name} over NVLink ({transport})"


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


def _nvidia_smi(*args: str) -> str:
    """stdout of nvidia-smi, empty when it is missing, fails or hangs."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return ""
    try:
        done = subprocess.run([exe, *args], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout if done.returncode == 0 else ""


def gpu_topology() -> Topology | None:
    """This host's `nvidia-smi topo -m`, parsed (None without nvidia-smi or GPUs)."""
    return read_topology(_nvidia_smi("topo", "-m"))


def pcie_link() -> tuple[int, int] | None:
    """(generation, lanes) of the slowest GPU PCIe link, at the most the GPU and host allow."""
    return read_pcie_link(_nvidia_smi("--query-gpu=pcie.link.gen.max,pcie.link.width.max",
                                      "--format=csv,noheader,nounits"))


def read_pcie_link(text: str) -> tuple[int, int] | None:
    """The smallest `gen, width` row of that query; rows nvidia-smi could not fill are skipped."""
    links = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == 2 and all(f.isdigit() for f in fields):
            links.append((int(fields[0]), int(fields[1])))
    return min(links) if links else None
