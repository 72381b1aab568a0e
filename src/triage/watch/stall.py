"""Step lines: reading the job's output for progress and failure lines.

The job's lines are read by the same rules as `triage analyze` (its step lines, rules/job/; every
family's lines) a chunk at a time as they are written. A step line of the job, or a communicator
that finished initialising, is progress: one signal of the progress model
(src/triage/watch/progress.py) beside /proc and the stacks, never the only one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from triage.model import Event, Identity, Kind
from triage.parse.scan import Matcher, ScanStats, scan_text

_PROGRESS_FAMILIES = ("job",)
_FAILURE = (Kind.TIMEOUT, Kind.ERROR, Kind.PEER_ERROR, Kind.CULPRIT_NAMED, Kind.EXIT)


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
