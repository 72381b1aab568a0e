"""`triage watch`'s progress model and its decision to act, on sample sequences: recorded from real
torchrun + gloo jobs (tests/data/watch/*.jsonl, TRIAGE_WATCH_RECORD) and written out by hand for
the traps. Nothing here runs a job or reads a clock: the samples carry their own times.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from triage.model import Category, Culprit, Phase, Report, Status, Verdict
from triage.watch import act, sample
from triage.watch.progress import (
    IDLE_S,
    LEARN_FACTOR,
    SUSPECT_S,
    Finding,
    Model,
    Sample,
    StackView,
    from_json,
)

DATA = Path(__file__).resolve().parent / "data" / "watch"
ALL_REDUCE = StackView("collective", "all_reduce", ("all_reduce (torch/distributed/distributed_c10d.py)",
                                                    "main (train.py)"), "all_reduce (torch/distributed/distributed_c10d.py:3252)")
BARRIER = StackView("collective", "barrier", ("barrier (torch/distributed/distributed_c10d.py)", "main (train.py)"),
                    "barrier (torch/distributed/distributed_c10d.py:4810)")


def _frame(function: str, state: str = "python") -> StackView:
    return StackView(state, "", (f"{function} (train.py)", "main (train.py)"), f"{function} (train.py:12)")


class Job:
    """A job of `world` ranks sampled every 2 s: each rank's counters move as its role says."""

    def __init__(self, world: int = 3, stall: float = 120.0, stacks: bool = True) -> None:
        self.model = Model(stall, 0.0, stacks=stacks)
        self.counters = {r: [0, 0, 0] for r in range(world)}  # cpu ticks, io, wake-ups
        self.now = 0.0
        self.findings: list[tuple[float, Finding]] = []

    def tick(self, roles: dict[int, str], stacks: dict[int, StackView] | None = None, step: bool = False,
             seconds: float = 2.0) -> Finding | None:
        """Advance `seconds`: `busy` moves CPU only, `work` CPU and I/O, `write` I/O, `wake` wake-ups,
        `tick` one CPU tick (10 ms) and nothing else, `still` nothing."""
        self.now += seconds
        for rank, role in roles.items():
            c = self.counters[rank]
            if role in ("busy", "work"):
                c[0] += int(100 * seconds)
            if role == "tick":
                c[0] += 1
            if role in ("work", "write"):
                c[1] += 4096
            if role == "wake":
                c[2] += 1
            view = (stacks or {}).get(rank)
            self.model.observe(rank, Sample(self.now, c[0], c[1], c[2], "R" if role == "busy" else "S", "", view))
        if step:
            self.model.step_line(self.now)
        found = self.model.decide(self.now)
        if found is not None:
            self.findings.append((self.now, found))
        return found

    def first(self, stage: str) -> tuple[float, Finding] | None:
        return next(((t, f) for t, f in self.findings if f.stage == stage), None)


def _hung(job: Job, culprit_role: str, culprit_stack: StackView, seconds: float, world: int = 3) -> None:
    peers = {r: ALL_REDUCE for r in range(world) if r != 2}
    for _ in range(int(seconds / 2)):
        job.tick({0: "still", 1: "still", 2: culprit_role}, {**peers, 2: culprit_stack})


# --- the hangs ---------------------------------------------------------------------------------------

def test_an_idle_rank_while_its_peers_wait_is_a_hang_once_the_idle_window_passes() -> None:
    job = Job()
    for _ in range(5):  # healthy steps
        job.tick({0: "work", 1: "work", 2: "work"}, step=True)
    _hung(job, "still", _frame("wait_for_file", "sleep"), 60)
    at, found = job.first("hang") or (None, None)
    assert found is not None and at is not None
    assert found.kind == "idle" and found.culprits == [2] and found.waiting == [0, 1] and found.can_act
    # Named as soon as the window has passed since the last progress, not before.
    assert IDLE_S <= at - 10 <= IDLE_S + 2
    assert found.window_s == IDLE_S and found.why_window == f"default {IDLE_S:.0f} s"


def test_a_spinning_rank_is_a_suspect_first_and_a_hang_at_the_window() -> None:
    job = Job(stall=120)
    job.tick({0: "work", 1: "work", 2: "work"}, step=True)
    _hung(job, "busy", _frame("spin"), 140)
    suspect, hang = job.first("suspect"), job.first("hang")
    assert suspect is not None and hang is not None
    assert suspect[1].kind == "spinning" and suspect[1].culprits == [2] and not suspect[1].can_act
    assert SUSPECT_S <= suspect[0] - 2 <= SUSPECT_S + 2
    assert hang[1].kind == "spinning" and hang[1].can_act and 120 <= hang[0] - 2 <= 122


