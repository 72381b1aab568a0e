"""`triage.health.check` in real 4-rank gloo jobs under torchrun, and `triage analyze` on their logs.

This file is also the ranks' program: torchrun runs it as a script with a scenario name (the
`_rank_*` functions at the bottom); each rank appends what its checks returned to
`<out>/rank<R>.jsonl`, and the tests read those records. Deadlines are asserted as upper bounds
with a generous margin (2 shared cores), never as lower bounds.
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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
T = 3.0  # the deadline under test, in s
MARGIN = 2.0  # what a loaded 2-core machine may add on top of a bound
CALLS = 1000  # healthy checks in a row, with no growth in threads, store keys or memory


# --- the tests ----------------------------------------------------------------------------------

def test_not_initialised_is_an_ok_no_op() -> None:
    pytest.importorskip("torch")
    from triage.health import check

    result = check(timeout=0.1)
    assert result.ok and bool(result) and result.phase == "skipped" and result.world_size == 1


def test_bad_arguments_are_refused() -> None:
    pytest.importorskip("torch")
    from triage.health import check

    with pytest.raises(ValueError, match="on_failure"):
        check(on_failure="exit")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout"):
        check(timeout=0)


def test_the_failure_line_is_the_one_the_rules_read() -> None:
    pytest.importorskip("torch")
    from triage.health import HealthResult, line
    from triage.model import Identity
    from triage.parse.scan import Matcher, ScanStats, scan_text
    from triage.rules import load_rules

    missing = HealthResult(False, 8, missing=(2, 5, 6), phase="arrival", elapsed=3.0, reason="late")
    wrong = HealthResult(False, 8, wrong=(1,), phase="verify", elapsed=0.01, reason="bad slot")
    nobody = HealthResult(False, 8, phase="collective", elapsed=3.5, reason="stuck")
    matcher = Matcher(load_rules())
    for result, rule, ranks in ((missing, "repro-health-check-missing", "2, 5-6"),
                                (wrong, "repro-health-check-wrong", "1"),
                                (nobody, "repro-health-check-unnamed", None)):
        text = line(result, 0, "3", list(range(8)), 7, "loop")
        events = list(scan_text(matcher, "rank0.log", Identity(), [text + "\n"], ScanStats()))
        assert [e.rule_id for e in events] == [rule], text
        assert events[0].fields.get("culprit_ranks") == ranks, text


def test_a_finished_buffer_is_kept_until_no_cpp_reference_holds_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """What keeps the exit safe: a check's buffer is released here only once the backend let go of it.

    Otherwise the backend's thread may release it during the interpreter's finalization, and the
    process dies in std::terminate (health._let_go). Autograd stands in for the backend's thread.
    """
    torch = pytest.importorskip("torch")
    from triage import health

    monkeypatch.setattr(health, "SETTLE_S", 0.05)
    with health._LOCK:
        health._SETTLING.clear()
    weight = torch.ones(3, requires_grad=True)
    buf = torch.zeros(3)
    graph = (weight * buf).sum()  # holds `buf` from C++, as a finished work does until its thread drops it
    health._let_go(buf)
    del buf
    health._let_go(torch.zeros(1))  # held by nothing else: released at the next look
    assert len(health._SETTLING) == 2
    health._settle_at_exit()  # bounded: gives up while C++ still holds the first one
    assert len(health._SETTLING) == 1
    del graph
    started = time.monotonic()
    health._settle_at_exit()
    assert health._SETTLING == [] and time.monotonic() - started < 0.5


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
        result = _one(records, "wrong")["result"]
        assert (result["ok"], result["wrong"], result["missing"], result["phase"]) == (False, [1], [], "verify"), rank
        got = re.fullmatch(r"rank 1 contributed (\d+) in its slot, expected (\d+)", result["reason"])
        assert got and int(got[1]) - int(got[2]) == 1000, result  # what `_corrupting` added
        assert _one(records, "after-wrong")["result"]["ok"], rank


@pytest.mark.slow
def test_a_late_rank_is_named_within_the_deadline_and_the_next_check_passes(
        sequence: dict[int, list[dict[str, Any]]]) -> None:
    for rank, records in sequence.items():
        record = _one(records, "late")
        result = record["result"]
        assert (result["ok"], result["missing"], result["wrong"], result["phase"]) == (False, [2], [], "arrival")
        if rank == 2:  # it arrived after the others gave up: it learns so at once, not after a deadline
            assert result["reason"].startswith("this rank (rank 2) reached the check after"), result
            assert record["wall"] < MARGIN, record
        else:
            assert record["wall"] < T + MARGIN, record
        # a check right after the failed one: no collective was left in flight, the calls line up
        assert _one(records, "after-late")["result"]["ok"], (rank, records)


@pytest.mark.slow
def test_a_sub_group_check_while_another_group_is_busy(sequence: dict[int, list[dict[str, Any]]]) -> None:
    for rank in (1, 3):
        busy = _one(sequence[rank], "sub-healthy")
        assert busy["all_ok"] == busy["calls"] and busy["world_size"] == 2, busy
        result = _one(sequence[rank], "sub-wrong")["result"]
        # rank 3 is rank 1 of the sub-group: results speak of global ranks
        assert (result["ok"], result["wrong"], result["world_size"]) == (False, [3], 2), result
    for rank in (0, 2):
        other = _one(sequence[rank], "sub-busy")
        assert other["all_reduces"] > 0 and other["skipped"]["phase"] == "skipped", other


@pytest.mark.slow
def test_a_rank_that_never_calls_is_named_and_analyze_names_it(tmp_path: Path) -> None:
    job = _job(tmp_path, "never")
    for rank in (0, 1, 3):
        record = _one(job.records[rank], "never")
        result = record["result"]
        assert (result["ok"], result["missing"], result["phase"]) == (False, [2], "arrival"), result
        assert result["elapsed"] < T + MARGIN and record["wall"] < T + MARGIN, record
    # The post-mortem: torchrun's own per-rank logs, read by `triage analyze`.
    lines = [t for p in job.logs.rglob("stderr.log") for t in p.read_text().splitlines() if "triage-health" in t]
    assert len(lines) == 3 and all("check FAILED: missing rank 2 in group 0" in t for t in lines), lines
    out = subprocess.run([sys.executable, "-m", "triage", "analyze", str(job.logs), "--format", "json"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    verdict = json.loads(out.stdout)["verdict"]
    assert verdict["status"] == "diagnosed", out.stdout
    assert sorted(c["rank"] for c in verdict["culprits"] if c.get("rank") is not None) == [2], verdict
    # every rank's file is its own: the health line names its writer (no `[rankN]:` prefix on it)
    assert [(r["rank"], r["has_log"]) for r in json.loads(out.stdout)["ranks"]] == [(r, True) for r in range(4)]
    rules = {e.get("rule") for c in verdict["culprits"] for e in c["evidence"]}
    assert "repro-health-check-missing" in rules, verdict


@pytest.mark.slow
def test_a_rank_killed_in_the_check_is_named_and_on_failure_is_honoured(tmp_path: Path) -> None:
    job = _job(tmp_path, "killed")
    assert job.code != 0  # torchrun saw rank 3 die
    for rank in (0, 1, 2):
        record = _one(job.records[rank], "killed")
        result = record["result"]
        assert (result["ok"], result["missing"], result["phase"]) == (False, [3], "collective"), result
        assert record["wall"] < T + 1.5 + MARGIN, record
    assert _one(job.records[0], "killed")["raised"] == "HealthCheckFailed"
    assert _one(job.records[1], "killed")["result"]["reason"].endswith("the process group was aborted")
    # after the abort, the next check fails at once instead of touching the aborted group
    after = _one(job.records[1], "after-killed")
    assert after["result"]["ok"] is False and "aborted" in after["result"]["reason"] and after["wall"] < MARGIN
    # the others: rank 3 is gone and rank 1 aborted (it takes part no more); the next check says so
    # within its deadline
    for rank in (0, 2):
        after = _one(job.records[rank], "after-killed")
        assert after["result"]["missing"] == [1, 3] and after["wall"] < 1 + MARGIN, after


@pytest.mark.slow
def test_a_rank_frozen_in_the_check_keeps_the_deadline_and_the_process_can_exit(tmp_path: Path) -> None:
    frozen: list[int] = []

    def thaw_when_the_others_are_gone(out: Path) -> bool:
        records = _read(out)
        if not frozen and (pid := next((r["pid"] for r in records.get(3, []) if r["step"] == "freezing"), None)):
            frozen.append(pid)
        done = [r for rank in (0, 1, 2) for r in records.get(rank, []) if r["step"] == "exiting"]
        if frozen and len(done) == 3:
            # the three end on their own, with an all-reduce stuck in flight (aborted), while rank 3
            # still holds its end of their connections
            until = time.monotonic() + 10 * MARGIN
            while (alive := [r for r in done if not _ended(r["pid"])]) and time.monotonic() < until:
                time.sleep(0.1)
            os.kill(frozen[0], signal.SIGKILL)
            assert alive == [], f"ranks still running after they returned from main: {alive}"
            return True
        return False

    job = _job(tmp_path, "frozen", watch=thaw_when_the_others_are_gone)
    for rank in (0, 1, 2):
        record = _one(job.records[rank], "frozen")
        result = record["result"]
        assert (result["ok"], result["missing"], result["phase"]) == (False, [3], "collective"), result
        assert "did not complete within the 3 s deadline" in result["reason"], result
        assert record["wall"] < T + 1.5 + MARGIN, record
        # the all-reduce is still in flight: the next check says so at once, starting nothing
        after = _one(job.records[rank], "after-frozen")
        assert after["result"]["phase"] == "collective" and "still in flight" in after["result"]["reason"]
        assert after["wall"] < MARGIN + 1.0, after  # with on_failure="abort": abort's own grace


# --- running a job ------------------------------------------------------------------------------

class Job:
    def __init__(self, code: int, console: str, records: dict[int, list[dict[str, Any]]], logs: Path) -> None:
        self.code, self.console, self.records, self.logs = code, console, records, logs


def _job(tmp_path: Path, scenario: str, *, watch: Callable[[Path], bool] | None = None,
         timeout: float = 150) -> Job:
    pytest.importorskip("torch")
    from repro_helpers import MARK, free_port, wait_gone

    out, logs = tmp_path / "out", tmp_path / "logs"
    out.mkdir()
    mark = uuid.uuid4().hex
    env = dict(os.environ, **{MARK: mark, "PYTHONUNBUFFERED": "1"})
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "4",
               "--master-port", str(free_port()), "--log-dir", str(logs), "--redirects", "3",
               str(HERE), scenario, str(out)]
    proc = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    until = time.monotonic() + timeout
    try:
        while proc.poll() is None and time.monotonic() < until:
            if watch is not None and watch(out):
                watch = None
            time.sleep(0.1)
        if proc.poll() is None:
            raise AssertionError(f"the {scenario} job did not end within {timeout} s")
    finally:
        if proc.poll() is None:
            proc.kill()
        console = proc.communicate()[0]
        left = wait_gone(mark, within=5.0)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    assert left == [], f"processes left behind: {left}"
    records = _read(out)
    assert sorted(records) == [0, 1, 2, 3], console
    return Job(proc.returncode, console, records, logs)


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


def _ended(pid: int) -> bool:
    """Gone, or a zombie that its parent (torchrun) has not reaped yet."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except OSError:
        return True


