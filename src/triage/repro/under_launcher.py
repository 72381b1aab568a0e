"""Launcher mode: under torchrun, srun or mpirun, each process supervises one rank; rank 0's reports.

Standalone mode (coordinator.py) starts every rank itself; here an external launcher has started
one `triage repro` process per rank, and launcher_env.py has read who this one is.

Each process the launcher starts is one rank's *supervisor*: it starts the rank (worker.py, forked
by the zygote as in standalone mode), follows it, and outlives it. Whatever ends the rank (a crash,
a hang its watchdog ends, a wrong value, the OOM killer), its supervisor is still there to say so.
The supervisors meet at a TCPStore (rank 0's supervisor hosts it, unless torchrun's agent does):

  logdir          the log folder's name, chosen by rank 0 (each node makes it under its own cwd)
  hello/<rank>    the supervisor is up: its host and pid
  done/<rank>     its rank has ended: how, and the files its host wrote for it (for the reporter)
  report          rank 0's supervisor has delivered the verdict: the exit code

No supervisor exits before `report` (or a deadline): a launcher ends every process as soon as one
exits, and the reporter must not be ended before it has spoken. A launcher's SIGTERM is taken as
"stop now": the rank is stopped (it logs where it was) and the verdict is given on what arrived.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from triage import exitcodes
from triage.repro import store as stores
from triage.repro.coordinator import Outcome, phase_rows, rank_extra_env
from triage.repro.launcher_env import RankEnv
from triage.repro.logfile import LineLog, stamp
from triage.repro.options import ReproOptions
from triage.repro.protocol import PHASES
from triage.repro.supervise import (
    CRASH_GRACE_S,
    OUTER_MARGIN_S,
    STARTUP_S,
    Proc,
    Run,
    SpawnError,
    Waiting,
    supervise,
)

POLL_S = 0.2  # how often a supervisor looks at its peers' news in the store
STOP_GRACE_S = 3.0  # a rank asked to stop (SIGTERM) gets this long before it is killed
STOPPING_WAIT_S = 6.0  # once the launcher says stop, the reporter waits at most this for the others
NEVER_CAME_S = 2.0  # after our rank ended, ranks that never said hello get this long, not more
ACK_WAIT_S = 3.0  # the reporter keeps the store up this long for the others to read `report`
FILE_CAP = 4 << 20  # of a rank's log, the reporter gets the last 4 MiB
PREFIX = "triage-repro/{run_id}/supervisors/"
STORE_ERRORS = (RuntimeError, OSError, ValueError)  # what a store whose host is gone raises


@dataclass
class Ended:
    """What a supervisor posts when its rank has ended (`done/<rank>`)."""

    rank: int
    host: str
    proc: dict[str, Any]  # the supervise.Proc record of the rank, less its descriptors
    result: dict[str, Any] | None  # rank 0's findings (bandwidth, late ranks), when it got there
    files: dict[str, str] = field(default_factory=dict)  # name -> text, for a reporter on another node


class Stop:
    """SIGTERM or SIGINT from the launcher (or a person): noted, acted on in the supervise loop."""

    def __init__(self) -> None:
        self.signal: str | None = None
        self.at = 0.0

    def install(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._note)

    def _note(self, signum: int, _frame: Any) -> None:
        if self.signal is None:
            self.signal, self.at = signal.Signals(signum).name, time.monotonic()


class RecordingLog(LineLog):
    """The node's coordinator log; keeps this supervisor's own lines for the reporter."""

    def __init__(self, path: Path, writer: str) -> None:
        super().__init__(path, writer)
        self.lines: list[str] = []

    def write(self, text: str) -> None:
        self.lines.append(text)
        super().write(text)


@dataclass
class Supervisor:
    """One supervisor: its rank, the store, the log folder, what it saw."""

    opts: ReproOptions
    env: RankEnv
    store: Any
    log_dir: Path
    run: Run  # this rank's run: the one process we supervise
    waiting: Waiting  # that process, forked early, waiting to be told where to log
    stop: Stop = field(default_factory=Stop)
    peers_done: dict[int, Ended] = field(default_factory=dict)
    lost: dict[int, str] = field(default_factory=dict)  # rank -> phase, for ranks that sent no word
    _next_poll: float = 0.0
    _stop_sent: float | None = None

    @property
    def host(self) -> str:
        return host_name()

    # -- the rank -------------------------------------------------------------------------------

    def supervise_rank(self) -> Proc:
        self.store.set(f"hello/{self.env.rank}", json.dumps({"host": self.host, "pid": os.getpid()}))
        supervise([self.run], self.run.log.fd, self._watch, self.waiting)
        return self.run.procs[0]

    def _watch(self, now: float) -> None:
        proc = self.run.procs[0]
        if self.stop.signal is not None and self._stop_sent is None and proc.returncode is None:
            self.run.log.line(f"rank {self.env.rank}: {self.env.launcher} asked this process to stop "
                              f"({self.stop.signal}); stopping its rank")
            self._stop_sent = now
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(proc.pid, signal.SIGTERM)  # its watchdog logs where it was, then it ends
        if self._stop_sent is not None and proc.returncode is None and now - self._stop_sent > STOP_GRACE_S:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        if now >= self._next_poll:
            self._next_poll = now + POLL_S
            self._read_peers()
            dead = next((e for e in self.peers_done.values() if e.proc.get("died")), None)
            if dead is not None and self.run.death is None:
                # A peer died without a word: our rank gets the same grace as in standalone mode.
                self.run.death = (dead.rank, now)

    def _read_peers(self) -> None:
        for rank in range(self.env.world_size):
            if rank in self.peers_done or rank == self.env.rank:
                continue
            try:
                if not self.store.check([f"done/{rank}"]):
                    continue
                self.peers_done[rank] = Ended(**json.loads(self.store.get(f"done/{rank}")))
            except (*STORE_ERRORS, TypeError):
                return  # the store is gone or the value torn: the deadlines still hold

    def post_done(self, proc: Proc, log: RecordingLog) -> Ended:
        record = {k: v for k, v in asdict(proc).items() if k not in ("reader", "buffer", "log_path", "pid")}
        files = {log.path.name: "".join(log.lines)}
        with contextlib.suppress(*STORE_ERRORS):
            files[proc.log_path.name] = _tail(proc.log_path, FILE_CAP)
        ended = Ended(self.env.rank, self.host, record, self.run.result, files)
        with contextlib.suppress(*STORE_ERRORS):
            self.store.set(f"done/{self.env.rank}", json.dumps(asdict(ended)))
        return ended

    # -- the reporter (rank 0) ------------------------------------------------------------------

    def gather(self, mine: Ended, log: RecordingLog) -> list[Ended]:
        """Every rank's `done`, or what arrived by the deadline; the missing ranks are findings."""
        wait = STOPPING_WAIT_S if self.stop.signal else max(self.opts.deadlines.values()) + OUTER_MARGIN_S \
            + CRASH_GRACE_S + 5.0
        started = time.monotonic()
        until = started + wait
        self.peers_done[mine.rank] = mine
        while len(self.peers_done) < self.env.world_size:
            if self.stop.signal is not None:
                until = min(until, self.stop.at + STOPPING_WAIT_S)
            now = time.monotonic()
            missing = [r for r in range(self.env.world_size) if r not in self.peers_done]
            if now >= until or (now - started > NEVER_CAME_S and all(self._hello(r) is None for r in missing)):
                break  # (ranks that never said hello will not: our own rank is past comm_init's deadline)
            time.sleep(POLL_S)
            self._read_peers()
        missing = [r for r in range(self.env.world_size) if r not in self.peers_done]
        reached = max((PHASES.index(e.proc["phase"]) for e in self.peers_done.values() if e.proc.get("phase")),
                      default=0)
        waited = f"{time.monotonic() - started:.0f} s after rank 0's own rank ended"
        for rank in missing:
            hello = self._hello(rank)
            self.lost[rank] = "comm_init" if hello is None else PHASES[reached]
            if hello is None:
                log.line(f"rank {rank} never reached the rendezvous at {self.env.master_addr}:"
                         f"{self.env.master_port}: its process did not start, or its node cannot reach "
                         f"this one (no word from it {waited}); phase comm_init")
            else:
                log.line(f"rank {rank} on host {hello['host']} sent no word after it started (its process "
                         f"or its node went away; nothing {waited}); phase {PHASES[reached]}")
        self._write_remote_files(log)
        return list(self.peers_done.values())

    def _hello(self, rank: int) -> dict[str, Any] | None:
        try:
            if self.store.check([f"hello/{rank}"]):
                value: dict[str, Any] = json.loads(self.store.get(f"hello/{rank}"))
                return value
        except STORE_ERRORS:
            pass
        return None

    def _write_remote_files(self, log: RecordingLog) -> None:
        """A rank whose log is not in our folder ran on another node: keep its files under its host."""
        for ended in self.peers_done.values():
            if (self.log_dir / f"rank{ended.rank}.log").exists():
                continue  # this node, or a log folder that the nodes share
            folder = self.log_dir / _safe(ended.host)
            folder.mkdir(parents=True, exist_ok=True)
            for name, text in ended.files.items():
                with open(folder / _safe(name), "a", encoding="utf-8") as f:
                    f.write(text)
        if any(e.host != self.host for e in self.peers_done.values()):
            log.line(f"gathered the logs of {len({e.host for e in self.peers_done.values()})} hosts")

    def outcome(self, everyone: list[Ended]) -> Outcome:
        """The phases as the standalone coordinator would show them, from every rank's record."""
        procs = [_proc(e, self.log_dir) for e in everyone]
        procs += [Proc(rank, rank, 0, -1, self.log_dir / f"rank{rank}.log", 0.0, phase=phase, lost=True)
                  for rank, phase in self.lost.items()]
        procs.sort(key=lambda p: p.job_rank)
        run = Run(opts=self.opts, envs=[], log=self.run.log, procs=procs)
        run.result = next((e.result for e in everyone if e.rank == 0 and e.result), None)
        failed = any(p.end is None or p.end.get("code") != 0 for p in procs)
        slow = bool(run.result and (run.result.get("late") or run.result.get("shortfall") is not None))
        return Outcome(run, phase_rows(run), failed, slow)

    def announce(self, code: int) -> None:
        with contextlib.suppress(*STORE_ERRORS):
            self.store.set("report", str(code))
        until = time.monotonic() + ACK_WAIT_S
        while time.monotonic() < until:
            with contextlib.suppress(*STORE_ERRORS):
                if int(self.store.add("acked", 0)) >= len(self.peers_done) - 1:
                    return
            time.sleep(0.05)

    # -- the others -----------------------------------------------------------------------------

    def await_report(self) -> int | None:
        """The reporter's exit code, or None when no report came (its node, or its process, is gone)."""
        wait = max(self.opts.deadlines.values()) + OUTER_MARGIN_S + CRASH_GRACE_S + 60.0
        until = time.monotonic() + wait
        while time.monotonic() < until:
            if self.stop.signal is not None:
                until = min(until, self.stop.at + STOPPING_WAIT_S + 5.0)
            try:
                if self.store.check(["report"]):
                    code = int(self.store.get("report"))
                    self.store.add("acked", 1)
                    return code
            except STORE_ERRORS:
                return None
            time.sleep(POLL_S)
        return None


