"""The watch loop: start or attach to the job, follow it, and act on a hang or on its end.

Every poll: the followed files' new bytes (passed through and judged: step lines are progress).
Every RESCAN_S: the rank processes, a /proc sample of each for the progress model, a stack sample
of each when the model asks for one, and the model's finding (src/triage/watch/progress.py). A
suspect is said once; a hang is a snapshot, the verdict and `--on-hang`'s action, once per episode
(progress re-arms it). `--on-hang kill` ends the job only on a diagnosed verdict at or above
`--kill-confidence` whose culprits the model still sees making no progress (act.may_end). The
job's end: its own exit code, after a post-mortem verdict when it failed. Watch's own failure is
said once and leaves the job running (in command mode its output is still passed through).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
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
from triage.watch import act, progress, sample, snapshot
from triage.watch.follow import Follower
from triage.watch.procs import RankProc, alive, children_map, descendants, find_ranks
from triage.watch.progress import Finding, Model
from triage.watch.stall import Judge

if TYPE_CHECKING:
    from triage.decision import Policy

RESCAN_S = 2.0  # how often the process tree is read again and every rank sampled
ON_HANG = ("report", "kill", "wait")
DEFAULT_STALL_S = 120.0
DEFAULT_KILL_CONFIDENCE = 0.7
SIGHT_AFTER_S = 10.0  # what watch can see is said when ranks are found, or after this long without


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
    kill_confidence: float = DEFAULT_KILL_CONFIDENCE
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
        self.spy = snapshot.sampler()
        self.model = Model(options.stall_s, time.monotonic(), stacks=self.spy is not None,
                           hz=float(os.sysconf("SC_CLK_TCK")))
        self.follower = Follower(self._on_text)
        self.ranks: dict[int, RankProc] = {}  # by pid
        self.ended: set[int] = set()
        self.child: subprocess.Popen[bytes] | None = None
        self.root = 0
        self.broken = ""  # why watching stopped (the job goes on)
        self.said: set[str] = set()  # the findings (kind and culprits) already said or acted upon
        self.blind: list[str] = []  # what watch cannot see of the job
        self.sighted = False  # whether what watch can see was said
        self.snapshots = 0
        self.last_line = ""
        self.failures = 0
        self.finding: Finding | None = None
        self.record = os.environ.get("TRIAGE_WATCH_RECORD") or None
        self.tracked: dict[int, int] = {}  # rank -> the pid the model follows for it
        self.tree: dict[int, list[int]] = {}  # the process table of the last scan
        self.windows = ""  # the windows in force, as last said in watch.log

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
            if not self.o.logs:
                whys = sample.output_visibility(self.root)
                if whys:
                    self.blind.append(f"the job's output ({'; '.join(whys)})")
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
        acting = (f"kill (only a diagnosed hang at confidence >= {self.o.kill_confidence:.2f} whose culprit "
                  "makes no progress)" if self.o.on_hang == "kill" else self.o.on_hang)
        self.windows = self.model.windows_text()
        self._log(f"watching pid {self.root} on host {self.host}; {self.windows}; on hang: {acting}")

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
        if reading.progress:
            now = time.monotonic()
            self.model.step_line(now)
            if self.record is not None:
                with contextlib.suppress(OSError), open(self.record, "a", encoding="utf-8") as out:
                    out.write(json.dumps({"step": now}) + "\n")
            self.last_line = reading.last
        self.failures += len(reading.failures)

    def _scan(self, now: float) -> None:
        self.tree = children_map()
        found, problems = find_ranks(self.root, self.tree)
        for rank in found:
            self.ranks.setdefault(rank.pid, rank)
        for pid, rank in self.ranks.items():
            if pid not in self.ended and not alive(pid, rank.start_ticks):
                self.ended.add(pid)
                self.model.forget(rank.rank)
                code = ""
                if self.child is not None and pid == self.child.pid and self.child.poll() is not None:
                    code = f" with exit code {self.child.returncode}"
                self._log(f"rank process {pid} of rank {rank.rank} ended{code} at {snapshot.stamp()}"
                          + ("" if code else " (exit code unknown: not a child of triage watch)"))
        members = self._members()
        for rank in members:
            if self.tracked.get(rank.rank, rank.pid) != rank.pid:  # another process now (the launcher
                self.model.forget(rank.rank)  # before its ranks started, or a restarted rank)
            self.tracked[rank.rank] = rank.pid
            taken = sample.proc_sample(rank, [p for p in descendants(rank.pid, self.tree) if p != rank.pid], now)
            if taken is not None:
                self._observe(rank.rank, taken)
        if members and not self.sighted and (self.ranks or now - self.model.started >= SIGHT_AFTER_S):
            self._say_sight(members, problems)
        if self.model.wants_stacks(now) and self.spy is not None and members:
            self._sample_stacks(self.spy, members, now)
        finding = self.model.decide(now)
        windows = self.model.windows_text()
        if windows != self.windows:  # a pause the job came out of lengthened a window: say so
            self.windows = windows
            self._log(windows)
        if finding is not None and finding.stage == "suspect":
            key = f"suspect {finding.kind} {finding.culprits}"
            if key not in self.said:
                self.said.add(key)
                line = f"suspect ({finding.kind}): {finding.text}"
                self._log(line)
                act.say(line)
        if finding is None:  # progress re-arms what was said and done
            self.said.clear()
        elif finding.stage != "hang":
            self.said = {k for k in self.said if not k.startswith("hang ")}
        self.finding = finding

    def _observe(self, rank: int, taken: progress.Sample) -> None:
        self.model.observe(rank, taken)
        if self.record is not None:  # TRIAGE_WATCH_RECORD: the samples, for replaying in tests
            with contextlib.suppress(OSError), open(self.record, "a", encoding="utf-8") as out:
                out.write(json.dumps(progress.to_json(rank, taken)) + "\n")

    def _members(self) -> list[RankProc]:
        """The job's live ranks; the root itself where no process names its rank."""
        live = self._live_ranks()
        if not live and not self.ranks and alive(self.root):
            live = [RankProc(pid=self.root, rank=0)]
        return live

    def _sample_stacks(self, spy: str, members: list[RankProc], now: float) -> None:
        self.model.last_stacks = now
        views, problems = sample.stack_samples(spy, members, self.judge.matcher.rules)
        for rank in members:
            view = views.get(rank.pid)
            again = sample.proc_sample(rank, [p for p in descendants(rank.pid, self.tree) if p != rank.pid], now)
            if view is not None and again is not None:
                self._observe(rank.rank, dataclasses.replace(again, stack=view))
        refused = [p for p in problems if sample.refused(p)]
        if not views and refused and len(refused) == len(problems):  # not a rank that just ended, or a slow one
            self.model.stacks = False
            line = (f"stacks cannot be taken ({refused[0]}): who waits on whom is not known; a long silence is "
                    "reported, never acted upon")
            self._log(line)
            act.say(line)

    def _say_sight(self, members: list[RankProc], problems: list[str]) -> None:
        """Once, when the job's ranks are first seen: what watch can see of their progress."""
        self.sighted = True
        blind = list(self.blind)
        if self.spy is None:
            blind.append("stacks (py-spy is not installed: pip install 'triage[watch]')")
        else:
            _, why = sample.dump(self.spy, members[0].pid)
            # Only a refusal ends stack sampling: a rank still starting fails a dump once ("Failed to get
            # stack traces") and is read at the next sample.
            if why and sample.refused(why):
                self.model.stacks = False
                blind.append(f"stacks ({why})")
        if sample.proc_counters(members[0].pid)[1] < 0:
            blind.append(f"/proc/{members[0].pid}/io (not readable: not the job's user, or another PID namespace)")
        blind += problems[:1]
        if blind:
            line = ("cannot see " + "; ".join(blind) + ". Progress is judged from what can be seen "
                    + ("(/proc and stacks)" if self.model.stacks else "(/proc and the logs)")
                    + "; silence alone is never acted upon")
            self._log(line)
            act.say(line)
        else:
            self._log("sees the job's output, its ranks in /proc, and their stacks")

    def _live_ranks(self) -> list[RankProc]:
        return [r for pid, r in self.ranks.items() if pid not in self.ended and alive(pid, r.start_ticks)]

    def _hang_due(self, now: float) -> bool:
        finding = self.finding
        if finding is None or finding.stage != "hang":
            return False
        return f"hang {finding.kind} {finding.culprits}" not in self.said

    # --- acting --------------------------------------------------------------------------------

    def _on_hang(self, now: float) -> int | None:
        finding = self.finding
        if finding is None:
            return None
        self.said.add(f"hang {finding.kind} {finding.culprits}")
        live = self._members()
        self._log(f"no progress for {finding.quiet_s:.0f} s (stall window {finding.window_s:.0f} s) with "
                  f"{len(live)} rank processes alive on host {self.host}; {finding.kind} hang, window "
                  f"{finding.window_s:.0f} s ({finding.why_window}); {finding.text}; "
                  f"last progress: {self.last_line or 'none seen'}")
        self.snapshots += 1
        folder = self.folder / f"snapshot-{self.snapshots}-hang"
        manifest = snapshot.take(folder, live, reason="hang", host=self.host, native=self.o.native)
        missing = "; ".join(sorted({m["why"] for m in manifest.missing if m["what"] in ("stacks", "note")}))
        act.say(f"{finding.kind} hang after {finding.quiet_s:.0f} s (window {finding.window_s:.0f} s: "
                f"{finding.why_window}): {finding.text}; snapshot of {len(live)} rank"
                f"{'s' if len(live) != 1 else ''} in {folder}"
                + (f"; not taken: {missing} (falling back to RAS and logs)" if missing else ""))
        self._write_extract()
        if self.o.on_hang == "wait":
            return None
        report = act.analyze(self._paths(), self.o.outputs, world_size=self.o.world_size,
                             rules_dirs=self.o.rules_dirs, policy=self.o.policy)
        if self.o.on_hang == "report":
            return None
        self._recheck()
        go, why = act.may_end(report, finding, self.finding, self.o.kill_confidence)
        self._log(("ending the job: " if go else "not ending the job: ") + why)
        if not go:
            act.say(f"not ending the job: {why}")
            return None
        act.say(f"ending the job ({why}; SIGTERM, SIGKILL after {self.o.grace_s:.0f} s)")
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

    def _recheck(self) -> None:
        """After the snapshot (whose py-spy may have paused the ranks), a fresh look over RESCAN_S:
        is the culprit still making no progress?"""
        now = time.monotonic()
        for rank in self._members():
            taken = sample.proc_sample(rank, [p for p in descendants(rank.pid, self.tree) if p != rank.pid], now)
            if taken is not None:
                self.model.rebase(rank.rank, taken)
        time.sleep(RESCAN_S)
        self._scan(time.monotonic())

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
