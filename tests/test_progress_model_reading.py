"""One reading of progress, written once in the job's progress model (triage.job.progress), and three loose ends.

The lagging-rank principle reads what is in flight from `Job.progress` (each member's `log_waiting`
/ `log_idle`), not from the log-read groups on its own; the ras-status principle reads RAS's
operation counts, by majority per communicator and collective and per snapshot, from the same model
(`RasCount`). First-failure's waits begin at the first wait or timeout line of the job, its writer
known or not (an interleaved console's unprefixed lines). A folded crash loop's last copy
(`Event.last_time`) is part of its source's span when runs are told apart.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from test_progress_and_layout import _job

import triage.api as api
from triage.api import analyze
from triage.diagnose.context import Context
from triage.diagnose.facts import rank_facts
from triage.diagnose.principles.progress import lagging_rank
from triage.diagnose.verdict import diagnose
from triage.job import Job, separate_runs
from triage.job.progress import Progress, RasCount, build_progress
from triage.model import Event, Evidence, Identity, Kind, Phase
from triage.report.json_format import to_dict


def _built(tmp_path: Path, files: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch) -> Job:
    """The job analyze builds from these files (captured on its way to the verdict)."""
    jobs: list[Job] = []

    def spy(job: Job) -> Any:
        jobs.append(job)
        return diagnose(job)

    monkeypatch.setattr(api, "diagnose", spy)
    for name, lines in files.items():
        path = tmp_path / "logs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    analyze([tmp_path / "logs"], jobs=1)
    return jobs[0]


# --- the lagging rank reads the progress model ------------------------------------------------


def test_the_models_log_reading_is_what_the_ranks_logs_say(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job = _built(tmp_path, _job({}, stalled=frozenset({5})), monkeypatch)
    group = job.progress.groups["pg:0"]
    assert group.log_members == list(job.groups["pg:0"].members)
    assert group.by_rank[5].log_idle and not group.by_rank[5].log_waiting
    assert all(group.by_rank[r].log_waiting for r in range(8) if r != 5)
    assert group.by_rank[0].log_timeouts == job.groups["pg:0"].members[0].timeouts
    assert job.progress.by_first_log_wait()[0] is group


def test_the_lagging_rank_reads_the_model_not_the_log_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job = _built(tmp_path, _job({}, stalled=frozenset({5})), monkeypatch)
    ctx = Context(job, rank_facts(job))
    found = lagging_rank(ctx)
    assert found is not None and [c.rank for c in found.culprits] == [5] and found.score == 0.75
    job.progress = Progress()  # no model: no reading, though the log groups are still there
    assert lagging_rank(ctx) is None


# --- RAS counts, read by majority in the model ---------------------------------------------------


def _ras(rule_id: str, snapshot: str, seq: int, *, pg_rank: str = "", ranks: int = 1, line: int = 1) -> Event:
    fields = {"snapshot": snapshot, "comm_id": "0x5f1e", "collective": "AllReduce", "seq": str(seq)}
    fields.update({"pg_rank": pg_rank} if pg_rank else {"ranks_count": str(ranks)})
    return Event(rule_id=rule_id, kind=Kind.INFO, phase=Phase.EXECUTION, severity="info", message="",
                 identity=Identity(), evidence=Evidence(snapshot, line, ""), fields=fields, family="ras")


def test_ras_counts_are_read_by_majority_per_snapshot() -> None:
    events = [_ras("ras-op-count-group", "a.txt", 120, ranks=7, line=1),
              _ras("ras-rank-launched-up-to", "a.txt", 118, pg_rank="3", line=2),
              _ras("ras-op-count-group", "b.txt", 120, ranks=7, line=1),
              _ras("ras-rank-launched-up-to", "b.txt", 118, pg_rank="3", line=2)]
    progress = build_progress(events, {})
    assert set(progress.ras) == {"a.txt", "b.txt"}
    count = progress.ras["b.txt"][("0x5f1e", "AllReduce")]
    assert count.majority == 120 and count.behind() == {"3": 118} and not count.ahead()
    assert count.lines["3"] is events[3]


def test_an_even_split_of_ras_counts_has_no_majority_and_a_few_ahead_are_not_behind() -> None:
    even = RasCount("c", "AllReduce", groups=Counter({10: 2, 11: 2}))
    assert even.majority is None and even.behind() == {}
    ahead = RasCount("c", "AllReduce", groups=Counter({10: 6}), listed={"4": 11})
    assert ahead.majority == 10 and ahead.behind() == {} and ahead.ahead()
    # A rank's own line weighs one where no group holds its count.
    listed = RasCount("c", "AllReduce", listed={"0": 5, "1": 5, "2": 4})
    assert listed.majority == 5 and listed.behind() == {"2": 4}


# --- first-failure: the waits begin at the first wait line, its writer known or not ---------------

def _record(index: int, rank: int, code: int, signal: str) -> str:
    """One record of torchrun's ChildFailedError block (it ties the pid to the rank)."""
    pid, number = 17389 + rank, {"SIGTERM": 15, "SIGKILL": 9}[signal]
    return (f"[{index}]:\n  time      : 2026-11-25_16:00:15\n  host      : localhost\n"
            f"  rank      : {rank} (local_rank: {rank})\n  exitcode  : {code} (pid: {pid})  ({signal})\n"
            f"  error_file: <N/A>\n  traceback : Signal {number} ({signal}) received by PID {pid}\n")


