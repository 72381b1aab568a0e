"""The failure's phase: where the culprit stopped, or else where the job as a whole stood.

Milestones say how far each rank got (`Milestone`). Collectives need every member, so once any
rank completed one, the job was past its first collective: a later failure is in `execution`.
When init was behind the ranks but no collective ever completed, the first one failed
(`operator_load`). Before init completed, it is `comm_init`. Only when no milestone says anything
does the phase of the deciding line's rule stand — and `unknown` only when nothing says.
"""

from __future__ import annotations

from collections import Counter

from triage.diagnose.facts import RankFacts
from triage.job import Job
from triage.model import Event, Kind, Milestone, Phase

_REAL = (Phase.COMM_INIT, Phase.OPERATOR_LOAD, Phase.EXECUTION)
_PHASE_BY_WHAT_FAILED = ("hccl",)
_TRANSPORTS = ("nccl",)
_FAILURES = (Kind.TIMEOUT, Kind.ERROR, Kind.PEER_ERROR, Kind.CULPRIT_NAMED)


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
        if said is Phase.EXECUTION and _transport_says_execution(facts, events or []) and not _holds_start(job):
            # The line says it failed inside a running collective (an IB completion error, a proxy
            # or transport error); init is inferred from that very line. Absence in a partial log
            # is not evidence: an excerpt that shows no completed collective does not show the job
            # was at its first one (only a log that holds the job's start can).
            return Phase.EXECUTION
        if said is Phase.UNKNOWN and not _waited_in_a_collective(facts):
            # Init was behind the ranks (c10's `[rankN]:` prefix), nothing points at the first
            # collective, and the failure is not a communication one: the job was running.
            return Phase.EXECUTION
        return Phase.OPERATOR_LOAD
    if said is Phase.UNKNOWN and furthest is not None and (
            furthest >= Milestone.RENDEZVOUS or (culprits and _failed_by_itself(facts, culprits))):
        # No rank is known to have finished communicator init, and a rank failed on its own (or
        # the ranks were still joining): the job never got past comm_init.
        return Phase.COMM_INIT
    if said is Phase.UNKNOWN and furthest is None:
        # No milestone at all (a screen excerpt, a line whose writer is not known): the failure
        # lines' own phases decide — an error code's, a stage keyword's, the rule's.
        return lines_phase(job)
    return said


def lines_phase(job: Job) -> Phase:
    """The phase the job's failure lines state themselves (whoever wrote them), the most stated
    first; `unknown` when none does."""
    stated = Counter(e.phase for e in job.events if e.kind in _FAILURES and e.phase in _REAL)
    return stated.most_common(1)[0][0] if stated else Phase.UNKNOWN


def _transport_says_execution(facts: dict[int, RankFacts], events: list[Event]) -> bool:
    """A transport's own line places the failure in a running collective (NCCL's IB completion
    errors, NET/Socket and proxy errors of the data path); PyTorch's and gloo's waits say only that
    a collective was under way, which the first one is too."""
    lines = events or [e for f in facts.values() for e in f.timeouts + f.peer_errors + f.self_failures]
    return any(e.family in _TRANSPORTS and e.phase is Phase.EXECUTION for e in lines)


def _holds_start(job: Job) -> bool:
    """Some log here holds the job's start: a communicator init line, not a later line that implies it."""
    return any(e.kind in (Kind.INIT_START, Kind.INIT_DONE) for e in job.events)


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
    """What the lines themselves say: the deciding events' rules, else the waiting ranks'."""
    for event in events:
        if event.phase in _REAL:
            if event.phase is Phase.EXECUTION and event.fields.get("seq") == "1":
                return Phase.OPERATOR_LOAD
            return event.phase
    return wait_phase(facts)


def wait_phase(facts: dict[int, RankFacts]) -> Phase:
    """The phase the waiting ranks were in when they gave up."""
    phases: Counter[Phase] = Counter()
    for f in facts.values():
        for event in f.timeouts + f.peer_errors:
            if event.kind is Kind.TIMEOUT and event.fields.get("seq") == "1":
                phases[Phase.OPERATOR_LOAD] += 1
            elif event.phase in _REAL:
                phases[event.phase] += 1
    if not phases:
        return Phase.UNKNOWN
    return phases.most_common(1)[0][0]