def host_name() -> str:
    return socket.gethostname()


def _proc(ended: Ended, log_dir: Path) -> Proc:
    record = dict(ended.proc)
    return Proc(pid=0, reader=-1, log_path=log_dir / f"rank{ended.rank}.log", **record)


def _tail(path: Path, size: int) -> str:
    with open(path, "rb") as f:
        f.seek(max(0, path.stat().st_size - size))
        return f.read().decode("utf-8", "replace")


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name) or "host"


# -- setting up -----------------------------------------------------------------------------------

def connect(env: RankEnv, timeout_s: float) -> Any:
    """Rank 0 hosts the supervisors' store unless torchrun's agent already does; the others reach it."""
    if env.rank == 0 and not env.use_agent_store:
        hosted = stores.host(env.master_port, timeout_s)
    else:
        hosted = stores.reach(env.master_addr, env.master_port, timeout_s)
    from torch.distributed import PrefixStore  # type: ignore[attr-defined]

    return PrefixStore(PREFIX.format(run_id=env.run_id), hosted)


def agree_on_log_dir(store: Any, env: RankEnv, given: Path | None) -> tuple[Path, str]:
    """The log folder (rank 0 names it; every node makes its own) and this node's coordinator log.

    Rank 0's node writes `coordinator.log`; another node `coordinator-<host>.log`, so that nodes
    sharing the folder (a network filesystem, where appends from two hosts can tear) never write
    the same file.

    The others wait for rank 0's process to start as long as a rank gets to start (STARTUP_S), not
    the store's timeout (the comm_init deadline): where torchrun's agent hosts the store, it is up
    before any process is, and rank 0's may well come seconds after ours (a busy node importing
    torch). That is start-up, not comm_init: on a 2 s deadline it made rank 1 give up before its
    rank started, and rank 0 then named it as never having come.
    """
    if env.rank == 0:
        name = str(given) if given is not None else fresh_log_dir_name()
        store.set("logdir", json.dumps({"name": name, "host": host_name()}))
    else:
        from datetime import timedelta

        store.wait(["logdir"], timedelta(seconds=STARTUP_S))
    agreed = json.loads(store.get("logdir"))
    path = Path(agreed["name"])
    path.mkdir(parents=True, exist_ok=True)
    log_name = "coordinator.log" if agreed["host"] == host_name() else f"coordinator-{_safe(host_name())}.log"
    return path, log_name