# --- the ranks' program -------------------------------------------------------------------------

def _rank_main(scenario: str, out: Path) -> None:
    import torch.distributed as dist

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    log = out / f"rank{rank}.jsonl"

    def record(step: str, **data: Any) -> None:
        with log.open("a") as f:
            f.write(json.dumps({"step": step, "pid": os.getpid(), **data}, default=list) + "\n")

    {"sequence": _rank_sequence, "never": _rank_never, "killed": _rank_killed,
     "frozen": _rank_frozen}[scenario](rank, record)


Record = Callable[..., None]


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


@contextmanager
def _corrupting() -> Iterator[None]:
    """This rank's slot is written wrong (what a bad GPU or link would do to it)."""
    from triage.repro import verify

    fill = verify.fill
    verify.fill = lambda buf, index, world, check, corrupt: fill(buf, index, world, check, True)  # type: ignore[assignment]
    try:
        yield
    finally:
        verify.fill = fill


def _rank_sequence(rank: int, record: Record) -> None:
    import torch
    import torch.distributed as dist

    from triage.health import check

    store = dist.distributed_c10d._get_default_store()
    sub_a, sub_b = dist.new_group([1, 3]), dist.new_group([0, 2])
    # 1. healthy, many calls in a row: no growth in threads, store keys or memory
    for _ in range(20):
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
    # 2. rank 1 contributes a wrong value; then a check passes again
    if rank == 1:
        with _corrupting():
            _timed(record, "wrong")
    else:
        _timed(record, "wrong")
    _timed(record, "after-wrong")
    # 3. a sub-group [1, 3] checks itself while [0, 2] is busy with its own collectives
    if rank in (1, 3):
        results = [check(sub_a, timeout=T, tag="sub") for _ in range(20)]
        record("sub-healthy", all_ok=sum(r.ok for r in results), calls=len(results), world_size=results[0].world_size)
        if rank == 3:
            with _corrupting():
                _timed(record, "sub-wrong", group=sub_a, tag="sub")
        else:
            _timed(record, "sub-wrong", group=sub_a, tag="sub")
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
    # 4. rank 2 is late, past the deadline; then every rank checks again, and passes
    if rank == 2:
        time.sleep(T + 1.0)
    _timed(record, "late")
    _timed(record, "after-late")


