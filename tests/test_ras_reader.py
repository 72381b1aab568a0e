"""The NCCL RAS reader and its reading, on what a real NCCL 2.28.9 printed (tests/fixtures/
ras-captured-nccl2.28.9, captured on an H100: see its README) and on hand-made dumps for the
shapes a real run did not give. The generated scenario bundles are in test_fixtures.py and test_ras_truth.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from triage.api import analyze
from triage.model import Event, Kind
from triage.parse import ras
from triage.report.json_format import to_dict

CAPTURED = Path(__file__).resolve().parent / "fixtures" / "ras-captured-nccl2.28.9"


def _verdict(path: Path) -> dict[str, Any]:
    return to_dict(analyze([path]))["verdict"]


# What an engineer reading each real dump would conclude.
@pytest.mark.parametrize(("name", "status", "category", "ranks"), [
    ("run2-dead.txt", "diagnosed", "crashed_process", [3]),
    ("run2-dead.json", "diagnosed", "crashed_process", [3]),
    ("run2-killed.txt", "diagnosed", "hung_process", [3]),  # 3 s after the kill: not yet DEAD
    ("run1-killed.json", "diagnosed", "hung_process", [3]),  # invalid JSON, as 2.28.9 writes it
    ("run1-straggler.txt", "inconclusive", "hung_process", []),  # one snapshot: stuck or busy?
    ("run2-ahead.txt", "inconclusive", "collective_mismatch", []),  # 2 against 2 on the next op
    ("run2-ahead.json", "inconclusive", "collective_mismatch", []),
])
def test_real_dumps(name: str, status: str, category: str, ranks: list[int]) -> None:
    verdict = _verdict(CAPTURED / name)
    assert verdict["status"] == status, verdict["reasoning"]
    assert verdict["category"] == category, verdict["reasoning"]
    assert [c["rank"] for c in verdict["culprits"] if c["kind"] == "rank"] == ranks


def test_the_garbled_text_of_2_28_still_names_the_process() -> None:
    """2.26-2.28 lose the world communicator after one with missing ranks and print a phantom
    `0 ranks INIT` row: no rank can be named, the process can, and the phase is not init. Its host
    is the job's only node, so naming the host names every rank: the process is a lead (below 0.5),
    and the verdict says why."""
    verdict = _verdict(CAPTURED / "run1-killed.txt")
    assert verdict["phase"] == "execution"
    assert verdict["status"] == "inconclusive" and verdict["culprits"] == []
    (lead,) = verdict["hypotheses_lost"]
    assert lead["score"] < 0.5
    assert [(c["kind"], c["host"]) for c in lead["culprits"]] == [("host", "127.0.0.1")]
    assert "process 444" in lead["culprits"][0]["reason"]
    assert "every host of the job" in verdict["reasoning"]


def test_a_straggler_lead_quotes_the_rank_and_asks_for_another_snapshot() -> None:
    reasoning = _verdict(CAPTURED / "run1-straggler.txt")["reasoning"]
    assert "communicator ranks 3 had launched fewer AllReduce operations than the others (22)" in reasoning
    assert "--every 30 --count 3" in reasoning


_HEAD = """NCCL version 2.27.3+cuda12.9 compiled with CUDA 12.9
CUDA runtime version 12090, driver version 12090

Job summary
===========

  Nodes  Processes         GPUs  Processes     GPUs
(total)   per node  per process    (total)  (total)
      2          4            1          8        8

