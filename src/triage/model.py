"""The values that flow through triage: sources, identities, events, rank states, verdicts, reports.

Plain dataclasses and string enums, so that every stage (ingest → parse → job → diagnose → report)
speaks the same vocabulary and the JSON report is a direct rendering of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from triage.status import Status as Status  # its own module: see there


class Phase(str, Enum):
    COMM_INIT = "comm_init"
    OPERATOR_LOAD = "operator_load"
    EXECUTION = "execution"
    TEARDOWN = "teardown"  # events only: consequences, never a verdict's phase
    UNKNOWN = "unknown"


class Kind(str, Enum):
    """What an event says about the rank that logged it."""

    TIMEOUT = "timeout"  # this rank waited on its peers and gave up: usually a victim
    ERROR = "error"  # this rank failed by itself (OOM, CUDA error, exception)
    PEER_ERROR = "peer-error"  # this rank lost a peer or a link (names the other end when it can)
    CULPRIT_NAMED = "culprit-named"  # another tool already named the culprit (desync report, RAS …)
    PROGRESS = "progress"  # sequence numbers: how far this rank got
    INIT_START = "init-start"
    INIT_DONE = "init-done"
    EXIT = "exit"  # a process ended (exit code or signal)
    CONSEQUENCE = "consequence"  # teardown noise that follows an earlier failure
    INFO = "info"  # facts: versions, world size, addresses
    UNEXPLAINED = "unexplained"  # a line its own format marks as an error, that no rule knows


class Milestone(int, Enum):
    """How far a rank got, in order; `teardown` is kept apart (see RankState.tore_down)."""

    STARTED = 0  # it logged something
    RENDEZVOUS = 1  # joined the store / rendezvous
    INIT_STARTED = 2  # communicator init began
    INIT_DONE = 3  # communicator init completed
    FIRST_COLLECTIVE = 4  # a collective completed
    STEADY = 5  # training steps (the job's own step lines) went by

    @property
    def label(self) -> str:
        return self.name.lower()


class Category(str, Enum):
    CRASHED_PROCESS = "crashed_process"
    HUNG_PROCESS = "hung_process"
    NETWORK_FAULT = "network_fault"
    COLLECTIVE_MISMATCH = "collective_mismatch"
    CONFIG_MISMATCH = "config_mismatch"
    DEVICE_ERROR = "device_error"
    OOM = "oom"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Evidence:
    source: str  # display name of the source (path, or archive!member)
    line: int  # 1-based line number in that source
    text: str  # the line, literally (launcher prefixes included)
    # The rule that matched the line, where a rule made it evidence; not part of its identity
    # (the same line is the same evidence whichever rule saw it).
    rule_id: str | None = field(default=None, compare=False)


@dataclass
class Identity:
    """Who wrote a source or a line; each field with the signal it was learnt from."""

    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    pid: int | None = None
    device: int | None = None  # the accelerator it drove (NPU device id, from CANN's device-<id>/)
    learnt_from: dict[str, str] = field(default_factory=dict)  # field name -> signal

    def merged_over(self, base: Identity) -> Identity:
        """This identity's fields where set, `base`'s elsewhere."""
        # Positional, and the two dicts merged in one expression: this runs for every event.
        return Identity(
            self.rank if self.rank is not None else base.rank,
            self.local_rank if self.local_rank is not None else base.local_rank,
            self.host if self.host is not None else base.host,
            self.pid if self.pid is not None else base.pid,
            self.device if self.device is not None else base.device,
            {**base.learnt_from, **self.learnt_from},
        )


@dataclass
class Event:
    rule_id: str
    kind: Kind
    phase: Phase
    severity: str
    message: str
    identity: Identity
    evidence: Evidence
    fields: dict[str, str] = field(default_factory=dict)
    time: float | None = None  # seconds since the epoch (wall clock), when the line carried one
    time_has_year: bool = True  # c10/glog clocks print no year; the job stage supplies it
    family: str = ""
    category: Category | None = None  # from the rule, for events that are a failure of their own
    # Events of one source that are the same but for their time (a crash loop prints one line a
    # million times, each stamped anew) are folded into the first, where they are produced: how many
    # there were, the last one's line, and how long after the first it came (`last_time`).
    # `evidence` and `time` stay the first's.
    count: int = 1
    last_line: int | None = None  # set when count > 1
    # Seconds from `time` to the last copy's time (kept as a span, so that placing a yearless
    # clock's year moves both); 0.0 when the copies share one time or carry none.
    span: float = 0.0
    # Set by the identity stage: the ranks the message names are ranks of a sub-group, not global.
    names_group_ranks: bool = False
    # Who the line is about besides its writer, in global ranks: set once by the peer pass
    # (triage.job.peers) after the job is built. The captured fields are left as the line said them.
    peer: int | None = None  # the rank at the other end of its wait, its lost link or a failed probe
    peer_host: str | None = None  # the host at the other end of a failed connection
    about: tuple[int, ...] = ()  # the ranks a tool's line names as the cause, or a RAS line describes

    @property
    def rank(self) -> int | None:
        return self.identity.rank

    @property
    def last_time(self) -> float | None:
        """The last folded copy's time (a crash loop's "last seen"); None for a single event or
        one without a time."""
        return None if self.time is None or self.count == 1 else self.time + self.span


@dataclass
class SourceInfo:
    name: str
    identity: Identity
    lines: int = 0
    bytes: int = 0
    events: int = 0
    skipped: str | None = None  # why the source could not be read, when it could not
    last_line: Evidence | None = None  # the last thing its writer logged
    notes: list[str] = field(default_factory=list)
    # What the first lines say of the writer (observations; the identity stage weighs them).
    head_ranks: dict[int, int] = field(default_factory=dict)  # `[rankN]:` prefix -> lines
    head_hosts: dict[str, int] = field(default_factory=dict)  # NCCL `host:pid` prefix -> lines
    head_writers: int = 0  # distinct launcher prefixes (`[default3]:`, ` 3: `): >1 interleaves
    conflicts: list[str] = field(default_factory=list)  # identity signals that disagreed


@dataclass
class RankState:
    rank: int
    host: str | None = None
    local_rank: int | None = None
    device: int | None = None  # its accelerator, where its logs say (CANN key info, device-<id>/)
    has_log: bool = False
    events: list[Event] = field(default_factory=list)
    last_lines: list[Evidence] = field(default_factory=list)  # last line of each of its sources
    role: str = "unknown"  # culprit | victim | failed | ok | silent | missing | unknown
    milestone: Milestone | None = None  # the furthest it is known to have got (None: no log)
    milestone_evidence: Evidence | None = None
    step: int | None = None  # the job's own step/iteration number, where its lines carry one
    tore_down: bool = False  # it went on to teardown (exit, abort, SIGTERM) after that

    def of_kind(self, *kinds: Kind) -> list[Event]:
        return [e for e in self.events if e.kind in kinds]


@dataclass
class Member:
    """One rank's progress inside one process group."""

    rank: int  # global rank
    group_rank: int | None = None
    enqueued: int | None = None  # highest "last enqueued" seen
    completed: int | None = None  # highest "last completed" seen
    stuck_seq: int | None = None  # lowest SeqNum it timed out at
    stuck_op: str | None = None
    timeouts: list[Event] = field(default_factory=list)


