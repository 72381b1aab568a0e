"""Start ranks, follow them, and end whatever does not end by itself.

Standalone mode (coordinator.py) starts every local rank here; launcher mode (under_launcher.py)
starts the one rank of this process, forked early (`fork_waiting_rank`), and watches its peers
through the `watch` callback.

Each rank is a process in its own session, with its stdout and stderr appended to its log and a
pipe back to us for status messages. Ranks keep their own deadlines (watchdog.py); this loop is
the outer guard, and the one that sees what a rank cannot report itself:

- a rank that dies without a word (a crash): logged with its signal and phase; the surviving ranks
  of its group get a short grace to log what they saw, then are ended;
- a rank that outlives its deadline by a margin (its watchdog could not run) or never starts;
- in every case, before a rank is ended, SIGUSR1 makes faulthandler write its Python stacks.

Whatever happens (an exception, Ctrl-C), the `finally` clause kills every process group we made.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import regex

from triage.lazy_regex import lazy_compile
from triage.repro.launcher_env import RankEnv
from triage.repro.logfile import LineLog
from triage.repro.options import ReproOptions
from triage.repro.protocol import (
    ENV_LABEL,
    ENV_OPTIONS,
    ENV_PARENT,
    ENV_RANK_ENV,
    ENV_STATUS_FD,
    decode_lines,
)
from triage.repro.watchdog import BACKSTOP_S

TICK_S = 0.05
STARTUP_S = 120.0  # spawn to `phase comm_init start`: Python and torch imports on a busy node
OUTER_MARGIN_S = BACKSTOP_S + 3.0  # after a phase deadline, before we end a rank from outside
CRASH_GRACE_S = 1.5  # survivors of a crash get this long to log what they saw
STACK_WAIT_S = 0.3  # for faulthandler to write the stacks after SIGUSR1
_PR_SET_CHILD_SUBREAPER = 36


@dataclass
class Proc:
    job_rank: int
    index: int
    pid: int
    reader: int
    log_path: Path
    spawned: float
    buffer: bytes = b""
    phase: str | None = None
    phase_started: float = 0.0
    phase_secs: dict[str, float] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)  # phase -> why
    end: dict[str, Any] | None = None  # the rank's own `end` message
    died: str | None = None  # phase in which it died without reporting
    ended_by_us: str | None = None  # why we ended it
    hung_hard: bool = False  # faulthandler's backstop timer ended it (see watchdog.py)
    returncode: int | None = None
    lost: bool = False  # launcher mode: no word came from its supervisor (its node or process is gone)


@dataclass
class Run:
    """One group of ranks that run together: the whole job, or a bisect sub-group."""

    opts: ReproOptions
    envs: list[RankEnv]  # the ranks we start (all of the group standalone, one under a launcher)
    log: LineLog  # the coordinator's log of this run
    extra_env: dict[str, str] = field(default_factory=dict)  # for every rank (NCCL_DEBUG, …)
    store: Any = None  # the TCPStore this run's ranks meet at, hosted by us (outlives any rank)
    procs: list[Proc] = field(default_factory=list)
    result: dict[str, Any] | None = None  # rank 0's findings
    death: tuple[int, float] | None = None  # first rank that died without reporting, and when


class SpawnError(RuntimeError):
    """The ranks could not be started at all (the message says why)."""


def _become_subreaper() -> None:
    """Orphans of our descendants (the ranks, once the zygote exits) become our children."""
    try:
        if ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0:
            return
    except (OSError, AttributeError):
        pass
    raise SpawnError("triage repro runs its ranks on Linux only (it needs PR_SET_CHILD_SUBREAPER)")


def _rank_env(run: Run, rank_env: RankEnv, status_fd: int) -> tuple[dict[str, str], Path]:
    """One rank's environment (who it is, what to run) and its log file."""
    opts = run.opts
    job_rank = opts.group[rank_env.rank]
    log_path = Path(opts.log_dir) / f"rank{job_rank}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = {
        **run.extra_env, ENV_OPTIONS: opts.to_json(), ENV_STATUS_FD: str(status_fd), ENV_LABEL: str(job_rank),
        ENV_PARENT: str(os.getpid()), ENV_RANK_ENV: rank_env.to_json(),
    }
    if rank_env.nccl_hostid is not None:
        env["NCCL_HOSTID"] = rank_env.nccl_hostid
    return env, log_path