Communicators... (0.01s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         2         4         8         8   RUNNING  MISMATCH

Errors
======

Warnings
========

#0-0 (00000a1b2c3d4e5f) MISMATCH
  Communicator ranks have different AllReduce operation counts
"""


def _events(text: str) -> list[Event]:
    found = ras.events("ras-20260101T000000.000000Z.txt", text)
    assert found is not None
    return found


def test_a_rank_line_takes_the_count_of_the_group_line_above_it() -> None:
    text = _HEAD + ("  6 ranks have launched up to operation 900\n  2 ranks have launched up to operation 899\n"
                    "  Rank 3 -- GPU 3 managed by process 41 on node 10.0.0.1\n"
                    "  Rank 6 -- GPU 2 managed by process 52 on node 10.0.0.2\n")
    counts = {e.fields["pg_rank"]: e.fields["seq"] for e in _events(text) if e.kind is Kind.PROGRESS}
    assert counts == {"3": "899", "6": "899"}
    comm = {e.fields.get("comm_id") for e in _events(text) if e.kind is Kind.PROGRESS}
    assert comm == {"a1b2c3d4e5f"}  # as NCCL's init lines print the commId: no zero padding


def test_one_snapshot_of_stragglers_is_a_lead_two_frozen_ones_a_verdict(tmp_path: Path) -> None:
    body = ("  6 ranks have launched up to operation 900\n"
            "  Rank 3 has launched up to operation 899 -- GPU 3 managed by process 41 on node 10.0.0.1\n"
            "  Rank 6 has launched up to operation 899 -- GPU 2 managed by process 52 on node 10.0.0.2\n")
    (tmp_path / "ras-20260101T000000.000000Z.txt").write_text(_HEAD + body)
    assert _verdict(tmp_path)["status"] == "inconclusive"
    (tmp_path / "ras-20260101T000030.000000Z.txt").write_text(_HEAD + body)
    verdict = _verdict(tmp_path)
    assert verdict["status"] == "diagnosed" and verdict["category"] == "hung_process"
    assert sorted(c["rank"] for c in verdict["culprits"]) == [3, 6]  # the world communicator's ranks


def test_counts_that_move_are_a_busy_job(tmp_path: Path) -> None:
    for stamp, (majority, behind) in (("000000", (900, 899)), ("000030", (1400, 1399))):
        (tmp_path / f"ras-20260101T{stamp}.000000Z.txt").write_text(_HEAD + (
            f"  7 ranks have launched up to operation {majority}\n"
            f"  Rank 3 has launched up to operation {behind} -- GPU 3 managed by process 41 on node 10.0.0.1\n"))
    assert _verdict(tmp_path)["status"] == "no_failure"


def test_2_24_missing_rank_of_the_world_communicator() -> None:
    text = _HEAD.split("Warnings")[0].replace("Errors\n======\n", "Errors\n======\n\n#0-0 (0a1b2c3d4e5f6071) "
                                              "INCOMPLETE\n  Missing communicator data from 1 rank\n"
                                              "  The missing rank: 5\n")
    named = [e for e in _events(text) if e.kind is Kind.CULPRIT_NAMED]
    assert [(e.fields["pg_rank"], e.fields["ras_group"]) for e in named] == [("5", "0")]


def test_json_with_the_missing_comma_of_2_28_is_read() -> None:
    text = (CAPTURED / "run1-killed.json").read_text()
    with pytest.raises(ValueError):
        json.loads(text)
    assert any(e.fields.get("exception") == "unresponsive" for e in _events(text))


def test_not_a_dump_is_read_as_lines() -> None:
    assert not ras.looks_like("NCCL version 2.27.3+cuda12.9\nhello\n")
    assert ras.events("x.txt", "just a log line\n") is None


REAL_JOB = Path(__file__).resolve().parent / "fixtures" / "real-gpu-nccl2289-ras-job-hang-rank2" / "logs"


def test_a_real_hang_read_from_ras_alone_and_with_the_logs() -> None:
    """NCCL 2.28.9 on an H100: rank 2 hangs; `triage ras collect` took three text snapshots and one
    JSON (which lists every rank where the text lists only the one behind) while it hung."""
    alone = _verdict(REAL_JOB / "ras")
    assert (alone["status"], [c["rank"] for c in alone["culprits"]]) == ("diagnosed", [2])
    assert "in 4 snapshots, and no count moved" in alone["reasoning"]
    both = _verdict(REAL_JOB)
    assert [c["rank"] for c in both["culprits"]] == [2]
    assert both["hypothesis"] == "ras-status" and "disagree" not in both["reasoning"]
