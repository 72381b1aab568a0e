"""CANN releases, the faults and their truth, the Spec of a job and the Truth the generator returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Cann:
    name: str
    date: tuple[int, int, int]  # when a job of this era ran (the logs' calendar)
    flat: bool  # CANN 5.x: plog/ and device-<id>/ straight under the log root
    comm_tid: bool  # CANN 6: HCCL lines carry [commId][rank] where others carry [tid]
    stages: bool  # CANN 8.5: [InitGroupStage]/[InitChannelStage]/[TaskExecStage] keywords
    screen: str  # code prefix on screen: bare | ts | pid
    heartbeat: bool  # EI0002 text and plogs carry the cluster heartbeat verdict
    exec_timeout: int  # HCCL_EXEC_TIMEOUT default of the era, seconds


CANNS: dict[str, Cann] = {
    "5.1": Cann("5.1", (2022, 6, 14), True, False, False, "bare", False, 1800),
    "6.3": Cann("6.3", (2023, 3, 8), False, True, False, "bare", False, 1800),
    "7.0": Cann("7.0", (2024, 5, 21), False, False, False, "ts", False, 1836),
    "8.0": Cann("8.0", (2024, 11, 28), False, False, False, "pid", True, 1836),
    "8.5": Cann("8.5", (2025, 10, 24), False, False, True, "pid", True, 1836),
}


# fault -> (phase, category, branch of the culprit reasoning that should find it)
FAULTS: dict[str, tuple[str, str, str]] = {
    "none": ("", "", ""),
    "init-missing": ("comm_init", "crashed_process", "init_root_connected_vs_needed"),
    "init-agent": ("comm_init", "network_fault", "init_agent_connect_failed"),
    "init-ranktable": ("comm_init", "config_mismatch", "init_rank_local_error"),
    "ei0006-silent": ("operator_load", "hung_process", "ei0006_non_reporter"),
    "link-chain": ("operator_load", "hung_process", "wait_chain_end"),
    "link-cycle": ("operator_load", "network_fault", "wait_chain_cycle"),
    "tls": ("operator_load", "config_mismatch", "tls_minority"),
    "ei0005": ("operator_load", "collective_mismatch", "ei0005_parameter_mismatch"),
    "ei0002-silent": ("execution", "hung_process", "ei0002_non_reporter"),
    "heartbeat": ("execution", "hung_process", "heartbeat_exception_location"),
    "heartbeat-lost": ("execution", "crashed_process", "heartbeat_exception_location"),
    "cqe": ("execution", "network_fault", "error_cqe_link"),
    "late": ("execution", "hung_process", "exec_spread_last_device"),
    "ej0001": ("comm_init", "device_error", "ej0001_stale_process"),
    # "must lose" stories: one branch's evidence is present and names the wrong rank(s), while a
    # stronger piece of evidence in the same logs names the culprit (LOSERS: the branch that must lose)
    "lose-init-root": ("comm_init", "network_fault", "init_agent_connect_failed"),
    "lose-init-agent": ("comm_init", "device_error", "ej0001_stale_process"),
    "lose-ei0006": ("operator_load", "config_mismatch", "tls_minority"),
    "lose-chain-end": ("operator_load", "collective_mismatch", "ei0005_parameter_mismatch"),
    "lose-cycle": ("operator_load", "config_mismatch", "tls_minority"),
    "lose-tls": ("operator_load", "hung_process", "wait_chain_end"),
    "lose-ei0002": ("execution", "hung_process", "heartbeat_exception_location"),
    "lose-heartbeat": ("execution", "network_fault", "error_cqe_link"),
    "lose-cqe": ("execution", "crashed_process", "heartbeat_exception_location"),
    "lose-spread": ("execution", "hung_process", "ei0002_non_reporter"),
    "lose-ej0001": ("execution", "hung_process", "heartbeat_exception_location"),
    "lose-ei0005": ("operator_load", "hung_process", "ei0006_non_reporter"),
    "lose-init-store": ("comm_init", "device_error", "ej0001_stale_process"),
}


LOSERS: dict[str, str] = {
    "lose-init-root": "init_root_connected_vs_needed",
    "lose-init-agent": "init_agent_connect_failed",
    "lose-ei0006": "ei0006_non_reporter",
    "lose-chain-end": "wait_chain_end",
    "lose-cycle": "wait_chain_cycle",
    "lose-tls": "tls_minority",
    "lose-ei0002": "ei0002_non_reporter",
    "lose-heartbeat": "heartbeat_exception_location",
    "lose-cqe": "error_cqe_link",
    "lose-spread": "exec_spread_last_device",
    "lose-ej0001": "ej0001_stale_process",
    "lose-ei0005": "ei0005_parameter_mismatch",
    "lose-init-store": "init_rank_local_error",
}


TLS_FAULTS = ("tls", "lose-ei0006", "lose-cycle", "lose-tls")  # some device has TLS switched on


CHAIN_FAULTS = ("link-chain", "lose-tls")  # the failing collective is in the sub-communicator


LAG_S = {"lose-ei0006": 6.0, "lose-ei0002": 4.0}  # the lagging rank (peer) enters the op this late


SKEW_S = 420.0  # lose-spread: the last server's clock runs this far ahead (no NTP)


DOCKER_IP = "172.17.0.1"  # lose-init-root: the root advertises its docker0 bridge address


RESTART_FAULTS = ("lose-ej0001",)  # torchrun --max-restarts=1: the workers run a second attempt


LATE_S = 40.0  # lose-init-store: the late rank reaches its communicator creation this much later


MASTER_PORT = 29500  # the c10d store (MASTER_PORT) that rank 0's process hosts under a shell launcher


LAYOUTS = ("full", "plogs", "screen")


TAG_OPS = {"AllReduce": 2, "AllGather": 6, "ReduceScatter": 7, "Broadcast": 1}  # cmdType enum


ROOT_PORT = 60000


NIC = "enp189s0f0"


PNAME = "python"


@dataclass(frozen=True)
class Spec:
    """One job: its shape, its era, its fault, and what the user collected."""

    name: str
    fault: str = "none"
    culprit: int | None = None  # global rank (cqe: the endpoint whose port fails; cycle: one end)
    peer: int | None = None  # cycle/cqe: the other end of the link; lose-*: the other rank of the story
    servers: int = 1
    npus: int = 8
    cann: str = "8.0"
    layout: str = "full"  # full | plogs (no screen output) | screen (no ~/ascend/log)
    launcher: str = "torchrun"  # torchrun: one screen file per server; shell: one per rank
    server_naming: str = "host"  # host | ip: how the user named each server's folder
    visible: tuple[int, ...] | None = None  # ASCEND_RT_VISIBLE_DEVICES (logical -> physical)
    permute_servers: tuple[int, ...] = ()  # servers on which `visible` applies (empty: all)
    rank_table: bool = False  # RANK_TABLE_FILE mode (HcclCommInitClusterInfo): JSON in bundle
    subgroup: tuple[int, ...] = ()  # link-chain: the sub-communicator's members (global ranks)
    rank_prefix: bool = True  # torch >= 2.2: "[rankN]: " in front of traceback lines
    steps: int = 24  # training steps rendered before the fault
    noise: int = 6  # INFO noise lines per step per rank
    seed: int = 1


@dataclass
class RankTruth:
    rank: int
    server: str  # the bundle folder of its server
    host_ip: str
    device: int  # physical device id (devicePhyId, device-<id> folders, heartbeat [ip/id])
    logical: int  # deviceLogicId / torch_npu Device:
    device_ip: str
    pid: int


@dataclass
class Truth:
    """What really happened in the generated job (the verdict a diagnosis should reach)."""

    name: str
    cann: str
    fault: str
    layout: str
    servers: int
    npus: int
    world_size: int
    phase: str
    category: str
    branch: str
    culprit_ranks: list[int]
    culprit_devices: list[str]  # "server_ip/phyId" as HCCL's heartbeat writes them
    culprit_servers: list[str]
    link: dict[str, Any] | None  # link faults: both ends (rank, server ip, device ip)
    victims: list[int]  # ranks that report the failure as a consequence
    groups: dict[str, list[int]]  # communicator identifier -> global ranks by group rank
    ranks: list[RankTruth]
    files: list[str]
    loser_branch: str = ""  # lose-* stories: the branch whose evidence is present but must lose
    loser_culprit_ranks: list[int] = field(default_factory=list)  # whom that branch would name
    # torchrun restarted the workers once: rank -> pid of its second attempt (ranks[].pid: the first)
    restart_pids: dict[int, int] = field(default_factory=dict)
