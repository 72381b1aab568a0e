"""`triage watch`: the py-spy reader, the live-stacks principle with the kernel's word, the process
tree, and real torchrun + gloo jobs on CPU with real faults and healthy pauses (docs/watch.md).
The progress model and the decision to act are tested on sample sequences in test_watch_progress.py.

The real jobs wait on conditions (the job's end, the verdict), with generous upper bounds, and
assert outcomes that do not depend on the machine's speed: a hang needs a rank making no progress
while a peer waits on it, so a healthy job with a pause is never killed however slow the machine;
a rank that sleeps, spins or blocks forever is named whenever the window passes.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from triage.api import analyze
from triage.model import Category, Phase, Status
from triage.parse import pyspy
from triage.rules import load_rules
from triage.watch import act, procs, snapshot

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "tests" / "generators" / "watch_job.py"
LAUNCHER = ROOT / "tests" / "generators" / "watch_launcher.sh"
LIMIT_S = 240  # an upper bound no healthy run comes near; the tests wait on conditions

# --- py-spy dumps and the principle ----------------------------------------------------------------

def _dump(rank: int, pid: int, frames: list[str], world: int = 4, thread: str = "MainThread") -> str:
    body = "\n".join(f"    {f}" for f in frames)
    return (f"triage watch: py-spy dump of rank {rank} (pid {pid}, local_rank {rank}, world_size {world}) "
            f"on host node07 at 2025-05-01T10:00:00.000000Z\n"
            f"Process {pid}: /usr/bin/python3 -u train.py\nPython v3.11.7 (/usr/bin/python3.11)\n\n"
            f'Thread {pid} (idle): "{thread}"\n{body}\n'
            f'Thread {pid + 1} (idle): "Thread-1"\n    Condition.wait (threading.py:331)\n'
            f"    Thread.run (threading.py:982)\n")


WAITING = ["all_reduce (torch/distributed/distributed_c10d.py:3252)",
           "_exception_logger.<locals>.wrapper (torch/distributed/c10d_logger.py:83)", "train (train.py:40)"]


def test_a_dump_is_read_by_content_and_its_frames_by_the_stack_rules() -> None:
    rules = load_rules()
    text = _dump(2, 4242, ["0x7f00 (libc.so.6)", "PyThread_acquire_lock_timed (libpython3.11.so.1.0)",
                           "lock_PyThread_acquire_lock (libpython3.11.so.1.0)", "save (ckpt.py:12)"])
    assert pyspy.looks_like(text)
    (event,) = pyspy.events("rank2.stack.txt", text, rules) or []
    assert event.identity.rank == 2 and event.identity.pid == 4242
    assert event.fields["stack_state"] == "lock" and event.fields["thread"] == "MainThread"
    # The quote starts at the frame that decided, past frames with no symbol.
    assert event.evidence.line == 7 and "PyThread_acquire_lock_timed" in event.evidence.text
    (inside,) = pyspy.events("rank0.stack.txt", _dump(0, 10, WAITING), rules) or []
    assert inside.fields["stack_state"] == "collective" and inside.fields["stack_call"] == "all_reduce"
    assert not pyspy.looks_like("step 4 loss 0.3\nProcess group ready\n")


def _snapshot(tmp_path: Path, stacks: dict[int, list[str]], *, stalled: bool = True) -> Path:
    folder = tmp_path / "watch"
    (folder / "snapshot-1-hang").mkdir(parents=True)
    (folder / "job.stdout.log").write_text("".join(f"step {s} loss 0.5\n" for s in range(5)))
    if stalled:
        (folder / "watch.log").write_text("triage watch: no progress for 21 s (stall window 20 s) with 4 rank "
                                          "processes alive on host node07; last progress: step 4\n")
    for rank, frames in stacks.items():
        (folder / "snapshot-1-hang" / f"rank{rank}.stack.txt").write_text(_dump(rank, 100 + rank, frames))
    return folder


def test_the_rank_outside_any_collective_is_named_with_its_stack_quoted(tmp_path: Path) -> None:
    sleeping = ["<module> (train.py:10)"]
    folder = _snapshot(tmp_path, {0: WAITING, 1: WAITING, 2: sleeping, 3: WAITING})
    verdict = analyze([folder]).verdict
    assert verdict.status is Status.DIAGNOSED and verdict.hypothesis == "stack-outside-collective"
    assert [c.rank for c in verdict.culprits] == [2]
    assert verdict.category is Category.HUNG_PROCESS and verdict.phase is Phase.EXECUTION
    assert verdict.culprits[0].evidence[0].text == "<module> (train.py:10)"
    assert "rank2.stack.txt" in verdict.culprits[0].evidence[0].source


def test_ranks_in_different_collectives_are_a_mismatch(tmp_path: Path) -> None:
    barrier = ["barrier (torch/distributed/distributed_c10d.py:4810)", "train (train.py:44)"]
    folder = _snapshot(tmp_path, {0: WAITING, 1: WAITING, 2: WAITING, 3: barrier})
    verdict = analyze([folder]).verdict
    assert verdict.hypothesis == "stack-collective-mismatch" and [c.rank for c in verdict.culprits] == [3]
    assert verdict.category is Category.COLLECTIVE_MISMATCH


def test_every_rank_in_the_same_collective_is_a_lead_below_python_not_a_culprit(tmp_path: Path) -> None:
    folder = _snapshot(tmp_path, dict.fromkeys(range(4), WAITING))
    verdict = analyze([folder]).verdict
    assert verdict.status is Status.INCONCLUSIVE and not verdict.culprits
    assert "device or network side" in verdict.reasoning


def test_stacks_without_a_stall_or_a_failure_say_nothing(tmp_path: Path) -> None:
    folder = _snapshot(tmp_path, {0: WAITING, 1: ["<module> (train.py:10)"]}, stalled=False)
    assert analyze([folder]).verdict.status is Status.NO_FAILURE


def test_the_kernel_says_what_holds_a_rank_that_its_stack_calls_its_own_code(tmp_path: Path) -> None:
    folder = _snapshot(tmp_path, {0: WAITING, 1: ["flock_forever (train.py:113)", "main (train.py:62)"], 2: WAITING})
    (folder / "snapshot-1-hang" / "rank1.proc.txt").write_text(
        "triage watch: rank 1 local_rank 1 world_size 3 pid 101 host node07\nState: S (sleeping)\n"
        "wchan: locks_lock_inode_wait\nsyscall: 73 (flock)\ncpu_ticks: 155\n")
    (folder / "snapshot-1-hang" / "rank0.proc.txt").write_text(
        "triage watch: rank 0 local_rank 0 world_size 3 pid 100 host node07\nState: S (sleeping)\n"
        "wchan: futex_do_wait\nsyscall: 202 (futex)\n")
    verdict = analyze([folder]).verdict
    assert [c.rank for c in verdict.culprits] == [1] and verdict.category is Category.HUNG_PROCESS
    reason = verdict.culprits[0].reason
    assert "blocked in the kernel on a file lock (locks_lock_inode_wait), in the system call flock" in reason
    assert "running its own code" not in reason
    assert [e.text for e in verdict.culprits[0].evidence[:2]] == ["wchan: locks_lock_inode_wait", "syscall: 73 (flock)"]


def test_uninterruptible_io_is_named_as_such(tmp_path: Path) -> None:
    folder = _snapshot(tmp_path, {0: WAITING, 1: WAITING, 2: ["save_shard (ckpt.py:40)"], 3: WAITING})
    (folder / "snapshot-1-hang" / "rank2.proc.txt").write_text(
        "triage watch: rank 2 local_rank 2 world_size 4 pid 102 host node07\nState: D (disk sleep)\n"
        "wchan: rpc_wait_bit_killable\nsyscall: 1 (write)\n")
    verdict = analyze([folder]).verdict
    assert [c.rank for c in verdict.culprits] == [2]
    assert "in uninterruptible I/O (D), in the system call write" in verdict.culprits[0].reason


# --- the process tree and ending it --------------------------------------------------------------

_TREE = textwrap.dedent("""
    import os, subprocess, sys, time
    env = dict(os.environ, RANK="5", LOCAL_RANK="1", WORLD_SIZE="8")
    rank = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                             "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
                             "time.sleep(600)"], env=env)
    print("ready", flush=True)
    time.sleep(600)
