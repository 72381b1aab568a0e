"""What each rank's events say, reduced to the facts the principles reason over.

The main subtlety is telling a rank's own failure from a consequence of someone else's: an
exception line that carries a timeout (`DistBackendError: … Watchdog caught …`) is the timeout,
not a crash; an error after the rank already timed out is fallout; a SIGTERM is the launcher
cleaning up.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from triage.fields import signal_name
from triage.identity import about_another
from triage.job import Job
from triage.model import Event, Kind, RankState

# Exits that a process does not choose: killed, crashed, or out of memory.
_HARD_SIGNALS = {"SIGKILL", "9", "SIGSEGV", "11", "SIGBUS", "7", "SIGILL", "4", "SIGFPE", "8", "OOM"}
_HARD_EXITCODES = {-9, -11, -7, -4, -8, 137, 139, 135}
_VICTIM_EXITCODES = {-15, 143, -2}  # the launcher's SIGTERM / Ctrl-C


@dataclass
class RankFacts:
    rank: int
    state: RankState
    timeouts: list[Event] = field(default_factory=list)
    peer_errors: list[Event] = field(default_factory=list)
    self_failures: list[Event] = field(default_factory=list)  # failed by itself, earliest first
    exits: list[Event] = field(default_factory=list)

    detections: list[Event] = field(default_factory=list)  # it named other ranks as missing

    @property
    def reported_wait(self) -> bool:
        """It waited on someone: a timeout, a peer that went away, or peers it found missing."""
        return bool(self.timeouts or self.peer_errors or self.detections)

    @property
    def stopped_by_launcher(self) -> bool:
        """torchrun, srun or triage repro's supervisor ended it (SIGTERM/SIGKILL, or "ended rank 3 …
        after rank 1 died") after another process failed."""
        if self.exits and all(is_victim_exit(e) for e in self.exits):
            return True
        return any(e.kind is Kind.CONSEQUENCE and (e.fields.get("signal") or e.peer not in (None, self.state.rank))
                   for e in self.state.events)

    @property
    def first_failure_time(self) -> float | None:
        times = [e.time for e in self.self_failures if e.time is not None]
        return min(times) if times else None

    @property
    def known_failures(self) -> list[Event]:
        """Its own failures that a rule explains (the open world's lines are weaker evidence)."""
        return [e for e in self.self_failures if e.kind is not Kind.UNEXPLAINED]

    @property
    def first_wait_time(self) -> float | None:
        times = [e.time for e in self.timeouts + self.peer_errors + self.detections
                 if e.time is not None]
        return min(times) if times else None


def is_hard_exit(event: Event) -> bool:
    signal = signal_name(event.fields.get("signal", "")) or ""
    code = event.fields.get("exitcode")
    return signal in _HARD_SIGNALS or (code is not None and _int(code) in _HARD_EXITCODES)


def is_crash_exit(event: Event) -> bool:
    """Killed, crashed, or aborted (SIGABRT: `abort()`, `std::terminate`, a failed C++ check)."""
    code = event.fields.get("exitcode")
    return is_hard_exit(event) or signal_name(event.fields.get("signal", "")) == "SIGABRT" or (
        code is not None and _int(code) in (-6, 134))


def is_victim_exit(event: Event) -> bool:
    code = event.fields.get("exitcode")
    return signal_name(event.fields.get("signal", "")) in ("SIGTERM", "SIGINT") or (
        code is not None and _int(code) in _VICTIM_EXITCODES)


def exit_code(event: Event) -> int | None:
    code = event.fields.get("exitcode")
    return _int(code) if code is not None else None


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


# The kinds the per-event questions below ask about, bound once: on Python 3.11 each `Kind.X` read
# goes through the enum metaclass's attribute hook (~90 ns), and these are asked of every event.
_TIMEOUT, _PEER_ERROR, _EXIT, _CULPRIT_NAMED = Kind.TIMEOUT, Kind.PEER_ERROR, Kind.EXIT, Kind.CULPRIT_NAMED
_UNEXPLAINED = Kind.UNEXPLAINED
_CARRYING_A_WAIT = frozenset({Kind.TIMEOUT, Kind.PEER_ERROR, Kind.CONSEQUENCE})
_OWN_ERRORS = frozenset({Kind.ERROR, Kind.UNEXPLAINED})


def rank_facts(job: Job) -> dict[int, RankFacts]:
    consequence_lines = {(e.evidence.source, e.evidence.line) for e in job.of_kinds(*_CARRYING_A_WAIT)}
    facts: dict[int, RankFacts] = {}
    for rank, state in job.ranks.items():
        f = RankFacts(rank=rank, state=state)
        for event in state.events:
            kind = event.kind
            if kind is _TIMEOUT:
                f.timeouts.append(event)
            elif kind is _PEER_ERROR and not _names_itself(event, rank):
                f.peer_errors.append(event)
            elif kind is _EXIT:
                f.exits.append(event)
            elif kind is _CULPRIT_NAMED and not about_another(event):
                f.detections.append(event)
        f.self_failures = _self_failures(f, consequence_lines)
        facts[rank] = f
    return facts


def _names_itself(event: Event, rank: int) -> bool:
    """A "peer" error whose peer is the writer (`[Proxy Service 12] … from rank 12`) is its own."""
    return event.peer == rank


def _killed_before_waiting(event: Event, wait_time: float | None) -> bool:
    """Killed or crashed (SIGKILL, SIGSEGV, …) before any wait of its own: a process that is gone
    writes nothing, so its own failure came first, whatever waits its lines seem to hold."""
    return (is_hard_exit(event) and event.time is not None and wait_time is not None
            and event.time < wait_time)


def _self_failures(f: RankFacts, consequence_lines: set[tuple[str, int]]) -> list[Event]:
    """Errors this rank made by itself, before it was left waiting on anyone."""
    wait_time = f.first_wait_time
    first_wait_line: dict[str, int] = {}
    for e in f.timeouts + f.peer_errors + f.detections:
        src = e.evidence.source
        first_wait_line[src] = min(first_wait_line.get(src, e.evidence.line), e.evidence.line)
    found: list[Event] = []
    for event in f.state.events:
        kind = event.kind
        own_peer_error = kind is _PEER_ERROR and _names_itself(event, f.rank)
        if kind in _OWN_ERRORS or own_peer_error:
            where = (event.evidence.source, event.evidence.line)
            if where in consequence_lines and not own_peer_error:
                continue  # the exception that carries a timeout or a lost peer
            if kind is _UNEXPLAINED and any(
                    (where[0], where[1] + n) in consequence_lines for n in (1, 2)):
                continue  # the header of a record a rule knows (`terminate called …` / `what(): …`)
            if wait_time is not None and event.time is not None and event.time > wait_time + 1:
                continue
            if event.evidence.line > first_wait_line.get(event.evidence.source, 1 << 62):
                continue
            found.append(event)
        elif kind is _EXIT and (not f.reported_wait or _killed_before_waiting(event, wait_time)) and (
                is_hard_exit(event) or (not is_victim_exit(event) and (exit_code(event) or 0) != 0)):
            found.append(event)
    # Earliest first; within a second, an error a rule knows before a line no rule knows.
    return sorted(found, key=lambda e: (e.time is None, round(e.time or 0.0),
                                        e.kind is Kind.UNEXPLAINED, e.time or 0.0))
