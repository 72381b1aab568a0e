"""`triage.health` in real 4-rank gloo jobs under torchrun, and `triage analyze` on their logs.

This file is also the ranks' program: torchrun runs it as a script with a scenario name (the
`_rank_*` functions at the bottom); each rank appends what its checks returned to
`<out>/rank<R>.jsonl` and logs to `<out>/logs/rank<R>.log`, and the tests read those. Ranks are
frozen (SIGSTOP) at decided points by themselves and resumed (SIGCONT) by the test once the others
have recorded what it waits for, so that what each call decides does not depend on timing;
agreement is checked per call index. Deadlines are shown by order, not timed: the others return
from a check that a rank joins only after they did (or never joins); how long that took is the
machine's load, which no assertion here depends on.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
T = 3.0  # the deadline under test, in s
CALLS = 1000  # healthy checks in a row, with no growth in threads, store keys or memory
FROZEN_AT = 4  # the call at which a rank freezes in the freeze scenarios
STEPS, CHECK_EVERY, VICTIM_STEP = 20, 5, 10  # the shrink scenarios' loop


# --- the tests ----------------------------------------------------------------------------------

def test_not_initialised_is_an_ok_no_op() -> None:
    pytest.importorskip("torch")
    from triage.health import check

    result = check(timeout=0.1)
    assert result.ok and bool(result) and result.phase == "skipped" and result.world_size == 1


def test_bad_arguments_are_refused() -> None:
    pytest.importorskip("torch")
    from triage.health import HealthResult, check, shrink

    with pytest.raises(ValueError, match="on_failure"):
        check(on_failure="exit")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout"):
        check(timeout=0)
    with pytest.raises(ValueError, match="passed"):
        shrink(HealthResult(True, 4))
    with pytest.raises(ValueError, match="named no rank"):
        shrink(HealthResult(False, 4, phase="collective"))


def test_the_lines_are_the_ones_the_rules_read() -> None:
    pytest.importorskip("torch")
    from triage.health import HealthResult, line
    from triage.health.result import excluded_line, leaving_line
    from triage.model import Identity
    from triage.parse.scan import Matcher, ScanStats, scan_text
    from triage.rules import load_rules

    missing = HealthResult(False, 8, missing=(2, 5, 6), phase="arrival", elapsed=3.0, reason="late")
    wrong = HealthResult(False, 8, wrong=(1,), phase="verify", elapsed=0.01, reason="bad slot")
    nobody = HealthResult(False, 8, phase="collective", elapsed=3.5, reason="stuck")
    matcher = Matcher(load_rules())
    cases = [(line(missing, 0, "3", list(range(8)), 7, "loop"), "repro-health-check-missing", "2, 5-6"),
             (line(wrong, 0, "3", list(range(8)), 7, "loop"), "repro-health-check-wrong", "1"),
             (line(nobody, 0, "3", list(range(8)), 7, "loop"), "repro-health-check-unnamed", None),
             (excluded_line(0, (2, 5), 10, "0", 3, 6), "repro-health-excluded", "2, 5"),
             (leaving_line(2, 10, "0", 3, 3), "repro-health-left", None)]
    for text, rule, ranks in cases:
        events = list(scan_text(matcher, "rank0.log", Identity(), [text + "\n"], ScanStats()))
        # "at step 10" is also the writer's progress (job-step-progress), which it is
        assert [e.rule_id for e in events if e.rule_id != "job-step-progress"] == [rule], text
        assert next(e for e in events if e.rule_id == rule).fields.get("culprit_ranks") == ranks, text


def test_the_expected_sum_is_the_sum_of_the_contributions() -> None:
    pytest.importorskip("torch")
    from triage.health.protocol import contribution, expected_sum

    for world in (1, 2, 7, 1000):
        for number in (1, 999, 1000, 123456):
            assert sum(contribution(i, world, number) for i in range(world)) == expected_sum(world, number)
    # a member one call behind or ahead changes the sum
    assert contribution(2, 4, 7) + sum(contribution(i, 4, 8) for i in (0, 1, 3)) != expected_sum(4, 8)


def test_a_finished_buffer_is_kept_until_no_cpp_reference_holds_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """What keeps the exit safe: a check's buffer is released here only once the backend let go of it.

    Otherwise the backend's thread may release it during the interpreter's finalization, and the
    process dies in std::terminate (keep.let_go). Autograd stands in for the backend's thread.
    """
    torch = pytest.importorskip("torch")
    from triage.health import keep

    monkeypatch.setattr(keep, "SETTLE_S", 0.05)
    with keep.LOCK:
        keep.SETTLING.clear()
    weight = torch.ones(3, requires_grad=True)
    buf = torch.zeros(3)
    graph = (weight * buf).sum()  # holds `buf` from C++, as a finished work does until its thread drops it
    keep.let_go(buf)
    del buf
    keep.let_go(torch.zeros(1))  # held by nothing else: released at the next look
    assert len(keep.SETTLING) == 2
    keep.settle_at_exit()  # bounded: gives up while C++ still holds the first one
    assert len(keep.SETTLING) == 1
    del graph
    keep.settle_at_exit()
    assert keep.SETTLING == []


@pytest.mark.slow
def test_healthy_group_many_calls_in_a_row_without_leaks(sequence: dict[int, list[dict[str, Any]]]) -> None:
    for rank, records in sequence.items():
        healthy = _one(records, "healthy")
        assert healthy["all_ok"] == CALLS, (rank, healthy)
        assert healthy["threads"][1] == healthy["threads"][0], (rank, healthy)
        assert healthy["tasks"][1] == healthy["tasks"][0], (rank, healthy)
        assert healthy["rss_kib"][1] - healthy["rss_kib"][0] < 8 * 1024, (rank, healthy)
        if rank == 0:
            assert healthy["keys"][1] == healthy["keys"][0], healthy


@pytest.mark.slow
def test_a_wrong_value_is_named_by_every_rank(sequence: dict[int, list[dict[str, Any]]]) -> None:
    for rank, records in sequence.items():
        record = _one(records, "wrong")
        result = record["result"]
        assert (result["ok"], result["wrong"], result["missing"], result["exclude"], result["phase"]) == \
            (False, [1], [], [1], "verify"), rank
        got = re.fullmatch(r"rank 1 contributed (\d+) in its slot, expected (\d+)", result["reason"])
        assert got and int(got[1]) - int(got[2]) == 1000, result  # what verify.fill's corruption adds
        assert record["raised"] == ("HealthCheckFailed" if rank == 0 else None), record
        assert _one(records, "after-wrong")["result"]["ok"], rank


@pytest.mark.slow
def test_a_late_rank_is_named_within_the_deadline_and_the_next_check_passes(
        sequence: dict[int, list[dict[str, Any]]]) -> None:
    for rank, records in sequence.items():
        record = _one(records, "late")
        result = record["result"]
        assert (result["ok"], result["missing"], result["exclude"]) == (False, [2], [2]), result
        # The others returned without rank 2, which calls only once they all have: the deadline held
        # (how long it took is the machine's load, not asserted); rank 2 read their decision.
        if rank == 2:
            assert result["reason"].startswith("this rank (rank 2) was named missing"), result
        else:
            assert result["phase"] == "arrival", result
        assert _one(records, "after-late")["result"]["ok"], (rank, records)


@pytest.mark.slow
def test_a_sub_group_check_while_another_group_is_busy(sequence: dict[int, list[dict[str, Any]]]) -> None:
    for rank in (1, 3):
        busy = _one(sequence[rank], "sub-healthy")
        assert busy["all_ok"] == busy["calls"] and busy["world_size"] == 2, busy
        result = _one(sequence[rank], "sub-wrong")["result"]
        # rank 3 is rank 1 of the sub-group: results speak of global ranks
        assert (result["ok"], result["wrong"], result["exclude"], result["world_size"]) == (False, [3], [3], 2), result
    for rank in (0, 2):
        other = _one(sequence[rank], "sub-busy")
        assert other["all_reduces"] > 0 and other["skipped"]["phase"] == "skipped", other


@pytest.mark.slow
@pytest.mark.parametrize("point", ["between", pytest.param("before", marks=pytest.mark.matrix),
                                   pytest.param("after", marks=pytest.mark.matrix)])
def test_a_rank_frozen_in_the_check_gets_the_others_decision_and_the_group_realigns(
        tmp_path: Path, point: str) -> None:
    """Rank 2 freezes at call FROZEN_AT: before it (between checks), before its all-reduce, or after its
    all-reduce completed and before it publishes. It is resumed once the others have decided without
    it; every call index must then hold the same result on every rank, and the checks pass again."""
    # the first call that cannot pass while rank 2 is frozen: it contributed to FROZEN_AT when "after"
    failing = FROZEN_AT + (point == "after")

    def resume(out: Path) -> bool:
        records = _read(out)
        frozen = next((r for r in records.get(2, []) if r["step"] == "freezing"), None)
        decided = all(any(r["step"] == "call" and r["result"]["call"] >= failing for r in records.get(rank, []))
                      for rank in (0, 1, 3))
        if frozen and decided:
            os.kill(frozen["pid"], signal.SIGCONT)
            return True
        return False

    job = _job(tmp_path, f"freeze-{point}", watch=resume)
    assert job.code == 0, job.console
    calls = {rank: {r["result"]["call"]: r["result"] for r in rows if r["step"] == "call"}
             for rank, rows in job.records.items()}
    assert all(sorted(c) == sorted(calls[0]) for c in calls.values()), calls  # the same call indices
    for number in calls[0]:
        seen = {rank: _decision(calls[rank][number]) for rank in calls}
        assert len(set(seen.values())) == 1, (number, seen)
    assert all(calls[0][n]["ok"] for n in range(1, failing)), calls[0]
    assert _decision(calls[0][failing]) == (False, (2,), (), (2,)), calls[0][failing]
    assert calls[2][failing]["reason"].startswith("this rank (rank 2) was named missing"), calls[2][failing]
    last = max(calls[0])
    assert last > failing and all(calls[rank][last]["ok"] for rank in calls), calls  # realigned
    for rank in calls:  # each member says so once, at its first pass after the failures
        said = [line for line in (job.out / "logs" / f"rank{rank}.log").read_text().splitlines()
                if "check passed again" in line]
        assert len(said) == 1 and f"(the last: call {max(n for n in calls[rank] if not calls[rank][n]['ok'])})" \
            in said[0], (rank, said)
    verdict = _analyze(job.out / "logs")  # a stall the job came through: not a hang
    assert verdict["status"] == "no_failure", verdict
    assert "naming rank 2)" in verdict["reasoning"] and "realigned" in verdict["reasoning"], verdict


@pytest.mark.slow
def test_a_frozen_rank_is_dropped_by_shrink_and_the_others_finish(tmp_path: Path) -> None:
    def resume(out: Path) -> bool:
        records = _read(out)
        frozen = next((r for r in records.get(2, []) if r["step"] == "freezing"), None)
        if frozen and all(any(r["step"] == "destroyed" for r in records.get(rank, [])) for rank in (0, 1, 3)):
            os.kill(frozen["pid"], signal.SIGCONT)
            return True
        return False

    job = _job(tmp_path, "shrink-frozen", watch=resume)
    assert job.code == 0, job.console
    _assert_shrunk(job, victim=2)
    excluded = _one(job.records[2], "excluded")
    assert excluded["result"]["exclude"] == [2] and excluded["initialized"], excluded
    assert _one(job.records[2], "destroyed")  # destroy_process_group() neither hung nor raised
    verdict = _analyze(job.out / "logs")
    assert verdict["status"] == "diagnosed", verdict
    assert [c["rank"] for c in verdict["culprits"] if c.get("rank") is not None] == [2], verdict
    assert "recovered" in json.dumps(verdict).lower(), verdict


@pytest.mark.slow
def test_a_killed_rank_is_named_alone_and_dropped_by_shrink(tmp_path: Path) -> None:
    job = _job(tmp_path, "shrink-killed", agents=True)
    _assert_shrunk(job, victim=3)
    for rank in (0, 1, 2):
        # the follow-up check on the old group names the dead rank only, and says the group cannot realign
        follow = _one(job.records[rank], "follow-up")["result"]
        assert (follow["ok"], follow["missing"], follow["exclude"]) == (False, [3], [3]), follow
    verdict = _analyze(job.out / "logs")
    assert [c["rank"] for c in verdict["culprits"] if c.get("rank") is not None] == [3], verdict
    assert "recovered" in json.dumps(verdict).lower(), verdict


@pytest.mark.slow
def test_a_rank_that_never_calls_is_named_and_abort_lets_the_others_leave(tmp_path: Path) -> None:
    job = _job(tmp_path, "never")
    for rank in (0, 1, 3):
        record = _one(job.records[rank], "never")
        result = record["result"]
        assert (result["ok"], result["missing"], result["exclude"]) == (False, [2], [2]), result
        assert result["reason"].endswith("the process group was aborted"), result  # returned: rank 2 never calls
        after = _one(job.records[rank], "after-abort")["result"]
        assert after["ok"] is False and "aborted" in after["reason"], after
        assert _one(job.records[rank], "destroyed")  # destroy_process_group() after the abort: no assertion
    lines = [t for p in (job.out / "logs").glob("rank*.log") for t in p.read_text().splitlines()
             if "check FAILED: missing rank 2 in group 0" in t]
    assert len(lines) == 3, lines
    verdict = _analyze(job.out / "logs")
    assert verdict["status"] == "diagnosed", verdict
    assert sorted(c["rank"] for c in verdict["culprits"] if c.get("rank") is not None) == [2], verdict


def _decision(result: dict[str, Any]) -> tuple[Any, ...]:
    return result["ok"], tuple(result["missing"]), tuple(result["wrong"]), tuple(result["exclude"])


def _assert_shrunk(job: Job, victim: int) -> None:
    survivors = [r for r in range(4) if r != victim]
    for rank in survivors:
        steps = [r for r in job.records[rank] if r["step"] == "step"]
        assert [s["n"] for s in steps] == list(range(STEPS)), steps  # every step, none twice
        for s in steps:
            world = 4 if s["n"] < VICTIM_STEP else 3
            total = 6 if s["n"] < VICTIM_STEP else sum(survivors)
            assert (s["world"], s["sum"]) == (world, total), s
        shrunk = _one(job.records[rank], "shrunk")
        assert shrunk["exclude"] == [victim] and shrunk["world"] == 3 and shrunk["at"] == VICTIM_STEP, shrunk
        assert shrunk["rank"] == survivors.index(rank), shrunk  # get_rank() describes the new group
        assert _one(job.records[rank], "destroyed")
    lines = [t for p in (job.out / "logs").glob("rank*.log") for t in p.read_text().splitlines()
             if f"rank {victim} excluded at step {VICTIM_STEP}" in t]
    assert len(lines) == 3 and all(t.endswith("the job went on with 3 ranks") for t in lines), lines


def _analyze(logs: Path) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "triage", "analyze", str(logs), "--format", "json"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    return dict(json.loads(out.stdout)["verdict"])


# --- running a job ------------------------------------------------------------------------------

class Job:
    def __init__(self, code: int, console: str, records: dict[int, list[dict[str, Any]]], out: Path) -> None:
        self.code, self.console, self.records, self.out = code, console, records, out


def _job(tmp_path: Path, scenario: str, *, watch: Callable[[Path], bool] | None = None,
         agents: bool = False, timeout: float = 150) -> Job:
    """Run `scenario` on 4 ranks: one torchrun, or (`agents`) one torchrun a rank, so that a rank's
    death ends only its own agent, as on a 4-node job."""
    pytest.importorskip("torch")
    from repro_helpers import MARK, free_port, wait_gone

    out = tmp_path / "out"
    (out / "logs").mkdir(parents=True)
    mark = uuid.uuid4().hex
    env = dict(os.environ, **{MARK: mark, "PYTHONUNBUFFERED": "1"})
    port = str(free_port())
    run = [sys.executable, "-m", "torch.distributed.run"]
    program = [str(HERE), scenario, str(out)]
    if agents:
        commands = [[*run, "--nnodes", "4", "--nproc-per-node", "1", "--node-rank", str(i), "--rdzv-backend",
                     "static", "--master-addr", "127.0.0.1", "--master-port", port, *program] for i in range(4)]
    else:
        commands = [[*run, "--standalone", "--nproc-per-node", "4", "--master-port", port, *program]]
    procs = [subprocess.Popen(c, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for c in commands]
    until = time.monotonic() + timeout
    try:
        while any(p.poll() is None for p in procs) and time.monotonic() < until:
            if watch is not None and watch(out):
                watch = None
            if agents and _workers_ended(out):
                # The survivors' agents wait in torchrun's exit barrier for the dead rank's agent, which
                # left at its worker's death (300 s; SIGTERM does not end that wait): the job is over once
                # every worker has ended.
                for p in procs:
                    p.kill()
            time.sleep(0.1)
        if any(p.poll() is None for p in procs):
            raise AssertionError(f"the {scenario} job did not end within {timeout} s")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        console = "\n".join(p.communicate()[0] for p in procs)
        left = wait_gone(mark, within=30.0)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    assert left == [], f"processes left behind: {left}"
    records = _read(out)
    assert sorted(records) == [0, 1, 2, 3], console
    return Job(max(p.returncode for p in procs), console, records, out)


def _workers_ended(out: Path) -> bool:
    pids = {r["pid"] for rows in _read(out).values() for r in rows[:1]}
    return len(pids) == 4 and all(_ended(pid) for pid in pids)


def _ended(pid: int) -> bool:
    """Gone, or a zombie that its parent (torchrun) has not reaped yet."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except OSError:
        return True


