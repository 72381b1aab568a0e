"""The failure's phase: where the culprit stopped, or else where the job as a whole stood.

Milestones say how far each rank got (`Milestone`). Collectives need every member, so once any
rank completed one, the job was past its first collective: a later failure is in `execution`.
When init was behind the ranks but no collective ever completed, the first one failed
(`operator_load`). Before init completed, it is `comm_init`. Absence in a partial log is not
evidence: that no collective completed, or that init never did, is read only from a log that holds
the job's start (`holds_start`); an excerpt keeps its failing lines' own phase. Only when no
milestone says anything does the phase of the deciding line's rule stand — for an NCCL WARN whose
rule says `any`, the backtrace NCCL prints after it (`chain_phase`) — and `unknown` only when
nothing says.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter, defaultdict

from triage.diagnose.facts import RankFacts
from triage.ingest.identity import identity_from_path
from triage.job import Job
from triage.lazy_regex import lazy_re
from triage.model import Event, Kind, Milestone, Phase

_REAL = (Phase.COMM_INIT, Phase.OPERATOR_LOAD, Phase.EXECUTION)
_PHASE_BY_WHAT_FAILED = ("hccl",)
_TRANSPORTS = ("nccl",)
_FAILURES = (Kind.TIMEOUT, Kind.ERROR, Kind.PEER_ERROR, Kind.CULPRIT_NAMED)
# Lines that are printed while a job starts, not when it fails (their rule's phase is comm_init).
_STARTUP_KINDS = (Kind.INFO, Kind.PROGRESS)
# Start records whose rule has no phase of its own (the version banner appears in errors' text
# only without `+cuda`, which the rule requires: docs/formats.md §3.2).
_BANNERS = ("nccl-version",)
# The signal ingest learns a local rank from when the file is torchrun's per-rank redirect
# (`<log-dir>/<run>/attempt_<n>/<local_rank>/stderr.log`): the rank's output from its start.
_WHOLE_FILE = "torchrun --log-dir layout"

# NCCL's error backtrace (docs/formats.md §3.1): as an error unwinds, each function it passes logs
# `{file}:{line} -> {code}` (rule nccl-error-backtrace), the first right after the WARN. Where the
# chain goes says where the failure was, for a WARN whose text alone does not (a CUDA failure, a
# closed socket): NCCL's source files, not line numbers, which move with every release.
_BACKTRACE = "nccl-error-backtrace"
_CHAIN_LINES = 40  # how far after its WARN a failure's backtrace is looked for
# Communicator init (ncclCommInit*, initTransportsRank, ncclCommSplit) and the bootstrap network.
_INIT_FILES = frozenset({"init.cc", "bootstrap.cc"})
# Connection setup (ncclTransportP2pSetup; ring, tree and PAT connect): init's, unless a collective's
# launch made it (NCCL's runtime connect), which is the first collective: operator_load.
_SETUP_FILES = frozenset({"transport.cc", "transport/generic.cc"})
_LAUNCH_FILES = frozenset({"enqueue.cc", "group.cc"})
# One frame of the chain as its line shows it: the source file, and the proxy's progress thread
# (` [Progress Thread]`, ` [GIN Progress Thread]`) where the data path unwinds.
_FRAME = lazy_re(r"NCCL INFO (?P<src>[\w/.\-]+\.(?:cc|h|cu|cpp)):\d+ -> \d+\b(?: \([^)\n]*\))?"
                    r"(?: \[(?P<thread>(?:GIN )?Progress Thread)\])?")


def job_phase(job: Job, facts: dict[int, RankFacts], culprits: list[int] | None = None,
              events: list[Event] | None = None) -> Phase:
    """The phase of the failure, from the culprits' milestones, the job's, and the events."""
    stated = [e.phase for e in events or [] if (e.fields.get("phase") or e.family in _PHASE_BY_WHAT_FAILED)
              and e.phase in _REAL]
    if stated:
        # The deciding line itself says which phase (triage repro's verdicts); or its family names
        # phases by what failed: HCCL builds a link the first time an operator runs in a
        # communicator, however far the job got, so a link that fails at step 1000 fails in
        # operator load (docs/formats.md §5.4, `[InitChannelStage]`).
        return stated[0]
    if not events:
        # No deciding line (an inconclusive verdict): the phase the waiting ranks' HCCL lines name.
        waited = Counter(e.phase for f in facts.values() for e in f.timeouts + f.peer_errors
                         if e.family in _PHASE_BY_WHAT_FAILED and e.phase in _REAL)
        if waited:
            return waited.most_common(1)[0][0]
    furthest = max((s.milestone for s in job.ranks.values() if s.milestone is not None),
                   default=None)
    said = _said_phase(job, facts, events or [])
    if furthest is not None and furthest >= Milestone.FIRST_COLLECTIVE:
        # A collective completed, so every rank was past init and the first collective. Only a
        # culprit that itself never got past init (a rank that joined late, a failed sub-group
        # init) puts the failure back in comm_init.
        if said is Phase.COMM_INIT and culprits and _before_init(job, culprits):
            return Phase.COMM_INIT
        return Phase.EXECUTION
    if furthest == Milestone.INIT_DONE:
        if said is Phase.COMM_INIT and culprits and _before_init(job, culprits):
            return Phase.COMM_INIT
        if said is not Phase.OPERATOR_LOAD and not holds_start(job):
            # Absence in a partial log is not evidence: an excerpt that shows no completed
            # collective does not show that the job was at its first one. Only a log that holds the
            # job's start can; else the failing lines' own phase stands (an IB completion error's or
            # a proxy error's execution, init inferred from that very line), `unknown` when none says.
            if said is Phase.UNKNOWN and not _waited_in_a_collective(facts):
                # Init was behind the ranks (c10's `[rankN]:` prefix), nothing points at the first
                # collective, and the failure is not a communication one: the job was running.
                return Phase.EXECUTION
            return said if said in _REAL else lines_phase(job)
        # A log that holds the job's start shows init behind the ranks and no collective completed:
        # whatever failed there, a wait or a rank's own error (an exception between init and the
        # first collective), failed at the first collective.
        return Phase.OPERATOR_LOAD
    if said is Phase.UNKNOWN and (
            (furthest is not None and furthest >= Milestone.RENDEZVOUS)
            or (culprits and _failed_by_itself(facts, culprits) and holds_start(job))):
        # No rank is known to have finished communicator init, and a rank failed on its own (or
        # the ranks were still joining): the job never got past comm_init. A log that holds the
        # job's start (torchrun's console from its banner on) and in which no rank got as far as a
        # line a rule knows says so too: a rank that exited there (a bare `exitcode: 1`) failed
        # before anything past init was written.
        return Phase.COMM_INIT
    if said is Phase.UNKNOWN and furthest is None:
        # No milestone at all (a screen excerpt, a line whose writer is not known): the failure
        # lines' own phases decide — an error code's, a stage keyword's, the rule's.
        return lines_phase(job)
    return said


def lines_phase(job: Job) -> Phase:
    """The phase the job's failure lines state themselves (whoever wrote them), the most stated
    first; `unknown` when none does."""
    chains = _Chains(job)
    stated = Counter(p for p in (chains.phase(e) for e in job.of_kinds(*_FAILURES)) if p in _REAL)
    return stated.most_common(1)[0][0] if stated else Phase.UNKNOWN


class _Chains:
    """NCCL's backtrace lines of a job, by source, read only when a line needs them."""

    def __init__(self, job: Job) -> None:
        self._job = job
        self._by_source: dict[str, list[Event]] | None = None

    def phase(self, event: Event) -> Phase:
        """The line's own phase: its rule's, else (an NCCL WARN whose rule says `any`) the phase
        of the backtrace that follows it; `unknown` when neither says."""
        if event.phase in _REAL or event.family not in _TRANSPORTS or event.rule_id == _BACKTRACE:
            return event.phase
        return chain_phase(self.chain(event))

    def chain(self, event: Event) -> list[Event]:
        """The backtrace lines its writer logged right after this line."""
        if self._by_source is None:
            self._by_source = defaultdict(list)
            for e in self._job.of_rules(_BACKTRACE):
                self._by_source[e.evidence.source].append(e)
            for lines in self._by_source.values():
                lines.sort(key=lambda e: e.evidence.line)
        lines = self._by_source.get(event.evidence.source, [])
        start = event.evidence.line
        first = bisect_right(lines, start, key=lambda e: e.evidence.line)
        last = bisect_right(lines, start + _CHAIN_LINES, key=lambda e: e.evidence.line)
        return [e for e in lines[first:last]
                if event.identity.pid is None or e.identity.pid in (None, event.identity.pid)]