def _rank_never(rank: int, record: Record) -> None:
    import torch.distributed as dist

    store = dist.distributed_c10d._get_default_store()
    if rank == 2:  # never calls check: waits until the others are done, and leaves
        store.wait(["test/done"], __import__("datetime").timedelta(seconds=60))
        record("never")
        return
    result = _timed(record, "never")
    store.set("test/done", "1")
    if not result.ok:
        sys.exit(1)  # what a training loop does when its health check fails


def _rank_killed(rank: int, record: Record) -> None:
    import torch.distributed as dist

    for _ in range(2):
        assert _timed(record, "healthy").ok
    if rank == 3:  # dies between its arrival and its all-reduce
        dist.all_reduce = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
        _timed(record, "killed")
        return
    # torchrun ends the others when rank 3 dies: they finish their checks first
    signal.signal(signal.SIGTERM, lambda *_: record("sigterm"))
    on_failure = {0: "raise", 1: "abort", 2: "log"}[rank]
    _timed(record, "killed", on_failure=on_failure)
    from triage.health import check

    started = time.monotonic()
    result = check(timeout=1.0)
    record("after-killed", result=asdict(result), wall=time.monotonic() - started)


def _rank_frozen(rank: int, record: Record) -> None:
    import torch.distributed as dist

    assert _timed(record, "healthy").ok
    if rank == 3:  # freezes between its arrival and its all-reduce, and answers nothing more
        def freeze(*_: Any, **__: Any) -> None:
            record("freezing")
            os.kill(os.getpid(), signal.SIGSTOP)

        dist.all_reduce = freeze
        _timed(record, "frozen")
        return
    _timed(record, "frozen")
    _timed(record, "after-frozen", on_failure="abort")
    record("exiting")
    sys.exit(0)  # with an all-reduce stuck in flight


if __name__ == "__main__":
    _rank_main(sys.argv[1], Path(sys.argv[2]))
