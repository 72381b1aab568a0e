"""What people hand over (issue 18 items 1-4): mixed files, excerpts that name a peer, device faults
through the watchdog, and lines that carry their own phase. The bundles under tests/fixtures/mixed-*
and excerpt-* are the whole cases; these tests hold each reasoning step on its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from triage.api import analyze
from triage.diagnose.principles.peer_named import PEER_NAMED_SCORE
from triage.parse import ras
from triage.report.json_format import to_dict

FIXTURES = Path(__file__).resolve().parent / "fixtures"
HEALTHY = (FIXTURES / "mixed-ras-healthy-alone" / "logs" / "ras-status.txt").read_text(encoding="utf-8")
TIMEOUT = ("[rank0]:[E1123 02:22:13.749442622 ProcessGroupNCCL.cpp:689] [Rank 0] Watchdog caught collective operation "
           "timeout: WorkNCCL(SeqNum=6, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=75000) ran for "
           "75010 milliseconds before timing out.")
CUDA_WATCHDOG = ("[rank3]:[E1125 10:00:01.123456789 ProcessGroupNCCL.cpp:1587] [PG ID 0 PG GUID 0(default_pg) Rank 3] "
                 "Process group watchdog thread terminated with exception: CUDA error: {error}")
NCCL_WATCHDOG = ("[rank2]:[E1125 10:00:03.000000001 ProcessGroupNCCL.cpp:2119] [PG ID 0 PG GUID 0(default_pg) Rank 2] "
                 "Process group watchdog thread terminated with exception: NCCL error: remote process exited or there "
                 "was a network error, NCCL version 2.28.9")


def _analyze(tmp_path: Path, files: dict[str, str]) -> dict[str, Any]:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    report: dict[str, Any] = to_dict(analyze([tmp_path], jobs=1))
    return report


# --- item 1: a file that mixes formats -----------------------------------------------------------

def test_the_report_is_delimited_and_every_line_keeps_its_number() -> None:
    text = "some line before\n" + HEALTHY + TIMEOUT + "\n"
    report, rest = ras.split(text)
    assert len(report.split("\n")) == len(rest.split("\n")) == len(text.split("\n"))
    assert "Job summary" in report and "Job summary" not in rest
    assert TIMEOUT in rest and TIMEOUT not in report
    assert rest.startswith("some line before\n") and "some line before" not in report


def test_a_json_report_ends_at_its_closing_brace() -> None:
    dump = (FIXTURES / "ras-captured-nccl2.28.9" / "run2-ahead.json").read_text(encoding="utf-8")
    report, rest = ras.split(dump + TIMEOUT + "\n")
    assert TIMEOUT in rest and TIMEOUT not in report and '"nccl_version"' in report


def test_watchdog_lines_below_a_ras_report_are_read(tmp_path: Path) -> None:
    report = _analyze(tmp_path, {"paste.txt": HEALTHY + TIMEOUT + "\n"})
    verdict = report["verdict"]
    assert verdict["status"] != "no_failure"
    assert "RAS and the logs disagree" in verdict["reasoning"]
    assert "rank 0 logged a timeout" in verdict["reasoning"]


def test_a_healthy_report_alone_is_no_failure(tmp_path: Path) -> None:
    assert _analyze(tmp_path, {"ras.txt": HEALTHY})["verdict"]["status"] == "no_failure"


def test_lines_above_a_report_are_read_too(tmp_path: Path) -> None:
    verdict = _analyze(tmp_path, {"paste.txt": TIMEOUT + "\n" + HEALTHY})["verdict"]
    assert verdict["status"] != "no_failure" and "RAS and the logs disagree" in verdict["reasoning"]


# --- item 2: an excerpt that names the peer ------------------------------------------------------

EI0002 = ("EI0002: [PID: 7277] 2024-11-28-11:59:30.645.648 The wait execution of the Notify register times out. "
          "Reason: The Notify register has not received the Notify record from remote rank [{peer}].base information: "
          "[streamID:[14], taskID[5], taskType[Notify Wait], tag[AllReduce_10.0.0.1%enp189s0f0_60000_0_1732766120], "
          "AlgType(level 0-1-2):[fullmesh-ring-NHR].] task information: [notify id:[0x0000000100000058], "
          "stage:[ffffffff], remote rank:[{peer}].")


def test_a_peer_named_by_a_failure_line_is_the_lead_at_a_capped_confidence(tmp_path: Path) -> None:
    verdict = _analyze(tmp_path, {"screen.txt": EI0002.format(peer=3) + "\n"})["verdict"]
    assert verdict["status"] == "diagnosed" and verdict["hypothesis"] == "peer-named"
    assert [c["rank"] for c in verdict["culprits"]] == [3]
    assert verdict["confidence"] < 0.7 and PEER_NAMED_SCORE < 0.7
    assert verdict["phase"] == "execution"  # EI0002's own phase: no milestone says anything
    missing = " ".join(verdict["missing"])
    assert "the log of rank 3" in missing and "only no rank's" not in missing


def test_two_peers_named_make_no_lead(tmp_path: Path) -> None:
    verdict = _analyze(tmp_path, {"a.txt": EI0002.format(peer=3) + "\n", "b.txt": EI0002.format(peer=5) + "\n"})
    assert verdict["verdict"]["hypothesis"] != "peer-named"


def test_a_peer_named_in_a_line_that_is_not_a_failure_names_no_one(tmp_path: Path) -> None:
    line = ("[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/debug_logger.cc:9] ERROR failed to connect, "
            "willRetry=1, retry=1, retryLimit=3, rank=1, size=4, local=[10.20.3.13]:34436, remote=[10.20.3.14]:62356$1, "
            "error=SO_ERROR: Connection refused, remote=[10.20.3.14]:62356$1")
    verdict = _analyze(tmp_path, {"rank1.log": line + "\n"})["verdict"]
    assert verdict["status"] == "no_failure" and not verdict["culprits"]


def test_an_address_that_is_one_ranks_names_that_rank(tmp_path: Path) -> None:
    (tmp_path / "node03.log").write_text(
        "node03:4411:4411 [0] NCCL INFO Bootstrap : Using eth0:10.1.2.3<0>\n"
        "node03:4411:4411 [0] NCCL INFO comm 0x5555 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x1234 - "
        "Init COMPLETE\n"
        "node03:4411:4620 [0] misc/socket.cc:538 NCCL WARN socketProgress: Connection closed by remote peer "
        "10.1.2.7<46754>\n", encoding="utf-8")
    (tmp_path / "node07.log").write_text(
        "node07:5522:5522 [0] NCCL INFO Bootstrap : Using eth0:10.1.2.7<0>\n"
        "node07:5522:5522 [0] NCCL INFO comm 0x6666 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x1234 - "
        "Init COMPLETE\n", encoding="utf-8")
    report = analyze([tmp_path], jobs=1)
    (closed,) = [e for e in report.events if e.rule_id == "nccl-socket-closed-by-peer"]
    assert closed.rank == 0 and closed.peer == 1  # 10.1.2.7 is node07's, and rank 1 is node07's one rank
    # Rank 1's own log is here (it logged nothing wrong): its lines decide, not its name in another's.
    assert report.verdict.hypothesis != "peer-named" and [c.rank for c in report.verdict.culprits] == [1]


def test_a_loopback_peer_names_no_one(tmp_path: Path) -> None:
    line = ("[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection "
            "closed by peer [127.0.0.1]:13698. This is typically caused by a remote worker crashing.")
    verdict = _analyze(tmp_path, {"rank0.log": line + "\n"})["verdict"]
    assert verdict["status"] == "inconclusive" and not verdict["culprits"]


# --- item 3: device faults surfaced through the watchdog -----------------------------------------

def test_a_cuda_error_through_the_watchdog_is_the_writers_device_fault(tmp_path: Path) -> None:
    for error in ("an illegal memory access was encountered", "uncorrectable ECC error encountered",
                  "unspecified launch failure"):
        folder = tmp_path / error.split()[1]
        folder.mkdir()
        verdict = _analyze(folder, {"rank3.log": CUDA_WATCHDOG.format(error=error) + "\n"})["verdict"]
        assert verdict["status"] == "diagnosed" and verdict["category"] == "device_error", error
        assert [c["rank"] for c in verdict["culprits"]] == [3]


def test_an_nccl_error_through_the_watchdog_is_not_a_device_fault(tmp_path: Path) -> None:
    verdict = _analyze(tmp_path, {"rank2.log": NCCL_WATCHDOG + "\n"})["verdict"]
    assert verdict["category"] != "device_error" and 2 not in [c["rank"] for c in verdict["culprits"]]


# --- item 4: a line that carries its phase -------------------------------------------------------

def test_a_lone_lines_own_phase_decides(tmp_path: Path) -> None:
    cases = {
        "comm_init": "node03:4411:4411 [1] bootstrap.cc:76 NCCL WARN Message truncated : received 1536 bytes instead of 256",
        "operator_load": "EI0006: [PID: 7277] 2025-11-28-11:59:30.645.648 Getting socket times out. Reason: Remote Rank "
                         "did not send the data in time. Please check the reason for the rank being stuck",
        "execution": "node07:4412:4590 [3] transport/net_ib.cc:1696 NCCL WARN NET/IB: Got completion from peer "
                     "10.1.2.33<52011> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.1.2.7 "
                     "remoteGids::ffff:10.1.2.33 hca mlx5_3",
    }
    for phase, line in cases.items():
        folder = tmp_path / phase
        folder.mkdir()
        assert _analyze(folder, {"excerpt.txt": line + "\n"})["verdict"]["phase"] == phase, line


def test_a_transport_error_after_init_is_execution_when_the_log_does_not_hold_the_start(tmp_path: Path) -> None:
    text = (FIXTURES / "excerpt-nccl-ib-completion-execution" / "logs" / "rank3.log").read_text(encoding="utf-8")
    assert _analyze(tmp_path, {"rank3.log": text})["verdict"]["phase"] == "execution"