@dataclass
class ProcessGroup:
    key: str  # `pg:<guid>` or `comm:<commId>`
    default: bool
    desc: str | None = None
    size: int | None = None
    members: dict[int, Member] = field(default_factory=dict)  # global rank -> member

    @property
    def label(self) -> str:
        if self.default:
            return "the default process group"
        kind, _, ident = self.key.partition(":")
        name = f"PG GUID {ident}" if kind == "pg" else f"communicator {ident}"
        return f"process group {self.desc} ({name})" if self.desc else f"process group {name}"

    def member(self, rank: int) -> Member:
        if rank not in self.members:
            self.members[rank] = Member(rank=rank)
        return self.members[rank]


@dataclass
class Culprit:
    kind: str  # rank | host | link
    reason: str
    rank: int | None = None
    host: str | None = None
    peer: str | None = None  # the other end of a link
    peer_rank: int | None = None  # the rank at that other end, when a link joins two ranks' devices
    evidence: list[Evidence] = field(default_factory=list)


@dataclass
class Hypothesis:
    """One candidate explanation, scored against the evidence."""

    name: str  # which principle produced it (named-by-tool, first-failure, silent-rank …)
    score: float  # 0-1: how strongly the evidence supports it
    category: Category
    phase: Phase
    culprits: list[Culprit]
    reasoning: str
    advice: list[str] = field(default_factory=list)
    # Whether it says something failed. A reading of a healthy source (every op of every dump
    # completed, every dump there) is a candidate for the record, not a failure.
    shows_failure: bool = True
    # The lines that look like a failure which such a reading shows to be none (an unresponsive process
    # in one RAS snapshot that a later snapshot shows answering again).
    accounts_for: list[Event] = field(default_factory=list)



class Stance(str, Enum):
    FOR = "for"  # the member is a culprit: it failed first, stopped while peers waited, was named …
    AGAINST = "against"  # it is not: it waited with work in flight, got further, is outside the world …



