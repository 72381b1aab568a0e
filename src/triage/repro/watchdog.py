"""A rank's own watchdog: phase deadlines enforced from a thread, outside the blocking call.

The main thread marks where it is: which phase, and whether it is blocked waiting on its peers
(inside init_process_group or a collective) or doing its own work. When a deadline passes, the
watchdog thread writes what the rank was doing and the Python stack of every thread into the rank
log, then ends the process: this works under any launcher, because nothing waits for the stuck call.

Where the rank was decides what the line says: a rank stuck *waiting on its peers* is a victim (a
timeout), a rank stuck *outside any collective* is the one its peers wait for (the culprit).

Two backstops for a main thread that never gives the GIL back: faulthandler's C-level timer dumps
the stacks and exits a few seconds after the deadline, and in standalone mode the coordinator
ends the process from outside.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from triage.repro.logfile import LineLog
from triage.repro.protocol import EXIT_STOPPED, EXIT_WATCHDOG

TICK_S = 0.05
BACKSTOP_S = 5.0  # faulthandler's own timer fires this long after a deadline the thread missed
OUTSIDE_MIN_S = 1.0  # outside any collective this long at a deadline: the rank holds its peers up
OUTSIDE_SHARE = 0.25  # (or this share of a short deadline)
STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}

Ender = Callable[[int, str], None]  # (exit code, status word): logs, reports and ends the process


class Watchdog:
    def __init__(self, log: LineLog, rank: int, deadlines: dict[str, float],
                 parents: set[int] | None = None) -> None:
        self.log = log
        self.parents = parents  # standalone: the rank ends when its parent is none of these
        self.rank = rank
        self.deadlines = deadlines
        self.phase: str | None = None
        self.started = time.monotonic()
        self.step = "starting"
        self.waiting_in: str | None = None
        self.since = self.started  # when the main thread last began or ended a blocking call
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ender: Ender | None = None
        self._thread = threading.Thread(target=self._run, name="triage-repro-watchdog", daemon=True)

    def start(self, ender: Ender) -> None:
        """Arm the watchdog; call from the main thread before torch starts threads of its own."""
        self._ender = ender
        # Stop signals are taken by the watchdog thread (sigtimedwait): a Python signal handler
        # would only run when the main thread returns from the collective it is stuck in.
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        faulthandler.enable(file=self.log.fd, all_threads=True)
        # The coordinator asks for the stacks with SIGUSR1 before it ends a rank from outside.
        faulthandler.register(signal.SIGUSR1, file=self.log.fd, all_threads=True)
        self._thread.start()

    def enter_phase(self, phase: str) -> None:
        with self._lock:
            self.phase = phase
            self.started = self.since = time.monotonic()
            self.step = f"starting phase {phase}"
            self.waiting_in = None
        faulthandler.dump_traceback_later(self.deadlines[phase] + BACKSTOP_S, exit=True,
                                          file=self.log.fd)

    def doing(self, step: str) -> None:
        """The main thread works on its own (not waiting on anyone) at `step`."""
        with self._lock:
            self.step = step
            self.waiting_in = None
            self.since = time.monotonic()

    @contextmanager
    def waiting(self, what: str) -> Iterator[None]:
        """The main thread is blocked on its peers inside `what`.

        When the call fails (a peer went away) the rank stays marked as waiting: until the phase
        logs its failure it is still a rank that was let down by its peers, not a rank stuck alone.
        """
        with self._lock:
            self.step = self.waiting_in = what
            self.since = time.monotonic()
        yield
        with self._lock:
            self.waiting_in = None
            self.since = time.monotonic()

    def stop(self) -> None:
        self._stop.set()
        faulthandler.cancel_dump_traceback_later()

    def where(self) -> tuple[str, bool]:
        """Where the main thread is, and whether that makes it the one its peers wait for."""
        with self._lock:
            waiting_in, step = self.waiting_in, self.step
            outside = time.monotonic() - self.since
        if waiting_in is not None:
            return f"waiting on its peers in {waiting_in}", False
        # Between two collectives a healthy rank is outside for milliseconds; only a rank that has
        # stayed outside for a while is holding its peers up (a slow phase is not a hang).
        phase = self.phase or "comm_init"
        if outside < min(OUTSIDE_MIN_S, OUTSIDE_SHARE * self.deadlines[phase]):
            return f"between collectives ({step}, {round(outside * 1000)} ms after the last one)", False
        return f"outside any collective for {round(outside * 1000)} ms ({step})", True

    def _run(self) -> None:
        while not self._stop.is_set():
            received = signal.sigtimedwait(STOP_SIGNALS, TICK_S)
            if self._stop.is_set():
                return
            if received is not None:
                self._fire_signal(signal.Signals(received.si_signo).name)
                return
            if self.parents is not None and os.getppid() not in self.parents:
                self.log.line(f"rank {self.rank} ending: its coordinator is gone")
                self._end(EXIT_STOPPED, "orphaned")
                return
            phase = self.phase
            if phase is None:
                continue
            elapsed = time.monotonic() - self.started
            if elapsed > self.deadlines[phase]:
                self._fire_deadline(phase, elapsed)
                return

    def _fire_deadline(self, phase: str, elapsed: float) -> None:
        deadline_ms = round(self.deadlines[phase] * 1000)
        where, holding_up = self.where()
        if holding_up:
            where += "; its peers wait for it"
        self.log.line(f"watchdog: rank {self.rank} stuck in phase {phase} for {round(elapsed * 1000)} ms "
                      f"(deadline {deadline_ms} ms) {where}; stack:")
        faulthandler.dump_traceback(file=self.log.fd, all_threads=True)
        self._end(EXIT_WATCHDOG, "stuck")

    def _fire_signal(self, name: str) -> None:
        elapsed = round((time.monotonic() - self.started) * 1000)
        where, holding_up = self.where()
        if holding_up and self.phase is not None:
            # Stopped because a peer gave up first (a launcher ends every rank when one exits):
            # a rank that was outside any collective all that while is still the one they waited for.
            where += "; its peers wait for it"
        self.log.line(f"rank {self.rank} stopped by {name} in phase {self.phase or 'startup'} after "
                      f"{elapsed} ms, {where}; stack:")
        faulthandler.dump_traceback(file=self.log.fd, all_threads=True)
        self._end(EXIT_STOPPED, f"stopped by {name}")

    def _end(self, code: int, status: str) -> None:
        if self._ender is not None:
            self._ender(code, status)