""")


def test_ranks_are_found_from_their_environment_and_the_tree_is_ended(tmp_path: Path) -> None:
    launcher = subprocess.Popen([sys.executable, "-c", _TREE], stdout=subprocess.PIPE, text=True)
    try:
        assert launcher.stdout is not None and launcher.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 60
        while len(procs.descendants(launcher.pid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        ranks, _ = procs.find_ranks(launcher.pid)
        # The rank's own child inherits RANK but is not a rank.
        assert [(r.rank, r.local_rank, r.world_size) for r in ranks] == [(5, 1, 8)]
        tree = procs.descendants(launcher.pid)
        assert act.end_tree(launcher.pid, grace_s=5) == []
        launcher.wait(timeout=30)
        assert not any(procs.alive(pid) for pid in tree)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()


def test_a_snapshot_without_the_sampler_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot, "sampler", lambda: None)
    me = procs.RankProc(pid=os.getpid(), rank=0)
    manifest = snapshot.take(tmp_path / "snap", [me], reason="hang", host="here")
    assert any("py-spy is not installed" in m["why"] for m in manifest.missing)
    saved = json.loads((tmp_path / "snap" / "manifest.json").read_text())
    assert saved["reason"] == "hang" and any(t["what"] == "proc" for t in saved["taken"])
    assert "State:" in (tmp_path / "snap" / "rank0.proc.txt").read_text()


def test_command_mode_passes_output_through_and_exits_with_the_jobs_code(tmp_path: Path) -> None:
    script = "import sys; print('hello from the job'); print('to stderr', file=sys.stderr); sys.exit(0)"
    done = subprocess.run([sys.executable, "-m", "triage", "watch", "--stall", "30", "--dir", str(tmp_path / "w"),
                           "--", sys.executable, "-c", script], capture_output=True, text=True, timeout=LIMIT_S)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello from the job\n" and "to stderr" in done.stderr
    assert (tmp_path / "w" / "job.stdout.log").read_text() == "hello from the job\n"


# --- real torchrun + gloo jobs -----------------------------------------------------------------------

def _torch_and_sampler() -> None:
    pytest.importorskip("torch")
    if snapshot.sampler() is None:
        pytest.skip("py-spy is not installed (pip install 'triage[watch]')")


def _torchrun(*job_args: str, nproc: int = 3) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc), str(JOB), *job_args]


def _watch(tmp_path: Path, *args: str, command: list[str] | None = None) -> tuple[int, dict, str]:
    out = tmp_path / "verdict.json"
    cmd = [sys.executable, "-m", "triage", "watch", "--dir", str(tmp_path / "w"), "-o", f"json={out}", *args]
    if command:
        cmd += ["--", *command]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=LIMIT_S, env=_job_env(tmp_path))
    report = json.loads(out.read_text()) if out.exists() else {}
    return done.returncode, report, done.stderr


def _job_env(folder: Path) -> dict[str, str]:
    """The job's environment, marked with this test's folder: tests run in parallel (pytest -n), and
    another test's job runs the same script at the same time."""
    return dict(os.environ, OMP_NUM_THREADS="1", TRIAGE_TEST_JOB=str(folder), PYTHON=sys.executable)