@dataclass
class MemberEvidence:
    """One thing one source says about one member (a rank, host or link): for or against its being a
    culprit, where it says so (`file:line` of a log, `dump:entry` of a flight-recorder dump), and how
    much it weighs (0-1)."""

    kind: str  # rank | host | link, as Culprit.kind
    stance: Stance
    fact: str  # what the source says, in a phrase ("waited in ALL_REDUCE #5 with it in flight")
    source: str  # the principle (or the hypothesis it named) that read it
    weight: float
    rank: int | None = None
    host: str | None = None
    citation: Evidence | None = None
    # An against item that rules the member out (the verdict drops it from every culprit set) rather
    # than weighing against it; only a fact no culprit's own failure can contradict clears.
    clears: bool = False



@dataclass
class PrincipleFailure:
    """A principle that raised: the verdict was decided without it, and says so."""

    principle: str
    error: str  # the exception's type and message


@dataclass
class Verdict:
    status: Status
    phase: Phase
    category: Category
    confidence: float
    culprits: list[Culprit]
    reasoning: str
    advice: list[str]
    missing: list[str] = field(default_factory=list)  # what evidence would settle it
    hypothesis: str | None = None  # the principle that won (named-by-tool, silent-rank …)
    lost: list[Hypothesis] = field(default_factory=list)  # hypotheses that did not win
    # What every source said of each member, for and against, that the verdict was read from.
    ledger: list[MemberEvidence] = field(default_factory=list)
    # Principles that raised: the verdict was decided without them and may be incomplete.
    failed: list[PrincipleFailure] = field(default_factory=list)


@dataclass
class Exclusion:
    """One thing the next run should go without: a node, a rank, or a link between two ends."""

    kind: str  # host | rank | link
    why: str
    host: str | None = None  # the node (a link: the end the evidence names)
    rank: int | None = None  # the culprit rank on it, where one is known
    peer: str | None = None  # a link's other end
    peer_rank: int | None = None


@dataclass
class Decision:
    """What a scheduler should do after the verdict, from the policy table (triage.decision)."""

    action: str  # none | requeue | requeue-excluding | stop | investigate
    reason: str
    rule: str  # the policy row that decided
    exclude: list[Exclusion] = field(default_factory=list)
    ranks: list[int] = field(default_factory=list)  # global ranks to drop (ncclCommShrink, shrink_group)
    env: dict[str, str] = field(default_factory=dict)  # settings for the next run (the flight recorder)
    exit_code: int = 0  # `--exit-code-from decision`

    @property
    def requeue(self) -> bool:
        return self.action in ("requeue", "requeue-excluding")

    @property
    def hosts(self) -> list[str]:
        """The nodes to leave out of the next allocation, in the order the exclusions name them (a
        link: both its ends, since either may be at fault)."""
        return list(dict.fromkeys(h for e in self.exclude for h in (e.host, e.peer if e.kind == "link" else None)
                                  if h))


@dataclass
class Unexplained:
    """Lines that their own format marks as errors and no rule knows, folded by signature."""

    signature: str  # the message with what varies folded (<n>, <ip>, <addr>, <id>, <time>)
    marker: str  # how the format marked it: nccl-warn, c10-error, cann-error, python-exception …
    family: str  # who writes such lines: nccl, pytorch, torchrun, hccl, python, slurm
    count: int  # lines with this signature
    ranks: list[int]  # ranks that logged it, where known
    hosts: list[str]  # hosts that logged it, where known
    first: Evidence  # the earliest line (by time where known)
    first_time: float | None = None  # its wall-clock time (seconds since the epoch), if it had one


@dataclass(frozen=True)
class RuleDoc:
    """What a rule's file says about the lines it matches (its title and `explain`)."""

    title: str
    meaning: str = ""
    next_steps: str = ""
    references: tuple[str, ...] = ()


@dataclass
class Report:
    verdict: Verdict
    world_size: int | None
    world_size_from: str | None
    ranks: dict[int, RankState]
    sources: list[SourceInfo]
    events: list[Event]
    version: str = ""
    groups: dict[str, ProcessGroup] = field(default_factory=dict)  # process groups seen
    unexplained: list[Unexplained] = field(default_factory=list)  # errors no rule knows, by signature
    # The docs of the rules that matched lines of this job, by id: built-in and user rules alike, as
    # the analysis loaded them (formats that document their rules, such as sarif, read them here).
    rules: dict[str, RuleDoc] = field(default_factory=dict)
    # What to do next (requeue, excluding which nodes; stop; investigate); None only for a Report
    # built by hand, without the decision stage.
    decision: Decision | None = None
