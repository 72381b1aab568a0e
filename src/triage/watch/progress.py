"""The progress model: per rank, sampled — what moved, what waits, and when stillness is a hang.

Each rank is sampled (src/triage/watch/sample.py): its CPU time and read/written bytes and I/O
calls (with its own children's: data-loader workers), how often its main thread was woken, its
state and kernel wait channel, and — at a low rate, only while something looks still — its Python
stack. A rank **advances** when its I/O, its main thread's wake-ups or its stack (the functions of
its deciding thread, not their line numbers) move; it is **active** when it advances or its CPU
time grows. A rank **waits** when its stack is inside a collective (or on its device) and it has
not advanced since it was first seen there.

A hang is one of (docs/watch.md §2):

- **idle**: a rank outside any collective that is not active (sleeping, blocked on a lock or in
  the kernel) while a peer waits, for the idle window — fast, since nothing can be moving;
- **spinning**: a rank outside any collective whose CPU moves but nothing else does (the same
  functions on every sample) while a peer waits — a suspect after SUSPECT_S, a hang after the
  spinning window;
- **all waiting**: every rank waiting, for the all-waiting window;
- **silent**: no stacks to look at, and no rank active, for the silent window (reported, never
  acted upon: watch cannot see who waits on whom).

Ranks that are all busy (an evaluation) and a rank that writes (a checkpoint) are not hangs: no
rank is both still and waited on. Every window is at least its base and LEARN_FACTOR times the
longest pause of its kind that the job came out of by itself (its rhythm); the step-line gap
learns the same way for the silent window. Nothing here reads a clock or /proc: samples come in,
findings go out, so that recorded sequences test it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

IDLE_S = 30.0  # the idle window's base (at most --stall): nothing moving, a peer waiting
SUSPECT_S = 20.0  # a spinning rank is reported as a suspect after this long (at most its window)
PROBE_S = 5.0  # a rank that has not advanced for this long has its stack sampled
STACK_EVERY_S = 10.0  # and again this often while it stays so
LEARN_FACTOR = 2.0  # a window is at least this many times the longest pause of its kind seen
STEP_FACTOR = 3.0  # the silent window is at least this many times the longest step-line gap
CPU_SHARE = 0.02  # of one CPU: less than this is not activity
# The CPU share is measured over at least this long. /proc counts CPU time in ticks (10 ms), and two
# samples may be close (watch reads the counters again, at the same time, after taking the stacks):
# over a short span a single tick passes for 2% of a CPU, and a rank blocked in the kernel ticks now
# and then from its background threads — read as work, a lock or flock hang came out as spinning.
CPU_SPAN_S = 2.0
KINDS = ("idle", "spinning", "all-waiting", "silent")
INSIDE = ("collective", "device-wait")


@dataclass(frozen=True)
class StackView:
    """What a rank's stack said at one moment (from its py-spy dump)."""

    state: str  # collective, device-wait, python, sleep, lock, data-loading, checkpoint-io, ...
    call: str = ""  # the collective (or the call that decided the state)
    signature: tuple[str, ...] = ()  # the deciding thread's functions, innermost first, no line numbers
    where: str = ""  # its top frame, as py-spy wrote it

    @property
    def inside(self) -> bool:
        return self.state in INSIDE


@dataclass(frozen=True)
class Sample:
    """One look at one rank. Counters are -1 where they could not be read."""

    at: float
    cpu_ticks: int = -1  # user + system, the rank and its children
    io: int = -1  # rchar + wchar + syscr + syscw, the rank and its children
    wakeups: int = -1  # its main thread's voluntary context switches
    state: str = "?"  # the letter of /proc/<pid>/stat
    wchan: str = ""
    stack: StackView | None = None