@pytest.fixture(scope="module")
def sequence(tmp_path_factory: pytest.TempPathFactory) -> dict[int, list[dict[str, Any]]]:
    job = _job(tmp_path_factory.mktemp("sequence"), "sequence")
    assert job.code == 0, job.console
    return job.records


def _read(out: Path) -> dict[int, list[dict[str, Any]]]:
    records: dict[int, list[dict[str, Any]]] = {}
    for path in out.glob("rank*.jsonl"):
        text = path.read_text()
        records[int(path.stem[4:])] = [json.loads(t) for t in text.splitlines() if t.endswith("}")]
    return records


def _one(records: list[dict[str, Any]], step: str) -> dict[str, Any]:
    found = [r for r in records if r["step"] == step]
    assert len(found) == 1, (step, records)
    return found[0]


# --- the ranks' program -------------------------------------------------------------------------

Record = Callable[..., None]


def _rank_main(scenario: str, out: Path) -> None:
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    handler = logging.FileHandler(out / "logs" / f"rank{rank}.log")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        handlers=[handler, logging.StreamHandler()])
    dist.init_process_group("gloo")
    log = out / f"rank{rank}.jsonl"

    def record(what: str, **data: Any) -> None:
        with log.open("a") as f:
            f.write(json.dumps({"step": what, "pid": os.getpid(), **data}, default=list) + "\n")

    if scenario.startswith("freeze-"):
        _rank_freeze(rank, record, scenario.removeprefix("freeze-"))
    elif scenario.startswith("shrink-"):
        _rank_shrink(rank, record, scenario.removeprefix("shrink-"))
    else:
        {"sequence": _rank_sequence, "never": _rank_never}[scenario](rank, record)


