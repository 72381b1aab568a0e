"""The story of each process, per fault: init failures, link and notify timeouts, parameter checks, heartbeats, CQEs."""

from __future__ import annotations

import random
from typing import Any

from .launcher import torchrun_teardown
from .lines import (
    Writer,
    code_prefix,
    destroy,
    detect_result,
    device_start,
    env_lines,
    init_entry,
    key_info,
    link_timeout_block,
    link_timeout_screen,
    notify_timeout_block,
    notify_timeout_screen,
    npu_footer,
    steps,
    subgroup_entry,
    tag_of,
    traceback,
    watchdog_screen,
)
from .model import CHAIN_FAULTS, LAG_S, NIC, PNAME, ROOT_PORT, TAG_OPS
from .plan import Plan, Proc


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
    # unsourced: the EI0015 text (docs/formats.md gives the code, not its wording)
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
