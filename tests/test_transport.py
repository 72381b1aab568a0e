"""Which transport NCCL used, read from its INFO lines, and the reference figure that follows.

The logs under tests/data/nccl-transport/ are rebuilt from NCCL's format strings at the tag in
their name (provenance in that folder's README.md), not captured on hardware.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from triage.repro import bandwidth, transport
from triage.repro.transport import TransportUse

DATA = Path(__file__).parent / "data" / "nccl-transport"
H100 = "NVIDIA H100 80GB HBM3"
IB8 = ["mlx5_0:1/IB", "mlx5_3:1/IB", "mlx5_4:1/IB", "mlx5_5:1/IB", "mlx5_6:1/IB", "mlx5_9:1/IB",
       "mlx5_10:1/IB", "mlx5_11:1/IB"]


def read_log(name: str) -> TransportUse:
    with open(DATA / name, encoding="utf-8") as f:
        return transport.read_transports(f)


def read_topo(name: str) -> transport.Topology:
    topo = transport.read_topology((DATA / name).read_text(encoding="utf-8"))
    assert topo is not None
    return topo


# file -> (kinds, details, network, interfaces, NCCL_HOSTID set, P2P pairs, bottleneck)
LOGS = {
    "p2p-nvlink-2.21.log": (
        {"P2P": 16, "NVLS": 1}, {"P2P/CUMEM": 16, "NVLS": 1}, "IB", IB8, False, {(0, 1)}, "P2P"),
    "nvls-2.28.log": (
        {"P2P": 24, "NVLS": 1}, {"P2P/CUMEM": 24, "NVLS": 1}, "IB",
        [f"mlx5_{i}:1/IB" for i in range(8)], False, {(0, 1)}, "P2P"),
    "p2p-pcie-2.23.log": (
        {"P2P": 2}, {"P2P/CUMEM": 2}, "Socket", ["enp65s0f0:192.168.10.42"], False, {(0, 1)},
        "P2P"),
    # 2.18.1 printed bus ids (`0[7000] -> 1[f000]`): no NVML pair to look up.
    "p2p-ipc-busid-2.18.1.log": (
        {"P2P": 24}, {"P2P/IPC/read": 24}, "IB",
        ["mlx5_0:1/IB", "mlx5_1:1/IB", "mlx5_2:1/IB", "mlx5_3:1/IB", "mlx5_6:1/IB", "mlx5_7:1/IB",
         "mlx5_8:1/IB", "mlx5_9:1/IB"], False, set(), "P2P"),
    "shm-2.18.3.log": (
        {"SHM": 2}, {"SHM/direct/direct": 2}, "Socket", ["eno1:10.1.7.33"], False, set(), "SHM"),
    "net-ib-2.26.log": (
        {"NET/IB": 4}, {"NET/IB/GDRDMA": 4}, "IB", ["mlx5_0:1/IB"], False, set(), "NET/IB"),
    "mixed-p2p-net-ib-2.26.log": (
        {"P2P": 16, "NET/IB": 48}, {"P2P/CUMEM": 16, "NET/IB/GDRDMA": 48}, "IB", IB8, False,
        {(0, 1)}, "NET/IB"),
    "net-socket-hostid-2.28.log": (
        {"NET/Socket": 4}, {"NET/Socket": 4}, "Socket", ["lo:127.0.0.1"], True, set(),
        "NET/Socket"),
    # The IBext plugin is IB verbs; CollNet rides the same NICs, the rings' NET hops are slower.
    "collnet-2.21.log": (
        {"P2P": 8, "NET/IB": 24, "CollNet": 16},
        {"P2P/CUMEM": 8, "NET/IBext_v8/GDRDMA": 24, "COLLNET/SHARP/GDRDMA": 16}, "IBext_v8", [],
        False, {(0, 1)}, "NET/IB"),
}


@pytest.mark.parametrize("name", sorted(LOGS))
def test_each_log_gives_its_transports(name: str) -> None:
    kinds, details, network, interfaces, hostid, pairs, slowest = LOGS[name]
    use = read_log(name)
    assert dict(use.kinds) == kinds
    assert dict(use.details) == details
    assert use.network == network
    assert use.interfaces == interfaces
    assert use.hostid_set is hostid
    assert use.p2p_pairs == pairs
    assert transport.bottleneck(use) == slowest == use.bottleneck


def test_every_log_in_the_data_folder_is_checked() -> None:
    assert sorted(p.name for p in DATA.glob("*.log")) == sorted(LOGS)


def test_a_log_without_nccl_lines_has_no_transport() -> None:
    lines = ["2026-11-14T09:00:00.000Z triage-repro rank 0: phase comm_init start",
             "[rank0]:[W1114 09:00:01.000000000 ProcessGroupNCCL.cpp:1017] Warning: something",
             "NCCL version 2.21.5+cuda12.4",
             "node:1:1 [0] NCCL INFO Channel 00/02 : 0 1",  # ring order, not a connection
             "node:1:1 [0] 0.012000 p2pRecvSetup:458 NCCL TRACE Ring 00 : 1[1] <- 0[0] via P2P/CUMEM"]
    use = transport.read_transports(lines)
    assert use == TransportUse()
    assert transport.bottleneck(use) is None
    assert use.describe() == "no NCCL connection line seen (NCCL_DEBUG=INFO shows them)"


def test_prefixes_and_every_connection_format() -> None:
    lines = [
        "[default0]:node:7:7 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read/CE",
        "[2026-11-14 10:00:00] node:7:9 [0] NCCL INFO Channel 01/1 : 0[0] -> 2[2] via P2P/indirect/1[1]/read",
        "node:7:9 [3] NCCL INFO Channel 02/0 : 0[0] -> 1[1] via P2P/direct pointer",
        "node:7:9 [0] NCCL INFO Channel 03/0 : 0[0] -> 5[1] via P2P/MNNVL",
        "node:7:9 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct",  # 2.30.7
        "node:7:9 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/CE/direct",
        "node:7:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 9[1] [send] via NET/IB/3(2)/GDRDMA(PCI)/Shared",
        "node:7:9 [0] NCCL INFO Channel 00/0 : 9[1] -> 0[0] [receive] via NET/AWS Libfabric/0/GDRDMA",
        "node:7:9 [0] NCCL INFO CollNet 00/1 : 0 [send] via COLLNET/SHARP/0",
    ]
    use = transport.read_transports(lines)
    assert use.kinds == Counter({"P2P": 4, "SHM": 2, "NET/IB": 1, "NET/AWS Libfabric": 1, "CollNet": 1})
    assert use.details == Counter({
        "P2P/IPC/read/CE": 1, "P2P/indirect/read": 1, "P2P/direct pointer": 1, "P2P/MNNVL": 1,
        "SHM/direct": 1, "SHM/CE/direct": 1, "NET/IB/GDRDMA(PCI)/Shared": 1,
        "NET/AWS Libfabric/GDRDMA": 1, "COLLNET/SHARP": 1})
    assert use.p2p_pairs == {(0, 1), (0, 2)}  # NVML indices, not ranks: `0[0] -> 5[1]` is (0, 1)
    assert transport.bottleneck(use) == "NET/AWS Libfabric"  # a network, ranked with IB, ties by name


@pytest.mark.parametrize(("kinds", "slowest"), [
    (["NVLS"], "NVLS"),
    (["NVLS", "P2P"], "P2P"),
    (["P2P", "SHM"], "SHM"),
    (["SHM", "CollNet"], "CollNet"),
    (["CollNet", "NET/IB"], "NET/IB"),
    (["NET/IB", "NET/Socket", "P2P", "NVLS"], "NET/Socket"),
])
def test_the_bottleneck_is_the_slowest_kind(kinds: list[str], slowest: str) -> None:
    assert transport.bottleneck(TransportUse(kinds=Counter(kinds))) == slowest


def test_ranks_combine_and_travel_as_json() -> None:
    ranks = [read_log("p2p-nvlink-2.21.log"), read_log("net-socket-hostid-2.28.log")]
    both = transport.combine(ranks)
    assert both.kinds == Counter({"P2P": 16, "NVLS": 1, "NET/Socket": 4})
    assert both.network == "IB"
    assert both.hostid_set is True
    assert both.interfaces == [*IB8, "lo:127.0.0.1"]
    assert both.bottleneck == "NET/Socket"
    assert TransportUse.from_json(both.to_json()) == both


def test_describe_says_what_was_used() -> None:
    assert read_log("net-socket-hostid-2.28.log").describe() == (
        "slowest hop NET/Socket; connections NET/Socket x4; network Socket over lo:127.0.0.1; "
        "NCCL_HOSTID set by the environment")


def test_topology_of_eight_h100_over_nvswitch() -> None:
    topo = read_topo("topo-8x-h100-sxm.txt")
    assert topo.gpus == list(range(8))
    assert len(topo.cells) == 64
    assert topo.cells[(0, 1)] == "NV18"
    assert topo.cells[(3, 3)] == "X"
    assert topo.link(0, 7) == "nvlink"
    assert topo.link(2, 2) is None
    assert topo.link(0, 8) is None  # no GPU8 (NIC columns are not GPUs)


def test_topology_of_pcie_gpus_and_bridged_pairs() -> None:
    l40s = read_topo("topo-2x-l40s-sys.txt")
    assert l40s.cells == {(0, 0): "X", (0, 1): "SYS", (1, 0): "SYS", (1, 1): "X"}
    assert l40s.link(1, 0) == "pcie"
    bridged = read_topo("topo-4x-a6000-nvlink-bridges.txt")
    assert (bridged.cells[(2, 3)], bridged.cells[(1, 2)]) == ("NV4", "PHB")
    assert (bridged.link(0, 1), bridged.link(1, 2)) == ("nvlink", "pcie")
    one = read_topo("topo-1x-h100.txt")
    assert one.cells == {(0, 0): "X"}


def test_topology_with_the_terminal_underline_and_without_gpus() -> None:
    underlined = ("\t\x1b[4mGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
                  "GPU0\t X \tPIX\t0-15\t0\t\tN/A\nGPU1\tPIX\t X \t0-15\t0\t\tN/A\n")
    topo = transport.read_topology(underlined)
    assert topo is not None and topo.cells[(1, 0)] == "PIX" and topo.link(0, 1) == "pcie"
    assert transport.read_topology("") is None
    # Rows without their header: GPU0's row is not mistaken for one.
    assert transport.read_topology("GPU0\t X \tNV18\t0-15\nGPU1\tNV18\t X \t0-15\n") is None
    assert transport.read_topology("NVIDIA-SMI has failed because it couldn't communicate with "
                                   "the NVIDIA driver.\n") is None


def test_p2p_link_follows_the_hops_nccl_named() -> None:
    bridged = read_topo("topo-4x-a6000-nvlink-bridges.txt")
    assert transport.p2p_link(TransportUse(p2p_pairs={(0, 1)}), bridged) == "nvlink"
    assert transport.p2p_link(TransportUse(p2p_pairs={(0, 1), (1, 2)}), bridged) == "pcie"
    assert transport.p2p_link(TransportUse(), bridged) is None  # mixed box, hops unknown
    # 2.18.1's bus ids name no GPU of the box: the whole box decides when it is uniform.
    busids = read_log("p2p-ipc-busid-2.18.1.log")
    assert transport.p2p_link(busids, read_topo("topo-8x-h100-sxm.txt")) == "nvlink"
    assert transport.p2p_link(busids, read_topo("topo-2x-l40s-sys.txt")) == "pcie"
    assert transport.p2p_link(busids, read_topo("topo-1x-h100.txt")) is None
    assert transport.p2p_link(busids, None) is None
    mnnvl = TransportUse(kinds=Counter({"P2P": 1}), details=Counter({"P2P/MNNVL": 1}))
    assert transport.p2p_link(mnnvl, None) == "nvlink"


SOCKET_WHY = ("NET/Socket (sockets over lo): no reference figure - this measures the host's "
              "network path, not the GPU's links")
SHM_WHY = ("SHM (through host memory): no reference figure - this measures the host's memory "
           "and its PCIe paths through the CPU, not the GPU's links")
COLLNET_WHY = ("CollNet (reduction in the network switches): no reference figure - it depends on "
               "the switches' offload, not only on the links")
NET_IB_WHY = ("NET/IB: no reference figure without the NICs' line rate (busbw can reach at most "
              "the line rate of the NICs a node sends through); compare nodes with --bisect")
NO_LINES_WHY = ("no NCCL connection line in the logs (NCCL_DEBUG=INFO prints them): cannot tell "
                "which links the all-reduce used, so no reference figure")


@pytest.mark.parametrize(("log", "topo", "gpu", "world", "nodes", "figure", "label", "why"), [
    ("p2p-nvlink-2.21.log", "topo-8x-h100-sxm.txt", H100, 8, 1, (360.0, 480.0),
     "8x NVIDIA H100 80GB HBM3 over NVLink (P2P)", ""),
    ("nvls-2.28.log", "topo-8x-h100-sxm.txt", "NVIDIA H200", 8, 1, (360.0, 475.0),
     "8x NVIDIA H200 over NVLink (P2P)", ""),
    ("p2p-ipc-busid-2.18.1.log", "topo-8x-h100-sxm.txt", "NVIDIA A100-SXM4-80GB", 8, 1,
     (180.0, 230.0), "8x NVIDIA A100-SXM4-80GB over NVLink (P2P)", ""),
    ("p2p-pcie-2.23.log", "topo-2x-l40s-sys.txt", "NVIDIA L40S", 2, 1, (12.0, 12.0),
     "2x NVIDIA L40S over PCIe (P2P)", ""),
    # The case that started this: two ranks on one H100 box, joined by loopback sockets.
    ("net-socket-hostid-2.28.log", "topo-1x-h100.txt", H100, 2, 1, None, None, SOCKET_WHY),
    ("net-socket-hostid-2.28.log", "topo-8x-h100-sxm.txt", H100, 2, 1, None, None, SOCKET_WHY),
    ("shm-2.18.3.log", "topo-2x-l40s-sys.txt", "NVIDIA L40S", 2, 1, None, None, SHM_WHY),
    ("net-ib-2.26.log", "topo-1x-h100.txt", H100, 2, 2, None, None, NET_IB_WHY),
    ("mixed-p2p-net-ib-2.26.log", "topo-8x-h100-sxm.txt", H100, 16, 2, None, None, NET_IB_WHY),
    ("collnet-2.21.log", "topo-8x-h100-sxm.txt", H100, 16, 2, None, None, NET_IB_WHY),
])
def test_expectation_from_what_nccl_used(log: str, topo: str, gpu: str, world: int, nodes: int,
                                         figure: tuple[float, float] | None, label: str | None,
                                         why: str) -> None:
    use = read_log(log)
    link = transport.p2p_link(use, read_topo(topo))
    expected, reason = bandwidth.expectation(gpu, use.bottleneck, link, world, nodes,
                                             interfaces=use.interfaces)
    assert reason == why
    if figure is None:
        assert expected is None
    else:
        assert expected is not None
        assert (expected.low, expected.high, expected.label) == (*figure, label)


def test_nvlink_figures_by_board() -> None:
    h100, _ = bandwidth.expectation(H100, "P2P", "nvlink", 8, 1)
    assert h100 is not None and h100.source.startswith("nccl-tests #212")
    nvls, _ = bandwidth.expectation(H100, "NVLS", None, 8, 1)
    assert nvls is not None and nvls.label == "8x NVIDIA H100 80GB HBM3 over NVLink (NVLS)"
    for board in ("NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA A100 80GB PCIe",
                  "NVIDIA GH200 480GB", "NVIDIA B200"):
        none, why = bandwidth.expectation(board, "P2P", "nvlink", 2, 1)
        assert none is None
        assert why == f"no reference figure for {board} over NVLink (P2P)"


def test_pcie_figure_follows_nccl_model_of_the_link() -> None:
    gen4, _ = bandwidth.expectation("NVIDIA L40S", "P2P", "pcie", 4, 1, pcie=(4, 16))
    assert gen4 is not None
    assert (gen4.low, gen4.high) == (24.0, 24.0)
    assert gen4.label == "4x NVIDIA L40S over PCIe Gen4 x16 (P2P)"
    assert gen4.source == ("NCCL's model of a PCIe Gen4 x16 link (src/graph/topo.cc kvDictPciGen: "
                           "12 Gb/s a lane) = 24 GB/s")
    gen5, _ = bandwidth.expectation("NVIDIA H100 PCIe", "P2P", "pcie", 2, 1, pcie=(5, 16))
    assert gen5 is not None and gen5.low == 48.0
    unknown, _ = bandwidth.expectation("NVIDIA L40S", "P2P", "pcie", 4, 1, pcie=(9, 16))
    assert unknown is not None and unknown.low == 12.0 and "unknown speed" in unknown.source
    assert bandwidth.read_pcie_link("4, 16\n5, 16\n4, 8\n") == (4, 8)
    assert bandwidth.read_pcie_link("[N/A], [N/A]\n") is None
    assert bandwidth.read_pcie_link("") is None


def test_network_figure_only_from_a_given_line_rate() -> None:
    ib, why = bandwidth.expectation(H100, "NET/IB", None, 16, 2, nic_gbps=3200)
    assert why == ""
    assert ib is not None
    assert (ib.low, ib.high) == (400.0, 400.0)
    assert ib.label == "16x NVIDIA H100 80GB HBM3 on 2 nodes over NET/IB (3200 Gb/s)"
    assert ib.source.startswith("derived, not measured: 3200 Gb/s of NIC line rate per node / 8")
    plugin, why = bandwidth.expectation(H100, "NET/AWS Libfabric", None, 16, 2)
    assert plugin is None and why.startswith("NET/AWS Libfabric: no reference figure without")
    # A socket hop gets no figure even when a line rate is known: it measures the host's stack.
    sockets, why = bandwidth.expectation(H100, "NET/Socket", None, 2, 2, nic_gbps=100)
    assert sockets is None
    assert why == ("NET/Socket (sockets): no reference figure - this measures the host's network "
                   "path, not the GPU's links")


@pytest.mark.parametrize(("gpu", "kind", "link", "nodes", "why"), [
    (None, None, None, 1,
     "gloo on CPU: no reference figure (CPU all-reduce speed depends on the host)"),
    (H100, None, "nvlink", 1, NO_LINES_WHY),
    (H100, "P2P", None, 1, "P2P over a link nvidia-smi topo -m did not show: no reference figure "
                           "(NVLink and PCIe differ tenfold)"),
    (H100, "SHM", "pcie", 1, SHM_WHY),
    (H100, "CollNet", None, 2, COLLNET_WHY),
    (H100, "P2P", "pcie", 2, "2 nodes, but the NCCL lines read show only P2P connections: the "
                             "hops between nodes are not among them, so no reference figure"),
])
def test_no_figure_and_why(gpu: str | None, kind: str | None, link: str | None, nodes: int,
                           why: str) -> None:
    assert bandwidth.expectation(gpu, kind, link, 8, nodes) == (None, why)


def test_a_slow_socket_run_is_not_called_slow_against_a_pcie_figure() -> None:
    # 1.85 GB/s busbw at 64 MiB over loopback sockets (docs/formats.md section 9): no figure, no flag.
    use = read_log("net-socket-hostid-2.28.log")
    expected, _ = bandwidth.expectation(H100, use.bottleneck, None, 2, 1)
    rows = [bandwidth.row(64 << 20, (64 << 20) / 1.85e9, 2)]
    assert expected is None
    assert bandwidth.shortfall(rows, expected) is None