def _timed(record: Record, step: str, **kwargs: Any) -> Any:
    from triage.health import HealthCheckFailed, check

    started = time.monotonic()
    raised = None
    try:
        result = check(timeout=T, **kwargs)
    except HealthCheckFailed as exc:
        result, raised = exc.result, type(exc).__name__
    record(step, result=asdict(result), wall=time.monotonic() - started, raised=raised)
    return result


def _usage() -> tuple[int, int, int]:
    tasks = len(list(Path("/proc/self/task").iterdir()))
    rss = int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    return threading.active_count(), tasks, rss


def _corrupt(on: bool) -> None:
    """This rank's contributions are written wrong (what a bad GPU or link would do to them)."""
    from triage.health import protocol

    protocol.CORRUPT_SELF = on


def _freeze(record: Record, **data: Any) -> None:
    record("freezing", **data)
    os.kill(os.getpid(), signal.SIGSTOP)  # the test sends SIGCONT


def _rank_sequence(rank: int, record: Record) -> None:
    import torch
    import torch.distributed as dist

    from triage.health import check

    store = dist.distributed_c10d._get_default_store()
    sub_a, sub_b = dist.new_group([1, 3]), dist.new_group([0, 2])
    # 1. healthy, many calls in a row: no growth in threads, store keys or memory (the decisions'
    #    ring of keys is full after SLOTS calls: warmed up past it, then CALLS > SLOTS more)
    from triage.health.protocol import SLOTS

    assert CALLS > SLOTS
    for _ in range(SLOTS + 20):
        assert check(timeout=T).ok
    dist.barrier()
    keys, before = store.num_keys(), _usage()
    dist.barrier()
    results = [check(timeout=T) for _ in range(CALLS)]
    dist.barrier()
    keys_after, after = store.num_keys(), _usage()
    dist.barrier()
    record("healthy", all_ok=sum(r.ok for r in results), keys=[keys, keys_after],
           threads=[before[0], after[0]], tasks=[before[1], after[1]], rss_kib=[before[2], after[2]],
           slowest=max(r.elapsed for r in results))
    # 2. rank 1 contributes a wrong value; then a check passes again (rank 0 asks for an exception)
    _corrupt(rank == 1)
    _timed(record, "wrong", on_failure="raise" if rank == 0 else "log")
    _corrupt(False)
    _timed(record, "after-wrong")
    # 3. a sub-group [1, 3] checks itself while [0, 2] is busy with its own collectives
    if rank in (1, 3):
        results = [check(sub_a, timeout=T, tag="sub") for _ in range(20)]
        record("sub-healthy", all_ok=sum(r.ok for r in results), calls=len(results), world_size=results[0].world_size)
        _corrupt(rank == 3)
        _timed(record, "sub-wrong", group=sub_a, tag="sub")
        _corrupt(False)
        store.add("test/sub-done", 1)
    else:
        # Both stop after the same all-reduce (as any loop of collectives must): whether to stop is
        # decided together, in the all-reduce itself (slot 0: each member's own view of the store).
        busy, count = torch.ones(1 << 16), 0
        while True:
            busy[0] = float(count >= 5 and int(store.add("test/sub-done", 0)) >= 2)
            dist.all_reduce(busy, group=sub_b)
            count += 1
            if busy[0] > 0:
                break
        record("sub-busy", all_reduces=count, skipped=asdict(check(sub_a, timeout=T)))
    dist.barrier()
    # 4. rank 2 is late: it calls the check once the others have returned from it; then every rank
    # checks again, and passes
    if rank == 2:
        store.wait(["test/late-done"], __import__("datetime").timedelta(seconds=60))
        _timed(record, "late")
    else:
        _timed(record, "late")
        if store.add("test/late", 1) == 3:
            store.set("test/late-done", "1")
    _timed(record, "after-late")
    dist.destroy_process_group()


