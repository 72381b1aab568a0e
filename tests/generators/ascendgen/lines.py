"""Time and line envelopes (plog, device log, screen), a process's normal life and the failure surfaces."""

from __future__ import annotations

import random
import time

from .model import PNAME, ROOT_PORT, SKEW_S
from .plan import Plan, Proc, _visible_for


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