def chain_phase(chain: list[Event]) -> Phase:
    """Where NCCL's backtrace after a failure says it happened: through communicator init or the
    bootstrap, comm_init; through connection setup, comm_init when init made it and operator_load
    when a collective's launch did; through a collective's launch or the proxy's progress thread
    (the data path), execution; else unknown."""
    frames = [m for m in (_FRAME.search(e.evidence.text) for e in chain) if m]
    files = {m["src"] for m in frames}
    if files & _INIT_FILES:
        return Phase.COMM_INIT
    if files & _SETUP_FILES:
        return Phase.OPERATOR_LOAD if files & _LAUNCH_FILES else Phase.COMM_INIT
    if "enqueue.cc" in files or any(m["thread"] for m in frames):
        return Phase.EXECUTION
    return Phase.UNKNOWN


def holds_start(job: Job) -> bool:
    """Some log here holds the job's start, so that a collective completed would be in it: a line
    printed while the job started (a communicator's init lines, NCCL's version banner and bootstrap
    interface, the store's and gloo's connection setup, HCCL's init records), or a file torchrun
    wrote a rank's whole output to (its --log-dir layout: opened when the rank starts). A later line
    that only implies init was behind the rank (c10's `[rankN]:` prefix, a wait in a collective)
    does not: it is in an excerpt as much as in a whole log."""
    if any(e.kind in (Kind.INIT_START, Kind.INIT_DONE)
           or (e.kind in _STARTUP_KINDS and (e.phase is Phase.COMM_INIT or e.rule_id in _BANNERS))
           or e.identity.learnt_from.get("local_rank") == _WHOLE_FILE
           for e in job.events):
        return True
    # A rank's torchrun file that holds no line a rule knows is whole all the same.
    return any(identity_from_path(line.source).learnt_from.get("local_rank") == _WHOLE_FILE
               for state in job.ranks.values() for line in state.last_lines)


