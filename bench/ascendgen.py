"""Deterministic generator of the logs a failed (or clean) Ascend/HCCL training job leaves behind.

No NPU is needed: the generator writes what each server's ``~/ascend/log`` folder and the training
stdout would hold, line by line, in the envelopes of ``/work/shared/reference/formats.md`` §5:

* plogs: ``debug/plog/plog-<pid>_<ts>.log`` (several files per pid: the INFO-level debug plog is
  rotated), ``run/plog/plog-<pid>_<ts>.log``, ``debug|run/device-<phyId>/device-<pid>_<ts>.log``;
  CANN 5.x writes the flat ``plog/`` and ``device-<phyId>/`` folders instead;
* the plog line ``[LVL] MOD(pid,pname):yyyy-mm-dd-hh:mm:ss.fff.zzz [src:line][tid]msg`` with its
  variants: CANN 6 ``[commId][rank]`` in place of the thread id, CANN 8.5 stage keywords
  (``[InitGroupStage]``, ``[InitChannelStage]``, ``[TaskExecStage]``) and its no-space form, bare
  RUNTIME thread ids, ``tid:`` in HCCP lines;
* key-info lines that tell who a pid is (``Entry-HcclCommInitRootInfoInner… rank[r]``,
  ``[LocalRank Key Info]userRank[r] … devicePhyId[d] server[ip]``), in group-local ranks for
  sub-communicators;
* screen output (one file per server written through torchrun, or one per rank written by a
  shell launcher) with ``EIxxxx:``/``EJxxxx:`` codes in each CANN's prefix form, torch_npu
  ``HCCL function error`` / ``ERR02200 … RankID:r`` footers and ``WorkHCCL(...)`` watchdog lines;
* an optional rank table JSON;
* for a job torchrun restarted (``--max-restarts``, RESTART_FAULTS), both attempts: a second set of
  worker pids and plogs, a new communicator identifier, the agent's restart lines on the console.

Device ids are physical ids; a job may permute them (``ASCEND_RT_VISIBLE_DEVICES``), so the
device of a rank is not its local rank.  Everything is seeded: the same Spec gives the same bytes.

Usage::

    python bench/ascendgen.py OUT_DIR --fault ei0006-silent --culprit 5 [--servers 2 --npus 4]
        [--cann 7.0] [--layout full|plogs|screen] [--seed 1]

or, as a library: ``generate(spec, out_dir) -> Truth`` and ``plan(spec) -> Truth`` (no rendering).
Lines whose exact wording no source gives are marked ``# unsourced`` where they are written.
"""

from __future__ import annotations

import argparse
import calendar
import json
import random
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

# --------------------------------------------------------------------------------------------
# CANN releases: what differs between them in the files and lines


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


# --------------------------------------------------------------------------------------------
# The job's plan: who is who, and when things happen


@dataclass
class Proc:
    rank: int
    server: int
    local: int
    phy: int
    pid: int
    tid: int  # main thread (== pid)
    tid2: int  # HCCL worker thread
    hccp_pid: int  # hccp_service.bin on the device
    t_start: float
    jitter: float = 0.0  # this process's own delay on every failure (stamps are not round)
    t_last: float = 0.0  # last plog line (set by the plan)
    logs: bool = True  # has HCCL init lines (False: died before init)


@dataclass
class Plan:
    spec: Spec
    cann: Cann
    base: int  # epoch of job time 0
    procs: list[Proc]
    server_ips: list[str]
    server_dirs: list[str]
    identifier: str  # the world communicator's identifier
    groups: dict[str, list[int]]
    t_init: float
    t_first: float  # first collective (link establishment)
    step_s: float
    t_fault: float  # when the fault starts
    connect_timeout: int
    exec_timeout: int
    jobid: str
    root_ip: str = ""  # the root's advertised host ip when it is not its server's (lose-init-root)
    attempt: int = 0  # torchrun's restart count for these processes (RESTART_FAULTS: 0, then 1)
    restart: Plan | None = None  # the attempt torchrun restarted the workers into
    previous: Plan | None = None  # for a restarted attempt: the one before it

    @property
    def world(self) -> int:
        return len(self.procs)

    def device_ip(self, p: Proc) -> str:
        return f"192.168.{p.phy}.{11 + p.server}"


def _visible_for(spec: Spec, server: int) -> tuple[int, ...]:
    if spec.visible and (not spec.permute_servers or server in spec.permute_servers):
        return spec.visible
    return tuple(range(spec.npus))


def make_plan(spec: Spec) -> Plan:
    if spec.fault not in FAULTS:
        raise ValueError(f"unknown fault {spec.fault!r}")
    rng = random.Random(spec.seed)  # noqa: S311 (seeded on purpose: reproducible bundles)
    cann = CANNS[spec.cann]
    base = calendar.timegm((*cann.date, 9, rng.randrange(0, 50), rng.randrange(60), 0, 0, 0))
    ips = [f"10.90.42.{160 + s}" for s in range(spec.servers)]
    dirs = ips if spec.server_naming == "ip" else [f"atlas-a{s + 1:02d}" for s in range(spec.servers)]
    procs = []
    for s in range(spec.servers):
        pid = rng.randrange(200_000, 3_900_000)
        vis = _visible_for(spec, s)
        for lr in range(spec.npus):
            pid += rng.randrange(2, 9)  # the launcher forks the ranks one after another
            procs.append(
                Proc(
                    rank=s * spec.npus + lr,
                    server=s,
                    local=lr,
                    phy=vis[lr],
                    pid=pid,
                    tid=pid,
                    tid2=pid + rng.randrange(600, 1900),
                    hccp_pid=rng.randrange(2000, 40000),
                    t_start=rng.uniform(0.0, 2.5),
                    jitter=rng.uniform(0.0, 0.09),
                )
            )
    ident = (
        "hccl_world_group"
        if cann.name in ("5.1", "6.3") or spec.rank_table
        else f"{ips[0]}%{NIC}_{ROOT_PORT}_0_{(base + 21) * 1_000_000 + rng.randrange(10**6)}"
    )
    root_ip = ""
    if spec.fault == "lose-init-root":
        root_ip = DOCKER_IP
        ident = ident.replace(f"{ips[0]}%{NIC}", f"{DOCKER_IP}%docker0")
    groups = {ident: list(range(len(procs)))}
    if spec.subgroup:
        groups["group_name_1"] = list(spec.subgroup)
    exec_timeout = 300 if spec.fault in ("late", "lose-spread") else cann.exec_timeout
    plan = Plan(
        spec=spec,
        cann=cann,
        base=base,
        procs=procs,
        server_ips=ips,
        server_dirs=dirs,
        identifier=ident,
        groups=groups,
        t_init=21.0,
        t_first=27.0,
        step_s=1.9,
        t_fault=27.0 + spec.steps * 1.9 if FAULTS[spec.fault][0] == "execution" else 27.0,
        connect_timeout=120,
        exec_timeout=exec_timeout,
        jobid=f"{rng.randrange(10**5, 10**6)}",
        root_ip=root_ip,
    )
    for p in procs:
        p.t_last = _t_last(plan, p)
        p.logs = not (spec.fault == "init-missing" and p.rank == spec.culprit)
    if spec.fault in RESTART_FAULTS:
        plan.restart = _restarted(plan, rng)
    return plan


def _restarted(plan: Plan, rng: random.Random) -> Plan:
    """torchrun's second attempt: new worker processes, started once the agent has stopped the first
    ones (SIGTERM, exit, rendezvous again), which create a new communicator (a new identifier)."""
    t0 = _first_exit(plan, 0)[1] + 2.2
    procs = []
    for s in range(plan.spec.servers):
        mine = [p for p in plan.procs if p.server == s]
        pid = max(p.pid for p in mine) + rng.randrange(3000, 9000)
        for old in mine:
            pid += rng.randrange(2, 9)
            procs.append(replace(
                old, pid=pid, tid=pid, tid2=pid + rng.randrange(600, 1900), hccp_pid=rng.randrange(2000, 40000),
                t_start=t0 + rng.uniform(0.0, 2.5), jitter=rng.uniform(0.0, 0.09),
            ))
    ident = f"{plan.server_ips[0]}%{NIC}_{ROOT_PORT}_0_{(plan.base + int(t0) + 21) * 1_000_000 + rng.randrange(10**6)}"
    plan.groups[ident] = list(range(len(procs)))
    again = replace(plan, procs=procs, identifier=ident, t_init=t0 + 21.0, t_first=t0 + 27.0, t_fault=t0 + 27.0,
                    attempt=1, restart=None, previous=plan)
    for p in procs:
        p.t_last = _t_last(again, p)
    return again


def attempts(plan: Plan) -> list[Plan]:
    """The job's attempts, first to last (one unless torchrun restarted the workers)."""
    return [plan] if plan.restart is None else [plan, *attempts(plan.restart)]


def attempt_procs(plan: Plan) -> list[tuple[Plan, Proc]]:
    """Every process of the job, with the attempt it ran in."""
    return [(pl, p) for pl in attempts(plan) for p in pl.procs]


def _t_last(plan: Plan, p: Proc) -> float:
    """When this process writes its last plog line (rotation of its debug plog stops there)."""
    f, c = plan.spec.fault, plan.spec.culprit
    ct, et = plan.connect_timeout, plan.exec_timeout
    if f == "none":
        return plan.t_fault + 4.0
    if f.startswith("lose-"):
        return _t_last_lose(plan, p)
    if f in ("init-missing", "init-agent", "ej0001"):
        if p.rank == c and f != "init-agent":
            return plan.t_init + 0.5
        return plan.t_init + ct + 21.0
    if f == "init-ranktable":
        return plan.t_init + 0.8 if p.rank == c else plan.t_first + ct + 22.0
    if FAULTS[f][0] == "operator_load":
        if p.rank == c and f in ("ei0006-silent", "link-chain"):
            return plan.t_first - 0.4  # stuck in its own code before the collective
        if f == "link-chain" and p.rank not in plan.spec.subgroup:
            return plan.t_first + ct + 23.0
        return plan.t_first + ct + 22.0
    # execution
    if f == "late" and p.rank == c:
        return plan.t_fault + 420.0 + et + 2.0
    if p.rank == c and f in ("ei0002-silent", "heartbeat", "heartbeat-lost"):
        return plan.t_fault - 0.3
    if f == "cqe":
        return plan.t_fault + 40.0
    return plan.t_fault + et + 3.0


def _link_fail_t(plan: Plan, p: Proc) -> float:
    """When this rank's link establishment times out (EI0006 in its plog)."""
    return plan.t_first + plan.connect_timeout + 20.0 + p.rank * 0.013 + p.jitter


def _exec_fail_t(plan: Plan, p: Proc, t_wait: float) -> float:
    """When this rank's notify wait, begun at t_wait, times out (EI0002 in its plog)."""
    return t_wait + plan.exec_timeout + 0.02 + p.rank * 0.0037 + p.jitter


def _cqe_t(plan: Plan, p: Proc) -> float:
    """lose-heartbeat / lose-cqe: when this rank's RDMA retransmissions run out (error CQE)."""
    if plan.spec.fault == "lose-cqe":  # ~30 s of retries after the peer's process vanished
        return plan.t_fault + 34.0 + p.jitter
    if p.rank == plan.spec.peer:  # lose-heartbeat: the first rank to give up on the bad port
        return plan.t_fault + 9.0 + p.jitter
    return plan.t_fault + 12.0 + p.rank * 0.0041 + p.jitter


def _ej0001_t(plan: Plan) -> float:
    """lose-ej0001's restarted attempt: when HCCP fails on the stale device (EJ0001)."""
    return plan.t_init + 0.3


def _first_exit(plan: Plan, server: int) -> tuple[Proc, float]:
    """torchrun stories: the first worker of this server to exit after its error, and when."""
    f = plan.spec.fault
    if f == "lose-ej0001" and plan.attempt:  # the stale device's rank exits after its EJ0001
        q = plan.procs[plan.spec.peer or 0]
        return q, _ej0001_t(plan) + 0.62
    skip = set() if f in ("lose-cqe", "lose-ej0001") else {plan.spec.peer}
    if f in ("lose-ei0002", "lose-tls", "lose-ej0001"):
        skip.add(plan.spec.culprit)  # hung: it never fails by itself
    cands: list[tuple[float, int]] = []
    for q in plan.procs:
        if q.server != server or q.rank in skip:
            continue
        if f in ("lose-ei0006", "lose-tls"):
            if f == "lose-tls" and q.rank not in plan.spec.subgroup:
                continue
            cands.append((_link_fail_t(plan, q) + 1.5, q.rank))
        elif f in ("lose-ei0002", "lose-ej0001"):
            cands.append((_exec_fail_t(plan, q, plan.t_fault) + 0.6, q.rank))
        elif f == "lose-cqe" and q.rank == plan.spec.peer:
            cands.append((_cqe_t(plan, q) + 0.5, q.rank))
    t, r = min(cands)
    return plan.procs[r], t