@dataclass
class Track:
    """One rank's progress so far."""

    rank: int
    started: float
    hz: float = 100.0
    last: Sample | None = None
    stack: StackView | None = None
    stack_at: float | None = None
    active_at: float = 0.0  # the last time anything moved
    advanced_at: float = 0.0  # the last time anything but its CPU moved
    cpu_at: float = 0.0  # the last time its CPU moved
    cpu_from: tuple[float, int] | None = None  # (time, ticks) its CPU share is measured from
    inside_since: float | None = None  # first seen in its current collective, not advanced since

    def __post_init__(self) -> None:
        self.active_at = self.advanced_at = self.started
        self.cpu_at = -1.0

    def add(self, sample: Sample) -> None:
        prev = self.last
        if prev is not None and (_moved(prev.io, sample.io) or _moved(prev.wakeups, sample.wakeups)):
            self.advanced_at = sample.at
        self._note_cpu(sample)
        if sample.stack is not None:
            if self.stack is not None and sample.stack.signature != self.stack.signature:
                self.advanced_at = sample.at
            self.stack, self.stack_at = sample.stack, sample.at
        # A stack older than the rank's last advance no longer says where it is.
        fresh = self.stack_at is not None and self.advanced_at <= self.stack_at
        if self.stack is not None and self.stack.inside and fresh:
            if self.inside_since is None:
                self.inside_since = self.advanced_at  # nothing moved since: it waited there since then
        else:
            self.inside_since = None
        self.active_at = max(self.advanced_at, self.cpu_at)
        self.last = sample

    def _note_cpu(self, sample: Sample) -> None:
        """Whether its CPU moved: CPU_SHARE of a CPU since `cpu_from`, over CPU_SPAN_S at least (a
        busy rank is seen at once; the ticks of an idle one's threads do not add up to it)."""
        if sample.cpu_ticks < 0:
            return
        if self.cpu_from is not None:
            since, ticks = self.cpu_from
            span, used = sample.at - since, sample.cpu_ticks - ticks
            if used >= max(1.0, CPU_SHARE * max(span, CPU_SPAN_S) * self.hz):
                self.cpu_at = sample.at
            elif used >= 0 and span < CPU_SPAN_S:
                return  # too soon to tell: measured from the same time at the next sample
        self.cpu_from = (sample.at, sample.cpu_ticks)

    def waiting_for(self, now: float) -> float:
        return now - self.inside_since if self.inside_since is not None else 0.0

    def still_for(self, now: float) -> float:
        return now - self.active_at

    def spinning_for(self, now: float) -> float:
        """How long its CPU has moved and nothing else has (0 when its CPU is still too)."""
        if self.cpu_at < self.advanced_at or now - self.cpu_at > PROBE_S:
            return 0.0
        return now - self.advanced_at

    def kernel(self) -> str:
        """Its state and wait channel, as the last sample saw them."""
        if self.last is None:
            return ""
        wchan = f", wchan {self.last.wchan}" if self.last.wchan and self.last.wchan != "0" else ""
        return f"State {self.last.state}{wchan}"


@dataclass
class Finding:
    """What the model sees now: a hang (or a suspect), its kind, who and why."""

    kind: str
    stage: str  # "suspect" or "hang"
    culprits: list[int]
    waiting: list[int]
    quiet_s: float  # how long the culprits (or, all waiting, every rank) have not progressed
    window_s: float
    why_window: str
    text: str
    can_act: bool  # evidence that a culprit makes no progress while a peer waits (not silence alone)