def _failed_by_itself(facts: dict[int, RankFacts], ranks: list[int]) -> bool:
    return any(r in facts and facts[r].known_failures for r in ranks)


def _waited_in_a_collective(facts: dict[int, RankFacts]) -> bool:
    """A rank waited on its peers after init (a collective, a barrier), not in the store."""
    return any(e.phase not in (Phase.COMM_INIT, Phase.TEARDOWN)
               for f in facts.values() for e in f.timeouts + f.peer_errors + f.detections)


def _before_init(job: Job, ranks: list[int]) -> bool:
    """Every culprit with a log stopped before its communicator init completed."""
    seen = [job.ranks[r].milestone for r in ranks if r in job.ranks]
    known = [m for m in seen if m is not None]
    return bool(known) and all(m < Milestone.INIT_DONE for m in known)


def _said_phase(job: Job, facts: dict[int, RankFacts], events: list[Event]) -> Phase:
    """What the lines themselves say: the deciding events' rules (or NCCL's backtrace after them),
    else the waiting ranks'."""
    chains = _Chains(job)
    for event in events:
        phase = chains.phase(event)
        if phase in _REAL:
            if phase is Phase.EXECUTION and event.fields.get("seq") == "1":
                return Phase.OPERATOR_LOAD
            return phase
    return wait_phase(facts, chains)


def wait_phase(facts: dict[int, RankFacts], chains: _Chains | None = None) -> Phase:
    """The phase the waiting ranks were in when they gave up."""
    phases: Counter[Phase] = Counter()
    for f in facts.values():
        for event in f.timeouts + f.peer_errors:
            phase = chains.phase(event) if chains else event.phase
            if event.kind is Kind.TIMEOUT and event.fields.get("seq") == "1":
                phases[Phase.OPERATOR_LOAD] += 1
            elif phase in _REAL:
                phases[phase] += 1
    if not phases:
        return Phase.UNKNOWN
    return phases.most_common(1)[0][0]
