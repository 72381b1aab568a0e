"""Faults on purpose, so that the whole chain (deadline, stack capture, naming) is tested end to end.

Each fault imitates what a real one looks like from the other ranks: a hang is a rank that never
arrives at the next blocking step, a crash is a process that dies by a signal without a word (a
kill, as by the OOM killer, without even a stack),
a slow rank arrives late, a wrong value is a rank whose contribution is corrupt.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time

from triage.repro.logfile import LineLog
from triage.repro.options import Injection

SLOW_SHARE = 0.5  # a slow rank arrives this share of the phase deadline late (comm_init, operator_load)
SLOW_EXEC_SHARE = 0.3  # in execution, spread this share of the deadline over all its collectives
SLOW_EXEC_MAX_S = 0.05
_PR_SET_DUMPABLE = 4
ENV_HOLD_GIL = "TRIAGE_REPRO_HANG_HOLDS_GIL"  # tests: the injected hang holds the GIL


class Injector:
    def __init__(self, injection: Injection | None, job_rank: int, log: LineLog,
                 deadlines: dict[str, float], exec_ops: int) -> None:
        self.injection = injection if injection and injection.rank == job_rank else None
        self.log = log
        self.deadlines = deadlines
        self.exec_ops = max(1, exec_ops)
        # Hang and crash in execution strike half-way, after some collectives went through.
        self.strike_op = exec_ops // 2

    def _is(self, kind: str, phase: str) -> bool:
        return self.injection is not None and self.injection.kind == kind and self.injection.phase == phase

    def corrupts(self, phase: str) -> bool:
        return self._is("wrong-value", phase)

    def at_start(self, phase: str) -> None:
        """Before the first blocking step of comm_init or operator_load."""
        if phase == "execution":
            return
        self._hang_or_crash(phase)
        if self._is("slow", phase):
            delay = SLOW_SHARE * self.deadlines[phase]
            self.log.line(f"inject: slow: arriving {delay:.2f} s late in phase {phase}")
            time.sleep(delay)

    def before_op(self, op: int) -> None:
        """Before the op-th collective of execution (0-based)."""
        if op == self.strike_op:
            self._hang_or_crash("execution")
        if self._is("slow", "execution"):
            time.sleep(self.exec_delay())

    def exec_delay(self) -> float:
        return min(SLOW_EXEC_MAX_S, SLOW_EXEC_SHARE * self.deadlines["execution"] / self.exec_ops)

    def announce(self) -> None:
        if self.injection is None:
            return
        i = self.injection
        what = {"hang": "hang", "crash": "crash (SIGSEGV)", "kill": "be killed (SIGKILL, as by the OOM killer)",
                "slow": "arrive late",
                "wrong-value": "contribute a wrong value"}[i.kind]
        if (i.kind, i.phase) == ("slow", "execution"):
            what += f" ({self.exec_delay() * 1000:.0f} ms before each collective)"
        self.log.line(f"inject: this rank will {what} in phase {i.phase}")

    def _hang_or_crash(self, phase: str) -> None:
        if self._is("hang", phase):
            self.log.line(f"inject: hanging in phase {phase}")
            if os.environ.get(ENV_HOLD_GIL):
                # A native call that never returns and never releases the GIL: only the outer
                # backstops (faulthandler's C timer, the coordinator) can end this rank.
                ctypes.PyDLL(None).sleep(3600)
            while True:
                time.sleep(3600)
        if self._is("crash", phase):
            self.log.line(f"inject: crashing with SIGSEGV in phase {phase}")
            crash()
        if self._is("kill", phase):
            # What the kernel's OOM killer does: SIGKILL, no handler runs, no stack is written.
            self.log.line(f"inject: killing this rank with SIGKILL in phase {phase}")
            os.kill(os.getpid(), signal.SIGKILL)


def crash() -> None:
    """Die as a native library's segfault would: faulthandler writes the stack, the signal kills."""
    # No core file for an injected crash (a core of a torch process is gigabytes).
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    os.kill(os.getpid(), signal.SIGSEGV)
    time.sleep(10)  # the signal is delivered at once; this only keeps mypy's control flow honest
