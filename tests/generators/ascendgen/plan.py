"""The job's plan: who is who (servers, devices, pids, groups), and when each process fails."""

from __future__ import annotations

import calendar
import random
from dataclasses import dataclass, replace

from .model import CANNS, DOCKER_IP, FAULTS, LATE_S, NIC, RESTART_FAULTS, ROOT_PORT, Cann, Spec


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
