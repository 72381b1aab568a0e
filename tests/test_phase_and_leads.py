"""Issue 18 items 2 and 4, what was left: a partial log's silence about a completed collective does not
put the failure at the first one (only a log that holds the job's start can); NCCL's bootstrap and
transport-setup failures carry comm_init, and a failure whose line says no phase takes it from the
backtrace NCCL prints after it; one rank's HCCL log naming its peer is a capped lead."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from triage.api import analyze
from triage.diagnose.phase import chain_phase
from triage.diagnose.principles.peer_named import PEER_NAMED_SCORE
from triage.model import Event, Evidence, Identity, Kind, Phase
from triage.report.json_format import to_dict

FIXTURES = Path(__file__).resolve().parent / "fixtures"
NCCL_WATCHDOG = (FIXTURES / "excerpt-nccl-error-watchdog-not-device" / "logs" / "rank2.log").read_text(encoding="utf-8")


def _verdict(folder: Path, files: dict[str, str] | None = None) -> dict[str, Any]:
    for name, text in (files or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    verdict: dict[str, Any] = to_dict(analyze([folder], jobs=1))["verdict"]
    return verdict


# --- absence in a partial log is not evidence ----------------------------------------------------

def _failure_lines(path: Path) -> str:
    """A rank's lines from its traceback on: what people paste, without the job's start."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if "Traceback" in line)
    return "".join(lines[start:])


def test_a_whole_run_that_failed_at_its_first_collective_is_operator_load() -> None:
    # Real torchrun + gloo: every rank's whole output (torchrun's --log-dir files) holds the job's start.
    assert _verdict(FIXTURES / "real-first-hang-rank1" / "logs")["phase"] == "operator_load"


def test_the_same_ranks_failure_lines_cut_out_are_not_put_at_the_first_collective(tmp_path: Path) -> None:
    run = FIXTURES / "real-first-hang-rank1" / "logs" / "node01"
    files = {f"rank{r}.txt": _failure_lines(next(run.glob(f"none_*/attempt_0/{r}/stderr.log"))) for r in (0, 2, 3)}
    verdict = _verdict(tmp_path, files)
    # gloo's timed-out wait says only that a collective was under way: its rule's phase stands.
    assert verdict["phase"] == "execution"


def test_an_excerpt_that_says_no_phase_is_unknown_not_operator_load(tmp_path: Path) -> None:
    assert _verdict(tmp_path, {"rank2.log": NCCL_WATCHDOG})["phase"] == "unknown"


def test_an_init_line_in_the_log_holds_the_start(tmp_path: Path) -> None:
    init = ("gpu-node-03:4411:4411 [0] NCCL INFO ncclCommInitRankConfig comm 0x16b13870 rank 2 nranks 4 cudaDev 0 "
            "nvmlDev 0 busId 60 commId 0x973a7d69532ad9c5 - Init COMPLETE\n")
    assert _verdict(tmp_path, {"rank2.log": init + NCCL_WATCHDOG})["phase"] == "operator_load"


def test_a_file_torchrun_wrote_a_ranks_output_to_holds_the_start(tmp_path: Path) -> None:
    # torchrun opens <log-dir>/<run>/attempt_N/<local_rank>/stderr.log when it starts the rank.
    verdict = _verdict(tmp_path, {"none_abc123/attempt_0/2/stderr.log": NCCL_WATCHDOG})
    assert verdict["phase"] == "operator_load"


# --- NCCL: bootstrap failures and the phase a backtrace gives ------------------------------------

def _lone(tmp_path: Path, name: str, text: str) -> dict[str, Any]:
    folder = tmp_path / name
    folder.mkdir()
    return _verdict(folder, {"rank1.log": text})


