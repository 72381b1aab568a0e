"""Progress and stall: what counts as the job moving on, and when its silence is a hang.

The job's lines are read by the same rules as `triage analyze` (its step lines, rules/job/; every
family's lines) a chunk at a time as they are written. Progress is a step line of the job, or a
communicator that finished initialising. Until the first step line, any output or a rank spending
CPU counts too (a job starting up prints little and imports much); after it, only progress does.

A hang is no progress for the stall window: `--stall` seconds, or STEP_FACTOR times the longest
gap between progress seen so far when that is longer (a job whose steps take minutes is not hung
after one), doubled before the first step line (the start of a job takes longer than a step).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from triage.model import Event, Identity, Kind
from triage.parse.scan import Matcher, ScanStats, scan_text

STEP_FACTOR = 3.0  # the window is at least this many times the longest gap between progress
STARTUP_FACTOR = 2.0  # before the first step line the window is this many times --stall
_PROGRESS_FAMILIES = ("job",)
_FAILURE = (Kind.TIMEOUT, Kind.ERROR, Kind.PEER_ERROR, Kind.CULPRIT_NAMED, Kind.EXIT)


@dataclass
class StallClock:
    """When the job last moved on, and how long a silence may last before it is a hang."""

    stall_s: float
    started: float  # monotonic time the watch began
    last_progress: float = field(init=False)
    longest_gap: float = 0.0
    steps_seen: int = 0

    def __post_init__(self) -> None:
        self.last_progress = self.started

    def progress(self, now: float) -> None:
        if self.steps_seen:
            self.longest_gap = max(self.longest_gap, now - self.last_progress)
        self.steps_seen += 1
        self.last_progress = max(self.last_progress, now)

    def activity(self, now: float) -> None:
        """Output or CPU use: it counts only until the job's first step line."""
        if not self.steps_seen:
            self.last_progress = max(self.last_progress, now)

    def window(self) -> float:
        if not self.steps_seen:
            return self.stall_s * STARTUP_FACTOR
        return max(self.stall_s, STEP_FACTOR * self.longest_gap)

    def quiet(self, now: float) -> float:
        return now - self.last_progress

    def stalled(self, now: float) -> bool:
        return self.quiet(now) >= self.window()


@dataclass
class Reading:
    """What a chunk of the job's output held."""

    progress: int = 0  # progress events
    last: str = ""  # the last progress line
    failures: list[Event] = field(default_factory=list)


class Judge:
    """Reads the job's output a chunk at a time with the rules, for progress and failure lines."""

    def __init__(self, matcher: Matcher) -> None:
        self.matcher = matcher

    def read(self, source: str, text: str) -> Reading:
        reading = Reading()
        for event in scan_text(self.matcher, source, Identity(), [text], ScanStats()):
            if event.family in _PROGRESS_FAMILIES and event.kind is Kind.PROGRESS:
                reading.progress += event.count
                reading.last = event.evidence.text
            elif event.kind is Kind.INIT_DONE:
                reading.progress += 1
                reading.last = event.evidence.text
            elif event.kind in _FAILURE:
                reading.failures.append(event)
        return reading
