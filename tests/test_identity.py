"""The identity stage, process groups and milestones, on small real-shaped logs written to disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from triage.api import analyze
from triage.identity import group_ref
from triage.job.groups import DEFAULT
from triage.model import Event, Evidence, Identity, Kind, Milestone, Phase

WATCHDOG_25 = ("[rank{g}]:[E1122 10:00:{s:02d}.000000000 ProcessGroupNCCL.cpp:632] [PG ID {pid} PG GUID "
               "{guid}({desc}) Rank {r}] Watchdog caught collective operation timeout: WorkNCCL("
               "SeqNum={seq}, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for "
               "600004 milliseconds before timing out.")
GLOO_TIMEOUT = ("[rank{g}]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/"
                "unbound_buffer.cc:78] Timed out waiting 5000ms for recv operation to complete")


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _source(report_sources: list, suffix: str):  # type: ignore[no-untyped-def]
    (found,) = [s for s in report_sources if s.name.endswith(suffix)]
    return found


def test_a_folder_above_the_whole_job_gives_no_rank(tmp_path: Path) -> None:
    # The user kept the job in `hang-rank2/`: that says nothing about who wrote each file.
    job = _write(tmp_path / "hang-rank2", {
        f"worker{r}.log": f"step 3 loss 0.1\n{GLOO_TIMEOUT.format(g=r)}\n" for r in (0, 1, 3)
    } | {"worker2.log": "step 3 loss 0.1\n"})
    report = analyze([job])
    ranks = {s.name.rsplit("/", 1)[-1]: s.identity.rank for s in report.sources}
    assert ranks["worker0.log"] == 0
    assert ranks["worker3.log"] == 3
    assert ranks["worker2.log"] is None  # no prefix, no rank word of its own


def test_one_line_of_the_world_communicator_names_the_whole_file_and_its_pid(tmp_path: Path) -> None:
    init = ("node1:4242:4242 [3] NCCL INFO ncclCommInitRank comm 0x55d0 rank 3 nranks 4 cudaDev 3 "
            "nvmlDev 3 busId 61000 commId 0x2114bc51af4fb978 - Init COMPLETE")
    warn = "node1:4242:4300 [3] transport/net_ib.cc:1700 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<4731> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.1 remoteGid ::ffff:10.0.0.2 hca mlx5_0"
    job = _write(tmp_path, {
        "stdout-a.log": f"node1:4242:4242 [3] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n{init}\n",
        "nccl.node1.4242": f"{warn}\n",
    })
    report = analyze([job])
    assert _source(report.sources, "stdout-a.log").identity.rank == 3
    debug_file = _source(report.sources, "nccl.node1.4242")
    assert debug_file.identity.rank == 3
    assert debug_file.identity.learnt_from["rank"] == "pid seen in the rank's own lines"
    assert {e.rank for e in report.events} == {3}


def test_disagreeing_signals_are_reported_on_the_source(tmp_path: Path) -> None:
    job = _write(tmp_path, {
        "rank3.log": "\n".join(f"[rank5]: step {i} loss 0.1" for i in range(5)) + "\n",
        "rank4.log": "step 1 loss 0.1\n",
    })
    report = analyze([job])
    source = _source(report.sources, "rank3.log")
    assert source.identity.rank == 3  # the file name is kept …
    assert source.conflicts and "5" in source.conflicts[0]  # … and the disagreement is said


@pytest.mark.parametrize(("text", "key", "desc", "group_rank", "default"), [
    ("[PG ID 2 PG GUID 3(tp) Rank 1] Watchdog caught …", "pg:3", "tp", 1, False),
    ("[PG ID 0 PG GUID 0(default_pg) Rank 5]  failure detected by watchdog …", "pg:0", "default_pg", 5, True),
    ("[PG 0 (default_pg) Rank 1] Timeout at NCCL work: 6463, …", "pg:0", "default_pg", 1, True),
    ("[PG 4 Rank 0] Timeout at NCCL work: 12, …", "pg:4", None, 0, False),
    ("[PG ID 2 PG GUID 3 Rank 3] Exception (either …", "pg:3", None, 3, False),
])
def test_process_group_prefixes(text: str, key: str, desc: str | None, group_rank: int,
                                default: bool) -> None:
    event = Event(rule_id="x", kind=Kind.TIMEOUT, phase=Phase.EXECUTION, severity="error",
                  message="", identity=Identity(), evidence=Evidence("f", 1, text))
    ref = group_ref(event)
    assert ref is not None
    assert (ref.key, ref.desc, ref.group_rank, ref.default) == (key, desc, group_rank, default)


def test_a_hang_inside_a_sub_group_is_kept_apart_from_the_default_group(tmp_path: Path) -> None:
    # tp pairs {0,1} {2,3}; rank 1 hangs before its tp all-reduce: rank 0 times out in the tp
    # group at tp SeqNum 41, ranks 2 and 3 in the default group at SeqNum 40.
    files = {
        "rank0.log": WATCHDOG_25.format(g=0, s=1, pid=1, guid=2, desc="tp", r=0, seq=41) + "\n",
        "rank1.log": "step 39 loss 0.2\n",
        "rank2.log": WATCHDOG_25.format(g=2, s=9, pid=0, guid=0, desc="default_pg", r=2, seq=40) + "\n",
        "rank3.log": WATCHDOG_25.format(g=3, s=9, pid=0, guid=0, desc="default_pg", r=3, seq=40) + "\n",
    }
    report = analyze([_write(tmp_path, files)], world_size=4)
    verdict = report.verdict
    assert [c.rank for c in verdict.culprits] == [1]
    assert verdict.phase is Phase.EXECUTION
    assert "tp" in verdict.reasoning and "41" in verdict.reasoning
    groups = report.groups
    assert groups["pg:2"].desc == "tp"
    assert groups["pg:2"].members[0].stuck_seq == 41
    assert groups["pg:2"].members[0].group_rank == 0
    assert {r: m.stuck_seq for r, m in groups[DEFAULT].members.items()} == {2: 40, 3: 40}


# c10d's warning as the store's client starts (the job's start, before init_process_group returns).
STORE_START = ("[W socket.cpp:663] [c10d] The client socket cannot be initialized to connect to [localhost]:29500 "
               "(errno: 97 - Address family not supported by protocol).\n")


@pytest.mark.parametrize(("with_steps", "start", "phase"), [(True, "", Phase.EXECUTION),
                                                            (False, STORE_START, Phase.OPERATOR_LOAD),
                                                            (False, "", Phase.EXECUTION)])
def test_phase_comes_from_how_far_the_ranks_got(tmp_path: Path, with_steps: bool, start: str, phase: Phase) -> None:
    # gloo: rank 2 hangs; the others time out in a collective. With step lines the job was in
    # its steady state; without any, in logs that hold the job's start, no collective ever
    # completed: the first one failed. Logs that hold only the timeouts do not show that (absence
    # in a partial log is not evidence): gloo's wait says a collective was under way.
    steps = "step 0 loss 0.5\nstep 1 loss 0.4\n" if with_steps else ""
    files = {f"rank{r}.log": start + steps + (GLOO_TIMEOUT.format(g=r) + "\n" if r != 2 else "")
             for r in range(4)}
    report = analyze([_write(tmp_path, files)], world_size=4)
    assert [c.rank for c in report.verdict.culprits] == [2]
    assert report.verdict.phase is phase
    expected = Milestone.STEADY if with_steps else Milestone.INIT_DONE
    assert report.ranks[0].milestone is expected
    assert report.ranks[2].milestone is (Milestone.STEADY if with_steps else Milestone.STARTED)


def test_a_rank_stuck_in_communicator_init_is_in_comm_init(tmp_path: Path) -> None:
    start = ("node{h}:{p}:{p} [0] NCCL INFO ncclCommInitRank comm 0x55d0 rank {r} nranks 2 cudaDev 0 "
             "nvmlDev 0 busId 61000 commId 0x2114bc51af4fb978 - Init START")
    done = start.replace("Init START", "Init COMPLETE")
    files = {
        "rank0.log": start.format(h=1, p=11, r=0) + "\n" + done.format(h=1, p=11, r=0) + "\n",
        "rank1.log": start.format(h=2, p=22, r=1) + "\n",
    }
    report = analyze([_write(tmp_path, files)])
    assert report.ranks[0].milestone is Milestone.INIT_DONE
    assert report.ranks[1].milestone is Milestone.INIT_STARTED


def test_milestones_of_a_real_init_hang() -> None:
    # Real torchrun + gloo run: rank 3 never calls init_process_group; the others wait inside it
    # (their tracebacks go through init_process_group) for rank 3's key in the store.
    logs = Path(__file__).parent / "fixtures" / "real-gloo-skip-init-rank3" / "logs"
    report = analyze([logs])
    assert {r: s.milestone for r, s in report.ranks.items()} == {
        0: Milestone.INIT_STARTED, 1: Milestone.INIT_STARTED, 2: Milestone.INIT_STARTED,
        3: Milestone.STARTED}
    assert report.verdict.phase is Phase.COMM_INIT


# Two jobs that a sample of fresh generated jobs (accuracy/sampled_verdicts.py) got wrong once.
def _generated(tmp_path: Path, **job: object):  # type: ignore[no-untyped-def]
    from generators import jobgen

    truth = jobgen.generate(tmp_path / "job", noise_lines=30, seed=5, **job)  # type: ignore[arg-type]
    return truth, analyze([tmp_path / "job"]).verdict


def test_a_group_rank_in_a_watchdog_line_is_not_a_global_rank(tmp_path: Path) -> None:
    # torch 2.1 prints no `[rankN]:`: rank 10's tp-group watchdog line says `[Rank 0]`. Taken for
    # global rank 0, it left rank 10 without a wait, and its abort (-6) was blamed at 0.85.
    truth, verdict = _generated(tmp_path, hosts=4, gpus=4, era="2.1", fault="subgroup",
                                culprit=11, layout="torchrun")
    assert [c.rank for c in verdict.culprits] == [truth.culprit_rank] == [11]


def test_a_slurm_file_of_many_hosts_is_nobodys_in_particular(tmp_path: Path) -> None:
    # One srun --label file holds every rank of every host: neither the first world-communicator
    # line's rank nor the commonest host is the whole file's.
    truth, verdict = _generated(tmp_path, hosts=4, gpus=4, era="2.5", fault="ib",
                                culprit="gpu-node-02", layout="slurm-label")
    assert [(c.kind, c.host) for c in verdict.culprits] == [("host", truth.culprit_host)]


KEY_INFO = ("[INFO] HCCL({pid},python):2025-10-24-11:12:30.001.054 [hccl_comm.cc:512][{pid}][LocalRank Key Info]"
            "userRank[{rank}] hostIp[{ip}] devicePhyId[{device}] server[{ip}] deviceIp[192.168.1.1{device}] "
            "superPodId[-1] superDeviceId[0x0]")
CALL_TRACE = ("[ERROR] HCCL({pid},python):2025-10-24-11:48:03.662.708 [network_manager.cc:109][{pid}]call trace: "
              "hcclRet -> 9")


def test_one_key_info_line_names_every_file_of_its_process_on_its_server(tmp_path: Path) -> None:
    """A CANN process writes debug and run plogs and device logs, all with its pid in their names;
    its `[LocalRank Key Info]` says rank, device and server once for all of them. The device is
    not the local rank (ASCEND_RT_VISIBLE_DEVICES), and the other server reuses the pid."""
    files = {}
    for ip, rank, device in (("10.0.0.1", 3, 5), ("10.0.0.2", 11, 2)):
        files[f"{ip}/debug/plog/plog-17381_20251024111228991.log"] = (
            KEY_INFO.format(pid=17381, rank=rank, ip=ip, device=device) + "\n")
        files[f"{ip}/run/plog/plog-17381_20251024114803000.log"] = CALL_TRACE.format(pid=17381) + "\n"
        files[f"{ip}/debug/device-{device}/device-17381_20251024114803001.log"] = (
            "[ERROR] HCCP(17381,python):2025-10-24-11:48:03.001.001 [ra_hdc.c:794]tid:17400,"
            "ra_hdc_lite_period_poll_cqe : poll cqe failed\n")
    report = analyze([_write(tmp_path, files)])
    for ip, rank, device in (("10.0.0.1", 3, 5), ("10.0.0.2", 11, 2)):
        mine = [s for s in report.sources if s.name.split("/")[-4:-3] == [ip] or f"/{ip}/" in s.name]
        assert len(mine) == 3
        for source in mine:
            assert (source.identity.rank, source.identity.device, source.identity.host) == (rank, device, ip), \
                source.name
        run_plog = next(s for s in mine if "/run/plog/" in s.name)
        assert run_plog.identity.learnt_from["rank"] == "HCCL [LocalRank Key Info] of its pid"


ENTRY = ("[INFO] HCCL({pid},python):2025-10-24-11:12:29.001.054 [op_base.cc:1104][{pid}]Entry-HcclCommInitRootInfoInner:"
         "ranks[8], rank[{rank}], rootinfo: host ip[10.0.0.1] port[60000] nicDeploy[1] identifier[hccl_world_group], "
         "deviceLogicId[{local}]")
CRIMER = ("[INFO] HCCL({pid},python):2025-10-24-11:48:00.191.363 [heartbeat.cc:951] [8970][TaskExecStage]"
          "[HeartbeatAbnormal]local rank [10.0.0.1/{device}]: crimer rank [10.0.0.2/1] status[LOST] by informer "
          "rank [10.0.0.2/0]")


def test_a_heartbeat_names_the_rank_that_drove_that_device_not_the_local_rank(tmp_path: Path) -> None:
    """Two Atlas servers, devices handed out in another order than the local ranks
    (ASCEND_RT_VISIBLE_DEVICES=7,6,5,4 / 3,2,1,0). The heartbeat names device 1 of 10.0.0.2: the
    rank whose own key info says it drove that device is rank 6 (local rank 2), not rank 5."""
    files = {}
    for rank in range(8):
        ip = "10.0.0.1" if rank < 4 else "10.0.0.2"
        local, pid = rank % 4, 20000 + rank
        device = 7 - local if rank < 4 else 3 - local
        lines = [ENTRY.format(pid=pid, rank=rank, local=local),
                 KEY_INFO.format(pid=pid, rank=rank, ip=ip, device=device)]
        files[f"{ip}/debug/plog/plog-{pid}_20251024111228991.log"] = "\n".join(lines) + "\n"
        if rank == 0:
            files[f"{ip}/run/plog/plog-{pid}_20251024114800000.log"] = CRIMER.format(pid=pid, device=device) + "\n"
    report = analyze([_write(tmp_path, files)])
    assert report.ranks[6].device == 1 and report.ranks[5].device == 2
    assert [c.rank for c in report.verdict.culprits] == [6], report.verdict


def test_a_device_log_of_another_process_is_the_rank_that_drove_that_device(tmp_path: Path) -> None:
    """hccp_service writes its own device logs (its own pid) under `device-<id>/`: they belong to
    the rank whose key info says it drove that device on that server."""
    files = {
        "10.0.0.1/debug/plog/plog-17381_20251024111228991.log":
            KEY_INFO.format(pid=17381, rank=3, ip="10.0.0.1", device=5) + "\n",
        "10.0.0.1/run/device-5/device-2988_20251024153928174.log":
            "[INFO] HCCP(2988,hccp_service.bin):2025-10-24-15:39:26.133.826 [rs_ssl.c:1529]tid:2988,"
            "rs_ssl_init(1529) : TLS SWITCH (1)\n",
    }
    report = analyze([_write(tmp_path, files)])
    device_log = _source(report.sources, "device-2988_20251024153928174.log")
    assert (device_log.identity.rank, device_log.identity.device) == (3, 5)
    assert device_log.identity.learnt_from["rank"] == "the rank that drove its device on its server (key info or rank table)"


def test_a_rank_table_names_the_rank_of_a_servers_device(tmp_path: Path) -> None:
    """A rank-table launch (RANK_TABLE_FILE): the plogs that failed before any key info, and the
    device logs, are named through the table's server and device, even pretty-printed."""
    table = ('{\n  "server_count": "1",\n  "server_list": [\n    {\n      "device": [\n'
             '        {"device_id": "4", "device_ip": "192.168.4.11", "rank_id": "0"},\n'
             '        {\n          "device_id": "5",\n          "device_ip": "192.168.5.11",\n'
             '          "rank_id": "1"\n        }\n      ],\n      "host_nic_ip": "reserve",\n'
             '      "server_id": "10.0.0.1"\n    }\n  ],\n  "status": "completed",\n  "version": "1.0"\n}\n')
    files = {
        "rank_table.json": table,
        "10.0.0.1/debug/device-5/device-4242_20251024153928174.log":
            "[ERROR] HCCP(4242,python):2025-10-24-15:39:26.133.826 [ra_hdc.c:794]tid:4242,ra_hdc_lite_period_poll_cqe :"
            " poll cqe failed\n",
    }
    report = analyze([_write(tmp_path, files)])
    device_log = _source(report.sources, "device-4242_20251024153928174.log")
    assert (device_log.identity.rank, device_log.identity.device) == (1, 5)
    table_events = [e for e in report.events if e.rule_id == "hccl-rank-table"]
    assert [(e.fields["table_rank"], e.fields["device"], e.evidence.line) for e in table_events] == [
        ("0", "4", 6), ("1", "5", 10)]
    assert all(e.rank is None for e in table_events)  # the table is nobody's log