def _rank_freeze(rank: int, record: Record, point: str) -> None:
    import torch.distributed as dist

    from triage.health import check, protocol

    for _ in range(FROZEN_AT - 1):
        record("call", result=asdict(check(timeout=T)))
    if rank == 2 and point == "between":
        _freeze(record, call=FROZEN_AT)
    elif rank == 2 and point == "before":
        start = protocol.Call.start

        def frozen_start(call: protocol.Call, buf: Any) -> Any:  # just before it posts its all-reduce
            protocol.Call.start = start  # type: ignore[method-assign]
            _freeze(record, call=FROZEN_AT)
            return start(call, buf)

        protocol.Call.start = frozen_start  # type: ignore[method-assign]
    elif rank == 2 and point == "after":
        # after its all-reduce completed with the right sum, before it publishes what it saw
        publish = protocol.Call.publish

        def frozen_publish(call: protocol.Call, proposal: bytes) -> bytes:
            if call.number == FROZEN_AT:
                _freeze(record, call=FROZEN_AT)
            return publish(call, proposal)

        protocol.Call.publish = frozen_publish  # type: ignore[method-assign]
    # Every rank goes on until a check passes after the frozen call: since every rank gets the same
    # decision for each call, they all stop at the same call.
    for _ in range(50):
        result = check(timeout=T)
        record("call", result=asdict(result))
        if result.call > FROZEN_AT + 1 and result.ok:
            break
    dist.destroy_process_group()


