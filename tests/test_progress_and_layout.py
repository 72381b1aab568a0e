"""Issue 18, items 5 and 6: progress read as what is in flight; nodes that report one hostname.

Item 5: a rank whose last enqueued work is above its last completed one is waiting, whatever its
counts (a host sync such as `.item()` stops a rank enqueuing early); the rank with nothing in flight
while the others wait stopped on the CPU side. An enqueue gap alone never names a culprit with
confidence. Item 6: two nodes whose agents both say `host : localhost` are told apart by the
launcher's layout (a folder or a console per node), so the lines of rank 2 (node 0, local rank 2)
and rank 6 (node 1, local rank 2) never merge; a SIGKILLed rank said nothing, and the kill, before
any peer waited, is the first failure. The bundles: tests/fixtures/nccl27-*, nccl25-lagging-rank9,
real-2node-samehost-*.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from test_hypotheses_lose import _host, _nccl_start, _nccl_steps, _nccl_timeout, _verdict

from triage.api import analyze
from triage.diagnose.facts import RankFacts, _killed_before_waiting, rank_facts
from triage.identity import about_another
from triage.ingest.identity import identity_from_path
from triage.job import Job
from triage.model import Event, Evidence, Identity, Kind, Phase, RankState

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
RELEASE, WORLD = "2.7", 8
DUMP = ("[rank{r}]:[E708 04:00:03.112142364 ProcessGroupNCCL.cpp:1987] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
        "Received a dump signal due to a collective timeout from  rank 0 and we will try our best to dump the debug "
        "info. Last enqueued NCCL work: {enq}, last completed NCCL work: {done}.This is most likely caused by "
        "incorrect usages of collectives.")


def _job(enqueued: dict[int, int], stalled: frozenset[int] = frozenset()) -> dict[str, list[str]]:
    """Eight ranks; every rank not `stalled` times out in 3514 with 3513 completed and its last
    enqueued work as given (3567 by default); a stalled rank says only its dump-signal line."""
    files: dict[str, list[str]] = {}
    for rank in range(WORLD):
        host, _, _ = _host(rank)
        lines = _nccl_start(RELEASE, rank, WORLD, pid=2186890 + rank) + _nccl_steps(RELEASE, rank, WORLD, 65, end=600.9)
        if rank in stalled:
            lines.append(DUMP.format(r=rank, enq=enqueued.get(rank, 3513), done=3513))
        else:
            lines += _nccl_timeout(RELEASE, rank, at=1203.0 + rank / 10, seq=3514, enqueued=enqueued.get(rank, 3567))
        files[f"{host}/rank{rank}.log"] = lines
    return files


def _lead(verdict: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((h for h in verdict["hypotheses_lost"] if h["name"] == name), None)


# --- item 5 ------------------------------------------------------------------------------------


@pytest.mark.parametrize("gap", [{2: 3514}, {2: 3514, 6: 3520}], ids=["one-rank", "two-ranks"])
def test_an_enqueue_gap_with_every_rank_in_flight_names_no_one(tmp_path: Path, gap: dict[int, int]) -> None:
    verdict = _verdict(tmp_path, _job(gap))
    assert verdict["status"] == "inconclusive", verdict["reasoning"]
    lead = _lead(verdict, "lagging-rank")
    assert lead is not None and lead["score"] < 0.5
    assert {c["rank"] for c in lead["culprits"]} == set(gap)
    assert "had work in flight" in verdict["reasoning"]


def test_the_rank_with_nothing_in_flight_is_named_not_the_one_that_enqueued_less(tmp_path: Path) -> None:
    verdict = _verdict(tmp_path, _job({2: 3514}, stalled=frozenset({5})))
    assert verdict["status"] == "diagnosed", verdict["reasoning"]
    assert [c["rank"] for c in verdict["culprits"]] == [5]
    hypotheses = [h for h in [verdict, *verdict["hypotheses_lost"]] if h.get("hypothesis", h.get("name")) == "lagging-rank"]
    lagging = hypotheses[0]
    assert [c["rank"] for c in lagging["culprits"]] == [5]
    assert verdict["confidence"] >= 0.8


def test_a_stalled_rank_alone_is_named_by_its_progress(tmp_path: Path) -> None:
    """Rank 5's last enqueued equals its last completed, below the collective the others wait in."""
    verdict = _verdict(tmp_path, _job({}, stalled=frozenset({5})))
    assert verdict["status"] == "diagnosed"
    assert [c["rank"] for c in verdict["culprits"]] == [5]
    assert "It agrees with the lagging-rank evidence." in verdict["reasoning"]


