"""HCCL reasoning on small plog trees written the way CANN writes them (docs/formats.md §5)."""

from __future__ import annotations

from pathlib import Path

from triage.api import analyze

ENTRY = ("[INFO] HCCL({pid},python):2026-03-18-10:31:00.001.054 [op_base.cc:1104][{pid}]Entry-HcclCommInitRootInfoInner:"
         "ranks[{n}], rank[{rank}], rootinfo: host ip[10.0.0.1] port[60000] nicDeploy[1] identifier[hccl_world_group], "
         "deviceLogicId[{rank}]")
KEY_INFO = ("[INFO] HCCL({pid},python):2026-03-18-10:31:01.001.054 [hccl_comm.cc:512][{pid}][LocalRank Key Info]"
            "userRank[{rank}] hostIp[10.0.0.1] devicePhyId[{rank}] server[10.0.0.1] deviceIp[192.168.1.1{rank}] "
            "superPodId[-1] superDeviceId[0x0]")
LINK = ("[ERROR] HCCL({pid},python3):2026-03-18-10:33:52.114.{ms:03d} [transport_manager.cc:612] [18744][InitChannelStage]"
        "[Timeout]Transport init error! createLink para:rank[{rank}]-localUserrank[{rank}]-localIpAddr[10.0.0.1/{rank}], "
        "remoteRank[{peer}]-remoteUserrank[{peer}]-remoteIpAddr[10.0.0.1/{peer}], machineType[1], linkMode[1], "
        "isUsedRdma[0], tag[AllReduce_10.0.0.1%enp189s0f0_60000_0_1742265112]")
STEP = "[INFO] GE({pid},python):2026-03-18-10:32:{s:02d}.000.000 [graph_manager.cc:101][{pid}]RunGraph step {step} done"


def _job(tmp_path: Path, world: int, waits: dict[int, int]) -> Path:
    """One server, `world` NPUs; rank r's plog says it waited on waits[r] to build a link."""
    for rank in range(world):
        pid = 30000 + rank
        lines = [ENTRY.format(pid=pid, n=world, rank=rank), KEY_INFO.format(pid=pid, rank=rank)]
        lines += [STEP.format(pid=pid, s=s, step=s) for s in range(3)]
        if rank in waits:
            lines.append(LINK.format(pid=pid, rank=rank, peer=waits[rank], ms=rank))
        path = tmp_path / "10.0.0.1" / "debug" / "plog" / f"plog-{pid}_20260318103100000.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


def test_a_wait_chain_is_followed_to_the_rank_that_waited_on_no_one(tmp_path: Path) -> None:
    """0 waits on 1, 1 on 2, 4 on 2; 2 and 3 logged no wait. Silence alone cannot tell 2 from 3;
    the chain ends at 2."""
    report = analyze([_job(tmp_path, 5, {0: 1, 1: 2, 4: 2})])
    verdict = report.verdict
    assert [c.rank for c in verdict.culprits] == [2], verdict
    assert verdict.hypothesis == "wait-chain"
    assert verdict.phase.value == "operator_load"
    assert "rank 0 waited on rank 1 waited on rank 2" in verdict.reasoning


def test_a_wait_chain_that_goes_round_in_a_cycle_names_no_single_rank(tmp_path: Path) -> None:
    """0 waits on 1, 1 on 2, 2 on 0: a cycle; rank 3 waited on no one and is silent. The cycle
    does not outweigh the silent rank."""
    report = analyze([_job(tmp_path, 4, {0: 1, 1: 2, 2: 0})])
    verdict = report.verdict
    wait_chain = next(h for h in verdict.lost if h.name == "wait-chain")
    assert sorted(c.rank for c in wait_chain.culprits) == [0, 1, 2]
    assert "0 -> 1 -> 2 -> 0" in wait_chain.reasoning
    assert [c.rank for c in verdict.culprits] == [3], verdict