@dataclass
class Model:
    """Every rank's track, the job's step lines, and the windows they teach."""

    stall_s: float
    started: float
    stacks: bool = True  # whether stacks can be taken (py-spy there and permitted)
    hz: float = 100.0
    tracks: dict[int, Track] = field(default_factory=dict)
    last_step: float = field(init=False)
    steps: int = 0
    longest_gap: float = 0.0
    longest: dict[str, float] = field(default_factory=lambda: dict.fromkeys(KINDS, 0.0))
    episode: dict[str, float] = field(default_factory=dict)  # the open pause of each kind, its length
    last_stacks: float = -1e9

    def __post_init__(self) -> None:
        self.last_step = self.started

    # --- what comes in ---------------------------------------------------------------------------

    def observe(self, rank: int, sample: Sample) -> None:
        track = self.tracks.get(rank)
        if track is None:
            track = self.tracks[rank] = Track(rank, sample.at, self.hz)
        track.add(sample)

    def rebase(self, rank: int, sample: Sample) -> None:
        """Take `sample` as the rank's last look without counting what moved since (after watch itself
        disturbed it: a snapshot's py-spy --native pauses each rank)."""
        track = self.tracks.get(rank)
        if track is not None:
            track.last = sample

    def forget(self, rank: int) -> None:
        self.tracks.pop(rank, None)

    def step_line(self, now: float) -> None:
        if self.steps:
            self.longest_gap = max(self.longest_gap, now - self.last_step)
        self.steps += 1
        self.last_step = max(self.last_step, now)

    def wants_stacks(self, now: float) -> bool:
        """A rank has not advanced for PROBE_S, and the last stacks are STACK_EVERY_S old."""
        if not self.stacks or now - self.last_stacks < STACK_EVERY_S:
            return False
        return any(now - t.advanced_at >= PROBE_S for t in self.tracks.values())

    # --- the windows -------------------------------------------------------------------------------

    def base(self, kind: str) -> tuple[float, str]:
        if kind == "idle":
            return (IDLE_S, f"default {IDLE_S:.0f} s") if self.stall_s >= IDLE_S else \
                (self.stall_s, f"--stall {self.stall_s:.0f}")
        if kind == "silent" and STEP_FACTOR * self.longest_gap > self.stall_s:
            return (STEP_FACTOR * self.longest_gap,
                    f"{STEP_FACTOR:.0f}x the longest gap between step lines, {self.longest_gap:.0f} s")
        return self.stall_s, f"--stall {self.stall_s:.0f}"

    def window(self, kind: str) -> tuple[float, str]:
        """The window in force for a kind, and why it is that long."""
        base, why = self.base(kind)
        learnt = LEARN_FACTOR * self.longest[kind]
        if learnt > base:
            return learnt, (f"{LEARN_FACTOR:.0f}x the longest {kind} pause the job came out of, "
                            f"{self.longest[kind]:.0f} s")
        return base, why

    def windows_text(self) -> str:
        parts = []
        for kind in KINDS:
            seconds, why = self.window(kind)
            parts.append(f"{kind} {seconds:.0f} s ({why})")
        return "windows in force: " + ", ".join(parts)

    # --- the decision ------------------------------------------------------------------------------

    def decide(self, now: float) -> Finding | None:
        """The strongest finding now (a hang before a suspect), learning from pauses that ended."""
        seen: dict[str, float] = {}
        findings = [f for f in (self._idle(now, seen), self._spinning(now, seen), self._all_waiting(now, seen),
                                self._silent(now, seen)) if f is not None]
        for kind in KINDS:
            if kind in seen:
                self.episode[kind] = max(self.episode.get(kind, 0.0), seen[kind])
            elif kind in self.episode:  # it ended by itself: a pause of the job's rhythm
                self.longest[kind] = max(self.longest[kind], self.episode.pop(kind))
        hangs = [f for f in findings if f.stage == "hang"]
        return (hangs or findings)[0] if findings else None

    def _waiting(self, now: float) -> list[Track]:
        return [t for t in self.tracks.values() if t.waiting_for(now) > 0]

    def _outside(self) -> list[Track]:
        return [t for t in self.tracks.values() if t.stack is not None and not t.stack.inside]

    def _idle(self, now: float, seen: dict[str, float]) -> Finding | None:
        waiting = self._waiting(now)
        if not waiting:
            return None
        still = [t for t in self._outside() if t.still_for(now) > 0 and t.stack_at is not None
                 and t.stack_at >= t.active_at]
        if not still:
            return None
        quiet = min(max(t.still_for(now) for t in still), max(t.waiting_for(now) for t in waiting),
                    now - self.last_step)
        seen["idle"] = quiet
        window, why = self.window("idle")
        if quiet < window:
            return None
        culprits = [t for t in still if t.still_for(now) >= window]
        peers = [t for t in waiting if t.waiting_for(now) >= window]
        return Finding(
            "idle", "hang", [t.rank for t in culprits], [t.rank for t in peers], quiet, window, why,
            "; ".join(f"rank {t.rank} idle outside any collective for {t.still_for(now):.0f} s ({t.kernel()}, "
                      f"{_at(t)}: nothing moved)" for t in culprits)
            + f", while {_ranks(peers)} wait{'s' if len(peers) == 1 else ''} in {_calls(peers)}",
            can_act=bool(culprits and peers))

    def _spinning(self, now: float, seen: dict[str, float]) -> Finding | None:
        waiting = self._waiting(now)
        if not waiting:
            return None
        busy = [t for t in self._outside() if t.spinning_for(now) > 0 and (t.stack_at or 0.0) >= t.advanced_at]
        if not busy:
            return None
        quiet = min(max(t.spinning_for(now) for t in busy), max(t.waiting_for(now) for t in waiting),
                    now - self.last_step)
        seen["spinning"] = quiet
        window, why = self.window("spinning")
        suspect_at = min(SUSPECT_S, window)
        if quiet < suspect_at:
            return None
        stage = "hang" if quiet >= window else "suspect"
        culprits = [t for t in busy if t.spinning_for(now) >= suspect_at]
        text = ("; ".join(f"rank {t.rank} busy outside any collective for {t.spinning_for(now):.0f} s with "
                          f"nothing but its CPU moving ({_at(t)} on every sample)" for t in culprits)
                + f", while {_ranks(waiting)} wait{'s' if len(waiting) == 1 else ''} in {_calls(waiting)}")
        if stage == "suspect":
            text += f"; named as the culprit at {window:.0f} s ({why})"
        return Finding("spinning", stage, [t.rank for t in culprits], [t.rank for t in waiting], quiet, window,
                       why, text, can_act=stage == "hang" and bool(culprits))

    def _all_waiting(self, now: float, seen: dict[str, float]) -> Finding | None:
        tracks = list(self.tracks.values())  # one rank alone here: its peers are on other nodes
        if not tracks or not all(t.waiting_for(now) > 0 for t in tracks):
            return None
        quiet = min(min(t.waiting_for(now) for t in tracks), now - self.last_step)
        seen["all-waiting"] = quiet
        window, why = self.window("all-waiting")
        if quiet < window:
            return None
        return Finding("all-waiting", "hang", [], [t.rank for t in tracks], quiet, window, why,
                       f"every rank ({_ranks(tracks)}) waits in {_calls(tracks)} and none advanced for "
                       f"{quiet:.0f} s", can_act=True)

    def _silent(self, now: float, seen: dict[str, float]) -> Finding | None:
        if self.stacks or not self.tracks:
            return None
        quiet = min(min(t.still_for(now) for t in self.tracks.values()), now - self.last_step)
        if quiet <= 0:
            return None
        seen["silent"] = quiet
        window, why = self.window("silent")
        if quiet < window:
            return None
        return Finding("silent", "hang", [], [], quiet, window, why,
                       f"no rank moved (CPU, I/O, wake-ups) for {quiet:.0f} s and no stacks say who waits on whom",
                       can_act=False)