def become_rank(env: dict[str, str], log_fd: int, status_fd: int, other_fds: set[int]) -> NoReturn:
    """In a freshly forked child: become the rank (worker.py) with its log as stdout and stderr."""
    with contextlib.suppress(OSError):
        os.setsid()  # its own process group: we end a rank and anything it started; a launcher's
        # killpg of our group does not reach it (we decide, and first ask for its stack)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(log_fd, 1)  # native messages of torch/gloo/NCCL and faulthandler land in the rank log
    os.dup2(log_fd, 2)
    for fd in other_fds - {status_fd, 0, 1, 2}:
        with contextlib.suppress(OSError):
            os.close(fd)
    os.close(devnull)
    os.environ.update(env)
    try:
        from triage.repro import worker  # already imported by the zygote or fork_waiting_rank

        worker.main()
    finally:
        os._exit(1)  # main() never returns; if it raised, the supervisor sees a silent death


@dataclass
class Waiting:
    """A rank process forked early (before we import torch), waiting for its environment."""

    pid: int
    go: int  # we write its spec here, then close it
    status: int  # its status pipe, our end
    child_status: int  # the number of the pipe's other end, in the child


def fork_waiting_rank() -> Waiting:
    """Import torch, then fork the process that will be the rank, as the zygote does.

    Under a launcher each process supervises one rank and needs torch itself (for the store);
    forking the rank from here, after the import and before any thread or CUDA exists, spares
    each rank a second import of torch (seconds of CPU on a busy host). The child blocks until
    `_spawn_all` sends what it needs (the log folder is only known once the supervisors have
    met), and exits quietly if we go away first.
    """
    import triage.repro.worker  # noqa: F401 - shared with the child; it imports torch

    go_read, go_write = os.pipe()
    status_read, status_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(go_write)
        os.close(status_read)
        with contextlib.suppress(OSError):
            os.setsid()
        chunks = []
        while chunk := os.read(go_read, 65536):
            chunks.append(chunk)
        if not chunks:
            os._exit(0)  # the supervisor stopped before the rank was needed
        spec = json.loads(b"".join(chunks))
        log_fd = os.open(spec["log_path"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        become_rank(spec["env"], log_fd, status_write, {go_read, log_fd})
    os.close(go_read)
    os.close(status_write)
    return Waiting(pid, go_write, status_read, status_write)


def _start_waiting(run: Run, waiting: Waiting) -> list[tuple[Run, Proc]]:
    (rank_env,) = run.envs
    status_fd = waiting.status
    env, log_path = _rank_env(run, rank_env, waiting.child_status)
    os.write(waiting.go, json.dumps({"env": env, "log_path": str(log_path)}).encode())
    os.close(waiting.go)
    os.set_blocking(status_fd, False)
    proc = Proc(run.opts.group[rank_env.rank], rank_env.rank, waiting.pid, status_fd, log_path, time.monotonic())
    run.procs.append(proc)
    return [(run, proc)]


def _spawn_all(runs: list[Run], stderr: int, waiting: Waiting | None = None) -> list[tuple[Run, Proc]]:
    """Fork every rank of every run from one zygote; return them, now our own children."""
    if waiting is not None:
        return _start_waiting(runs[0], waiting)
    _become_subreaper()
    specs: list[dict[str, Any]] = []
    placed: list[tuple[Run, int, int, Path]] = []  # run, index, status reader, log path
    try:
        for run in runs:
            for rank_env in run.envs:
                reader, writer = os.pipe()
                env, log_path = _rank_env(run, rank_env, writer)
                log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                specs.append({"env": env, "log_fd": log_fd, "status_fd": writer})
                placed.append((run, rank_env.rank, reader, log_path))
        fds = [int(s[k]) for s in specs for k in ("log_fd", "status_fd")]
        zygote = subprocess.Popen(
            [sys.executable, "-m", "triage.repro.zygote"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=stderr, pass_fds=fds, start_new_session=True,
        )
        try:
            out, _ = zygote.communicate(json.dumps(specs).encode(), timeout=STARTUP_S)
        except subprocess.TimeoutExpired:
            zygote.kill()
            zygote.wait()
            out = b""
        except BaseException:
            # Ctrl-C while starting: the zygote may have forked ranks whose pids we never read.
            # Once it is dead they are our children (we are their subreaper): end them before the
            # interrupt goes on, rather than leave them to notice, once we are gone, that they
            # are orphans.
            _kill_group(zygote.pid)  # with any rank not yet in a session of its own
            zygote.wait()
            _end_children()
            raise
    finally:
        for spec in specs:
            os.close(int(spec["log_fd"]))
            os.close(int(spec["status_fd"]))
    pids = [int(x) for x in out.split()]
    if len(pids) != len(placed):
        for pid in pids:
            _kill_group(pid)
        _end_children()  # and any rank a zygote that timed out had forked before it was killed
        for _, _, reader, _ in placed:
            os.close(reader)
        raise SpawnError("the ranks could not be started")
    now = time.monotonic()
    procs = []
    for (run, index, reader, log_path), pid in zip(placed, pids, strict=True):
        os.set_blocking(reader, False)
        proc = Proc(run.opts.group[index], index, pid, reader, log_path, now)
        run.procs.append(proc)
        procs.append((run, proc))
    return procs


def _poll(pid: int) -> int | None:
    """The exit code of a child that ended (negative: killed by that signal), else None."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return -int(signal.SIGKILL)  # reaped elsewhere: it is gone, and we do not know how
    if done == 0:
        return None
    return os.waitstatus_to_exitcode(status)


def _apply(run: Run, proc: Proc, message: dict[str, Any], now: float) -> None:
    kind = message.get("type")
    if kind == "phase":
        phase, state = str(message.get("phase")), message.get("state")
        if state == "start":
            proc.phase, proc.phase_started = phase, now
        elif state == "done":
            proc.phase_secs[phase] = float(message.get("secs", 0.0))
        elif state == "failed":
            proc.failed[phase] = str(message.get("why", ""))
    elif kind == "end":
        proc.end = message
    elif kind == "result":
        run.result = message


def _drain(run: Run, proc: Proc, sel: selectors.BaseSelector, now: float) -> None:
    while True:
        try:
            chunk = os.read(proc.reader, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            with contextlib.suppress(KeyError, ValueError):
                sel.unregister(proc.reader)
            return
        messages, proc.buffer = decode_lines(proc.buffer + chunk)
        for message in messages:
            _apply(run, proc, message, now)


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _on_exit(run: Run, proc: Proc, code: int, now: float) -> None:
    proc.returncode = code
    if proc.ended_by_us is not None:
        return
    phase = proc.phase or "comm_init"
    if proc.end is not None:
        if code != 0:
            run.log.line(f"rank {proc.job_rank} ended with exit code {code} after reporting: "
                         f"{proc.end.get('status', '?')}")
        return
    if code == 1 and _faulthandler_timed_out(proc.log_path):
        proc.hung_hard = True
        run.log.line(f"watchdog: rank {proc.job_rank} hung hard in phase {phase}: faulthandler's timer "
                     f"ended it {BACKSTOP_S:g} s after its deadline (its own watchdog could not run: a call "
                     "held the interpreter); its stack is in its log")
        return
    proc.died = phase
    before = "" if proc.phase else " (before the phase began: see its log)"
    if code < 0:
        run.log.line(f"rank {proc.job_rank} was killed by {_signal_name(code)} (exit code {code}) in "
                     f"phase {phase}{before}, without reporting why")
    else:
        run.log.line(f"rank {proc.job_rank} exited with code {code} in phase {phase}{before}, "
                     "without reporting why")
    if run.death is None:
        run.death = (proc.job_rank, now)


_FAULTHANDLER_TIMEOUT = lazy_compile(r"^Timeout \(\d+:\d\d:\d\d(?:\.\d+)?\)!$", regex.M)


def _faulthandler_timed_out(log_path: Path) -> bool:
    """Whether the rank's log ends with the dump of faulthandler.dump_traceback_later."""
    try:
        with open(log_path, "rb") as f:
            f.seek(max(0, log_path.stat().st_size - (64 << 10)))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return False
    return _FAULTHANDLER_TIMEOUT.search(tail) is not None


def _overdue(run: Run, proc: Proc, now: float) -> str | None:
    """Why the coordinator must end this live rank now, or None."""
    deadlines = run.opts.deadlines
    if proc.phase is None:
        if now - proc.spawned > STARTUP_S:
            return f"watchdog: rank {proc.job_rank} did not start phase comm_init within {STARTUP_S:g} s " \
                   "of its launch; stack captured, rank killed"
        return None
    late = now - proc.phase_started - deadlines[proc.phase]
    if late > OUTER_MARGIN_S:
        return (f"watchdog: rank {proc.job_rank} hung hard in phase {proc.phase}: it did not end "
                f"{late:.1f} s after its {deadlines[proc.phase]:g} s deadline (its own watchdog could "
                "not run); stack captured, rank killed")
    if run.death is not None and now - run.death[1] > CRASH_GRACE_S:
        dead, when = run.death
        return (f"watchdog: ended rank {proc.job_rank} (still in phase {proc.phase}) {now - when:.1f} s "
                f"after rank {dead} died; its stack is in its log")
    return None


def _end(ending: list[tuple[Run, Proc, str]]) -> None:
    """Capture the stacks of these ranks, then kill their process groups."""
    for run, proc, why in ending:
        note = LineLog(proc.log_path, "coordinator")  # in the rank's own log, above its stack
        note.line(f"capturing the stack of rank {proc.job_rank} before ending it (SIGUSR1)")
        note.close()
        proc.ended_by_us = why
        run.log.line(why)
        _signal(proc, signal.SIGUSR1, group=False)
    time.sleep(STACK_WAIT_S)
    for _, proc, _ in ending:
        _signal(proc, signal.SIGKILL, group=True)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _children() -> list[int]:
    """The pids of our live child processes, from /proc (whose pids no one told us)."""
    me, found = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        # `pid (comm) state ppid …`: comm may hold spaces and parentheses, so read after the last ')'
        after = stat[stat.rfind(")") + 1:].split()
        if len(after) > 1 and after[1] == str(me):
            found.append(int(entry.name))
    return found


def _end_children() -> None:
    """Kill every child process and its process group, and reap it."""
    for pid in _children():
        _kill_group(pid)  # a rank leads its own session
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)  # one forked a moment ago that has not made it yet
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def _signal(proc: Proc, sig: int, *, group: bool) -> None:
    try:
        if group:
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


Watch = Callable[[float], None]  # called every tick: looks beyond these ranks (launcher mode)


def supervise(runs: list[Run], stderr: int, watch: Watch | None = None, waiting: Waiting | None = None) -> None:
    """Launch every run's ranks, follow them until all have ended, leave no process behind.

    `stderr` receives what the zygote says if it cannot start the ranks (the coordinator log).
    """
    sel = selectors.DefaultSelector()
    procs: list[tuple[Run, Proc]] = []
    try:
        procs = _spawn_all(runs, stderr, waiting)
        for run, proc in procs:
            sel.register(proc.reader, selectors.EVENT_READ, (run, proc))
        while any(p.returncode is None for _, p in procs):
            now = time.monotonic()
            for key, _ in sel.select(TICK_S) if sel.get_map() else []:
                run, proc = key.data
                _drain(run, proc, sel, now)
            if not sel.get_map():
                time.sleep(TICK_S)
            for run, proc in procs:
                if proc.returncode is None and (code := _poll(proc.pid)) is not None:
                    _drain(run, proc, sel, now)
                    _on_exit(run, proc, code, now)
            if watch is not None:
                watch(now)
            ending = [(run, proc, why) for run, proc in procs
                      if proc.returncode is None and proc.ended_by_us is None
                      and (why := _overdue(run, proc, now)) is not None]
            if ending:
                _end(ending)
    finally:
        for _, proc in procs:
            if proc.returncode is None:
                _kill_group(proc.pid)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(proc.pid, 0)
            else:
                _kill_group(proc.pid)  # anything the rank left in its group
            with contextlib.suppress(OSError):
                os.close(proc.reader)
        sel.close()