def fresh_log_dir_name() -> str:
    base = "triage-repro-" + stamp().replace(":", "").replace("-", "")[:15]
    name, n = base, 1
    while Path(name).exists():
        n += 1
        name = f"{base}-{n}"
    return name


@contextlib.contextmanager
def native_stderr_held() -> Iterator[list[bytes]]:
    """Hold what native code (c10d's store client: retries, C++ stack frames) writes to fd 2.

    The user gets our one line, not pages of frames; what was held is given back to the caller,
    which writes it to the log once there is one.
    """
    held: list[bytes] = []
    with tempfile.TemporaryFile() as sink:
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            yield held
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            held.append(sink.read())


def keep_native_noise_in(log_fd: int) -> TextIO:
    """Native libraries (c10d's store client) write to fd 2: point it at the log, keep the console."""
    console_fd = os.dup(2)
    os.dup2(log_fd, 2)
    sys.stderr = os.fdopen(console_fd, "w", buffering=1, encoding="utf-8", errors="replace")
    return sys.stderr


Deliver = Callable[[Outcome, Path], int]  # renders the verdict, writes the report files; exit code


def new_run(opts: ReproOptions, env: RankEnv, log: RecordingLog) -> Run:
    return Run(opts=opts, envs=[env], log=log, extra_env=rank_extra_env(opts))