CONFLICT = ("[ERROR] HCCL({pid},python3):2026-03-18-10:33:02.113.{ms:03d} [transport_manager.cc:1033] [18744]"
            "[InitChannelStage][ParameterConflict]CMD information count check fail. local[{local}], remote[{remote}]")


def test_a_parameter_mismatch_names_the_rank_whose_own_value_is_odd(tmp_path: Path) -> None:
    """Rank 3 runs the all-reduce with count 8320, the others with 16512. Its neighbours 2 and 4
    report the mismatch first (they are earlier in the log); rank 3 reports it too."""
    _job(tmp_path, 6, {})
    for rank, local, remote in ((2, 16512, 8320), (4, 16512, 8320), (3, 8320, 16512)):
        plog = next((tmp_path / "10.0.0.1" / "debug" / "plog").glob(f"plog-{30000 + rank}_*.log"))
        with open(plog, "a", encoding="utf-8") as f:
            f.write(CONFLICT.format(pid=30000 + rank, ms=rank * 10 if rank != 3 else 90, local=local,
                                    remote=remote) + "\n")
    verdict = analyze([tmp_path]).verdict
    assert [c.rank for c in verdict.culprits] == [3], verdict
    assert verdict.hypothesis == "parameter-mismatch"
    assert verdict.category.value == "collective_mismatch" and verdict.phase.value == "operator_load"


TLS = ("[INFO] HCCP({pid},hccp_service.bin):2026-03-18-10:30:26.133.826 [rs_ssl.c:1529]tid:{pid},"
       "rs_ssl_init(1529) : TLS SWITCH ({switch})")


def test_a_tls_switch_minority_is_the_cause_when_every_link_times_out(tmp_path: Path) -> None:
    """Rank 2's device has TLS off, the others on: every rank times out building links (their
    waits go round: 0, 1 and 3 wait on 2, 2 waits on 0). The minority switch is the cause."""
    _job(tmp_path, 4, {0: 2, 1: 2, 3: 2, 2: 0})
    for rank in range(4):
        log = tmp_path / "10.0.0.1" / "run" / f"device-{rank}" / f"device-{5000 + rank}_20260318103026000.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(TLS.format(pid=5000 + rank, switch=0 if rank == 2 else 1) + "\n", encoding="utf-8")
    verdict = analyze([tmp_path]).verdict
    assert [c.rank for c in verdict.culprits] == [2], verdict
    assert verdict.hypothesis == "tls-mismatch"
    assert verdict.category.value == "config_mismatch" and verdict.phase.value == "operator_load"


ROOT_LIST = ("[ERROR] HCCL(30000,python):2026-03-18-10:33:00.000.{ms} [topoinfo_exchange_server.cc:{line}] [30100]"
             "[InitGroupStage][DisplayConnectionedRank]{text}")


def test_the_ranks_the_negotiation_root_never_saw_are_named(tmp_path: Path) -> None:
    """Only the root's plog was collected with the error (CANN 8.5): it needed 8 ranks and lists 6.
    Ranks 3 and 6 never connected; nothing else in the bundle names them."""
    _job(tmp_path, 8, {})
    listed = ",".join(f"[{r:016d}]" for r in range(8) if r not in (3, 6))
    plog = next((tmp_path / "10.0.0.1" / "debug" / "plog").glob("plog-30000_*.log"))
    with open(plog, "a", encoding="utf-8") as f:
        f.write(ROOT_LIST.format(ms="050", line=120, text="topo exchange server get socket timeout! timeout[120 s]")
                .replace("[DisplayConnectionedRank]", "[RanktableDetect]") + "\n")
        for ms, line, text in ((100, 158, "total connected num is [6],line num is [1]"),
                               (200, 160, "need connect rankNum is [8]"),
                               (300, 170, f"connected rankinfo[LINE 0]: {listed};")):
            f.write(ROOT_LIST.format(ms=ms, line=line, text=text) + "\n")
    verdict = analyze([tmp_path]).verdict
    assert [c.rank for c in verdict.culprits] == [3, 6], verdict
    assert verdict.hypothesis == "never-connected" and verdict.phase.value == "comm_init"
