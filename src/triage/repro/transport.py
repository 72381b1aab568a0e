"""Which transports NCCL connected the ranks with (from NCCL_DEBUG=INFO output), and how
`nvidia-smi topo -m` says the GPUs are joined.

A measured busbw is the speed of the slowest hop NCCL actually used, not of the best link the box
has: ranks made to look like separate hosts (NCCL_HOSTID) talk over sockets even on an NVLink
machine. So the reference figure is chosen from NCCL's own account of each connection.

Formats were read in NVIDIA/nccl at tags v2.18.1-1, v2.18.3-1, v2.21.5-1, v2.22.3-1, v2.23.4-1,
v2.26.2-1, v2.28.9-1 and v2.30.7-1 (file:line at 2.28.9 unless said; every line of the test logs
is traced in tests/data/nccl-transport/README.md):

- Envelope, src/debug.cc:347-363: `{host}:{pid}:{tid} [{cudaDev}] NCCL INFO {msg}`; 2.26+ may put
  `[{date} {time}] ` first (NCCL_DEBUG_TIMESTAMP_LEVELS). Launchers and our own log add prefixes.
- One line per connection, under the INIT subsystem (on by default), from the rank that sets up
  that side. src/transport.cc prints none of them; each transport does:
  - src/transport/p2p.cc:386-406 (2.18.1: 355-374), send side only: `Channel %02d/%01d :
    %d[%d] -> %d[%d] via P2P/{IPC|CUMEM|MNNVL|direct pointer}{/read}{/CE}`, and `via
    P2P/indirect/%d[%d]{/read}`. MNNVL from 2.20. The brackets hold the NVML index (nvidia-smi's
    GPU number) from 2.18.3; 2.18.1 printed the PCI busId in hex (the CUMEM line the CUDA device).
  - src/transport/shm.cc:128 (2.18.1: 95), send side only: `Channel %02d : %d[%d] -> %d[%d] via
    SHM/{direct|CE}/{direct|CE}` (no connection index); 2.30.7 (shm.cc:116) `via SHM/direct`.
  - src/transport/net.cc:313, 317, 359 (2.18.1: 186, 189, 227), both sides: `Channel %02d/%d :
    %d[%d] -> %d[%d] [send|receive] via NET/{name}/{dev}{(proxyRank)}{/GDRDMA}{(PCI)}{/Shared}`;
    `(PCI)` from 2.26. The name is the network's: `IB` (net_ib.cc), `Socket` (net_socket.cc) or
    a plugin's, e.g. `IBext_v8` (Mellanox/nccl-rdma-sharp-plugins src/ib_plugin.c, IB verbs too).
  - src/transport/coll_net.cc:182, 206 (2.21.5: 167, 191): `CollNet %02d/%1d : %d [send|receive]
    via COLLNET/{name}/{dev}{/GDRDMA}{(PCI)}` (`SHARP`: nccl-rdma-sharp-plugins src/sharp_plugin.c).
  - src/transport/nvls.cc:340 (2.21.5: 316): `NVLS comm %p headRank %d nHeads %d ...` when NVLS
    buffers are set up: at init up to 2.21; from 2.22 (runtime connect, src/group.cc) only when a
    collective first picks NVLS.
- src/init.cc:428 `Using network %s`; src/transport/net_socket.cc:76 `NET/Socket : Using
  [0]{if}:{addr}<{port}> ...`; src/transport/net_ib.cc:839 (2.30.7: net_ib/init.cc:513)
  `NET/IB : Using [0]{dev}:{port}/{IB|RoCE} ... {[RO]}; OOB {if}:{addr}<{port}>`;
  src/misc/utils.cc:88 `NCCL_HOSTID set by environment to %s` (ENV subsystem, on by default).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from triage.lazy_regex import lazy_compile

# The NCCL envelope anywhere in a line, so that torchrun's `[default0]:`, a 2.26+ timestamp or our
# own tag may come first.
_INFO = lazy_compile(r"[^\s:]+:\d+:\d+ \[\d+\] NCCL INFO (?P<msg>.*)")
# Every connection line: P2P, SHM and NET name both ends (`rank[dev] -> rank[dev]`), CollNet only
# the local rank. Only these lines end in ` via <transport>`.
_CONNECTION = lazy_compile(
    r"^(?:Channel|CollNet) \d+(?:/\d+)? : "
    r"(?:\d+\[(?P<src_dev>[0-9a-f]+)\] -> \d+\[(?P<dst_dev>[0-9a-f]+)\]|\d+) "
    r"(?:\[(?:send|receive)\] )?via (?P<via>\S.*?)\s*$")
# `NET/IB/3(2)/GDRDMA(PCI)/Shared`: network, NIC, proxy rank (PXN), flags; CollNet alike.
_NET = lazy_compile(
    r"^NET/(?P<name>.+?)/\d+(?:\(\d+\))?(?P<flags>(?:/GDRDMA)?(?:\(PCI\))?(?:/Shared)?)$")
_COLLNET = lazy_compile(r"^COLLNET/(?P<name>.+?)/\d+(?P<flags>(?:/GDRDMA)?(?:\(PCI\))?)$")
_INDIRECT_HOP = lazy_compile(r"/\d+\[[0-9a-f]+\]")  # `P2P/indirect/2[2]`: which GPU relays
_NVLS = lazy_compile(r"^NVLS comm \S+ headRank \d+")
_HOSTID = lazy_compile(r"^NCCL_HOSTID set by environment to ")
_NETWORK = lazy_compile(r"^Using network (?P<name>.+?)\s*$")
_SOCKET_DEVICES = lazy_compile(r"^NET/Socket : Using(?P<list>.*)$")
_IB_DEVICES = lazy_compile(r"^NET/IB : Using(?P<list>.*?); OOB ")
_DEVICE = lazy_compile(r" \[\d+\](\S+)")  # ` [0]lo:127.0.0.1<0>`, ` [1]mlx5_1:1/IB`
_PORT = lazy_compile(r"<\d+>$")

# Slowest first: an all-reduce ring runs at the pace of its slowest hop, so that hop's kind decides
# which reference applies. The order is a judgement, not a measurement:
# - NET/Socket: TCP through the kernel, CPU-bound (loopback when NCCL_HOSTID splits one host);
# - NET/IB and other network plugins: RDMA NICs, 25-50 GB/s a port at 200-400 Gb/s;
# - CollNet: reduction in the switches over those same NICs;
# - SHM: staged through host memory by the CPU or copy engines, about a PCIe link's speed;
# - P2P: GPU to GPU over PCIe or NVLink;
# - NVLS: NVLink SHARP multicast through NVSwitch.
# SHM against NET/IB is the doubtful pair (either can be slower), but neither has a reference
# figure, so the order only changes which reason is given.
_SPEED_ORDER = {"NET/Socket": 0, "NET": 1, "CollNet": 2, "SHM": 3, "P2P": 4, "NVLS": 5}


def _net_kind(name: str) -> str:
    """`NET/IB` for NCCL's IB transport and the IBext plugin; `NET/<name>` for any other network."""
    return "NET/IB" if name == "IB" or name.startswith("IBext") else f"NET/{name}"