def _t_last_lose(plan: Plan, p: Proc) -> float:
    f, c, q = plan.spec.fault, plan.spec.culprit, plan.spec.peer
    ct, et = plan.connect_timeout, plan.exec_timeout
    if f == "lose-init-root":
        return plan.t_init + ct + 21.0
    if f == "lose-init-agent":
        return plan.t_init + 0.5 if p.rank == c else plan.t_init + ct + 21.0
    if f in ("lose-ei0006", "lose-ei0002") and p.rank == q:
        return _first_exit(plan, p.server)[1] + 0.9  # SIGTERM from torchrun before its own timer
    if f == "lose-ej0001" and plan.attempt:  # the stale device's rank fails; torchrun stops the rest
        return _ej0001_t(plan) + 0.5 if p.rank == q else _first_exit(plan, p.server)[1] + 0.9
    if f == "lose-ei0005":  # the culprit stops reading its weights; the others fail at the first ops
        return plan.t_init + 2.6 if p.rank == c else plan.t_first + 3.0
    if f == "lose-init-store":
        if p.rank == c:
            return plan.t_init + 0.5
        return plan.t_init + LATE_S + 0.5 if p.rank == q else plan.t_init + ct + 21.0
    if f == "lose-tls":
        if p.rank == c:
            return plan.t_first - 0.4
        if p.rank not in plan.spec.subgroup:
            return _first_exit(plan, p.server)[1] + 0.9
    if FAULTS[f][0] == "operator_load":
        return plan.t_first + ct + 22.0
    if f in ("lose-ei0002", "lose-spread", "lose-ej0001"):
        return plan.t_fault - 0.3 if p.rank == c else plan.t_fault + et + 3.0
    if f == "lose-heartbeat":
        cp = plan.procs[c] if c is not None else p
        if p.server != cp.server or p.rank == c:
            return _cqe_t(plan, p) + 0.6  # exits after its EI0013
        return plan.t_fault + et + 3.0
    # lose-cqe: the culprit is SIGKILLed at t_fault; torchrun tears its server down
    cp = plan.procs[c] if c is not None else p
    if p.rank == c:
        return plan.t_fault - 0.3
    if p.server == cp.server:
        return plan.t_fault + 1.0
    if p.rank == q:
        return _cqe_t(plan, p) + 0.6
    return _first_exit(plan, p.server)[1] + 0.9


# --------------------------------------------------------------------------------------------
# Time and line envelopes


