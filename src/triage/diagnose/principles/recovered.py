"""The job dropped the ranks an in-loop check named and went on: a recovery, not an unrecovered hang.

`triage.health.shrink` writes one line on every survivor (rule repro-health-excluded). When its
ranks are the ones the tool-named hypothesis names, this principle restates that hypothesis with
what happened after: who was excluded, at which step, and that the job went on, so that the
verdict says the job recovered instead of calling the stop of the excluded rank the job's end.
"""

from __future__ import annotations

import dataclasses

from triage.diagnose.context import Context
from triage.diagnose.principles.named import named_by_tool
from triage.diagnose.principles.principle import Principle
from triage.model import Hypothesis
from triage.ranks import fmt_ranks

RULE = "repro-health-excluded"
# Above named-by-tool's own score: the same culprits, and the survivors' own word that they went on.
RECOVERED_SCORE = 0.92


def recovered_by_exclusion(ctx: Context) -> Hypothesis | None:
    excluded = ctx.job.of_rules(RULE)
    if not excluded:
        return None
    named = named_by_tool(ctx)
    dropped = sorted({r for e in excluded for r in e.about})
    if named is None or not {c.rank for c in named.culprits} <= set(dropped):
        return None
    first = excluded[0]
    step = first.fields.get("at_step")
    went_on = first.fields.get("survivors", "?")
    when = f" at step {step}" if step else ""
    recovered = (f"The job recovered: its in-loop health check excluded rank{'s' if len(dropped) > 1 else ''} "
                 f"{fmt_ranks(dropped)}{when}, and the job went on with {went_on} ranks "
                 f"({len(excluded)} survivor{'s' if len(excluded) > 1 else ''} logged it). ")
    advice = [f"The job itself needs no requeue for this; check rank {fmt_ranks(dropped)}'s host before it "
              "rejoins a job.", *named.advice]
    return dataclasses.replace(named, name="recovered-by-exclusion", score=max(named.score, RECOVERED_SCORE),
                               reasoning=recovered + named.reasoning, advice=advice)


PRINCIPLE = Principle(
    name="recovered-by-exclusion", emits=("recovered-by-exclusion",), run=recovered_by_exclusion,
    summary="The ranks that the tool-named hypothesis names were dropped in the loop by `triage.health.shrink` "
            "(its line on every survivor: excluded at step N, the job went on with M ranks): the same "
            "culprits and category, with a verdict that says the job recovered, so that it is not read as "
            "an unrecovered hang.")
