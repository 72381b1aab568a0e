"""Real-corpus misses of four classes: a RAS report's sections quoted without their header (the NCCL
guide's examples) are still RAS; a line telling a rank that another rank's collective timed out is a
failure of the job, and one rank's log alone that had nothing in flight then is the lead; one rank's
log does not make a rank silent from a world size guessed from it, and a fingerprint mismatch names no
peer waited on; a RAS host that is every host of the job names no one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from triage.api import analyze
from triage.diagnose.principles.progress import TOLD_WHILE_IDLE_SCORE
from triage.diagnose.principles.ras import EVERY_HOST_SCORE, ONE_COMMUNICATOR_SCORE
from triage.parse import ras
from triage.report.json_format import to_dict


def _report(folder: Path, files: dict[str, str]) -> dict[str, Any]:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    report: dict[str, Any] = to_dict(analyze([folder], jobs=1))
    return report


def _verdict(folder: Path, files: dict[str, str]) -> dict[str, Any]:
    verdict: dict[str, Any] = _report(folder, files)["verdict"]
    return verdict


# --- E: a RAS report's sections without the header line -------------------------------------------

ERRORS_ONLY = """Errors
======

DEAD
  1 job process is considered dead (unreachable via the RAS network)
  Process 3487984 on node 172.16.64.213 managing GPU 5

#0-0 (cf264af53edbe986) INCOMPLETE
  Missing communicator data from 1 rank
  The missing rank: 21
