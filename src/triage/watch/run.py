"""The watch loop: start or attach to the job, follow it, and act on a hang or on its end.

Every poll: the followed files' new bytes (passed through and judged), the rank processes (every
RESCAN_S), the stall clock. A hang: rank processes alive and no progress for the stall window;
then a snapshot, the verdict and `--on-hang`'s action, once per silence (progress re-arms it). The
job's end: its own exit code, after a post-mortem verdict when it failed. Watch's own failure is
said once and leaves the job running (in command mode its output is still passed through).
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from triage import exitcodes
from triage.model import Status
from triage.report.outputs import Output
from triage.watch import act, snapshot
from triage.watch.follow import Follower
from triage.watch.procs import RankProc, alive, cpu_ticks, find_ranks
from triage.watch.stall import Judge, StallClock

if TYPE_CHECKING:
    from triage.decision import Policy

RESCAN_S = 2.0  # how often the process tree is read again
CPU_ACTIVE_SHARE = 0.1  # of one CPU: a rank busier than this is starting up, before any step line
ON_HANG = ("report", "kill", "wait")
DEFAULT_STALL_S = 180.0


@dataclass
class Options:
    command: list[str] = field(default_factory=list)
    pid: int | None = None
    stall_s: float = DEFAULT_STALL_S
    on_hang: str = "report"
    grace_s: float = 10.0
    native: bool = False
    logs: list[Path] = field(default_factory=list)
    folder: Path | None = None
    outputs: list[Output] = field(default_factory=lambda: [Output("terminal", None)])
    fail_on: frozenset[Status] = exitcodes.FAIL_ON_DEFAULT
    world_size: int | None = None
    rules_dirs: list[Path] = field(default_factory=list)
    extract: Path | None = None
    host: str | None = None
    poll_s: float = 0.5
    policy: Policy | None = None  # the decision table (None: the built-in one)


def watch(options: Options) -> int:
    """Watch the job to its end (or until --on-hang kill ends it); the exit code to leave with."""
    return _Watch(options).run()


class _Watch:
    def __init__(self, options: Options) -> None:
        from triage.parse.scan import Matcher
        from triage.rules import load_rules

        self.o = options
        self.host = options.host or socket.gethostname() or "localhost"
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        self.folder = options.folder or Path(f"triage-watch-{stamp}")
        self.folder.mkdir(parents=True, exist_ok=True)
        self.judge = Judge(Matcher(load_rules(options.rules_dirs)))
        self.clock = StallClock(options.stall_s, time.monotonic())
        self.follower = Follower(self._on_text)
        self.ranks: dict[int, RankProc] = {}  # by pid
        self.ended: set[int] = set()
        self.child: subprocess.Popen[bytes] | None = None
        self.root = 0
        self.broken = ""  # why watching stopped (the job goes on)
        self.fired_at: float | None = None  # the last progress before the silence acted upon
        self.snapshots = 0
        self.last_line = ""
        self.cpu: tuple[float, int] | None = None
        self.failures = 0

    # --- the job -------------------------------------------------------------------------------

    def _start(self) -> None:
        if self.o.pid is not None:
            self.root = self.o.pid
            if not alive(self.root):
                raise ProcessLookupError(f"no process {self.root} to watch")
            for fd in (1, 2):  # the job's own stdout/stderr, where they are files
                try:
                    target = Path(f"/proc/{self.root}/fd/{fd}").readlink()
                except OSError:
                    continue
                if target.is_file():
                    self.follower.add(target, from_end=True)
        else:
            env = dict(os.environ)
            env.setdefault("PYTHONUNBUFFERED", "1")  # step lines as they are printed, not by the 8 KiB
            streams: list[BinaryIO] = []
            for name, echo in (("job.stdout.log", sys.stdout.buffer), ("job.stderr.log", sys.stderr.buffer)):
                path = self.folder / name
                streams.append(open(path, "ab"))  # noqa: SIM115 - the job holds it, not us
                self.follower.add(path, echo, from_end=True)
            try:
                self.child = subprocess.Popen(self.o.command, stdout=streams[0], stderr=streams[1], env=env)
            finally:
                for stream in streams:
                    stream.close()
            self.root = self.child.pid
        for folder in self.o.logs:
            self.follower.add_folder(folder)
        self._log(f"watching pid {self.root} on host {self.host}; stall window {self.o.stall_s:.0f} s, "
                  f"on hang: {self.o.on_hang}")

    def _job_code(self) -> tuple[bool, int | None]:
        """(whether the job ended, its exit code when known)."""
        if self.child is not None:
            code = self.child.poll()
            return code is not None, code
        return not alive(self.root), None

    # --- the loop ------------------------------------------------------------------------------

    def run(self) -> int:
        self._start()
        next_scan = 0.0
        interrupted = False
        while True:
            try:
                now = time.monotonic()
                self._guard(self.follower.poll)
                if now >= next_scan:
                    next_scan = now + RESCAN_S
                    self._guard(self.follower.discover)
                    self._guard(functools.partial(self._scan, now))
                ended, code = self._job_code()
                if ended:
                    break
                if not self.broken and not interrupted and self._hang_due(now):
                    result = self._on_hang(now)
                    if result is not None:
                        return result
                time.sleep(self.o.poll_s)
            except KeyboardInterrupt:
                if self.child is None:
                    act.say("interrupted; the job goes on")
                    return 130
                interrupted = True  # Ctrl-C reached the job too: pass its last words through
        self._guard(self.follower.poll)
        return self._finish(code)

    def _guard(self, step: Callable[[], object]) -> None:
        """Run one step of watching; its failure stops watching (said once), never the job."""
        if self.broken and step != self.follower.poll:
            return
        try:
            step()
        except Exception as exc:  # watch's own failure: the job must not suffer for it
            if not self.broken:
                self.broken = f"{type(exc).__name__}: {exc}"
                act.say(f"stopped watching ({self.broken}); the job goes on"
                        + (" and its output still passes through" if self.child else ""))
                if os.environ.get("TRIAGE_DEBUG"):
                    raise

    def _on_text(self, source: str, text: str) -> None:
        reading = self.judge.read(source, text)
        now = time.monotonic()
        self.clock.activity(now)
        for _ in range(min(reading.progress, 1)):
            self.clock.progress(now)
            self.last_line = reading.last
        self.failures += len(reading.failures)

    def _scan(self, now: float) -> None:
        found, _problems = find_ranks(self.root)
        for rank in found:
            self.ranks.setdefault(rank.pid, rank)
        for pid, rank in self.ranks.items():
            if pid not in self.ended and not alive(pid, rank.start_ticks):
                self.ended.add(pid)
                code = ""
                if self.child is not None and pid == self.child.pid and self.child.poll() is not None:
                    code = f" with exit code {self.child.returncode}"
                self._log(f"rank process {pid} of rank {rank.rank} ended{code} at {snapshot.stamp()}"
                          + ("" if code else " (exit code unknown: not a child of triage watch)"))
        if not self.clock.steps_seen:  # starting up: a busy rank is not a hung one
            live = [p for p in self.ranks if p not in self.ended] or [self.root]
            ticks = sum(cpu_ticks(p) for p in live)
            if self.cpu is not None and ticks - self.cpu[1] >= CPU_ACTIVE_SHARE * (now - self.cpu[0]) * os.sysconf("SC_CLK_TCK"):
                self.clock.activity(now)
            self.cpu = (now, ticks)

    def _live_ranks(self) -> list[RankProc]:
        return [r for pid, r in self.ranks.items() if pid not in self.ended and alive(pid, r.start_ticks)]

    def _hang_due(self, now: float) -> bool:
        if not self.clock.stalled(now) or self.fired_at == self.clock.last_progress:
            return False
        return bool(self._live_ranks()) or (not self.ranks and alive(self.root))

    # --- acting --------------------------------------------------------------------------------

    def _on_hang(self, now: float) -> int | None:
        self.fired_at = self.clock.last_progress
        live = self._live_ranks()
        if not live and not self.ranks:  # no launcher-set rank: the command itself is the job
            live = [RankProc(pid=self.root, rank=0)]
        quiet, window = self.clock.quiet(now), self.clock.window()
        self._log(f"no progress for {quiet:.0f} s (stall window {window:.0f} s) with {len(live)} rank "
                  f"processes alive on host {self.host}; last progress: {self.last_line or 'none seen'}")
        self.snapshots += 1
        folder = self.folder / f"snapshot-{self.snapshots}-hang"
        manifest = snapshot.take(folder, live, reason="hang", host=self.host, native=self.o.native)
        missing = "; ".join(sorted({m["why"] for m in manifest.missing if m["what"] in ("stacks", "note")}))
        act.say(f"no progress for {quiet:.0f} s (window {window:.0f} s): snapshot of {len(live)} rank"
                f"{'s' if len(live) != 1 else ''} in {folder}"
                + (f"; not taken: {missing} (falling back to RAS and logs)" if missing else ""))
        self._write_extract()
        if self.o.on_hang == "wait":
            return None
        report = act.analyze(self._paths(), self.o.outputs, world_size=self.o.world_size,
                             rules_dirs=self.o.rules_dirs, policy=self.o.policy)
        if self.o.on_hang == "report":
            return None
        act.say(f"ending the job (SIGTERM, SIGKILL after {self.o.grace_s:.0f} s)")
        left = act.end_tree(self.root, [r.pid for r in live], self.o.grace_s)
        if self.child is not None:
            try:
                self.child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                left.append(self.child.pid)
        if left:
            act.say(f"processes still there after SIGKILL: {', '.join(map(str, left))}")
        self.follower.poll()
        return act.verdict_code(report, self.o.fail_on)

    def _finish(self, code: int | None) -> int:
        self._scan_final()
        if code == 0:
            return 0
        if code is not None:
            act.say(f"the job ended with exit code {code}: post-mortem verdict")
        report = act.analyze(self._paths(), self.o.outputs if code is not None else [],
                             world_size=self.o.world_size, rules_dirs=self.o.rules_dirs, policy=self.o.policy)
        self._write_extract()
        if code is not None:
            return code
        # Attached: the job's exit code is its parent's to know; the verdict says whether it failed.
        if report is None or report.verdict.status is Status.NO_FAILURE:
            act.say("the job ended; its output shows no failure")
            return 0
        act.analyze(self._paths(), self.o.outputs, world_size=self.o.world_size, rules_dirs=self.o.rules_dirs, policy=self.o.policy)
        return act.verdict_code(report, self.o.fail_on)

    def _scan_final(self) -> None:
        with contextlib.suppress(Exception):  # the job is over; what was seen stands
            self._scan(time.monotonic())

    def _paths(self) -> list[Path]:
        extra = [p for p in self.follower.files if self.folder not in p.parents
                 and not any(f in p.parents for f in self.o.logs)]
        return [self.folder, *self.o.logs, *extra]

    def _write_extract(self) -> None:
        if self.o.extract is None:
            return
        from triage.api import extract

        try:
            extract([str(p) for p in self._paths()], self.o.extract, host=self.o.host)
        except Exception as exc:
            act.say(f"the extract could not be written: {exc}")

    def _log(self, line: str) -> None:
        with open(self.folder / "watch.log", "a", encoding="utf-8") as log:
            log.write(f"triage watch: {line}\n")
