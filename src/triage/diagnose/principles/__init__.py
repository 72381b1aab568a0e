"""The principles the diagnosis weighs, in the order the verdict runs them (ties in score keep it).

Each principle reads the job's facts and returns a scored candidate (a `Hypothesis`) or None when
its evidence is absent; its score says how strongly that evidence alone supports the candidate, and
the verdict stage (verdict.py) weighs the candidates against each other. A principle applies to
every family whose lines carry its evidence; the peer pass (triage.job.peers) has already put who each
line is about in global ranks.

To add a principle: write it in the module of its kind (or a new one), declare its `Principle`
there, put it in `PRINCIPLES` below, add the names it emits to the `hypothesis` enums of
src/triage/schemas/report-v1.schema.json, and regenerate docs/principles.md with
`python -m triage.diagnose.principles` (tests/test_principles_registry.py checks all three agree).
"""

from __future__ import annotations

from triage.diagnose.principles import (
    configuration,
    first_failure,
    flight_recorder,
    mismatch,
    named,
    network,
    peer_named,
    progress,
    ras,
    realigned,
    recovered,
    silent,
    stacks,
    waits,
)
from triage.diagnose.principles.principle import Principle

PRINCIPLES: tuple[Principle, ...] = (
    recovered.PRINCIPLE,
    realigned.PRINCIPLE,
    named.PRINCIPLE,
    first_failure.PRINCIPLE,
    silent.PRINCIPLE,
    waits.WAIT_CHAIN,
    mismatch.COLLECTIVE_MISMATCH_AT_SEQ,
    mismatch.COLLECTIVE_MISMATCH_BY_FINGERPRINT,
    mismatch.PARAMETER_MISMATCH,
    mismatch.TLS_MISMATCH,
    flight_recorder.PRINCIPLE,
    waits.DEVICE_LINK,
    waits.NEVER_CONNECTED,
    waits.CQE_ENDPOINT,
    waits.UNREACHABLE_ROOT,
    progress.LAGGING_RANK,
    progress.LATE_ARRIVAL,
    network.PRINCIPLE,
    configuration.PRINCIPLE,
    configuration.WORLD_MISMATCH,
    peer_named.PRINCIPLE,
    ras.PRINCIPLE,
    stacks.PRINCIPLE,
)


def hypothesis_names() -> list[str]:
    """Every hypothesis name a report can carry, in registry order, each once."""
    return list(dict.fromkeys(name for p in PRINCIPLES for name in p.emits))


def markdown_table() -> str:
    """The registry as the table docs/principles.md shows (in the order the verdict runs them)."""
    rows = ["| principle | emits | module | what it reads and whom it names |", "|---|---|---|---|"]
    rows += [f"| {p.name} | {', '.join(f'`{n}`' for n in p.emits)} | `{_module(p)}` | {p.summary} |"
             for p in PRINCIPLES]
    return "\n".join(rows) + "\n"


def _module(principle: Principle) -> str:
    return principle.run.__module__.rsplit(".", 1)[-1] + ".py"