def test_a_stray_bootstrap_connection_is_comm_init(tmp_path: Path) -> None:
    cases = {
        "unexpected": "gpu-node-07:90412:90412 [3] bootstrap.cc:630 NCCL WARN Unexpected connections are not empty\n",
        "wrong-type": "[2026-03-02 11:04:51] gpu-node-07:90412:90530 [3] misc/socket.cc:538 NCCL WARN "
                      "socketFinalizeAccept from 10.1.2.44<40122>: wrong type 3 != 1\n",
        "root-info": "[2026-03-02 11:04:51] node01:3001:3090 [0] bootstrap.cc:327 NCCL WARN Bootstrap Root : mismatch "
                     "in info from procs, nranks 16 vs 8, nroots 1 vs 1, iroot 0 vs 0\n",
        "accept": "node03:4411:4620 [1] misc/socket.cc:415 NCCL WARN socketTryAccept: Accept failed: Too many open files\n",
        "comm-id": "node03:4411:4411 [1] misc/socket.cc:298 NCCL WARN Net : error encountered when getting address info "
                   ": Name or service not known\n",
    }
    for name, line in cases.items():
        verdict = _lone(tmp_path, name, line)
        assert verdict["status"] != "no_failure" and verdict["phase"] == "comm_init", (name, verdict)


def test_a_discarded_stray_connection_is_not_a_failure(tmp_path: Path) -> None:
    line = ("gpu-node-07:90412:90530 [3] NCCL INFO socketFinalizeAccept from 10.1.2.44<40122>: socket magic mismatch "
            "(peer 0x00000000deadbeef != expected 0x3fa8b1c2d4e5f607), discarding peer connection\n")
    assert _lone(tmp_path, "stray", line)["status"] == "no_failure"


OOM = "[2026-03-02 11:04:51] gpu-node-03:4411:4630 [1] include/alloc.h:{line} NCCL WARN Cuda failure 'out of memory'\n"


def _chain(*frames: str, pid: int = 4411) -> str:
    return "".join(f"gpu-node-03:{pid}:4630 [1] NCCL INFO {frame}\n" for frame in frames)


def test_a_cuda_failure_takes_its_phase_from_the_backtrace_after_it(tmp_path: Path) -> None:
    cases = {
        # 2.21.5: connection setup inside communicator init (initTransportsRank).
        "comm_init": OOM.format(line=157) + _chain("transport/p2p.cc:218 -> 1", "transport.cc:33 -> 1",
                                                    "transport.cc:113 -> 1", "init.cc:1263 -> 1",
                                                    "init.cc:1548 -> 1", "group.cc:64 -> 1 [Async thread]"),
        # 2.28.9: the same setup made by a collective's launch (runtime connect): the first collective.
        "operator_load": OOM.format(line=292) + _chain("transport/p2p.cc:233 -> 1", "transport.cc:35 -> 1",
                                                        "transport.cc:162 -> 1", "transport/generic.cc:25 -> 1",
                                                        "group.cc:149 -> 1", "group.cc:76 -> 1 [Async thread]"),
        # 2.28.9: a kernel launch of a collective.
        "execution": ("[2026-03-02 11:04:51] gpu-node-03:4411:4630 [1] enqueue.cc:1654 NCCL WARN Cuda failure 700 "
                      "'an illegal memory access was encountered'\n") + _chain("enqueue.cc:1702 -> 1", "group.cc:290 -> 1"),
    }
    for phase, text in cases.items():
        verdict = _lone(tmp_path, phase, text)
        assert verdict["category"] == "device_error" and verdict["phase"] == phase, (phase, verdict)


def test_a_closed_socket_unwinding_through_the_progress_thread_is_execution(tmp_path: Path) -> None:
    # Real NCCL 2.28.9 lines (real-gpu-nccl2289-job-crash-rank2, rank 3), the peer's address named.
    text = ("[2026-11-23 02:08:47] vm:782:820 [0] misc/socket.cc:72 NCCL WARN socketProgress: Connection closed by "
            "remote peer node07<46754>\n"
            "vm:782:820 [0] NCCL INFO misc/socket.cc:845 -> 6\n"
            "vm:782:820 [0] NCCL INFO transport/net_socket.cc:557 -> 6\n"
            "vm:782:820 [0] NCCL INFO transport/net.cc:1508 -> 6\n"
            "vm:782:820 [0] NCCL INFO proxy.cc:965 -> 6 [Progress Thread]\n")
    assert _lone(tmp_path, "progress", text)["phase"] == "execution"