def _left_behind(folder: Path) -> list[int]:
    """Processes of this test's job still alive (its script in their command line, its mark in their
    environment)."""
    mark = f"TRIAGE_TEST_JOB={folder}\0"
    pids = []
    for entry in Path("/proc").iterdir():
        command = (procs.read_text(entry / "cmdline") or "").replace("\0", " ") if entry.name.isdigit() else ""
        if (str(JOB) in command and mark in (procs.read_text(entry / "environ", 1 << 20) or "")
                and procs.alive(int(entry.name))):
            pids.append(int(entry.name))
    return pids


def _culprit(report: dict) -> tuple[list[int], str, str]:
    verdict = report["verdict"]
    return ([c["rank"] for c in verdict["culprits"] if c["kind"] == "rank"], verdict["phase"],
            " ".join(e["text"] for c in verdict["culprits"] for e in c["evidence"]))


@pytest.mark.slow
def test_a_rank_sleeping_forever_is_named_and_kill_ends_the_job(tmp_path: Path) -> None:
    _torch_and_sampler()
    code, report, err = _watch(tmp_path, "--stall", "8", "--on-hang", "kill", "--grace", "5",
                               command=_torchrun("--fault", "sleep", "--rank", "2", "--at", "3"))
    ranks, phase, quoted = _culprit(report)
    assert code == 1, err
    assert ranks == [2] and phase == "execution" and "watch_job.py" in quoted
    assert report["verdict"]["hypothesis"] == "stack-outside-collective"
    assert _left_behind(tmp_path) == []


@pytest.mark.slow
@pytest.mark.matrix
def test_attached_to_a_job_holding_the_gil_in_a_c_call(tmp_path: Path) -> None:
    # py-spy reads a process's memory without its GIL: a rank stuck in a C call holding it is read too.
    _torch_and_sampler()
    log = open(tmp_path / "job.log", "wb")  # noqa: SIM115 - the job holds it
    job = subprocess.Popen(_torchrun("--fault", "gil", "--rank", "1", "--at", "2"), stdout=log,
                           stderr=subprocess.STDOUT, env=_job_env(tmp_path))
    log.close()
    try:
        code, report, err = _watch(tmp_path, "--pid", str(job.pid), "--stall", "8", "--on-hang", "kill",
                                   "--grace", "5")
        job.wait(timeout=60)
        ranks, phase, quoted = _culprit(report)
        assert code == 1, err
        assert ranks == [1] and phase == "execution" and "fault" in quoted
        assert _left_behind(tmp_path) == []
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()