AGENT = "W1125 16:00:15.272000 17387 torch/distributed/elastic/multiprocessing/api.py:1028]"
CONSOLE = (
    "W1125 16:00:11.616000 17387 torch/distributed/run.py:874] *****************************************\n"
    + "".join(f"2026-11-25 16:00:14,{600 + r} INFO train: rank {r}/6 (local_rank {r}) starting on vm, "
              f"pid {17389 + r}\n" for r in range(6))
    + "".join(f"2026-11-25 16:00:15,13{r} INFO train: process group ready: backend=gloo world_size=6\n" for r in range(5))
    + "2026-11-25 16:00:15,144 INFO train: initial weights synchronised from rank 0\n"
    + "[rank1]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection "
      "closed by peer [127.0.0.1]:29871. This is typically caused by a remote worker crashing.\n"
    + "[E1125 16:00:15.622501589 ProcessGroupGloo.cpp:67] Gloo connectFullMesh failed with [/__w/pytorch/pytorch/"
      "third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:24988. This is "
      "typically caused by a remote worker crashing.\n"
    + "".join(f"{AGENT} Sending process {17389 + r} closing signal SIGTERM\n" for r in range(5))
    + "E1125 16:00:15.323000 17387 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -9) "
      "local_rank: 5 (pid: 17394) of binary: /venv/bin/python3\n"
    + "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
      "=======================================================\nreal_job.py FAILED\n"
      "-------------------------------------------------------\nFailures:\n"
    + "".join(_record(i + 1, r, -15, "SIGTERM") for i, r in enumerate(range(5)))
    + "-------------------------------------------------------\nRoot Cause (first observed failure):\n"
    + _record(0, 5, -9, "SIGKILL") + "=======================================================\n"
)


def test_a_kill_before_waits_whose_writer_is_unknown_came_before_the_waits(tmp_path: Path) -> None:
    (tmp_path / "console.log").write_text(CONSOLE, encoding="utf-8")
    verdict: dict[str, Any] = to_dict(analyze([tmp_path], jobs=1))["verdict"]
    assert [c["rank"] for c in verdict["culprits"]] == [5], verdict["reasoning"]
    assert verdict["hypothesis"] == "first-failure"
    assert "before any peer timed out" in verdict["reasoning"]
    assert verdict["confidence"] == 0.9


# --- separate runs: a folded crash loop spans to its last copy -------------------------------------

DAY = 1_764_000_000.0
HOUR = 3600.0


def _line(source: str, kind: Kind, at: float, line: int, *, count: int = 1, span: float = 0.0) -> Event:
    return Event(rule_id="r", kind=kind, phase=Phase.UNKNOWN, severity="error", message="", identity=Identity(),
                 evidence=Evidence(source, line, ""), time=at, count=count, span=span,
                 last_line=line + count if count > 1 else None)


def test_a_folded_crash_loop_spans_its_source_to_its_last_copy() -> None:
    # The first log starts, then crash-loops for ten hours (one event, folded); the second log starts
    # and fails an hour after the loop's last copy: one run, not two hours apart.
    loop = _line("a.log", Kind.ERROR, DAY + 60, 2, count=36000, span=10 * HOUR)
    events = [_line("a.log", Kind.INIT_START, DAY, 1), loop,
              _line("b.log", Kind.INIT_START, DAY + 11 * HOUR, 1), _line("b.log", Kind.ERROR, DAY + 11 * HOUR + 60, 2)]
    assert loop.last_time == DAY + 60 + 10 * HOUR
    assert separate_runs(events) == []
    # Unfolded (its last copy unknown), the two logs are eleven hours apart: two runs.
    loop.count, loop.span = 1, 0.0
    assert separate_runs(events) and "2 runs" in separate_runs(events)[0]