def run(supervisor: Supervisor, log: RecordingLog, deliver: Deliver) -> int:
    """Supervise this rank; then rank 0 gathers and delivers the verdict, the others wait for it."""
    try:
        proc = supervisor.supervise_rank()
    except SpawnError as exc:
        log.line(f"rank {supervisor.env.rank}: {exc}")
        proc = Proc(supervisor.env.rank, 0, 0, -1, supervisor.log_dir / f"rank{supervisor.env.rank}.log", 0.0,
                    died="comm_init")
    mine = supervisor.post_done(proc, log)
    if supervisor.env.rank == 0:
        everyone = supervisor.gather(mine, log)
        code = exitcodes.USAGE_OR_INPUT_ERROR  # the contract's code for an internal error
        try:
            code = deliver(supervisor.outcome(everyone), supervisor.log_dir)
        finally:
            supervisor.announce(code)  # the others must not wait for a verdict that will not come
        return code
    code_or_none = supervisor.await_report()
    if code_or_none is not None:
        return code_or_none
    if supervisor.env.local_rank != 0:
        return 1
    # No verdict from rank 0: this node's local rank 0 speaks for what its node saw.
    log.line(f"rank 0 gave no verdict (its node, or its process, is gone); host {supervisor.host} reports "
             "what it saw")
    everyone = [mine, *supervisor.peers_done.values()]
    return deliver(supervisor.outcome(everyone), supervisor.log_dir)
