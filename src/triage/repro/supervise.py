"""Standalone mode: launch local ranks, follow them, and end whatever does not end by itself.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex

from triage.repro.logfile import LineLog
from triage.repro.options import ReproOptions
from triage.repro.protocol import (
    ENV_GROUP,
    ENV_LABEL,
    ENV_OPTIONS,
    ENV_PARENT,
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


@dataclass
class Run:
    """One group of ranks that run together: the whole job, or a bisect sub-group."""

    opts: ReproOptions
    port: int
    log: LineLog  # the coordinator's log of this run
    devices: list[str] | None = None  # CUDA_VISIBLE_DEVICES entry of each group rank
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


def _rank_spec(run: Run, index: int) -> tuple[dict[str, Any], int, Path]:
    """What the zygote needs to start one rank: its environment and its two descriptors."""
    opts = run.opts
    job_rank = opts.group[index]
    log_path = Path(opts.log_dir) / f"rank{job_rank}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    reader, writer = os.pipe()
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    env = {
        "RANK": str(index), "WORLD_SIZE": str(len(opts.group)), "LOCAL_RANK": str(index),
        "LOCAL_WORLD_SIZE": str(len(opts.group)), "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(run.port), ENV_OPTIONS: opts.to_json(), ENV_STATUS_FD: str(writer),
        ENV_LABEL: str(job_rank), ENV_GROUP: "-".join(map(str, opts.group)), ENV_PARENT: str(os.getpid()),
        "TORCHELASTIC_USE_AGENT_STORE": "False",
    }
    if run.devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(run.devices)
    return {"env": env, "log_fd": log_fd, "status_fd": writer}, reader, log_path


def _spawn_all(runs: list[Run], stderr: int) -> list[tuple[Run, Proc]]:
    """Fork every rank of every run from one zygote; return them, now our own children."""
    _become_subreaper()
    specs: list[dict[str, Any]] = []
    placed: list[tuple[Run, int, int, Path]] = []  # run, index, status reader, log path
    try:
        for run in runs:
            for index in range(len(run.opts.group)):
                spec, reader, log_path = _rank_spec(run, index)
                specs.append(spec)
                placed.append((run, index, reader, log_path))
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
            # Ctrl-C while starting: ranks already forked find themselves orphaned and end.
            zygote.kill()
            raise
    finally:
        for spec in specs:
            os.close(int(spec["log_fd"]))
            os.close(int(spec["status_fd"]))
    pids = [int(x) for x in out.split()]
    if len(pids) != len(placed):
        for pid in pids:
            _kill_group(pid)
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


_FAULTHANDLER_TIMEOUT = regex.compile(r"^Timeout \(\d+:\d\d:\d\d(?:\.\d+)?\)!$", regex.M)


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


def _signal(proc: Proc, sig: int, *, group: bool) -> None:
    try:
        if group:
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def supervise(runs: list[Run], stderr: int) -> None:
    """Launch every run's ranks, follow them until all have ended, leave no process behind.

    `stderr` receives what the zygote says if it cannot start the ranks (the coordinator log).
    """
    sel = selectors.DefaultSelector()
    procs: list[tuple[Run, Proc]] = []
    try:
        procs = _spawn_all(runs, stderr)
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
