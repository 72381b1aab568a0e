"""What every principle reads (the job and each rank's facts), and the helpers they share to cite it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from triage.diagnose.facts import RankFacts
from triage.diagnose.phase import job_phase
from triage.job import Job
from triage.job.config import STATING_RULES, ConfigItem, build_config
from triage.model import Category, Culprit, Event, Evidence, Phase, ProcessGroup

# How many lines a culprit cites by default: enough to show the cause, few enough to read.
EVIDENCE_LINES = 4


@dataclass
class Context:
    job: Job
    facts: dict[int, RankFacts]
    _config: list[ConfigItem] | None = field(default=None, init=False, repr=False)

    def config(self) -> list[ConfigItem]:
        """What the ranks state of their setup, and who differs (built once, for every principle)."""
        if self._config is None:
            self._config = build_config(self.job.of_rules(*STATING_RULES) + self.job.of_families("fr"))
        return self._config

    @property
    def expected(self) -> list[int]:
        return sorted(self.facts)

    def waiters(self) -> list[int]:
        return [r for r, f in self.facts.items() if f.reported_wait]

    def host_of(self, rank: int) -> str | None:
        state = self.job.ranks.get(rank)
        return state.host if state else None

    def phase(self, culprits: list[int] | None = None, events: list[Event] | None = None) -> Phase:
        return job_phase(self.job, self.facts, culprits, events)


def evidence_of(events: list[Event], limit: int = EVIDENCE_LINES) -> list[Evidence]:
    """The distinct lines of these events, in order, at most `limit`."""
    seen: list[Evidence] = []
    for event in events:
        if event.evidence not in seen:
            seen.append(event.evidence)
        if len(seen) >= limit:
            break
    return seen


def rank_culprit(ctx: Context, rank: int, reason: str, events: list[Event]) -> Culprit:
    return Culprit(kind="rank", rank=rank, host=ctx.host_of(rank), reason=reason,
                   evidence=evidence_of(events))


def failure_category(events: list[Event]) -> Category:
    """The category its rule gives the first failure; a crash when the rule says nothing."""
    return next((e.category for e in events if e.category), Category.CRASHED_PROCESS)


def minority(by_rank: dict[int, str], minimum: int) -> tuple[list[int], str]:
    """The ranks outside a clear majority value, and that value; none when there is no majority."""
    if len(by_rank) < minimum:
        return [], ""
    counts = Counter(by_rank.values())
    (common, top), *rest = counts.most_common()
    if not rest or (rest and rest[0][1] == top) or top < 2:
        return [], common
    return sorted(r for r, v in by_rank.items() if v != common), common


def groups_by_progress(ctx: Context) -> list[ProcessGroup]:
    """Groups with sequence evidence, the one whose waiting began first leading."""
    def first_wait(group: ProcessGroup) -> float:
        times = [e.time for m in group.members.values() for e in m.timeouts if e.time is not None]
        return min(times) if times else float("inf")
    return sorted(ctx.job.groups.values(), key=lambda g: (first_wait(g), not g.default, g.key))