def test_no_backtrace_or_another_processes_leaves_the_phase_unknown(tmp_path: Path) -> None:
    # Nor does its silence about init put it in comm_init: only a log that holds the rank's start can.
    assert _lone(tmp_path, "bare", OOM.format(line=292))["phase"] == "unknown"
    start = "gpu-node-03:4411:4411 [1] NCCL INFO Bootstrap : Using eth0:10.1.2.3<0>\n"
    assert _lone(tmp_path, "from-start", start + OOM.format(line=292))["phase"] == "comm_init"
    other = OOM.format(line=292) + _chain("transport.cc:35 -> 1", "init.cc:1263 -> 1", pid=5151)
    assert _lone(tmp_path, "other-pid", other)["phase"] == "unknown"


def _frame(text: str, line: int) -> Event:
    return Event(rule_id="nccl-error-backtrace", kind=Kind.INFO, phase=Phase.UNKNOWN, severity="info",
                 message="", identity=Identity(pid=1), evidence=Evidence(source="x", line=line, text=text),
                 family="nccl")


def test_chain_phase_reads_files_not_line_numbers() -> None:
    def phase(*frames: str) -> Phase:
        return chain_phase([_frame(f"h:1:2 [0] NCCL INFO {f}", i) for i, f in enumerate(frames)])
    assert phase("bootstrap.cc:77 -> 2 [Async thread]") is Phase.COMM_INIT
    assert phase("misc/socket.cc:430 -> 2 (Connection refused)", "bootstrap.cc:77 -> 2") is Phase.COMM_INIT
    assert phase("transport/p2p.cc:1 -> 1", "transport.cc:2 -> 1") is Phase.COMM_INIT
    assert phase("transport.cc:2 -> 1", "enqueue.cc:3 -> 1") is Phase.OPERATOR_LOAD
    assert phase("enqueue.cc:3 -> 1") is Phase.EXECUTION
    assert phase("transport/net.cc:1131 -> 6", "proxy.cc:965 -> 6 [Progress Thread]") is Phase.EXECUTION
    # The proxy service thread connects as well as it progresses: proxy.cc alone says neither.
    assert phase("transport/net_ib.cc:1057 -> 2", "transport/net.cc:683 -> 2", "proxy.cc:1370 -> 2") is Phase.UNKNOWN
    assert phase() is Phase.UNKNOWN


# --- one rank's HCCL log that names its peer -----------------------------------------------------

def test_one_ranks_plog_naming_its_peer_is_a_capped_lead(tmp_path: Path) -> None:
    # Rank 0's plog alone, from a job whose silent rank is 2: rank 0 waited on rank 1, which waited on 2.
    plogs = FIXTURES / "ascend-ei0006-silent-rank2" / "logs" / "atlas-a01" / "debug" / "plog"
    shutil.copy(plogs / "plog-1029945_20240521090155826.log", tmp_path)
    verdict = _verdict(tmp_path)
    assert [c["rank"] for c in verdict["culprits"]] == [1]
    assert verdict["hypothesis"] == "peer-named" and verdict["confidence"] < 0.7
    assert any("the log of rank 1" in m for m in verdict["missing"])


def test_the_wait_chain_of_several_ranks_logs_is_not_capped() -> None:
    verdict = _verdict(FIXTURES / "ascend-ei0006-silent-rank2" / "logs")
    assert verdict["hypothesis"] == "wait-chain" and verdict["confidence"] > PEER_NAMED_SCORE