def test_nothing_in_flight_anywhere_is_no_progress_evidence(tmp_path: Path) -> None:
    """Periodic progress lines of a job that runs (every rank idle between collectives) name no one."""
    files: dict[str, list[str]] = {}
    for rank in range(4):
        host, _, _ = _host(rank)
        done = 20500 if rank != 3 else 20490
        files[f"{host}/rank{rank}.log"] = [
            f"[rank{rank}]:[I709 17:00:38.162555850 ProcessGroupNCCL.cpp:1853] [PG ID 0 PG GUID 0(default_pg) Rank "
            f"{rank}] NCCL Work update periodically: last enqueued NCCL work: {done}, last completed NCCL work: {done}."]
    files["gpu-node-01/rank0.log"].append(
        "[rank0]:[E709 17:10:38.162555850 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=20501, OpType=ALLREDUCE, NumelIn=1259621, NumelOut=1259621, Timeout(ms)=600000) "
        "ran for 600000 milliseconds before timing out.")
    verdict = _verdict(tmp_path, files)
    lagging = [h for h in verdict["hypotheses_lost"] if h["name"] == "lagging-rank"]
    assert verdict.get("hypothesis") != "lagging-rank"
    assert all(h["score"] < 0.5 for h in lagging)


# --- item 6 ------------------------------------------------------------------------------------


def _copy_nodes(tmp_path: Path, bundle: str, names: tuple[str, str], consoles_only: bool) -> Path:
    logs = tmp_path / "logs"
    for node, name in zip(("vm-a", "vm-b"), names, strict=True):
        src = FIXTURES / bundle / "logs" / node
        if consoles_only:
            logs.mkdir(parents=True, exist_ok=True)
            shutil.copy(src / "console.log", logs / name)
        else:
            shutil.copytree(src, logs / name)
    return logs


@pytest.mark.parametrize(("names", "consoles_only"), [
    (("x", "y"), False), (("y", "x"), False),  # a folder per node, either order
    (("vm-0.log", "vm-1.log"), True), (("vm-1.log", "vm-0.log"), True),  # consoles side by side
])
def test_nodes_that_share_a_hostname_never_merge(tmp_path: Path, names: tuple[str, str], consoles_only: bool) -> None:
    report = analyze([_copy_nodes(tmp_path, "real-2node-samehost-sigkill-rank6-folders", names, consoles_only)])
    verdict = report.verdict
    assert verdict.status.value == "diagnosed", verdict.reasoning
    assert [c.rank for c in verdict.culprits] == [6]
    # The SIGKILLed rank said nothing after it died: no wait is its own.
    own = [e for e in report.ranks[6].events if not about_another(e)]
    assert not [e for e in own if e.kind in (Kind.TIMEOUT, Kind.PEER_ERROR)]
    # Rank 2 (node 0, local rank 2) timed out: its `[default2]:` line is its own, not rank 6's.
    assert [e for e in report.ranks[2].events if e.kind in (Kind.TIMEOUT, Kind.PEER_ERROR)]
    assert all(r.has_log for r in report.ranks.values() if r.rank != 6)


def test_a_hung_rank_on_a_node_sharing_its_hostname_is_not_merged_with_its_twin(tmp_path: Path) -> None:
    report = analyze([_copy_nodes(tmp_path, "real-2node-samehost-hang-rank6-folders", ("b", "a"), False)])
    assert [c.rank for c in report.verdict.culprits] == [6]
    assert report.verdict.hypothesis == "silent-rank"


def test_a_console_named_after_its_node_names_the_node() -> None:
    assert identity_from_path("logs/node01-console.log").host == "node01"
    assert identity_from_path("logs/nid001234_stdout.txt").host == "nid001234"
    assert identity_from_path("logs/gpu-node-01.log").host == "gpu-node-01"


def _exit(time: float, code: str) -> Event:
    return Event(rule_id="torchrun-worker-failed", kind=Kind.EXIT, phase=Phase.TEARDOWN, severity="error",
                 message="", identity=Identity(rank=3), evidence=Evidence(source="c.log", line=1, text=""),
                 fields={"exitcode": code}, time=time, family="torchrun")


def test_a_kill_before_any_wait_of_the_rank_is_its_own_failure() -> None:
    assert _killed_before_waiting(_exit(10.0, "-9"), 12.0)
    assert not _killed_before_waiting(_exit(14.0, "-9"), 12.0)  # SIGKILLed after it timed out: a victim
    assert not _killed_before_waiting(_exit(10.0, "-15"), 12.0)  # the launcher's SIGTERM
    assert not _killed_before_waiting(_exit(10.0, "-9"), None)


def test_rank_facts_keep_a_kill_that_came_before_a_wait_its_lines_seem_to_hold() -> None:
    wait = Event(rule_id="gloo-timeout", kind=Kind.TIMEOUT, phase=Phase.EXECUTION, severity="error", message="",
                 identity=Identity(rank=3), evidence=Evidence(source="r.log", line=5, text=""), time=20.0,
                 family="gloo")
    state = RankState(rank=3, events=[_exit(10.0, "-9"), wait])

    job = Job(ranks={3: state}, world_size=None, world_size_from=None, events=state.events)
    facts: dict[int, RankFacts] = rank_facts(job)
    assert [e.kind for e in facts[3].self_failures] == [Kind.EXIT]