def _rank_shrink(rank: int, record: Record, how: str) -> None:
    """The recipe of docs/health.md: check every CHECK_EVERY steps; on a failure drop the named
    ranks and go on, or leave when this rank is the one dropped."""
    import torch
    import torch.distributed as dist

    from triage.health import check, shrink

    victim = 2 if how == "frozen" else 3
    launch_rank = rank
    for step in range(STEPS):
        if step == VICTIM_STEP and rank == victim:
            if how == "frozen":
                _freeze(record, at=step)
            else:
                os.kill(os.getpid(), signal.SIGKILL)
        if step % CHECK_EVERY == 0:
            result = check(timeout=T)
            record("check", at=step, result=asdict(result))
            if not result.ok:
                if how == "killed":  # a second check on the old group names the same rank, and only it
                    result = check(timeout=T)
                    record("follow-up", result=asdict(result))
                if not result.exclude:
                    break
                group = shrink(result, step=step)
                if group is None:
                    record("excluded", result=asdict(result), initialized=dist.is_initialized())
                    break
                record("shrunk", at=step, exclude=result.exclude, world=dist.get_world_size(),
                       rank=dist.get_rank())
        total = torch.tensor([float(launch_rank)])
        dist.all_reduce(total)  # the training step: every survivor's contribution, once
        record("step", n=step, sum=total.item(), world=dist.get_world_size())
    dist.destroy_process_group()
    record("destroyed")


def _rank_never(rank: int, record: Record) -> None:
    import torch.distributed as dist

    store = dist.distributed_c10d._get_default_store()
    if rank == 2:  # never calls check: waits until the others are done, and leaves
        store.wait(["test/done"], __import__("datetime").timedelta(seconds=60))
        record("never")
        return
    result = _timed(record, "never", on_failure="abort")
    store.add("test/aborted", 1)
    _timed(record, "after-abort")
    if store.add("test/aborted", 0) == 3:
        store.set("test/done", "1")
    dist.destroy_process_group()
    record("destroyed")
    if not result.ok:
        sys.exit(1)  # what a training loop does when its health check fails


if __name__ == "__main__":
    _rank_main(sys.argv[1], Path(sys.argv[2]))