@pytest.mark.slow
@pytest.mark.matrix
def test_a_rank_blocked_on_a_lock_is_named_with_native_frames(tmp_path: Path) -> None:
    _torch_and_sampler()
    code, report, err = _watch(tmp_path, "--stall", "8", "--on-hang", "kill", "--grace", "5", "--native",
                               command=_torchrun("--fault", "lock", "--rank", "0", "--at", "2"))
    ranks, _, quoted = _culprit(report)
    assert code == 1, err
    assert ranks == [0]
    if "PyThread_acquire_lock" in quoted:  # native unwinding can be refused; the rank is named anyway
        assert "blocked on a lock" in report["verdict"]["culprits"][0]["reason"]
    assert _left_behind(tmp_path) == []


@pytest.mark.slow
@pytest.mark.matrix
def test_a_rank_hanging_inside_a_sub_group_is_named(tmp_path: Path) -> None:
    _torch_and_sampler()
    code, report, err = _watch(tmp_path, "--stall", "8", "--on-hang", "kill", "--grace", "5",
                               command=_torchrun("--fault", "subgroup", "--rank", "1", "--at", "2"))
    assert code == 1, err
    assert _culprit(report)[0] == [1]
    assert _left_behind(tmp_path) == []


@pytest.mark.slow
def test_a_killed_rank_ends_the_job_with_its_code_after_a_post_mortem(tmp_path: Path) -> None:
    _torch_and_sampler()
    code, report, err = _watch(tmp_path, "--stall", "30",
                               command=_torchrun("--fault", "kill", "--rank", "1", "--at", "2"))
    assert code == 1, err  # torchrun's own exit code
    assert "post-mortem" in err
    assert _culprit(report)[0] == [1] and report["verdict"]["category"] == "crashed_process"


@pytest.mark.slow
@pytest.mark.matrix
def test_slow_steady_steps_and_a_pause_below_the_window_do_not_fire(tmp_path: Path) -> None:
    _torch_and_sampler()
    code, report, err = _watch(tmp_path, "--stall", "15",
                               command=_torchrun("--fault", "pause", "--at", "3", "--pause", "4",
                                                 "--steps", "7", "--step-time", "1.5"))
    assert code == 0, err
    assert report == {} and "no progress" not in err
    assert not list((tmp_path / "w").glob("snapshot-*"))