"""

WITH_TABLE = """Communicators... (2.05s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         4       7-8        32        32   RUNNING  INCOMPLETE

Errors
======

INCOMPLETE
  Missing communicator data from 1 job process
  Process 3487984 on node 172.16.64.213 managing GPU 5

#0-0 (cf264af53edbe986) INCOMPLETE
  Missing communicator data from 1 rank
  The missing rank: 21

Warnings
========

TIMEOUT
  Encountered 2 communication timeouts while gathering communicator data
"""

# Prose about RAS that says DEAD and INCOMPLETE, even under an underlined title: not a report.
PROSE = """Errors
======

DEAD
means RAS could not reach a process for 60 s; INCOMPLETE means a communicator is missing data.
Process 3487984 on node 172.16.64.213 was DEAD in our last run, rank 21 too.

INCOMPLETE
  is how a job-level block begins; Missing communicator data follows it.
"""


def test_a_headerless_errors_section_is_read_as_ras() -> None:
    assert ras.looks_like(ERRORS_ONLY)
    doc, rest = ras.split(ERRORS_ONLY)
    assert "The missing rank: 21" in doc and not rest.strip()
    facts = ras.events("ras-status.txt", doc)
    assert facts is not None
    assert {e.rule_id for e in facts} >= {"ras-dead-processes", "ras-missing-ranks"}


def test_an_excerpt_of_one_communicator_names_its_rank_at_a_capped_score(tmp_path: Path) -> None:
    verdict = _verdict(tmp_path, {"ras-status.txt": ERRORS_ONLY})
    assert verdict["status"] == "diagnosed"
    assert [c["rank"] for c in verdict["culprits"]] == [21]  # the DEAD process is that rank: one culprit
    assert verdict["confidence"] == ONE_COMMUNICATOR_SCORE < 0.7
    assert "read as the job's" in verdict["reasoning"]
    assert "process 3487984" in verdict["culprits"][0]["reason"]


def test_a_headerless_report_with_its_table_maps_the_rank_by_the_world(tmp_path: Path) -> None:
    verdict = _verdict(tmp_path, {"ras-status.txt": WITH_TABLE})
    assert verdict["status"] == "diagnosed"
    assert [c["rank"] for c in verdict["culprits"] if c["kind"] == "rank"] == [21]
    assert verdict["phase"] == "execution"


def test_prose_that_says_dead_is_not_ras(tmp_path: Path) -> None:
    assert not ras.looks_like(PROSE)
    assert ras.headless_starts(PROSE.split("\n")) == set()
    verdict = _verdict(tmp_path, {"notes.txt": PROSE})
    assert verdict["status"] == "no_failure" and verdict["culprits"] == []


def test_a_headerless_section_beside_watchdog_lines_leaves_them_to_the_line_rules() -> None:
    watchdog = ("[rank3]:[E1123 02:07:35.105953534 ProcessGroupNCCL.cpp:1849] [PG ID 0 PG GUID 0(default_pg) "
                "Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=6, OpType=ALLREDUCE, "
                "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600023 milliseconds before timing out.\n")
    doc, rest = ras.split(watchdog + "\n" + ERRORS_ONLY + watchdog)
    assert rest.count("Watchdog caught") == 2 and "Watchdog caught" not in doc
    assert "DEAD" in doc and "DEAD" not in rest


# --- F: told that another rank timed out --------------------------------------------------------

INIT = ("vm:662:662 [0] NCCL INFO ncclCommInitRankConfig comm 0x269ad020 rank 2 nranks 4 cudaDev 0 nvmlDev 0 "
        "busId 60 commId 0x973a7d69532ad9c5 - Init COMPLETE\n")
STEPS = "rank 2: step 4 done\n"
OBSERVED = ("[rank2]:[E1123 02:07:35.105953534 ProcessGroupNCCL.cpp:1849] [PG ID 0 PG GUID 0(default_pg) Rank 2] "
            "Observed flight recorder dump signal from another rank via TCPStore.\n")


def _dump_signal(enqueued: int, completed: int) -> str:
    return ("[rank2]:[E1123 02:07:35.106146733 ProcessGroupNCCL.cpp:1914] [PG ID 0 PG GUID 0(default_pg) Rank 2] "
            "Received a dump signal due to a collective timeout from  rank 1 and we will try our best to dump "
            f"the debug info. Last enqueued NCCL work: {enqueued}, last completed NCCL work: {completed}.This is "
            "most likely caused by incorrect usages of collectives, e.g., wrong sizes used across ranks.\n")


def test_a_rank_told_of_another_ranks_timeout_with_nothing_in_flight_is_the_lead(tmp_path: Path) -> None:
    report = _report(tmp_path, {"rank2.log": INIT + STEPS + OBSERVED + _dump_signal(5, 5)})
    verdict = report["verdict"]
    assert verdict["status"] == "diagnosed"
    assert [c["rank"] for c in verdict["culprits"]] == [2]
    assert verdict["confidence"] == TOLD_WHILE_IDLE_SCORE < 0.7
    assert verdict["hypothesis"] == "lagging-rank"
    assert verdict["phase"] == "execution" and verdict["category"] == "hung_process"
    assert verdict["missing"]  # the other ranks' logs would confirm it


def test_told_of_a_timeout_while_in_flight_is_a_failure_but_names_no_one(tmp_path: Path) -> None:
    # It waited too (enqueued above completed): one waiter of several, not the one they waited on.
    verdict = _verdict(tmp_path, {"rank2.log": INIT + STEPS + OBSERVED + _dump_signal(6, 5)})
    assert verdict["status"] == "inconclusive"
    assert verdict["culprits"] == []


def test_an_observed_dump_signal_alone_is_no_healthy_job(tmp_path: Path) -> None:
    verdict = _verdict(tmp_path, {"rank2.log": INIT + STEPS + OBSERVED})
    assert verdict["status"] != "no_failure"


def test_the_told_rank_is_not_made_a_victim(tmp_path: Path) -> None:
    report = _report(tmp_path, {"rank2.log": INIT + STEPS + OBSERVED + _dump_signal(5, 5)})
    (rank2,) = [r for r in report["ranks"] if r["rank"] == 2]
    assert rank2["role"] == "culprit"


# --- G: one rank's file, absence and a two-party mismatch -----------------------------------------

FINGERPRINT = (
    "[rank1]: RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: "
    "CollectiveFingerPrint(SequenceNumber=6, OpType=ALLREDUCE, TensorShape=[17], TensorDtypes=Float, "
    "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu, layout=Strided (default), "
    "requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt))), but Rank 0 is "
    "running collective: CollectiveFingerPrint(SequenceNumber=0OpType=SCATTER).Collectives differ in the "
    "following aspects: \t Sequence number: 6vs 0  Op type: ALLREDUCEvs SCATTER\n")


def test_one_ranks_fingerprint_mismatch_names_no_silent_rank_nor_peer(tmp_path: Path) -> None:
    verdict = _verdict(tmp_path, {"rank1.log": "step 1 loss 16.3386\n" + FINGERPRINT})
    assert verdict["status"] == "inconclusive", verdict["reasoning"]
    lost = {h["name"]: h for h in verdict["hypotheses_lost"]}
    assert "silent-rank" not in lost and "peer-named" not in lost


def test_a_timeout_naming_its_peer_in_one_log_is_still_a_lead(tmp_path: Path) -> None:
    # The near miss: a wait that names its peer (not a mismatch report) keeps peer-named's lead.
    closed = ("[rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by "
              "peer [10.0.0.7]:23456\n")
    hosts = "2026-11-25 15:57:06,301 INFO train: rank 0/2 (local_rank 0) starting on 10.0.0.7, pid 12456\n"
    verdict = _verdict(tmp_path, {"rank1.log": closed, "other.log": hosts})
    assert verdict["status"] in ("diagnosed", "inconclusive")  # the lead stands or not: never silent-rank
    assert verdict.get("hypothesis") != "silent-rank"


RAS_ONE_NODE = """NCCL version 2.28.9 compiled with CUDA 13.0
CUDA runtime version 13000, driver version 13000

Job summary
===========

  Nodes  Processes         GPUs  Processes     GPUs
(total)   per node  per process    (total)  (total)
      {nodes}          4            1          {gpus}        {gpus}

Communicators... (0.000s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         1         1         2         1   RUNNING  INCOMPLETE

Errors
======

INCOMPLETE
  Missing communicator data from 1 job process
  Process 444 on node 10.0.0.2 managing GPU 0

#0-0 (a169ddbae2c2fe70) INCOMPLETE
  Missing communicator data from 1 rank
  Rank 1 -- GPU 0 managed by process 444 on node 10.0.0.2
"""


def test_a_ras_host_that_is_every_host_of_the_job_names_no_one(tmp_path: Path) -> None:
    verdict = _verdict(tmp_path, {"run.txt": RAS_ONE_NODE.replace("{nodes}", "1").replace("{gpus}", "4")})
    assert verdict["status"] == "inconclusive" and verdict["culprits"] == []
    (lead,) = verdict["hypotheses_lost"]
    assert lead["score"] == EVERY_HOST_SCORE < 0.5
    assert "every host of the job" in verdict["reasoning"]


def test_a_ras_host_among_several_is_still_named(tmp_path: Path) -> None:
    verdict = _verdict(tmp_path, {"run.txt": RAS_ONE_NODE.replace("{nodes}", "2").replace("{gpus}", "8")})
    assert verdict["status"] == "diagnosed"
    assert [(c["kind"], c["host"]) for c in verdict["culprits"]] == [("host", "10.0.0.2")]
