"""The stories of the lose-* faults: a weaker branch's evidence is there and points at other ranks."""

from __future__ import annotations

import random

from .launcher import agent_info, agent_starts_workers, torchrun_teardown
from .lines import (
    Writer,
    code_prefix,
    device_start,
    env_lines,
    init_entry,
    notify_timeout_block,
    notify_timeout_screen,
    npu_footer,
    steps,
    tag_of,
    traceback,
)
from .model import DOCKER_IP, LATE_S, ROOT_PORT, TAG_OPS
from .plan import Plan, Proc, _cqe_t, _ej0001_t, _exec_fail_t
from .stories import (
    _cqe_lines,
    _hb_text,
    _init_failed,
    _init_ok,
    _init_wait_root,
    _op_checks,
    _stale_process,
    _story_exec,
    cmd_check_lines,
)


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