@pytest.mark.slow
@pytest.mark.matrix
def test_a_watcher_killed_mid_way_leaves_the_job_to_finish(tmp_path: Path) -> None:
    _torch_and_sampler()
    folder = tmp_path / "w"
    watcher = subprocess.Popen([sys.executable, "-m", "triage", "watch", "--stall", "60", "--dir", str(folder),
                                "--", *_torchrun("--steps", "12", "--step-time", "0.5")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_job_env(tmp_path))
    out = folder / "job.stdout.log"
    deadline = time.monotonic() + LIMIT_S
    while "step 1 " not in (out.read_text() if out.exists() else "") and time.monotonic() < deadline:
        time.sleep(0.2)
    watcher.send_signal(signal.SIGKILL)
    watcher.wait()
    while _left_behind(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _left_behind(tmp_path) == []
    text = out.read_text()
    assert all(f"step 11 rank {r}" in text for r in range(3)), text[-500:]


# --- the progress model on real jobs: hangs named, healthy pauses never harmed ---------------------

def _kernel_words() -> bool:
    """Whether this kernel shows wait channels (some hide them: /proc/<pid>/wchan reads 0)."""
    return (procs.read_text(Path("/proc/self/wchan")) or "0").strip() not in ("", "0")


def test_a_rank_blocked_on_a_file_lock_is_named_with_the_kernels_word(tmp_path: Path) -> None:
    _torch_and_sampler()
    code, report, err = _watch(tmp_path, "--stall", "8", "--on-hang", "kill", "--grace", "5",
                               command=_torchrun("--fault", "flock", "--rank", "1", "--at", "2",
                                                 "--ckpt-dir", str(tmp_path)))
    ranks, phase, _ = _culprit(report)
    assert code == 1, err
    assert ranks == [1] and phase == "execution"
    if _kernel_words():
        assert "blocked in the kernel on a file lock" in report["verdict"]["culprits"][0]["reason"]
    log = (tmp_path / "w" / "watch.log").read_text()
    assert "idle hang, window 8 s (--stall 8)" in log and "ending the job: diagnosed" in log
    assert _left_behind(tmp_path) == []


def _healthy(tmp_path: Path, *job: str, stall: str = "10") -> None:
    code, report, err = _watch(tmp_path, "--stall", stall, "--on-hang", "kill", "--grace", "5",
                               command=_torchrun(*job))
    assert code == 0, err
    assert report == {} and "ending the job" not in err
    assert not list((tmp_path / "w").glob("snapshot-*"))


@pytest.mark.slow
def test_an_evaluation_of_every_rank_longer_than_the_window_is_never_killed(tmp_path: Path) -> None:
    _torch_and_sampler()
    _healthy(tmp_path, "--fault", "eval", "--at", "2", "--pause", "20", "--steps", "4")


@pytest.mark.slow
def test_a_checkpoint_of_rank_0_while_the_others_wait_in_a_barrier_is_never_killed(tmp_path: Path) -> None:
    _torch_and_sampler()
    _healthy(tmp_path, "--fault", "checkpoint", "--rank", "0", "--at", "2", "--pause", "25", "--steps", "4",
             "--ckpt-dir", str(tmp_path))


@pytest.mark.slow
@pytest.mark.matrix
def test_steps_that_lengthen_past_the_window_are_never_killed(tmp_path: Path) -> None:
    _torch_and_sampler()
    _healthy(tmp_path, "--fault", "lengthen", "--at", "0", "--step-time", "1", "--growth", "1.6", "--steps", "7",
             stall="8")


@pytest.mark.slow
@pytest.mark.matrix
def test_attached_to_a_job_whose_output_is_a_pipe_it_says_so_and_never_kills(tmp_path: Path) -> None:
    _torch_and_sampler()
    job = subprocess.Popen(_torchrun("--fault", "eval", "--at", "3", "--pause", "20", "--steps", "12",
                                     "--step-time", "0.5"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           env=_job_env(tmp_path))
    lines: list[bytes] = []
    reader = threading.Thread(target=lambda: lines.extend(job.stdout or []), daemon=True)
    reader.start()
    try:
        code, report, err = _watch(tmp_path, "--pid", str(job.pid), "--stall", "10", "--on-hang", "kill")
        assert job.wait(timeout=LIMIT_S) == 0
        reader.join(timeout=30)
        assert code == 0, err
        assert report == {}
        assert "cannot see the job's output (its stdout is a pipe" in err
        assert "silence alone is never acted upon" in err and "ending the job" not in err
        assert b"step 11 rank 2" in b"".join(lines)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()


@pytest.mark.slow
@pytest.mark.matrix
def test_a_spinning_rank_under_a_plain_shell_launcher_is_named(tmp_path: Path) -> None:
    # The suspect line before the window is the recorded replays' (test_watch_progress.py): here the
    # window is the suspect's own delay, so the outcome does not hang on when a sample falls.
    _torch_and_sampler()
    command = ["sh", str(LAUNCHER), "3", str(_free_port()), str(JOB), "--fault", "spin", "--rank", "2", "--at", "2"]
    code, report, err = _watch(tmp_path, "--stall", "10", "--on-hang", "kill", "--grace", "5", command=command)
    assert code == 1, err
    assert _culprit(report)[0] == [2]
    log = (tmp_path / "w" / "watch.log").read_text()
    assert "spinning hang, window 10 s (--stall 10)" in log and "rank 2 busy outside any collective" in log
    assert _left_behind(tmp_path) == []


@pytest.mark.slow
@pytest.mark.matrix
def test_attached_to_a_job_whose_rank_already_spins(tmp_path: Path) -> None:
    _torch_and_sampler()
    log_path = tmp_path / "job.log"
    with open(log_path, "wb") as log:
        job = subprocess.Popen(_torchrun("--fault", "spin", "--rank", "1", "--at", "2", "--steps", "100"),
                               stdout=log, stderr=subprocess.STDOUT, env=_job_env(tmp_path))
    try:
        deadline = time.monotonic() + LIMIT_S
        while "fault spin rank 1" not in log_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.5)
        code, report, err = _watch(tmp_path, "--pid", str(job.pid), "--stall", "10", "--on-hang", "kill",
                                   "--grace", "5")
        job.wait(timeout=60)
        assert code == 1, err
        assert _culprit(report)[0] == [1]
        assert _left_behind(tmp_path) == []
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