class Clock:
    def __init__(self, base: int) -> None:
        self.base = base

    def _tm(self, t: float) -> tuple[time.struct_time, int]:
        us = round(t * 1e6)
        return time.gmtime(self.base + us // 1_000_000), us % 1_000_000

    def plog(self, t: float) -> str:
        """2024-11-28-11:59:30.645.648 (plog and CANN error-message stamps)."""
        tm, us = self._tm(t)
        return time.strftime("%Y-%m-%d-%H:%M:%S", tm) + f".{us // 1000:03d}.{us % 1000:03d}"

    def sec(self, t: float) -> str:
        return time.strftime("%Y-%m-%d-%H:%M:%S", self._tm(t)[0])

    def fname(self, t: float) -> str:
        tm, us = self._tm(t)
        return time.strftime("%Y%m%d%H%M%S", tm) + f"{us // 1000:03d}"

    def ctime(self, t: float) -> str:
        return time.strftime("%a %b %d %H:%M:%S %Y", self._tm(t)[0])

    def cqe(self, t: float) -> str:
        tm, us = self._tm(t)
        return time.strftime("%Y-%m-%d %H:%M:%S", tm) + f".{us:06d}"

    def glog(self, t: float) -> str:
        tm, us = self._tm(t)
        return time.strftime("%m%d %H:%M:%S", tm) + f".{us:06d}"

    def iso(self, t: float) -> str:
        return time.strftime("%Y-%m-%d_%H:%M:%S", self._tm(t)[0])


def _clock(plan: Plan, p: Proc) -> Clock:
    """The clock of p's server (lose-spread: the last server's clock runs SKEW_S ahead)."""
    if plan.spec.fault == "lose-spread" and p.server == plan.spec.servers - 1:
        return Clock(plan.base + int(SKEW_S))
    return Clock(plan.base)


# one emitted line: (job time, stream, text); streams: debug, run, ddev, rdev, screen
Line = tuple[float, str, str]


class Writer:
    """Collects one process's lines in the envelope of its CANN release."""

    def __init__(self, plan: Plan, p: Proc, clock: Clock) -> None:
        self.plan, self.p, self.clock = plan, p, clock
        self.lines: list[Line] = []
        self.comm_ready = False  # CANN 6: [commId][rank] once the communicator exists

    def _tid_field(self, tid: int, sep: str) -> str:
        if self.plan.cann.comm_tid and self.comm_ready:
            ts = self.plan.identifier
            return f"[hccl-{self.p.pid}-0-{self.plan.base + 21}-{ts}][{self.p.rank}]"
        return f"{sep}[{tid}]"

    def hccl(
        self, t: float, lvl: str, src: str, msg: str, stream: str = "debug", *,
        stage: str = "", tid: int | None = None, nospace: bool = False,
    ) -> None:
        """An HCCL plog line; stage ("[TaskExecStage][Timeout][Host]") only on CANN 8.5."""
        tid = self.p.tid if tid is None else tid
        st = stage if self.plan.cann.stages else ""
        sep = " " if self.plan.cann.stages else ""
        head = f"[{lvl}] HCCL({self.p.pid},{PNAME}):{self.clock.plog(t)} [{src}]"
        if nospace:  # the CANN 8.5 form without blanks (task_exec_stage.md)
            head = f"[{lvl}]HCCL({self.p.pid},{PNAME}):{self.clock.plog(t)}[{src}]"
            sep = ""
        self.lines.append((t, stream, f"{head}{self._tid_field(tid, sep)}{st}{msg}"))

    def mod(self, t: float, lvl: str, module: str, src: str, msg: str, stream: str = "debug") -> None:
        """RUNTIME / ASCENDCL / GE / DRV lines: thread id bare after the source."""
        self.lines.append(
            (t, stream, f"[{lvl}] {module}({self.p.pid},{PNAME}):{self.clock.plog(t)} [{src}]{self.p.tid2 + 3} {msg}")
        )

    def hccp(self, t: float, lvl: str, src: str, msg: str, stream: str = "rdev") -> None:
        """Device-side HCCP lines (hccp_service.bin), sent to the host's device-<id> folder."""
        h = self.p.hccp_pid
        self.lines.append((t, stream, f"[{lvl}] HCCP({h},hccp_service.bin):{self.clock.plog(t)} [{src}]tid:{h},{msg}"))

    def app(self, t: float, lvl: str, module: str, src: str, msg: str, stream: str = "ddev") -> None:
        """Device-log lines of the app's own pid (ROCE, HCCP in the app's process)."""
        self.lines.append((t, stream, f"[{lvl}] {module}({self.p.pid},{PNAME}):{self.clock.plog(t)} [{src}]{msg}"))

    def screen(self, t: float, text: str) -> None:
        for i, line in enumerate(text.split("\n")):
            self.lines.append((t + i * 1e-6, "screen", line))


# --------------------------------------------------------------------------------------------
# Normal life of a process: start, communicator init, training steps (INFO noise)

NOISE_HCCL = (
    ("hccl_communicator_host.cc:3127", "[HcclCommunicator][ExecOp]algName[AllReduceMeshExecutor], tag[{tag}]"),
    ("hccl_impl.cc:1987", "resource of tag[{tag}] already exists, reuse it"),
    ("transport_manager.cc:221", "[Alloc]the link of tag[{tag}] has been built, skip"),
    ("hccl_communicator_host.cc:1203", "[HcclCommunicator][CalcOpTiling] opType[{op}] count[{count}] unitSize[4]"),
)
NOISE_RT = (
    ("RUNTIME", "stream.cc:1027", "Synchronize: stream_id={s}, task_id={k}, sq_head={k}"),
    ("RUNTIME", "npu_driver.cc:1488", "MallocHostSharedMemory: size=2097152, devId={d}"),
    ("RUNTIME", "api_impl.cc:1651", "KernelLaunch: stream_id={s}, kernel=Add_{k}, blockDim=40"),
    ("ASCENDCL", "acl_rt.cpp:562", "aclrtSynchronizeStreamWithTimeout: stream synchronize, timeout=-1"),
    ("GE", "graph_manager.cc:3021", "RunGraph: graph_id={k}, session_id=0"),
    ("DRV", "dev_mem.c:298", "halMemAlloc: devid={d}, size=33554432, type=2"),
)


def tag_of(plan: Plan, op: str, ident: str | None = None) -> str:
    return f"{op}_{ident or plan.identifier}"


def launcher_banner(w: Writer) -> None:
    """torchrun's banner on each server's console; every rank's own first print."""
    p, plan = w.p, w.plan
    if plan.spec.launcher == "torchrun" and p.local == 0 and plan.attempt == 0:
        head = f"W{w.clock.glog(0.0)} {p.pid - 31} torch/distributed/run.py:793] "
        w.screen(0.0, "\n".join(head + x for x in ("", "*" * 41, "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed. ", "*" * 41)))
    vis = ",".join(str(d) for d in _visible_for(plan.spec, p.server))
    w.screen(p.t_start + 3.0, f"[rank{p.rank}] world_size={plan.world} local_rank={p.local} device=npu:{p.local} ASCEND_RT_VISIBLE_DEVICES={vis}")


def life_start(w: Writer, rng: random.Random) -> None:
    p, t = w.p, w.p.t_start
    launcher_banner(w)
    w.mod(t, "EVENT", "RUNTIME", "runtime.cc:1612", f"Init: runtime init start, version={w.plan.cann.name}")
    w.mod(t + 0.01, "INFO", "ASCENDCL", "acl.cpp:142", "aclInit: start to execute aclInit")
    w.mod(t + 0.2, "INFO", "RUNTIME", "device.cc:326", f"Init: device init success, deviceId={p.local}, phyId={p.phy}")
    for k in range(8):
        tt = t + 0.3 + k * 0.6 + rng.random() * 0.1
        mod, src, msg = NOISE_RT[k % len(NOISE_RT)]
        w.mod(tt, "INFO", mod, src, msg.format(s=2 + k % 3, k=k, d=p.local))


def env_lines(w: Writer) -> None:
    t = w.plan.t_init - 0.3
    ct, et = w.plan.connect_timeout, w.plan.exec_timeout
    w.hccl(t, "INFO", "env_config.cc:217", f"[HCCL_ENV] HCCL_CONNECT_TIMEOUT set by default to [{ct}]s", "run")
    how = "by environment" if et != w.plan.cann.exec_timeout else "by default"  # unsourced: "by environment"
    w.hccl(t + 0.0001, "INFO", "env_config.cc:231", f"[HCCL_ENV] HCCL_EXEC_TIMEOUT set {how} to [{et}]s", "run")


def init_entry(w: Writer) -> None:
    """Entry lines of communicator creation (both plogs): rank and device of this pid."""
    plan, p = w.plan, w.p
    t = plan.t_init + p.local * 0.0013 + p.server * 0.011
    if p.rank == 0 and not plan.spec.rank_table:
        w.hccl(t - 0.007, "INFO", "op_base.cc:858", f"Entry-HcclGetRootInfo:rootInfo[0x7fffcd65f130], deviceLogicId[{p.local}]", "run")
    if plan.spec.rank_table:
        return  # HcclCommInitClusterInfo: identity comes from [LocalRank Key Info] and the table
    msg = (
        f"Entry-HcclCommInitRootInfoInner:ranks[{plan.world}], rank[{p.rank}], rootinfo: host ip[{plan.root_ip or plan.server_ips[0]}] "
        f"port[{ROOT_PORT}] nicDeploy[1] identifier[{plan.identifier}], deviceLogicId[{p.local}]"
    )
    w.hccl(t, "INFO", "op_base.cc:1293", msg, "run")
    w.hccl(t, "INFO", "op_base.cc:1293", msg, "debug")


def key_info(w: Writer, ident: str, members: list[int], t: float) -> None:
    """[Communicator Key Info] + [LocalRank Key Info] in this communicator's (group) rank."""
    plan, p = w.plan, w.p
    g = members.index(p.rank)
    nservers = len({plan.procs[r].server for r in members})
    w.hccl(t, "INFO", "hccl_comm.cc:505", f"[Communicator Key Info]identifier[{ident}] rankSize[{len(members)}] serverNum[{nservers}] moduleNum[{nservers}] superPodNum[0]", "run")
    w.hccl(
        t + 0.0001, "INFO", "hccl_comm.cc:512",
        f"[LocalRank Key Info]userRank[{g}] hostIp[{plan.server_ips[p.server]}] devicePhyId[{p.phy}] "
        f"server[{plan.server_ips[p.server]}] deviceIp[{plan.device_ip(p)}] superPodId[-1] superDeviceId[0x0]",
        "run",
    )
    w.comm_ready = True


def subgroup_entry(w: Writer, members: list[int], t: float) -> None:
    p = w.p
    g = members.index(p.rank)
    w.hccl(
        t, "INFO", "op_base.cc:1180",
        f"Entry-HcclCommInitRootInfoConfigInner:ranks[{len(members)}], rank[{g}], rootinfo: host ip[{w.plan.server_ips[w.plan.procs[members[0]].server]}] "
        f"port[{ROOT_PORT + 8}] nicDeploy[1] identifier[group_name_1], deviceLogicId[{p.local}]",
        "run",
    )
    key_info(w, "group_name_1", members, t + 0.9)


def device_start(w: Writer, tls: int) -> None:
    t = w.plan.t_init + 0.4
    w.hccp(t, "INFO", "rs.c:388", f"rs_init(388) : rs init start, chip_id={w.p.phy}")
    w.hccp(t + 0.002, "INFO", "rs_ssl.c:1529", f"rs_ssl_init(1529) : TLS SWITCH ({tls})")
    w.hccp(t + 0.01, "INFO", "ra_host.c:512", f"ra_socket_init(512) : socket init success, ip={w.plan.device_ip(w.p)}")
    w.hccp(t + 0.01, "INFO", "rs.c:455", "rs_init(455) : rs init success", "ddev")


def steps(w: Writer, rng: random.Random, t0: float, t1: float, op: str = "AllReduce", first_index: int = 0) -> int:
    """Training steps between t0 and t1: op entries with the per-comm index, INFO noise."""
    plan, p = w.plan, w.p
    tag = tag_of(plan, op)
    k = first_index
    t = t0
    while t < t1:
        count = 10485888 if k % 2 else 1048576
        w.hccl(
            t, "INFO", "hccl_opbase_atrace_info.cc:56",
            f"Entry-Hccl{op}: tag[{tag}], sendBuf[0x12c0c{k % 97:04x}3000], recvBuf[0x12c0c{k % 89:04x}4000], count[{count}], "
            f"dataType[float32], op[sum], localRank[{p.rank}], streamId[2],comm[0xfffe380078d0], deviceLogicId[{p.local}]",
            tid=p.tid2,
        )
        for j in range(plan.spec.noise):
            tt = t + 0.05 + j * (plan.step_s * 0.9 / max(1, plan.spec.noise)) + rng.random() * 0.01
            if j % 3 == 0:
                src, msg = NOISE_HCCL[(k + j) % len(NOISE_HCCL)]
                w.hccl(tt, "INFO", src, msg.format(tag=tag, op=op, count=count), tid=p.tid2)
            else:
                mod, src, msg = NOISE_RT[(k * 7 + j) % len(NOISE_RT)]
                w.mod(tt, "INFO", mod, src, msg.format(s=2 + j % 4, k=k * 10 + j, d=p.local))
        if p.rank == 0:
            w.screen(t + 1.2, f"[step {k + 1:>5}] loss={2.9 * 0.97 ** k + 0.01 * rng.random():.4f} lr=1.000e-04 time/step={plan.step_s:.2f}s")
        k += 1
        t += plan.step_s
    return k


def rotate_points(plan: Plan, p: Proc) -> list[float]:
    """Times at which this pid's debug plog opens a new file (rotation when the file is full)."""
    # the INFO noise comes from training; a process that only waits fills no new file
    active = min(p.t_last, plan.t_fault + 2.0) - p.t_start
    n = 1 if active < 30 else min(4, 2 + int(active // 45))
    return [p.t_start + active * i / n for i in range(n)]


def anchor_lines(w: Writer) -> None:
    """A noise line at each rotation point: a rotated file starts with the line that overflowed."""
    for i, t in enumerate(rotate_points(w.plan, w.p)[1:], start=1):
        w.mod(t, "INFO", "RUNTIME", "stream.cc:1027", f"Synchronize: stream_id=2, task_id={400 + i}, sq_head={400 + i}")


# --------------------------------------------------------------------------------------------
# Failure surfaces (plog blocks and screen text)


def npu_footer(w: Writer, t: float, err: str = "ERR02200 DIST call hccl api failed.") -> str:
    return f"[ERROR] {w.clock.sec(t)} (PID:{w.p.pid}, Device:{w.p.local}, RankID:{w.p.rank}) {err}"


def code_prefix(w: Writer, code: str, t: float) -> str:
    """EIxxxx: in the prefix form of the era (bare, with stamp, with [PID: n] and stamp)."""
    form = w.plan.cann.screen
    if form == "bare":
        return f"{code}: "
    if form == "ts":
        return f"{code}: {w.clock.plog(t)} "
    return f"{code}: [PID: {w.p.pid}] {w.clock.plog(t)} "


def traceback(w: Writer, where: str, last: str) -> str:
    pre = f"[rank{w.p.rank}]: " if w.plan.spec.rank_prefix else ""
    body = [
        "Traceback (most recent call last):",
        '  File "/home/ma-user/work/pretrain_gpt.py", line 412, in <module>',
        "    main()",
        f'  File "/home/ma-user/work/pretrain_gpt.py", line {where}',
        last,
    ]
    return "\n".join(pre + b for b in body)


def link_timeout_block(w: Writer, t: float, peer: int, members: list[int], tag: str, tls: str = "DISABLE") -> None:
    """EI0006 in the plog: wait socket establish timeout, LINK_ERROR_INFO, Transport init error."""
    plan, p = w.plan, w.p
    q = plan.procs[peer]
    g, gq = members.index(p.rank), members.index(peer)
    role = 0 if g < gq else 1
    who = "server" if role == 0 else "client"
    tid = p.tid2
    w.hccl(t, "ERROR", "hccl_socket_manager.cc:797", f"[Wait][LinkEstablish]wait socket establish timeout, role[{role}] rank[{g}] timeout[{plan.connect_timeout} s]", tid=tid)
    w.hccl(t + 0.00005, "ERROR", "hccl_socket_manager.cc:861", "[Wait][LinksEstablishCompleted] is failed. ret[9].", tid=tid)
    rows = [
        (623, "   _________________________LINK_ERROR_INFO___________________________"),
        (624, f"   |  comm error, device[{p.phy}]"),
        (626, "   |  dest_ip(user_rank)  |   dest_port   |  src_ip(user_rank)   |   src_port   |   MyRole   |   Status   |    TlsStatus   |"),
        (628, "   |----------------------|---------------|----------------------|--------------|------------|------------|----------------|"),
        (583, f"   |  {plan.device_ip(q)}({gq})   |  16666  |   {plan.device_ip(p)}({g})   |  {3234403008 + g * 17 + gq}  |  {who}  | time out |   {tls}  | LinkInfo"),
    ]
    for i, (ln, text) in enumerate(rows):
        w.hccl(t + 0.0002 + i * 1e-5, "ERROR", f"hccl_socket_manager.cc:{ln}", text, tid=tid)
    w.hccl(t + 0.0006, "ERROR", "hccl_socket_manager.cc:836", f"[Create][Sockets]Wait links establish completed failed, local role is {who}. ret[9]", tid=tid)
    w.hccl(t + 0.0007, "ERROR", "transport_manager.cc:1402", "[SetMachinePara]call trace: hcclRet -> 9", tid=tid)
    rdma = int(p.server != q.server)
    w.hccl(
        t + 0.001, "ERROR", "transport_manager.cc:1325",
        f"Transport init error! createLink para:rank[{g}]-localUserrank[{g}]-localIpAddr[{plan.server_ips[p.server]}/{p.phy}], "
        f"remoteRank[{gq}]-remoteUserrank[{gq}]-remoteIpAddr[{plan.server_ips[q.server]}/{q.phy}], machineType[1], linkMode[1], isUsedRdma[{rdma}], tag[{tag}]",
        stage="[InitChannelStage][Timeout]", tid=tid,
    )
    w.hccl(t + 0.0012, "ERROR", "hccl_communicator_host.cc:6370", f"[AllocAlgResource]Alloc transports failed, tag[{tag}]")
    w.hccl(t + 0.0013, "ERROR", "hcom.cc:515", f"[AllReduce][Result]errNo[0x0000000005010009] hcclComm AllReduce error, tag[{tag}], input_ptr[0x12e083e00200], output_ptr[0x12e086600400], count[10485888], data_type[float32], op[sum]")


def detect_result(w: Writer, t: float, src: Proc, dst: Proc) -> None:
    """CANN 8.5's connect-timeout detection verdict (param_link_stage.md)."""
    ips = w.plan.server_ips
    rows = [
        (127, "-------------------CONNECT TIMEOUT DETECT RESULT-----------------------"),
        (132, f"This node (server {ips[w.p.server]}, device ID {w.p.phy}) detects that srcRank (server {ips[src.server]}, device ID {src.phy}) fails to connect to dstRank (server {ips[dst.server]}, device ID {dst.phy}). Continue to analyze the fault based on the logs of srcRank and dstRank."),
        (143, "----------------------------------------------------------------------"),
    ]
    for i, (ln, text) in enumerate(rows):
        w.hccl(t + i * 1e-5, "ERROR", f"detect_connect_anomalies.cc:{ln}", text)


def link_timeout_screen(w: Writer, t: float) -> None:
    api = "HcclAllReduce(inputDataPtr, outputDataPtr, numel, hcclType, hcclReduceOp, comm, stream.stream(false))"
    tb = traceback(w, "298, in train_step", f"RuntimeError: allreduce:torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:3760 HCCL function error: {api}, error code is 9")
    if w.plan.cann.screen == "ts":
        reason = "1. The remote does not initiate a connect request. some NPUs in the cluster are abnormal."
    else:
        reason = "Remote Rank did not send the data in time. Please check the reason for the rank being stuck"
    w.screen(t, f"{tb}\n{npu_footer(w, t)}\n{code_prefix(w, 'EI0006', t)}Getting socket times out. Reason: {reason}")


def notify_timeout_block(w: Writer, t: float, peer_g: int | str, ident: str, members: list[int], index: int) -> None:
    """EI0002 in the plog: the task exception records (base/para/groupRank/opData information)."""
    p = w.p
    tag = tag_of(w.plan, "AllReduce", ident)
    stage, src = ("[TaskExecStage][Timeout][Host]", "task_exception_handler.cc:{}") if w.plan.cann.stages else ("", "task_exception_handler.cc:{}")
    cb = "" if w.plan.cann.stages else "[TaskExceptionHandler][Callback]"
    w.mod(t - 0.002, "ERROR", "RUNTIME", "task_info.cc:1160", f"Notify wait execute failed, device_id={p.local}, stream_id=14, task_id={index * 9 + 5}, flip_num=0, notify_id=88")
    recs = [
        (908, f"{cb}Task run failed, base information is streamID:[14], taskID[{index * 9 + 5}], taskType[Notify Wait], tag[{tag}], AlgType(level 0-1-2):[fullmesh-ring-NHR]."),
        (915, f"{cb}Task run failed, para information is notify id:[0x0000000100000058], stage:[ffffffff], remote rank:[{peer_g}]."),
        (922, f"{cb}Task run failed, groupRank information is group:[{ident}], user define information[], rankSize[{len(members)}], rankId[{members.index(p.rank)}]."),
        (930, f"{cb}Task run failed, opData information is timeStamp:[{w.clock.plog(t - w.plan.exec_timeout)}], deviceId[{p.local}], index[{index}], count[10485888], reduceType[sum], src[0x12c0c0013000], dst[0x12c0c0413000], dataType[float32]."),
    ]
    for i, (ln, text) in enumerate(recs):
        w.hccl(t + i * 1e-5, "ERROR", src.format(ln), text, stage=stage, tid=p.tid2)


def notify_timeout_screen(w: Writer, t: float, peer_g: int | str, index: int, hb: str = "") -> None:
    tag = tag_of(w.plan, "AllReduce")
    tb = traceback(w, "301, in train_step", "RuntimeError: npuSynchronizeDevice:torch_npu/csrc/core/npu/NPUFunctions.cpp:487 NPU function error: AclrtSynchronizeDeviceWithTimeout, error code is 507048")
    text = (
        f"{code_prefix(w, 'EI0002', t)}The wait execution of the Notify register times out. Reason: The Notify register has not received the Notify record from remote rank [{peer_g}]."
        f"base information: [streamID:[14], taskID[{index * 9 + 5}], taskType[Notify Wait], tag[{tag}], AlgType(level 0-1-2):[fullmesh-ring-NHR].] "
        f"task information: [notify id:[0x0000000100000058], stage:[ffffffff], remote rank:[{peer_g}]."
    )
    if hb:
        text += "\n" + hb
    text += f"\n        Possible Cause: 1. An exception occurs during the execution on some NPUs in the cluster. As a result, collective communication operation failed.2. The execution speed on some NPU in the cluster is too slow to complete a communication operation within the timeout interval. (default {w.plan.exec_timeout}s, You can set the interval by using HCCL_EXEC_TIMEOUT.)"
    w.screen(t, f"{tb}\n{npu_footer(w, t, 'ERR00100 PTA call acl api failed')}\n[Error]: The execution of the internal task times out.\n{text}")


def watchdog_screen(w: Writer, t: float, seq: int, ran_ms: int) -> None:
    """torch_npu's ProcessGroupHCCL watchdog (timeout of the process group, not HCCL's)."""
    pre = f"[rank{w.p.rank}]:" if w.plan.spec.rank_prefix else ""
    head = f"{pre}[E{w.clock.glog(t)} {w.p.pid} ProcessGroupHCCL.cpp:1105] "  # file:line: hint only
    w.screen(t, head + f"[Rank {w.p.rank}] Watchdog caught collective operation timeout: WorkHCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=10485888, NumelOut=10485888, Timeout(ms)=1800000) ran for {ran_ms} milliseconds before timing out.")
    w.screen(t + 0.001, head + "Some HCCL operations have failed or timed out. Due to the asynchronous nature of ASCEND kernels, subsequent NPU operations might run on corrupted/incomplete data.")
    w.screen(t + 0.002, head + "To avoid data inconsistency, we are taking the entire process down.")


def destroy(w: Writer, t: float) -> None:
    w.hccl(t, "INFO", "op_base.cc:1644", "Entry-HcclCommDestroy: op_base comm destroy begin", "run")
    w.hccl(t + 0.02, "INFO", "op_base.cc:1690", "[HcclCommDestroy] comm destroy success, take time [19863]us", "run")


# --------------------------------------------------------------------------------------------
# Wait graphs


def toward(members: list[int], v: int, targets: set[int]) -> int:
    """The ring neighbour of v one hop closer to the nearest target (cascading link waits)."""
    n = len(members)
    i = members.index(v)
    best = min(targets, key=lambda x: (min((members.index(x) - i) % n, (i - members.index(x)) % n), x))
    j = members.index(best)
    fwd = (j - i) % n
    if fwd == 0:
        return v
    return members[(i + 1) % n] if fwd <= n - fwd else members[(i - 1) % n]


def wait_targets(plan: Plan) -> dict[int, int]:
    """rank -> the rank it waits on at link establishment (operator_load faults)."""
    s, f = plan.spec, plan.spec.fault
    members = list(s.subgroup) if f in CHAIN_FAULTS else list(range(plan.world))
    c = s.culprit if s.culprit is not None else 0
    if f == "link-cycle":
        a, b = c, s.peer if s.peer is not None else 0
        out = {a: b, b: a}
        out.update({v: toward(members, v, {a, b}) for v in members if v not in (a, b)})
        return out
    if f in ("tls", "lose-ei0006", "lose-cycle"):  # the culprit fails with both neighbours; those wait on it; others cascade
        out = {v: toward(members, v, {c}) for v in members if v != c}
        out[c] = members[(members.index(c) + 1) % len(members)]
        return out
    return {v: toward(members, v, {c}) for v in members if v != c}


# --------------------------------------------------------------------------------------------
# The story of each process, per fault


def story(plan: Plan, p: Proc, clock: Clock) -> list[Line]:
    rng = random.Random(plan.spec.seed * 1_000_003 + p.rank + 7919 * plan.attempt)  # noqa: S311
    w = Writer(plan, p, clock)
    f, c = plan.spec.fault, plan.spec.culprit
    life_start(w, rng)
    anchor_lines(w)
    tls_rank = plan.spec.peer if f == "lose-tls" else c
    tls = 1 if f in TLS_FAULTS and p.rank == tls_rank else 0
    FAULT_STORIES.get(f, _story_none)(w, rng, tls)
    # nothing after the last line the plan allows (a hung or dead process writes no more)
    return [x for x in w.lines if x[0] <= p.t_last + 1e-6 or x[1] == "screen"]


def _init_ok(w: Writer, tls: int) -> None:
    env_lines(w)
    init_entry(w)
    key_info(w, w.plan.identifier, list(range(w.plan.world)), w.plan.t_init + 1.1 + w.p.local * 0.002)
    device_start(w, tls)


def _story_none(w: Writer, rng: random.Random, tls: int) -> None:
    plan = w.plan
    _init_ok(w, tls)
    steps(w, rng, plan.t_first, plan.t_fault)
    destroy(w, plan.t_fault + 2.0)
    if w.p.rank == 0:
        w.screen(plan.t_fault + 2.5, "Training finished. Saving final checkpoint to /home/ma-user/work/ckpt/iter_final ... done")


def _init_wait_root(w: Writer, missing: list[int], t: float) -> None:
    """Root and agents after HCCL_CONNECT_TIMEOUT when some ranks never connected."""
    plan, p = w.plan, w.p
    n = plan.world
    connected = [r for r in range(n) if r not in missing]
    stage = "[InitGroupStage]"
    if p.rank == 0:
        w.hccl(t, "ERROR", "topoinfo_exchange_server.cc:314", f"[RanktableDetect]topo exchange server get socket timeout! timeout[{plan.connect_timeout} s]", stage=stage, tid=p.tid2)
        w.hccl(t + 1e-4, "ERROR", "topoinfo_exchange_server.cc:501", f"[DisplayConnectionedRank]total connected num is [{len(connected)}],line num is [{(len(connected) + 7) // 8}]", stage=stage, tid=p.tid2)
        w.hccl(t + 2e-4, "ERROR", "topoinfo_exchange_server.cc:503", f"[DisplayConnectionedRank]need connect rankNum is [{n}]", stage=stage, tid=p.tid2)
        for li in range(0, len(connected), 8):
            cells = ",".join(f"[{r:016d}]" for r in connected[li : li + 8])
            w.hccl(t + 3e-4 + li * 1e-6, "ERROR", "topoinfo_exchange_server.cc:517", f"[DisplayConnectionedRank]connected rankinfo[LINE {li // 8}]: {cells};", stage=stage, tid=p.tid2)
    ta = t + 0.005 + p.rank * 1e-4 + p.jitter
    agents = "".join(f"{r}," for r in missing)
    w.hccl(ta, "ERROR", "topoinfo_exchange_base.cc:145", f'[RanktableDetect] TopoDetect ERROR occur !!! fault_type[1], fault_info["Failed to connect agent[{agents}]"]', stage=stage)
    w.hccl(ta + 4e-4, "ERROR", "topoinfo_exchange_agent.cc:552", f"[RanktableDetect]rank num[{n}]is different with rank list size[{len(connected)}] in total topo rank info.", stage=stage)
    _init_failed(w, ta + 6e-4)


def _init_failed(w: Writer, t: float, ret: int = 9) -> None:
    plan, p = w.plan, w.p
    w.hccl(t, "ERROR", "op_base.cc:1139", f"[Init][CommRootInfoConfig]errNo[0x000000000500000{ret}]HcclCommInitRootInfo failed.")
    root = f"{plan.root_ip}%docker0" if plan.root_ip else f"{plan.server_ips[0]}%{NIC}"
    w.hccl(t + 1e-4, "ERROR", "op_base.cc:1064", f"[InitCommRootInfo]Init failed, return[0x000000000500000{ret}], rankNum[{plan.world}], rank[{p.rank}], rootInfo identifier[{plan.identifier}], server[{root}], logicDevId[{p.local}]")
    api = "HcclCommInitRootInfoConfig(numRanks, &hcclID, rank, config, &(comm->hcclComm_))"
    tb = traceback(w, "88, in initialize_distributed", f"RuntimeError: createHCCLComm:torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:2166 HCCL function error: {api}, error code is {ret}")
    # unsourced: the EI0015 text (formats.md gives the code, not its wording)
    w.screen(t + 0.3, f"{tb}\n{npu_footer(w, t + 0.3)}\n{code_prefix(w, 'EI0015', t + 0.3)}Cluster negotiation timed out. Some ranks did not connect to the root within HCCL_CONNECT_TIMEOUT.")


def _story_init_missing(w: Writer, rng: random.Random, tls: int) -> None:
    plan, p, c = w.plan, w.p, w.plan.spec.culprit
    if p.rank == c:  # dies loading its data shard, before it creates the communicator
        t = plan.t_init - 0.6
        w.screen(t, traceback(w, "131, in build_train_dataset", f"FileNotFoundError: [Errno 2] No such file or directory: '/data/wudao/shards/part-{p.rank:05d}.idx'"))
        return
    env_lines(w)
    init_entry(w)
    device_start(w, tls)
    _init_wait_root(w, [c] if c is not None else [], plan.t_init + plan.connect_timeout + 20.0)


def _story_init_agent(w: Writer, rng: random.Random, tls: int) -> None:
    plan, p, c = w.plan, w.p, w.plan.spec.culprit
    env_lines(w)
    init_entry(w)
    device_start(w, tls)
    t = plan.t_init + plan.connect_timeout + 20.0
    if p.rank == c:  # its HCCL_SOCKET_IFNAME picks a NIC that cannot reach the root
        w.hccl(plan.t_init + 0.05, "INFO", "sal.cc:402", "get host ip success, ifname[docker0], ip[172.17.0.1]", "debug")  # unsourced wording
        w.hccl(t + 0.4, "ERROR", "topoinfo_exchange_agent.cc:190", f"[RanktableDetect]topo exchange agent get socket timeout! timeout[{plan.connect_timeout}]", stage="[InitGroupStage]")
        w.hccl(t + 0.4001, "ERROR", "topoinfo_exchange_agent.cc:41", f"[TopoInfoExchangeAgent][Setup]TopoExchangeAgent: connect server[{plan.server_ips[0]} : {ROOT_PORT}] failed")
        _init_failed(w, t + 0.401, 7)
        return
    _init_wait_root(w, [c] if c is not None else [], t)


def _stale_process(w: Writer, t: float, holder: int = 1739021) -> None:
    """EJ0001: HCCP cannot start because another process (holder) holds this device; the init fails."""
    p = w.p
    w.lines.append((t, "debug", f"[ERROR] TDT({p.pid},{PNAME}):{w.clock.plog(t)} [process_mode_manager.cpp:732][DeviceMsgProcess][tid:{p.pid}] [TsdClient] DeviceMsgProc  errcode[EJ0001]"))
    w.hccp(t - 0.05, "ERROR", "rs.c:402", f"rs_init(402) : rs init failed, chip_id={p.phy} is occupied by pid {holder}, ret=-16", "ddev")  # unsourced wording
    w.hccl(t + 0.01, "ERROR", "network_manager.cc:109", "call trace: hcclRet -> 7")
    _init_failed_ej(w, t + 0.02)


def _story_ej0001(w: Writer, rng: random.Random, tls: int) -> None:
    plan, p, c = w.plan, w.p, w.plan.spec.culprit
    env_lines(w)
    init_entry(w)
    if p.rank == c:  # a process of the previous job still holds this device
        _stale_process(w, plan.t_init + 0.3)
        return
    device_start(w, tls)
    _init_wait_root(w, [c] if c is not None else [], plan.t_init + plan.connect_timeout + 20.0)


def _init_failed_ej(w: Writer, t: float) -> None:
    api = "HcclCommInitRootInfoConfig(numRanks, &hcclID, rank, config, &(comm->hcclComm_))"
    w.hccl(t, "ERROR", "op_base.cc:1139", "[Init][CommRootInfoConfig]errNo[0x0000000005000007]HcclCommInitRootInfo failed.")
    tb = traceback(w, "88, in initialize_distributed", f"RuntimeError: createHCCLComm:torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:2166 HCCL function error: {api}, error code is 7")
    w.screen(t + 0.2, f"{tb}\n{npu_footer(w, t + 0.2)}\n{code_prefix(w, 'EJ0001', t + 0.2)}Failed to initialize the HCCP process. Reason: Maybe the last training process is running.\n        Solution: Wait for 10s after killing the last training process and try again.")


def _story_init_ranktable(w: Writer, rng: random.Random, tls: int) -> None:
    plan, p, c = w.plan, w.plan.procs[w.p.rank], w.plan.spec.culprit
    env_lines(w)
    if p.rank == c:  # its RANK_TABLE_FILE points at a path that does not exist on this server
        t = plan.t_init + 0.2
        w.hccl(t, "ERROR", "rank_table.cc:97", "[RanktableConfig]errNo[0x0000000005010001] path /home/ma-user/rank_table/rank_table_8p.json is not a valid real path", stage="[InitGroupStage]")
        w.hccl(t + 0.001, "ERROR", "op_base.cc:702", "[Init][ClusterInfo]errNo[0x0000000005010001]HcclCommInitClusterInfo failed.")  # unsourced
        api = "HcclCommInitClusterInfo(rankTableFile, rank, &(comm->hcclComm_))"
        tb = traceback(w, "88, in initialize_distributed", f"RuntimeError: createHCCLComm:torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:2140 HCCL function error: {api}, error code is 1")
        w.screen(t + 0.3, f"{tb}\n{npu_footer(w, t + 0.3)}\n{code_prefix(w, 'EI0004', t + 0.3)}The ranktable is invalid,Reason:[The ranktable path configured in the training can be found in the plogs.]. Please check the configured ranktable. [/home/ma-user/rank_table/rank_table_8p.json]")
        return
    key_info(w, plan.identifier, list(range(plan.world)), plan.t_init + 1.1 + p.local * 0.002)
    device_start(w, tls)
    _link_victim(w, wait_targets(plan)[p.rank], list(range(plan.world)))


def _link_victim(w: Writer, peer: int, members: list[int], tls: str = "DISABLE", detect: tuple[int, int] | None = None) -> None:
    plan, p = w.plan, w.p
    ident = "group_name_1" if members != list(range(plan.world)) else plan.identifier
    tag = tag_of(plan, "AllReduce", ident)
    t = plan.t_first + plan.connect_timeout + 20.0 + p.rank * 0.013 + p.jitter
    w.hccl(plan.t_first, "INFO", "hccl_opbase_atrace_info.cc:56", f"Entry-HcclAllReduce: tag[{tag}], sendBuf[0x12c0c0013000], recvBuf[0x12c0c0413000], count[10485888], dataType[float32], op[sum], localRank[{members.index(p.rank)}], streamId[2],comm[0xfffe380078d0], deviceLogicId[{p.local}]", tid=p.tid2)
    link_timeout_block(w, t, peer, members, tag, tls)
    if detect is not None and plan.cann.stages:
        detect_result(w, t + 0.8, plan.procs[detect[0]], plan.procs[detect[1]])
    link_timeout_screen(w, t + 1.2)


def _story_ei0006(w: Writer, rng: random.Random, tls: int) -> None:
    plan, p, f, c = w.plan, w.p, w.plan.spec.fault, w.plan.spec.culprit
    _init_ok(w, tls)
    members = list(range(plan.world))
    if f in CHAIN_FAULTS:
        members = list(plan.spec.subgroup)
        if p.rank in members:
            subgroup_entry(w, members, plan.t_init + 3.0)
    if p.rank == c and f in ("ei0006-silent", "link-chain", "lose-tls"):
        return  # stuck in its own data pipeline: it never reaches the collective, and says nothing
    if f == "lose-ei0006" and p.rank == plan.spec.peer:  # late to the op, torn down before its timer
        w.hccl(plan.t_first + LAG_S[f], "INFO", "hccl_opbase_atrace_info.cc:56", f"Entry-HcclAllReduce: tag[{tag_of(plan, 'AllReduce')}], sendBuf[0x12c0c0013000], recvBuf[0x12c0c0413000], count[10485888], dataType[float32], op[sum], localRank[{p.rank}], streamId[2],comm[0xfffe380078d0], deviceLogicId[{p.local}]", tid=p.tid2)
        torchrun_teardown(w)
        return
    if f == "lose-tls" and p.rank not in members:  # blocked in the world group's op, then torn down
        w.hccl(plan.t_first + 2.5, "INFO", "hccl_opbase_atrace_info.cc:56", f"Entry-HcclAllReduce: tag[{tag_of(plan, 'AllReduce')}], sendBuf[0x12c0c0013000], recvBuf[0x12c0c0413000], count[1048576], dataType[float32], op[sum], localRank[{p.rank}], streamId[2],comm[0xfffe380078d0], deviceLogicId[{p.local}]", tid=p.tid2)
        torchrun_teardown(w)
        return
    if p.rank not in members:  # link-chain: the other ranks are torn down by torchrun
        w.hccl(plan.t_first, "INFO", "hccl_opbase_atrace_info.cc:56", f"Entry-HcclAllReduce: tag[{tag_of(plan, 'AllReduce')}], sendBuf[0x12c0c0013000], recvBuf[0x12c0c0413000], count[1048576], dataType[float32], op[sum], localRank[{p.rank}], streamId[2],comm[0xfffe380078d0], deviceLogicId[{p.local}]", tid=p.tid2)
        return
    peer = wait_targets(plan)[p.rank]
    status = "ENABLE" if tls else "DISABLE"
    q = plan.spec.peer
    detect = (c, q) if f == "link-cycle" and c is not None and q is not None and p.rank in (c, q) else None
    _link_victim(w, peer, members, status, detect)


def _op_checks(plan: Plan, mine: str, other: str) -> list[tuple[str, Any, Any]]:
    """What HCCL's consistency check compares when the two ends of a link run different operators."""
    def reduce_op(op: str) -> int:
        return 0 if op in ("AllReduce", "ReduceScatter") else 255  # sum; 255: not a reduction
    return [("tag", tag_of(plan, mine), tag_of(plan, other)), ("cmdType", TAG_OPS[mine], TAG_OPS[other]),
            ("op", reduce_op(mine), reduce_op(other))]


def cmd_check_lines(w: Writer, t: float, checks: list[tuple[str, Any, Any]]) -> None:
    """EI0005 in the plog: `CMD information <what> check fail. local[a], remote[b]`, one per parameter."""
    for i, (what, a, b) in enumerate(checks):
        w.hccl(t + i * 2e-5, "ERROR", f"rank_consistentcy_checker.cc:{429 + 10 * min(i, 1)}", f"CMD information {what} check fail. local[{a}], remote[{b}]", stage="[InitChannelStage][ParameterConflict]", tid=w.p.tid2)


def _story_ei0005(w: Writer, rng: random.Random, tls: int) -> None:
    plan, p, c = w.plan, w.p, w.plan.spec.culprit
    _init_ok(w, tls)
    n = plan.world
    assert c is not None
    mine = "AllGather" if p.rank == c else "AllReduce"
    neighbours = {(c - 1) % n, (c + 1) % n}
    t = plan.t_first + 0.4 + p.rank * 0.003 + p.jitter
    tag = tag_of(plan, mine)
    w.hccl(plan.t_first, "INFO", "hccl_opbase_atrace_info.cc:56", f"Entry-Hccl{mine}: tag[{tag}], sendBuf[0x12c0c0013000], recvBuf[0x12c0c0413000], count[{8320 if p.rank == c else 16512}], dataType[float32], op[sum], localRank[{p.rank}], streamId[2],comm[0xfffe380078d0], deviceLogicId[{p.local}]", tid=p.tid2)
    if p.rank == c or p.rank in neighbours:
        other = "AllReduce" if p.rank == c else "AllGather"
        checks = _op_checks(plan, mine, other)
        if plan.spec.cann == "5.1":  # the plogs-only bundle: a count mismatch on the same op
            checks = [("count", 8320 if p.rank == c else 16512, 16512 if p.rank == c else 8320)]
        cmd_check_lines(w, t, checks)
        peer = (c + 1) % n if p.rank == c else c
        if plan.spec.fault != "lose-chain-end":
            w.hccl(t + 1e-4, "ERROR", "transport_manager.cc:886", f"Transport init error! createLink para:rank[{p.rank}]-localUserrank[{p.rank}]-localIpAddr[{plan.server_ips[p.server]}/{p.phy}], remoteRank[{peer}]-remoteUserrank[{peer}]-remoteIpAddr[{plan.server_ips[plan.procs[peer].server]}/{plan.procs[peer].phy}], machineType[1], linkMode[1], isUsedRdma[0], tag[{tag}]", stage="[InitChannelStage][Timeout]", tid=p.tid2)
        w.hccl(t + 2e-4, "ERROR", "hccl_communicator_host.cc:6370", f"[AllocAlgResource]Alloc transports failed, tag[{tag}]")
        a, b = checks[-1][1], checks[-1][2]
        what = checks[-1][0] if plan.spec.cann == "5.1" else "count"
        if what == "count":
            text = f"The arguments for collective communication are inconsistent between ranks:parameter count, local end {a}, remote end {b}"
        else:
            text = f"The arguments for collective communication are inconsistent between ranks: tag [{tag}], parameter [cmdType], local [{TAG_OPS[mine]}], remote [{TAG_OPS['AllReduce' if p.rank == c else 'AllGather']}]"
        api = f"Hccl{mine}(inputDataPtr, outputDataPtr, numel, hcclType, hcclReduceOp, comm, stream.stream(false))"
        tb = traceback(w, "298, in train_step", f"RuntimeError: {mine.lower()}:torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:3760 HCCL function error: {api}, error code is 4")
        w.screen(t + 0.5, f"{tb}\n{npu_footer(w, t + 0.5)}\n{code_prefix(w, 'EI0005', t + 0.5)}{text}")
        return
    # the others wait for links the mismatched ranks never build: EI0006 after the connect timeout
    _link_victim(w, toward(list(range(n)), p.rank, neighbours | {c}), list(range(n)))


def _hb_text(w: Writer, culprit: Proc, discoverer: Proc, kind: str, t_arr: float, indent: str = "    ") -> str:
    ips = w.plan.server_ips
    reason = {
        "Heartbeat Lost Occurred": "1. Process has exited, 2. Network Disconnected",
        "Stuck Occurred": "1.Host process is stuck, 2.Device task is stuck",
        "Error cqe Occurred": "1. The network is abnormal, 2. The remote process has exited",  # unsourced reason text
    }[kind]
    return (
        f"{indent}Cluster Exception Location[IP/ID]:[{ips[culprit.server]}/{culprit.phy}], Arrival Time:[{w.clock.ctime(t_arr)}], "
        f"Discoverer:[{ips[discoverer.server]}/{discoverer.phy}], ExceptionType:[{kind}], Possible Reason:{reason}"
    )


def _story_exec(w: Writer, rng: random.Random, tls: int) -> None:
    """EI0002 family: a rank stops (hung, stuck, killed, late); the others' notify waits time out."""
    plan, p, f, c = w.plan, w.p, w.plan.spec.fault, w.plan.spec.culprit
    assert c is not None
    _init_ok(w, tls)
    index = steps(w, rng, plan.t_first, plan.t_fault)
    world = list(range(plan.world))
    cp = plan.procs[c]
    n = plan.world
    if p.rank == c and f != "late":
        if f == "heartbeat-lost":  # the OOM killer's SIGKILL: no line at all, the plog just stops
            return
        return  # hung in its own code (stuck host process): nothing more is written
    t_wait = plan.t_fault + (420.0 if p.rank == c else 0.0)
    lagger = f == "lose-ei0002" and p.rank == plan.spec.peer
    if lagger:  # writes its TensorBoard summaries first: enters the all-reduce a few seconds late
        t_wait += LAG_S[f]
    t = t_wait + plan.exec_timeout + 0.02 + p.rank * 0.0037 + p.jitter
    w.hccl(t_wait, "INFO", "hccl_opbase_atrace_info.cc:56", f"Entry-HcclAllReduce: tag[{tag_of(plan, 'AllReduce')}], sendBuf[0x12c0c0013000], recvBuf[0x12c0c0413000], count[10485888], dataType[float32], op[sum], localRank[{p.rank}], streamId[2],comm[0xfffe380078d0], deviceLogicId[{p.local}]", tid=p.tid2)
    # who this rank's notify waited on: its ring predecessor (the culprit for its successor)
    peer: int | str = (p.rank - 1) % n
    if f == "late" and p.rank == c:
        peer = (c + 1) % n  # arrives last: its peers are gone
    hb = ""
    stuck = f in ("heartbeat", "lose-ei0002", "lose-ej0001")
    if f in ("heartbeat", "heartbeat-lost", "lose-ei0002", "lose-ej0001") and plan.cann.heartbeat:
        kind = "Stuck Occurred" if stuck else "Heartbeat Lost Occurred"
        disc = plan.procs[(c + 1) % n]
        t_arr = plan.t_fault + (plan.exec_timeout / 3 if stuck else 31.0)
        line = _hb_text(w, cp, disc, kind, t_arr, "")
        w.hccl(t - 0.01, "ERROR", "task_exception_handler.cc:610", "[HeartbeatAbnormal]" + line, stage="[TaskExecStage]", nospace=plan.cann.stages)
        status = "STUCK" if stuck else "LOST"
        ips = plan.server_ips
        w.hccl(
            t_arr + 0.2 + p.rank * 0.001, "INFO", "heartbeat.cc:951",
            f"[HeartbeatAbnormal]local rank [{ips[p.server]}/{p.phy}]: crimer rank [{ips[cp.server]}/{cp.phy}] status[{status}] by informer rank [{ips[disc.server]}/{disc.phy}]",
            "run", stage="[TaskExecStage]", tid=p.tid2 + 11,
        )
        hb = "there are(is) 1 abnormal device(s):\n" + _hb_text(w, cp, disc, kind, t_arr)
    if lagger:  # SIGTERM from torchrun (a server mate failed first) before its own timer fires
        torchrun_teardown(w)
        return
    notify_timeout_block(w, t, peer, plan.identifier, world, index)
    notify_timeout_screen(w, t + 0.4, peer, index, hb)
    if plan.spec.layout == "screen":  # torch_npu's own watchdog (timeout 30 min) fires too
        watchdog_screen(w, t + 0.6, index + 1, plan.exec_timeout * 1000 + 600 + p.rank)


def _story_cqe(w: Writer, rng: random.Random, tls: int) -> None:
    """A failing RoCE port: error CQEs on the ranks that talk to it, EI0013 on screen."""
    plan, p, c, q = w.plan, w.p, w.plan.spec.culprit, w.plan.spec.peer
    assert c is not None and q is not None
    _init_ok(w, tls)
    index = steps(w, rng, plan.t_first, plan.t_fault, op="AlltoAll")
    cp = plan.procs[c]
    # all-to-all across servers: every rank of the other server talks to the culprit's port
    remote: Proc | None = None
    if p.rank == c:
        remote = plan.procs[q]
    elif p.server != cp.server:
        remote = cp
    t = plan.t_fault + 12.0 + p.rank * 0.0041 + p.jitter
    if remote is not None:
        _cqe_lines(w, t, remote, "AlltoAll")
        return
    # the culprit's own server mates: their all-to-all stops when the culprit's op fails
    line = _hb_text(w, cp, plan.procs[q], "Error cqe Occurred", plan.t_fault + 12.0, "")
    w.hccl(t + 20.0, "ERROR", "task_exception_handler.cc:610", "[HeartbeatAbnormal]" + line, stage="[TaskExecStage]", nospace=plan.cann.stages)
    w.hccl(t + 20.01, "ERROR", "task_exception_handler.cc:908", f"Task run failed, base information is streamID:[14], taskID[{index * 9 + 5}], taskType[Notify Wait], tag[{tag_of(plan, 'AlltoAll')}], AlgType(level 0-1-2):[fullmesh-ring-NHR].", stage="[TaskExecStage][RunFailed][Host]", tid=p.tid2)

# --------------------------------------------------------------------------------------------
# "Must lose" stories: a branch's evidence names the wrong rank, stronger evidence the right one


def _torn_down(plan: Plan, server: int) -> list[Proc]:
    """torchrun stories: the workers of this server its agent SIGTERMs after the first failure."""
    f, c, q = plan.spec.fault, plan.spec.culprit, plan.spec.peer
    here = [x for x in plan.procs if x.server == server]
    if f in ("lose-ei0006", "lose-ei0002"):
        return [x for x in here if x.rank == q]
    if f == "lose-tls":
        return [x for x in here if x.rank not in plan.spec.subgroup]
    if f == "lose-cqe":
        killed = c if c is not None and plan.procs[c].server == server else q
        return [x for x in here if x.rank != killed]
    if f == "lose-ej0001":  # every worker still running when the first one exited
        first = _first_exit(plan, server)[0]
        return [x for x in here if x.rank != first.rank]
    return []


def _agent_pid(plan: Plan, server: int) -> int:
    """The torchrun agent of this server (it forked the first attempt's workers)."""
    first = plan.previous or plan
    return first.procs[server * plan.spec.npus].pid - 31


def torchrun_teardown(w: Writer) -> None:
    """The torchrun agent's lines on its server's console (written once, by the first torn-down rank):
    it stops the other workers, then restarts them (a restart left) or gives up (ChildFailedError)."""
    plan, p = w.plan, w.p
    down = _torn_down(plan, p.server)
    if not down or p.rank != down[0].rank:
        return
    c = plan.spec.culprit
    if plan.spec.fault == "lose-cqe" and c is not None and plan.procs[c].server == p.server:
        first, t_fail, code = plan.procs[c], plan.t_fault, -9  # the kernel's OOM killer
    else:
        first, t_fail = _first_exit(plan, p.server)
        code = 1
    apid = _agent_pid(plan, p.server)
    api = "torch/distributed/elastic/multiprocessing/api.py"
    t = t_fail + 0.3
    for i, x in enumerate(down):
        w.screen(t + i * 0.001, f"W{w.clock.glog(t + i * 0.001)} {apid} {api}:897] Sending process {x.pid} closing signal SIGTERM")
    t2 = t + 0.6
    w.screen(t2, f"E{w.clock.glog(t2)} {apid} {api}:869] failed (exitcode: {code}) local_rank: {first.local} (pid: {first.pid}) of binary: /usr/local/python3.9.2/bin/python3")
    if plan.restart is not None:
        agent_info(w, t2 + 0.4, "Worker group FAILED. 1/1 attempts left; will restart worker group", 942)
        agent_info(w, t2 + 0.41, "Stopping worker group", 733)
        agent_starts_workers(w, t2 + 0.9, plan.attempt + 1)
        return
    why = f"Signal 9 (SIGKILL) received by PID {first.pid}" if code == -9 else "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
    block = [
        "Traceback (most recent call last):",
        '  File "/usr/local/python3.9.2/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "=" * 60,
        "pretrain_gpt.py FAILED",
        "-" * 60,
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        "-" * 60,
        "Root Cause (first observed failure):",
        "[0]:",
        f"  time      : {w.clock.iso(t_fail)}",
        f"  host      : {plan.server_dirs[p.server]}",
        f"  rank      : {first.rank} (local_rank: {first.local})",
        f"  exitcode  : {code} (pid: {first.pid})",
        "  error_file: <N/A>",
        f"  traceback : {why}",
        "=" * 60,
    ]
    w.screen(t2 + 0.4, "\n".join(block))


def agent_info(w: Writer, t: float, msg: str, line: int) -> None:
    """An INFO line of torchrun's elastic agent (LOGLEVEL=INFO); file:line: hint only (torch 2.13)."""
    apid = _agent_pid(w.plan, w.p.server)
    w.screen(t, f"I{w.clock.glog(t)} {apid} torch/distributed/elastic/agent/server/api.py:{line}] [default] {msg}")


def agent_starts_workers(w: Writer, t: float, restart_count: int) -> None:
    """The agent's rendezvous and start of a worker group (its restart_count says which attempt)."""
    plan, p = w.plan, w.p
    local = [x for x in plan.procs if x.server == p.server]
    n = plan.world
    result = [
        "Rendezvous complete for workers. Result:",
        f"  restart_count={restart_count}",
        f"  master_addr={plan.server_ips[0]}",
        f"  master_port={MASTER_PORT}",
        f"  group_rank={p.server}",
        f"  group_world_size={plan.spec.servers}",
        f"  local_ranks={[x.local for x in local]}",
        f"  role_ranks={[x.rank for x in local]}",
        f"  global_ranks={[x.rank for x in local]}",
        f"  role_world_sizes={[n] * len(local)}",
        f"  global_world_sizes={[n] * len(local)}",
        "",
    ]
    agent_info(w, t, "Rendezvous'ing worker group", 707)
    agent_info(w, t + 0.3, "\n".join(result), 553)
    agent_info(w, t + 0.31, "Starting worker group", 715)


def _story_lose_init_root(w: Writer, rng: random.Random, tls: int) -> None:
    """The root advertises its docker0 address: its own server's agents reach it, the others cannot."""
    plan, p = w.plan, w.p
    env_lines(w)
    if p.rank == 0:  # HCCL_SOCKET_IFNAME unset: the first interface found is the docker bridge
        w.hccl(plan.t_init - 0.05, "INFO", "sal.cc:402", f"get host ip success, ifname[docker0], ip[{DOCKER_IP}]", "debug")  # unsourced wording
    init_entry(w)
    device_start(w, tls)
    t = plan.t_init + plan.connect_timeout + 20.0
    far = [x.rank for x in plan.procs if x.server != plan.procs[0].server]
    if p.rank in far:  # its agent cannot reach the advertised address
        _agent_cannot_reach_root(w, t + 0.4 + p.jitter, DOCKER_IP)
        return
    _init_wait_root(w, far, t)


def _story_lose_init_agent(w: Writer, rng: random.Random, tls: int) -> None:
    """The root's own device is held by a stale process (EJ0001): every agent fails to reach it."""
    _root_held_by_stale_process(w, tls)


def _root_held_by_stale_process(w: Writer, tls: int) -> None:
    """The culprit (the root) fails HCCP init on a device a stale process holds; the others' agents
    cannot reach it."""
    plan, p, c = w.plan, w.p, w.plan.spec.culprit
    env_lines(w)
    init_entry(w)
    if p.rank == c:
        _stale_process(w, plan.t_init + 0.3)
        return
    device_start(w, tls)
    _agent_cannot_reach_root(w, plan.t_init + plan.connect_timeout + 20.4 + p.rank * 1e-4 + p.jitter, plan.server_ips[0])


def _agent_cannot_reach_root(w: Writer, ta: float, root_ip: str) -> None:
    """An agent of the root-info negotiation that could not connect to the root before its timeout."""
    w.hccl(ta, "ERROR", "topoinfo_exchange_agent.cc:190", f"[RanktableDetect]topo exchange agent get socket timeout! timeout[{w.plan.connect_timeout}]", stage="[InitGroupStage]")
    w.hccl(ta + 1e-4, "ERROR", "topoinfo_exchange_agent.cc:41", f"[TopoInfoExchangeAgent][Setup]TopoExchangeAgent: connect server[{root_ip} : {ROOT_PORT}] failed")
    _init_failed(w, ta + 0.001, 7)


def _cqe_lines(w: Writer, t: float, remote: Proc, op: str) -> None:
    """An error CQE toward remote's device (device log + HCCL heartbeat line) and EI0013 on screen."""
    plan, p, ips = w.plan, w.p, w.plan.server_ips
    w.app(t - 0.01, "ERROR", "ROCE", "hns_roce_lite.c:630", "hns_roce_lite_handle_error_cqe(630) : error cqe status: 0x15")
    w.app(t - 0.008, "ERROR", "ROCE", "hns_roce_lite.c:747", "dump_err_cqe(747) : CQ(0x10) CQE(0x5) INDEX(0x00000003): 0x1500047c")
    w.app(t - 0.005, "ERROR", "HCCP", "ra_hdc_lite.c:794", f"tid:{p.tid2},ra_hdc_lite_period_poll_cqe : [create][ra_hdc_period_poll]failed CQE status[12], wr[0]")
    w.hccl(
        t, "ERROR", "heartbeat.cc:1229",
        f"[HeartbeatAbnormal][ROCE CQE ERROR]cqe error status[12], time:[{w.clock.cqe(t - 0.005)}],localInfo{{server[{ips[p.server]}],deviceId[{p.phy}],deviceIp[{plan.device_ip(p)}]}}, "
        f"remoteIP{{server[{ips[remote.server]}],deviceId[{remote.phy}],deviceIp[{plan.device_ip(remote)}]}}",
        stage="[TaskExecStage]", tid=p.tid2,
    )
    text = (
        f"[PID: {p.pid}] {w.clock.plog(t + 0.3)} Execution Error ROCE CQE(EI0013): An error CQE occurred during operator execution. "
        f"Local information: server {ips[p.server]}, device ID {p.phy}, device IP {plan.device_ip(p)}. "
        f"Peer information: server {ips[remote.server]}, device ID {remote.phy}, device IP {plan.device_ip(remote)}."
    )
    tb = traceback(w, "301, in train_step", "RuntimeError: npuSynchronizeDevice:torch_npu/csrc/core/npu/NPUFunctions.cpp:487 NPU function error: AclrtSynchronizeDeviceWithTimeout, error code is 507053")
    w.screen(t + 0.3, f"{tb}\n{npu_footer(w, t + 0.3, 'ERR00100 PTA call acl api failed')}\n{text}")


def _crimer(w: Writer, t: float, crimer: Proc, informer: Proc, status: str) -> None:
    ips, p = w.plan.server_ips, w.p
    w.hccl(
        t, "INFO", "heartbeat.cc:951",
        f"[HeartbeatAbnormal]local rank [{ips[p.server]}/{p.phy}]: crimer rank [{ips[crimer.server]}/{crimer.phy}] status[{status}] by informer rank [{ips[informer.server]}/{informer.phy}]",
        "run", stage="[TaskExecStage]", tid=p.tid2 + 11,
    )


def _story_lose_heartbeat(w: Writer, rng: random.Random, tls: int) -> None:
    """A failing RoCE port (culprit): its peers exit on EI0013; the culprit's server mates then see
    the heartbeat of the first peer that exited go LOST, and name it."""
    plan, p, c, q = w.plan, w.p, w.plan.spec.culprit, w.plan.spec.peer
    assert c is not None and q is not None
    _init_ok(w, tls)
    index = steps(w, rng, plan.t_first, plan.t_fault, op="AlltoAll")
    cp, qp = plan.procs[c], plan.procs[q]
    if p.server != cp.server or p.rank == c:  # all-to-all across servers: traffic with the bad port
        _cqe_lines(w, _cqe_t(plan, p), qp if p.rank == c else cp, "AlltoAll")
        return
    # the culprit's server mates: no CQE of their own; Q exited first, 30 s later its heartbeat is LOST
    disc = next(x for x in plan.procs if x.server == cp.server and x.rank != c)
    t_arr = _cqe_t(plan, qp) + 0.6 + 30.0
    kind = "Heartbeat Lost Occurred"
    _crimer(w, t_arr + 0.2 + p.rank * 0.001, qp, disc, "LOST")
    t = _exec_fail_t(plan, p, plan.t_fault)
    w.hccl(t - 0.01, "ERROR", "task_exception_handler.cc:610", "[HeartbeatAbnormal]" + _hb_text(w, qp, disc, kind, t_arr, ""), stage="[TaskExecStage]", nospace=plan.cann.stages)
    notify_timeout_block(w, t, q, plan.identifier, list(range(plan.world)), index)
    notify_timeout_screen(w, t + 0.4, q, index, "there are(is) 1 abnormal device(s):\n" + _hb_text(w, qp, disc, kind, t_arr))


def _story_lose_cqe(w: Writer, rng: random.Random, tls: int) -> None:
    """The culprit's process is SIGKILLed (OOM killer); torchrun tears its server down; on the other
    server the heartbeat reports it LOST, then its ring predecessor's RDMA writes fail (error CQE)."""
    plan, p, c, q = w.plan, w.p, w.plan.spec.culprit, w.plan.spec.peer
    assert c is not None and q is not None
    _init_ok(w, tls)
    steps(w, rng, plan.t_first, plan.t_fault)
    cp, qp = plan.procs[c], plan.procs[q]
    if p.rank == c:
        return  # SIGKILL: no line at all, the plog just stops
    if p.server == cp.server:
        torchrun_teardown(w)
        return
    t_arr = plan.t_fault + 30.0
    _crimer(w, t_arr + 0.2 + p.rank * 0.001, cp, qp, "LOST")
    if p.rank == q:
        t = _cqe_t(plan, p)
        _cqe_lines(w, t, cp, "AllReduce")
        w.hccl(t + 0.02, "ERROR", "task_exception_handler.cc:610", "[HeartbeatAbnormal]" + _hb_text(w, cp, qp, "Heartbeat Lost Occurred", t_arr, ""), stage="[TaskExecStage]", nospace=plan.cann.stages)
        return
    torchrun_teardown(w)


def _story_lose_ej0001(w: Writer, rng: random.Random, tls: int) -> None:
    """torchrun --max-restarts=1, LOGLEVEL=INFO. Attempt 0: the culprit's host process is stuck
    mid-training; the heartbeat names its device (STUCK) and the others time out with EI0002; the
    agent stops the workers and starts them again. Attempt 1: the device of the peer is still held
    by its attempt-0 process, so HCCP cannot start there (EJ0001) and the restarted job fails."""
    plan, p, q = w.plan, w.p, w.plan.spec.peer
    assert q is not None
    if plan.attempt == 0:
        if p.local == 0:
            agent_info(w, 0.05, "starting workers for entrypoint: python", 912)
            agent_starts_workers(w, 0.06, 0)
        _story_exec(w, rng, tls)
        torchrun_teardown(w)
        return
    env_lines(w)
    init_entry(w)
    if p.rank == q:
        assert plan.previous is not None
        _stale_process(w, _ej0001_t(plan), holder=plan.previous.procs[q].pid)
        return
    device_start(w, tls)
    torchrun_teardown(w)  # the others wait in the negotiation until the agent stops them


def _partners(plan: Plan, r: int) -> list[int]:
    """The ranks r builds links with in a hierarchical algorithm: its server mates (level 0, mesh) and
    the ranks of its local index on the other servers (level 1)."""
    me = plan.procs[r]
    return [x.rank for x in plan.procs if x.rank != r and (x.server == me.server or x.local == me.local)]


def _moved_on_t(plan: Plan, p: Proc) -> float:
    """lose-ei0005: when a rank that built all its broadcast links enters the first all-reduce."""
    return plan.t_first + 1.6 + p.rank * 0.002 + p.jitter


def _story_lose_ei0005(w: Writer, rng: random.Random, tls: int) -> None:
    """The culprit never reaches DDP's broadcast of the weights (stuck reading them from a hung
    mount). Its link partners wait for it inside the broadcast's link setup; the other ranks build
    all their broadcast links (none with the culprit), go on to the first gradient all-reduce, and
    meet the waiting partners there: each such pair fails HCCL's consistency check (EI0005)."""
    plan, p, c = w.plan, w.p, w.plan.spec.culprit
    assert c is not None
    _init_ok(w, tls)
    t_load = plan.t_init + 2.2 + p.local * 0.013
    w.screen(t_load, f"[rank{p.rank}] loading pretrained weights from /mnt/sfs_turbo/models/llama2-7b-hf ...")
    if p.rank == c:  # blocked in read() on the hung mount: no line after its last allocation
        w.mod(t_load + 0.31, "INFO", "DRV", "dev_mem.c:298", f"halMemAlloc: devid={p.local}, size=33554432, type=2")
        return
    w.screen(t_load + 3.1 + p.jitter, f"[rank{p.rank}] loaded 291 tensors (13.48 GB) in {3.1 + p.jitter:.1f} s")
    waiting = set(_partners(plan, c))
    count = f"count[65536000], dataType[float32], root[0], localRank[{p.rank}], streamId[2],comm[0xfffe380078d0], deviceLogicId[{p.local}]"
    t_bc = plan.t_first + p.local * 0.0011 + p.jitter * 0.1
    w.hccl(t_bc, "INFO", "hccl_opbase_atrace_info.cc:56", f"Entry-HcclBroadcast: tag[{tag_of(plan, 'Broadcast')}], buf[0x12c0c0013000], {count}", tid=p.tid2)  # unsourced: the Broadcast entry's fields
    if p.rank in waiting:  # still in the broadcast's link setup, waiting for the culprit
        mine, other = "Broadcast", "AllReduce"
        pairs = sorted((_moved_on_t(plan, plan.procs[r]) + 0.05 + p.jitter * 0.01, r)
                       for r in _partners(plan, p.rank) if r not in waiting and r != c)
    else:  # moved on: its first gradient all-reduce meets the ranks that still wait
        mine, other = "AllReduce", "Broadcast"
        t_ar = _moved_on_t(plan, p)
        w.hccl(t_ar, "INFO", "hccl_opbase_atrace_info.cc:56", f"Entry-HcclAllReduce: tag[{tag_of(plan, 'AllReduce')}], sendBuf[0x12c0c0013000], recvBuf[0x12c0c0413000], count[16512], dataType[float32], op[sum], localRank[{p.rank}], streamId[2],comm[0xfffe380078d0], deviceLogicId[{p.local}]", tid=p.tid2)
        pairs = [(t_ar + 0.05 + i * 1e-4, r) for i, r in enumerate(x for x in _partners(plan, p.rank) if x in waiting)]
    for t, _ in pairs:
        cmd_check_lines(w, t, _op_checks(plan, mine, other))
    t, peer = pairs[-1][0] + 1e-3, plan.procs[pairs[0][1]]
    tag = tag_of(plan, mine)
    w.hccl(t, "ERROR", "transport_manager.cc:886", f"Transport init error! createLink para:rank[{p.rank}]-localUserrank[{p.rank}]-localIpAddr[{plan.server_ips[p.server]}/{p.phy}], remoteRank[{peer.rank}]-remoteUserrank[{peer.rank}]-remoteIpAddr[{plan.server_ips[peer.server]}/{peer.phy}], machineType[1], linkMode[1], isUsedRdma[{int(peer.server != p.server)}], tag[{tag}]", tid=p.tid2)
    w.hccl(t + 1e-4, "ERROR", "hccl_communicator_host.cc:6370", f"[AllocAlgResource]Alloc transports failed, tag[{tag}]")
    if mine == "Broadcast":  # unsourced: torch_npu's broadcast call as DDP's weight sync makes it
        where, call = "157, in build_model", "broadcast:torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:3885 HCCL function error: HcclBroadcast(inputTensors[0].data_ptr(), numel, hcclType, root, comm, stream.stream(false)), error code is 4"
    else:
        where, call = "298, in train_step", "allreduce:torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:3760 HCCL function error: HcclAllReduce(inputDataPtr, outputDataPtr, numel, hcclType, hcclReduceOp, comm, stream.stream(false)), error code is 4"
    text = f"The arguments for collective communication are inconsistent between ranks: tag [{tag}], parameter [cmdType], local [{TAG_OPS[mine]}], remote [{TAG_OPS[other]}]"
    w.screen(t + 0.5, f"{traceback(w, where, f'RuntimeError: {call}')}\n{npu_footer(w, t + 0.5)}\n{code_prefix(w, 'EI0005', t + 0.5)}{text}")


def _story_lose_init_store(w: Writer, rng: random.Random, tls: int) -> None:
    """Shell launcher: rank 0's process hosts the c10d store (MASTER_ADDR:MASTER_PORT) and is the HCCL
    root. A stale process holds its device: HCCP fails (EJ0001) and rank 0 exits just after it
    published the root info. The agents had fetched it and time out connecting to the root; the peer,
    late to its first collective, asks the store for it after rank 0 has gone."""
    plan, p, q = w.plan, w.p, w.plan.spec.peer
    shard = f"[rank{p.rank}] sample index of shard {p.rank:03d}: "
    if p.rank == q:  # connected to the store at init_process_group, then rebuilt its index cache
        t = plan.t_init + LATE_S
        w.screen(p.t_start + 4.0, shard + f"cache miss, building /cache/idx/shard_{p.rank:03d}.npy ...")
        w.screen(t - 0.4, shard + f"built in {t - 0.4 - p.t_start - 4.0:.1f} s")
        msg = (f"[{p.rank}] is setting up HCCL communicator and retrieving hcclUniqueId from [0] via c10d key-value store by key '0', "
               "but store->get('0') got error: Connection reset by peer. This may indicate a possible application crash on rank 0 or a network set up issue.")
        tb = traceback(w, "88, in initialize_distributed", f"torch.distributed.DistBackendError: {msg}")  # unsourced: the exception class
        w.screen(t, f"{tb}\n{npu_footer(w, t, 'ERR02005 DIST internal error')}")
        return
    w.screen(p.t_start + 4.0, shard + "cache hit (0.3 s)")
    _root_held_by_stale_process(w, tls)


FAULT_STORIES: dict[str, Callable[[Writer, random.Random, int], None]] = {
    "none": _story_none,
    "init-missing": _story_init_missing,
    "init-agent": _story_init_agent,
    "init-ranktable": _story_init_ranktable,
    "ej0001": _story_ej0001,
    "ei0006-silent": _story_ei0006,
    "link-chain": _story_ei0006,
    "link-cycle": _story_ei0006,
    "tls": _story_ei0006,
    "ei0005": _story_ei0005,
    "ei0002-silent": _story_exec,
    "heartbeat": _story_exec,
    "heartbeat-lost": _story_exec,
    "late": _story_exec,
    "cqe": _story_cqe,
    "lose-init-root": _story_lose_init_root,
    "lose-init-agent": _story_lose_init_agent,
    "lose-ei0006": _story_ei0006,
    "lose-chain-end": _story_ei0005,
    "lose-cycle": _story_ei0006,
    "lose-tls": _story_ei0006,
    "lose-ei0002": _story_exec,
    "lose-heartbeat": _story_lose_heartbeat,
    "lose-cqe": _story_lose_cqe,
    "lose-spread": _story_exec,
    "lose-ej0001": _story_lose_ej0001,
    "lose-ei0005": _story_lose_ei0005,
    "lose-init-store": _story_lose_init_store,
}


# --------------------------------------------------------------------------------------------
# Files: where each stream goes


def plog_files(plan: Plan, p: Proc) -> dict[str, list[float]]:
    """relative path -> [window start, window end) of the debug plog files of this pid, and the rest."""
    sd = plan.server_dirs[p.server]
    clock = _clock(plan, p)
    pts = rotate_points(plan, p)
    out: dict[str, list[float]] = {}
    dbg = "plog" if plan.cann.flat else "debug/plog"
    for i, t in enumerate(pts):
        end = pts[i + 1] if i + 1 < len(pts) else float("inf")
        out[f"{sd}/{dbg}/plog-{p.pid}_{clock.fname(t)}.log"] = [t, end]
    return out


def stream_path(plan: Plan, p: Proc, stream: str) -> str:
    sd = plan.server_dirs[p.server]
    ts = _clock(plan, p).fname(plan.t_init + (0.4 if "dev" in stream else -0.3))
    if plan.cann.flat:
        return {
            "run": f"{sd}/plog/plog-{p.pid}_{ts}.log",
            "ddev": f"{sd}/device-{p.phy}/device-{p.pid}_{ts}.log",
            "rdev": f"{sd}/device-{p.phy}/device-{p.pid}_{ts}.log",
        }[stream]
    return {
        "run": f"{sd}/run/plog/plog-{p.pid}_{ts}.log",
        "ddev": f"{sd}/debug/device-{p.phy}/device-{p.pid}_{ts}.log",
        "rdev": f"{sd}/run/device-{p.phy}/device-{p.pid}_{ts}.log",
    }[stream]


def screen_path(plan: Plan, p: Proc) -> str:
    if plan.spec.launcher == "shell":
        return f"train_{p.rank}.log"
    return f"train-{plan.server_dirs[p.server]}.log"


def _has_stream(plan: Plan, p: Proc, stream: str) -> bool:
    """Whether the plan gives this pid lines in that stream (so plan() knows the files)."""
    f, culprit = plan.spec.fault, p.rank == plan.spec.culprit
    if f == "lose-init-store" and p.rank == plan.spec.peer:
        return False  # its store call failed before HCCL started at all
    if f == "lose-ej0001" and plan.attempt:  # the restart: HCCP cannot start on the stale device
        return not (p.rank == plan.spec.peer and stream == "rdev")
    if stream == "run":  # HCCL_ENV lines: every pid that reached communicator creation
        return not (culprit and f == "init-missing")
    if culprit and f in ("init-missing", "init-ranktable"):
        return False  # never started HCCP on its device
    return not (culprit and f in ("ej0001", "lose-init-agent", "lose-init-store") and stream == "rdev")


def files_of(plan: Plan) -> list[str]:
    files: set[str] = set()
    for pl, p in attempt_procs(plan):
        if plan.spec.layout != "screen":
            files.update(plog_files(pl, p))
            for stream in ("run", "ddev", "rdev"):
                if _has_stream(pl, p, stream):
                    files.add(stream_path(pl, p, stream))
        if plan.spec.layout != "plogs" and _has_screen(pl, p):
            files.add(screen_path(pl, p))
    if plan.spec.rank_table and plan.spec.layout != "screen":
        files.add("rank_table.json")
    return sorted(files)


def _has_screen(plan: Plan, p: Proc) -> bool:
    """torchrun writes one file per server, a shell launcher one per rank (even an empty one)."""
    return True


def rank_table(plan: Plan) -> str:
    servers = []
    for s, ip in enumerate(plan.server_ips):
        devs = [
            {"device_id": str(p.phy), "device_ip": plan.device_ip(p), "rank_id": str(p.rank)}
            for p in plan.procs if p.server == s
        ]
        servers.append({"device": devs, "host_nic_ip": "reserve", "server_id": ip})
    doc = {"server_count": str(plan.spec.servers), "server_list": servers, "status": "completed", "version": "1.0"}
    return json.dumps(doc, indent=4) + "\n"


def render(plan: Plan) -> dict[str, str]:
    """relative path -> file text, for the whole bundle."""
    out: dict[str, list[tuple[float, int, str]]] = {}
    seq = 0
    for pl, p in attempt_procs(plan):
        lines = story(pl, p, _clock(pl, p))
        windows = plog_files(pl, p)
        for t, stream, text in lines:
            seq += 1
            if stream == "screen":
                if plan.spec.layout == "plogs":
                    continue
                path = screen_path(pl, p)
            elif plan.spec.layout == "screen":
                continue
            elif stream == "debug":
                path = next(k for k, (a, b) in windows.items() if a - 1e-9 <= t < b)
            else:
                path = stream_path(pl, p, stream)
            out.setdefault(path, []).append((t, seq, text))
    texts = {k: "".join(x[2] + "\n" for x in sorted(v)) for k, v in out.items()}
    for path in files_of(plan):
        texts.setdefault(path, "")
    if plan.spec.rank_table and plan.spec.layout != "screen":
        texts["rank_table.json"] = rank_table(plan)
    return texts


# --------------------------------------------------------------------------------------------
# Truth


def _truth(plan: Plan, files: list[str]) -> Truth:
    s = plan.spec
    phase, category, branch = FAULTS[s.fault]
    ips = plan.server_ips
    culprits = [] if s.fault == "none" or s.culprit is None else [s.culprit]
    if s.fault == "link-cycle" and s.peer is not None:
        culprits = sorted([s.culprit or 0, s.peer])
    link = None
    if s.fault in ("link-cycle", "cqe", "lose-heartbeat") and s.culprit is not None and s.peer is not None:
        a, b = plan.procs[s.culprit], plan.procs[s.peer]
        link = {
            "ends": [
                {"rank": q.rank, "server_ip": ips[q.server], "device": q.phy, "device_ip": plan.device_ip(q)}
                for q in (a, b)
            ],
            # cqe: the endpoint the error CQEs name most (its port fails); cycle: both are equal
            "endpoint": a.rank if s.fault in ("cqe", "lose-heartbeat") else None,
        }
    victims = [p.rank for p in plan.procs if p.rank not in culprits and _reports(plan, p)]
    return Truth(
        name=s.name,
        cann=s.cann,
        fault=s.fault,
        layout=s.layout,
        servers=s.servers,
        npus=s.npus,
        world_size=plan.world,
        phase=phase,
        category=category,
        branch=branch,
        culprit_ranks=culprits,
        culprit_devices=[f"{ips[plan.procs[r].server]}/{plan.procs[r].phy}" for r in culprits],
        culprit_servers=sorted({plan.server_dirs[plan.procs[r].server] for r in culprits}),
        link=link,
        victims=victims,
        groups=plan.groups,
        ranks=[
            RankTruth(p.rank, plan.server_dirs[p.server], ips[p.server], p.phy, p.local, plan.device_ip(p), p.pid)
            for p in plan.procs
        ],
        files=files,
        loser_branch=LOSERS.get(s.fault, ""),
        loser_culprit_ranks=_loser_ranks(plan),
        restart_pids={p.rank: p.pid for p in plan.restart.procs} if plan.restart else {},
    )


def _loser_ranks(plan: Plan) -> list[int]:
    """Whom the losing branch of a lose-* story would name."""
    s, n = plan.spec, plan.world
    f, c, q = s.fault, s.culprit or 0, s.peer if s.peer is not None else 0
    if f == "lose-init-root":
        return [p.rank for p in plan.procs if p.server != plan.procs[0].server]
    if f == "lose-init-agent":
        return [r for r in range(n) if r != c]
    if f in ("lose-ej0001", "lose-init-store"):  # the stale device's rank; the late rank's store error
        return [q]
    if f == "lose-ei0005":  # the odd operator out: the ranks that had moved on to the all-reduce
        return [r for r in range(n) if r != c and r not in _partners(plan, c)]
    if f in ("lose-ei0006", "lose-tls", "lose-heartbeat"):
        return [q]
    if f == "lose-chain-end":  # the EI0006 chains end at the neighbours, which waited on nobody
        return sorted({(c - 1) % n, (c + 1) % n})
    if f == "lose-cycle":
        return sorted([c, (c + 1) % n])
    if f in ("lose-ei0002", "lose-cqe"):
        return sorted([c, q])
    if f == "lose-spread":  # the latest first-timeout stamp: on the server whose clock runs ahead
        last = plan.procs[-1].server
        return [max((p for p in plan.procs if p.server == last and p.rank != c), key=lambda p: _exec_fail_t(plan, p, plan.t_fault)).rank]
    return []


def _reports(plan: Plan, p: Proc) -> bool:
    """Whether this (non-culprit) rank reports a failure of its own (a victim)."""
    f = plan.spec.fault
    if f == "none":
        return False
    if f in CHAIN_FAULTS:
        return p.rank in plan.spec.subgroup
    if f in ("lose-ei0006", "lose-ei0002"):
        return p.rank != plan.spec.peer  # torn down before its own timer fired
    if f == "lose-cqe":
        return p.rank == plan.spec.peer  # the others exit on SIGTERM (the heartbeat line is INFO)
    return True


def plan(spec: Spec) -> Truth:
    """The Truth generate() would return for spec, without rendering anything."""
    pl = make_plan(spec)
    return _truth(pl, files_of(pl))


def generate(spec: Spec, out_dir: str | Path) -> Truth:
    """Write the bundle's log tree into out_dir (created; must be empty or absent)."""
    pl = make_plan(spec)
    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    if any(root.iterdir()):
        raise FileExistsError(f"{root} is not empty")
    texts = render(pl)
    for rel, text in sorted(texts.items()):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    truth = _truth(pl, sorted(texts))
    return truth


def truth_dict(truth: Truth) -> dict[str, Any]:
    """The truth as plain data; the loser keys follow `branch`, and only lose-* stories have them;
    `restart_pids` only where torchrun restarted the workers."""
    d = asdict(truth)
    if not d["restart_pids"]:
        del d["restart_pids"]
    loser = {k: d.pop(k) for k in ("loser_branch", "loser_culprit_ranks")}
    if not loser["loser_branch"]:
        return d
    out: dict[str, Any] = {}
    for k, v in d.items():
        out[k] = v
        if k == "branch":
            out.update(loser)
    return out


# --------------------------------------------------------------------------------------------
# CLI


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--fault", choices=list(FAULTS), default="ei0006-silent")
    ap.add_argument("--culprit", type=int, default=None)
    ap.add_argument("--peer", type=int, default=None)
    ap.add_argument("--servers", type=int, default=1)
    ap.add_argument("--npus", type=int, default=8)
    ap.add_argument("--cann", choices=list(CANNS), default="8.0")
    ap.add_argument("--layout", choices=LAYOUTS, default="full")
    ap.add_argument("--launcher", choices=("torchrun", "shell"), default="torchrun")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    spec = Spec(
        name=Path(args.out_dir).name, fault=args.fault, culprit=args.culprit, peer=args.peer,
        servers=args.servers, npus=args.npus, cann=args.cann, layout=args.layout,
        launcher=args.launcher, seed=args.seed,
    )
    try:
        truth = generate(spec, args.out_dir)
    except (ValueError, FileExistsError) as exc:
        print(f"ascendgen: {exc}", file=sys.stderr)
        return 2
    print(f"{args.out_dir}: {truth.world_size} ranks, {len(truth.files)} files; fault={truth.fault} "
          f"culprits={truth.culprit_ranks} phase={truth.phase or '-'} branch={truth.branch or '-'}")
    return 0


__all__ = ["CANNS", "FAULTS", "LOSERS", "Spec", "Truth", "generate", "plan", "truth_dict"]

if __name__ == "__main__":
    raise SystemExit(main())