def test_a_tick_of_a_blocked_rank_while_its_stack_is_taken_is_not_work() -> None:
    # watch reads every rank's counters every 2 s and, while one is still, takes the stacks and
    # reads the counters again, stamped with the same time. One 10 ms tick of a blocked rank's
    # background threads in between was one tick over no time, "its CPU moved", and a rank blocked
    # on a file lock came out as spinning rather than idle (a CI run of test_watch saw it).
    job = Job(stall=8)
    job.tick({0: "work", 1: "work", 2: "work"}, step=True)
    flock = _frame("flock_forever", "lock")
    for _ in range(8):
        job.tick({0: "still", 1: "still", 2: "still"})
        job.tick({0: "still", 1: "still", 2: "tick"}, {0: ALL_REDUCE, 1: ALL_REDUCE, 2: flock}, seconds=0.0)
    at, found = job.first("hang") or (None, None)
    assert found is not None and at is not None
    assert found.kind == "idle" and found.culprits == [2] and found.waiting == [0, 1] and found.can_act
    assert all(f.kind == "idle" for _, f in job.findings)
    assert 8 <= at - 2 <= 10  # at the idle window (--stall 8), counted from the last progress
    # The same rank busy (its CPU a whole CPU) is still seen at once: spinning, not idle.
    job = Job(stall=8)
    job.tick({0: "work", 1: "work", 2: "work"}, step=True)
    for _ in range(8):
        job.tick({0: "still", 1: "still", 2: "busy"})
        job.tick({0: "still", 1: "still", 2: "still"}, {0: ALL_REDUCE, 1: ALL_REDUCE, 2: _frame("spin")}, seconds=0.0)
    found = (job.first("hang") or (None, None))[1]
    assert found is not None and found.kind == "spinning" and found.culprits == [2]


def test_every_rank_waiting_with_nothing_moving_is_a_hang_without_a_culprit() -> None:
    job = Job(stall=60)
    for _ in range(35):
        job.tick({0: "still", 1: "still", 2: "still"}, {0: ALL_REDUCE, 1: ALL_REDUCE, 2: BARRIER})
    found = job.first("hang")
    assert found is not None and found[1].kind == "all-waiting" and found[1].culprits == []
    assert found[1].waiting == [0, 1, 2]


def test_a_lone_rank_waiting_in_a_collective_is_all_waiting_its_peers_being_on_other_nodes() -> None:
    job = Job(world=1, stall=30)
    for _ in range(20):
        job.tick({0: "still"}, {0: ALL_REDUCE})
    found = job.first("hang")
    assert found is not None and found[1].kind == "all-waiting" and found[1].waiting == [0]


def test_without_stacks_silence_is_reported_but_never_acted_upon() -> None:
    job = Job(stall=20, stacks=False)
    for _ in range(15):
        job.tick({0: "still", 1: "still", 2: "still"})
    found = job.first("hang")
    assert found is not None and found[1].kind == "silent" and not found[1].can_act
    assert not job.model.wants_stacks(job.now)


# --- the traps: healthy pauses -----------------------------------------------------------------------

def test_an_evaluation_of_every_rank_is_never_a_finding() -> None:
    job = Job(stall=20)
    for _ in range(60):  # two minutes of every rank computing alone, no step line
        job.tick({0: "busy", 1: "busy", 2: "busy"}, {r: _frame("evaluate") for r in range(3)})
    assert job.findings == []


def test_a_rank_writing_a_checkpoint_while_the_others_wait_in_a_barrier_is_never_a_finding() -> None:
    job = Job(stall=20)
    for _ in range(60):
        job.tick({0: "write", 1: "still", 2: "still"}, {0: _frame("write_checkpoint"), 1: BARRIER, 2: BARRIER})
    assert job.findings == []


def test_a_rank_waking_up_to_poll_is_not_idle() -> None:
    # Its main thread wakes every sample (a data-loader wait with a timeout): it is not blocked.
    job = Job(stall=20)
    for _ in range(60):
        job.tick({0: "wake", 1: "still", 2: "still"}, {0: _frame("next_batch", "lock"), 1: ALL_REDUCE, 2: ALL_REDUCE})
    assert job.findings == []


def test_a_pause_the_job_came_out_of_lengthens_its_window() -> None:
    job = Job(stall=120)
    job.tick({0: "work", 1: "work", 2: "work"}, step=True)
    _hung(job, "still", _frame("wait_for_file", "sleep"), 24)  # 24 s: under the idle window
    job.tick({0: "work", 1: "work", 2: "work"}, {r: _frame("step") for r in range(3)}, step=True)
    assert job.first("hang") is None
    window, why = job.model.window("idle")
    assert window == pytest.approx(LEARN_FACTOR * 24, abs=2.1) and "longest idle pause" in why
    assert "idle 4" in job.model.windows_text()  # the window in force, stated as watch.log states it
    _hung(job, "still", _frame("wait_for_file", "sleep"), 40)  # longer than 30 s, shorter than the new window
    assert job.first("hang") is None


def test_a_stack_older_than_the_ranks_last_move_no_longer_says_it_waits() -> None:
    job = Job(stall=20)
    job.tick({0: "still", 1: "still", 2: "still"}, {0: ALL_REDUCE, 1: ALL_REDUCE, 2: _frame("sleep_a_bit", "sleep")})
    for _ in range(30):  # the waiting ranks move on (I/O) and are not sampled again
        job.tick({0: "write", 1: "write", 2: "still"})
    assert job.findings == []


# --- recorded from real jobs -------------------------------------------------------------------------