def to_json(rank: int, sample: Sample) -> dict[str, object]:
    """One observation as a line of a recording (TRIAGE_WATCH_RECORD; tests replay them)."""
    data: dict[str, object] = {"rank": rank, **{k: v for k, v in sample.__dict__.items() if k != "stack"}}
    if sample.stack is not None:
        data["stack"] = {**sample.stack.__dict__, "signature": list(sample.stack.signature)}
    return data


def from_json(data: dict[str, object]) -> tuple[int, Sample]:
    stack = data.get("stack")
    view = None
    if isinstance(stack, dict):
        view = StackView(state=str(stack["state"]), call=str(stack.get("call", "")),
                         signature=tuple(stack.get("signature", ())), where=str(stack.get("where", "")))
    fields = {k: v for k, v in data.items() if k not in ("rank", "stack")}
    return int(str(data["rank"])), Sample(**fields, stack=view)  # type: ignore[arg-type]


def _moved(before: int, after: int) -> bool:
    return before >= 0 and after >= 0 and after != before


def _at(track: Track) -> str:
    return f"at {track.stack.where}" if track.stack is not None and track.stack.where else "no stack"


def _ranks(tracks: list[Track]) -> str:
    from triage.ranks import fmt_ranks

    ranks = sorted(t.rank for t in tracks)
    return f"rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)}"


def _calls(tracks: list[Track]) -> str:
    calls = sorted({t.stack.call or t.stack.state for t in tracks if t.stack is not None})
    return " / ".join(calls) or "a collective"