def _speed_rank(kind: str) -> int:
    if kind.startswith("NET/") and kind != "NET/Socket":
        kind = "NET"  # IB and plugins alike: their speed is the NIC's
    return _SPEED_ORDER.get(kind, _SPEED_ORDER["NET"])


@dataclass
class TransportUse:
    """What NCCL connected one rank (or, combined, a whole job) with."""

    # Connections by kind: P2P, SHM, NET/IB, NET/Socket, NET/<plugin>, CollNet, NVLS (set-ups).
    kinds: Counter[str] = field(default_factory=Counter)
    # ... and by flavour as NCCL names it: P2P/CUMEM/read, SHM/direct/direct, NET/IB/GDRDMA.
    details: Counter[str] = field(default_factory=Counter)
    network: str | None = None  # `Using network IB`: IB, Socket or a plugin's name
    hostid_set: bool = False  # NCCL_HOSTID replaced the host identity: one host may pose as many
    # The devices NCCL listed for that network: lo:127.0.0.1, mlx5_0:1/IB.
    interfaces: list[str] = field(default_factory=list)
    # (from, to) NVML indices, nvidia-smi's GPU numbers, of each P2P hop.
    p2p_pairs: set[tuple[int, int]] = field(default_factory=set)

    @property
    def bottleneck(self) -> str | None:
        return bottleneck(self)

    def describe(self) -> str:
        """One line for a log: the slowest kind, every connection flavour, the network."""
        slowest = bottleneck(self)
        if slowest is None:
            return "no NCCL connection line seen (NCCL_DEBUG=INFO shows them)"
        parts = [f"slowest hop {slowest}",
                 "connections " + ", ".join(f"{d} x{n}" for d, n in sorted(self.details.items()))]
        if self.network:
            over = f" over {', '.join(self.interfaces)}" if self.interfaces else ""
            parts.append(f"network {self.network}{over}")
        if self.hostid_set:
            parts.append("NCCL_HOSTID set by the environment")
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {"kinds": dict(self.kinds), "details": dict(self.details), "network": self.network,
                "hostid_set": self.hostid_set, "interfaces": list(self.interfaces),
                "p2p_pairs": sorted([a, b] for a, b in self.p2p_pairs)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TransportUse:
        return cls(Counter(data.get("kinds") or {}), Counter(data.get("details") or {}),
                   data.get("network"), bool(data.get("hostid_set")),
                   list(data.get("interfaces") or []),
                   {(int(a), int(b)) for a, b in data.get("p2p_pairs") or []})


def read_transports(lines: Iterable[str]) -> TransportUse:
    """Every NCCL connection, the network and NCCL_HOSTID, from the lines of a rank's log."""
    use = TransportUse()
    devices: dict[str, list[str]] = {}  # network kind -> the devices NCCL listed for it
    for line in lines:
        info = _INFO.search(line)
        if info is None:
            continue
        msg = info["msg"]
        if (conn := _CONNECTION.match(msg)) is not None:
            _count(use, conn["via"], conn["src_dev"], conn["dst_dev"])
        elif _NVLS.match(msg):
            use.kinds["NVLS"] += 1
            use.details["NVLS"] += 1
        elif _HOSTID.match(msg):
            use.hostid_set = True
        elif (network := _NETWORK.match(msg)) is not None:
            use.network = network["name"]
        elif (listed := _SOCKET_DEVICES.match(msg) or _IB_DEVICES.match(msg)) is not None:
            kind = "NET/Socket" if msg.startswith("NET/Socket") else "NET/IB"
            devices[kind] = [_PORT.sub("", d) for d in _DEVICE.findall(listed["list"])]
    if use.network is not None:
        use.interfaces = devices.get(_net_kind(use.network), [])
    elif len(nets := [k for k in use.kinds if k.startswith("NET/")]) == 1:
        use.interfaces = devices.get(nets[0], [])
    return use


def _count(use: TransportUse, via: str, src_dev: str | None, dst_dev: str | None) -> None:
    """Count one connection line by kind and flavour; keep the GPUs a P2P hop joins."""
    if via.startswith("P2P/"):
        use.kinds["P2P"] += 1
        use.details[_INDIRECT_HOP.sub("", via)] += 1
        # NVML indices from 2.18.3 on; 2.18.1's busIds (hex) land outside any topology.
        if src_dev and dst_dev and src_dev.isdigit() and dst_dev.isdigit():
            use.p2p_pairs.add((int(src_dev), int(dst_dev)))
    elif via.startswith("SHM/"):
        use.kinds["SHM"] += 1
        use.details[via] += 1
    elif (net := _NET.match(via)) is not None:
        use.kinds[_net_kind(net["name"])] += 1
        use.details[f"NET/{net['name']}{net['flags']}"] += 1
    elif (coll := _COLLNET.match(via)) is not None:
        use.kinds["CollNet"] += 1
        use.details[f"COLLNET/{coll['name']}{coll['flags']}"] += 1


def bottleneck(use: TransportUse) -> str | None:
    """The slowest kind among the connections NCCL made; None when no transport line was seen."""
    if not use.kinds:
        return None
    return min(use.kinds, key=lambda kind: (_speed_rank(kind), kind))


def combine(uses: Iterable[TransportUse]) -> TransportUse:
    """One view of several ranks: each rank's log shows only its own side of P2P and SHM hops.

    P2P pairs of every node are later looked up in one host's topology: the nodes are assumed alike.
    """
    total = TransportUse()
    for use in uses:
        total.kinds.update(use.kinds)
        total.details.update(use.details)
        total.network = total.network or use.network
        total.hostid_set = total.hostid_set or use.hostid_set
        total.interfaces += [i for i in use.interfaces if i not in total.interfaces]
        total.p2p_pairs |= use.p2p_pairs
    return total


# `nvidia-smi topo -m`: a header row naming the columns (GPUs first, then NICs and affinities),
# then one row per GPU. GPU-to-GPU cells are `X` (self), `NV#` (# bonded NVLinks), or the PCIe path:
# PIX, PXB, PHB, NODE, SYS (SOC in old drivers). On a terminal the header is underlined (ANSI).
_ANSI = lazy_compile(r"\x1b\[[0-9;]*m")
_GPU = lazy_compile(r"^GPU(\d+)$")
_NVLINK_CELL = lazy_compile(r"^NV\d+$")
_PCIE_CELLS = frozenset({"PIX", "PXB", "PHB", "NODE", "SYS", "SOC"})


@dataclass(frozen=True)
class Topology:
    """The GPU-to-GPU cells of `nvidia-smi topo -m`, by NVML index (the `GPUn` of its rows)."""

    cells: dict[tuple[int, int], str]  # (row GPU, column GPU) -> X, NV18, PIX, SYS ...

    @property
    def gpus(self) -> list[int]:
        return sorted({a for a, _ in self.cells})

    def link(self, a: int, b: int) -> str | None:
        """`nvlink` for NV#, `pcie` for a PCIe path, None for self, unknown cells or GPUs."""
        cell = self.cells.get((a, b))
        if cell is None:
            return None
        if _NVLINK_CELL.match(cell):
            return "nvlink"
        return "pcie" if cell in _PCIE_CELLS else None


def read_topology(text: str) -> Topology | None:
    """The GPU matrix of `nvidia-smi topo -m` output; None when it has no GPU rows."""
    columns: list[int] | None = None
    cells: dict[tuple[int, int], str] = {}
    for raw in text.splitlines():
        tokens = _ANSI.sub("", raw).split()
        if columns is None:
            # The header names GPU0 first (its first cell is empty); GPU0's own row has `X` there.
            if tokens[:1] == ["GPU0"] and tokens[1:2] != ["X"]:
                columns = [int(name[3:]) for name in _leading_gpus(tokens)]
            continue
        row = _GPU.match(tokens[0]) if tokens else None
        if row is None or len(tokens) < 1 + len(columns):
            continue  # NIC rows, the legend, blank lines
        for column, cell in zip(columns, tokens[1:1 + len(columns)], strict=True):
            cells[(int(row[1]), column)] = cell
    return Topology(cells) if cells else None


def _leading_gpus(tokens: list[str]) -> list[str]:
    names = []
    for token in tokens:
        if _GPU.match(token) is None:
            break
        names.append(token)
    return names


def p2p_link(use: TransportUse, topology: Topology | None) -> str | None:
    """`nvlink` or `pcie` for the P2P hops NCCL made, None when that cannot be told.

    The hops NCCL named (by NVML index) decide; one over PCIe makes the ring a PCIe ring. Without
    usable hops (NCCL 2.18.1 printed bus ids) the whole box decides, when all its pairs agree.
    """
    if any(d.startswith("P2P/MNNVL") for d in use.details):
        return "nvlink"  # multi-node NVLink: beyond topo -m, but NVLink by definition
    if topology is None:
        return None
    hops = {topology.link(a, b) for a, b in use.p2p_pairs if a != b and (a, b) in topology.cells}
    if hops:
        if None in hops:
            return None
        return "pcie" if "pcie" in hops else "nvlink"
    gpus = topology.gpus
    box = {topology.link(a, b) for a in gpus for b in gpus if a != b}
    return box.pop() if len(box) == 1 else None