def _replay(name: str, stall: float) -> tuple[Model, list[tuple[float, Finding]]]:
    lines = [json.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]
    first = next(line["at"] for line in lines if "at" in line)
    model = Model(stall, first)
    findings = []
    for line in lines:
        if "step" in line:
            model.step_line(line["step"])
            continue
        rank, taken = from_json(line)
        model.observe(rank, taken)
        found = model.decide(taken.at)
        if found is not None:
            findings.append((taken.at - first, found))
    return model, findings


def test_recorded_flock_hang_names_the_rank_blocked_in_the_kernel() -> None:
    _, findings = _replay("flock-rank1.jsonl", stall=120)
    hangs = [f for _, f in findings if f.stage == "hang"]
    assert hangs and hangs[0].kind == "idle" and hangs[0].culprits == [1] and hangs[0].can_act
    assert "locks_lock_inode_wait" in hangs[0].text


@pytest.mark.parametrize(("name", "rank"), [("spin-rank2.jsonl", 2), ("spin-attach-rank1.jsonl", 1)])
def test_recorded_spin_is_a_suspect_then_a_hang(name: str, rank: int) -> None:
    # The second was recorded attached to a job whose rank already spun: no history before it.
    _, findings = _replay(name, stall=120)
    stages = [(f.stage, f.kind, f.culprits) for _, f in findings]
    assert ("suspect", "spinning", [rank]) in stages and ("hang", "spinning", [rank]) in stages
    assert stages.index(("suspect", "spinning", [rank])) < stages.index(("hang", "spinning", [rank]))
    # No idle or all-waiting finding on the way: the spinning rank's CPU moves, its peers wait.
    assert {kind for _, kind, _ in stages} == {"spinning"}


@pytest.mark.parametrize("name", ["eval-all.jsonl", "checkpoint-rank0.jsonl", "checkpoint-shell.jsonl",
                                  "lengthen.jsonl", "pause-all-shell.jsonl", "pipe-attach.jsonl"])
@pytest.mark.parametrize("stall", [120.0, 20.0])
def test_recorded_healthy_jobs_with_long_pauses_have_no_hang(name: str, stall: float) -> None:
    # Evaluations of 25 s, a 40 s checkpoint, steps lengthening to 14 s, a 25 s sleep of every rank:
    # recorded at the defaults, replayed at them and at a window shorter than every pause.
    _, findings = _replay(name, stall)
    assert [f for _, f in findings if f.stage == "hang"] == []


# --- acting ------------------------------------------------------------------------------------------

def _report(status: Status, confidence: float, ranks: list[int]) -> Report:
    verdict = Verdict(status=status, phase=Phase.EXECUTION, category=Category.HUNG_PROCESS,
                      confidence=confidence, culprits=[Culprit(kind="rank", rank=r, reason="") for r in ranks],
                      reasoning="", advice=[])
    return Report(verdict=verdict, world_size=3, world_size_from=None, ranks={}, sources=[], events=[])


def _finding(kind: str = "idle", culprits: tuple[int, ...] = (2,), can_act: bool = True) -> Finding:
    return Finding(kind, "hang", list(culprits), [0, 1], 40.0, 30.0, "default 30 s", "", can_act)


def test_kill_needs_a_diagnosed_verdict_above_the_floor_naming_a_rank_that_makes_no_progress() -> None:
    hang = _finding()
    assert act.may_end(_report(Status.DIAGNOSED, 0.85, [2]), hang, hang, 0.7)[0]
    go, why = act.may_end(_report(Status.NO_FAILURE, 0.0, []), hang, hang, 0.7)
    assert not go and "no_failure" in why.lower().replace(" ", "_")
    assert not act.may_end(_report(Status.INCONCLUSIVE, 0.45, []), hang, hang, 0.7)[0]
    go, why = act.may_end(_report(Status.DIAGNOSED, 0.6, [2]), hang, hang, 0.7)
    assert not go and "below --kill-confidence" in why
    go, why = act.may_end(_report(Status.DIAGNOSED, 0.85, [1]), hang, hang, 0.7)
    assert not go and "rank 1" in why  # the verdict names a rank the model does not see stuck
    assert not act.may_end(_report(Status.DIAGNOSED, 0.85, [2]), hang, None, 0.7)[0]  # it moved again
    silent = _finding("silent", (), can_act=False)
    assert not act.may_end(_report(Status.DIAGNOSED, 0.85, [2]), silent, silent, 0.7)[0]


def test_only_a_refused_stack_sample_ends_stack_sampling() -> None:
    # A rank still starting fails one dump; watch that took it for blindness never named an idle
    # culprit again (it saw a silent hang and, rightly, never acted on it).
    assert not sample.refused("py-spy could not read pid 4494: Error: Failed to get stack traces")
    assert not sample.refused("py-spy took longer than 10 s")
    assert sample.refused("py-spy could not read pid 7: Permission denied (os error 13) (ptrace not permitted: "
                          "run as the job's user with CAP_SYS_PTRACE, or kernel.yama.ptrace_scope=0)")
    assert sample.refused("py-spy could not run: No such file or directory")
