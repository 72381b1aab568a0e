"""The in-loop check failed, then passed again on every member: a stall the job came through, not a hang.

`triage.health.check` logs each failed check on every member, and, at the first check that passes
after failures on the same group and tag, a line that says so (rule repro-health-realigned). Every
member contributed to that later check in time, so the ranks the failures named were back and the
group went on. Such failures are accounted for: with nothing else failing, the job did not fail.
A check that found wrong values is not resolved by a later pass (corruption that comes and goes is
still a fault), and a check whose group never passed again stays a failure.
"""

from __future__ import annotations

from triage.diagnose.context import Context
from triage.diagnose.principles.principle import Principle
from triage.model import Category, Event, Hypothesis, Phase
from triage.ranks import fmt_ranks

RULE = "repro-health-realigned"
STALL_RULES = ("repro-health-check-missing", "repro-health-check-unnamed")  # arrival/collective, not wrong values


def realigned_checks(ctx: Context) -> list[Event]:
    """The failed checks that a later pass of the same group and tag resolved."""
    passed: dict[tuple[str, str], int] = {}
    for event in ctx.job.of_rules(RULE):
        if (call := event.fields.get("check_no", "")).isdigit():
            key = (event.fields.get("group_name", ""), event.fields.get("check_tag", ""))
            passed[key] = max(passed.get(key, 0), int(call))
    if not passed:
        return []
    return [e for e in ctx.job.of_rules(*STALL_RULES) if (call := e.fields.get("check_no", "")).isdigit()
            and passed.get((e.fields.get("group_name", ""), e.fields.get("check_tag", "")), 0) > int(call)]


def recovered_by_realignment(ctx: Context) -> Hypothesis | None:
    resolved = realigned_checks(ctx)
    if not resolved:
        return None
    ranks = sorted({r for e in resolved for r in e.about})
    calls = sorted({int(e.fields["check_no"]) for e in resolved})
    named = f"naming rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)}" if ranks else "naming no rank"
    shown = ", ".join(str(c) for c in calls[:8]) + (f" and {len(calls) - 8} more" if len(calls) > 8 else "")
    return Hypothesis(
        name="recovered-by-realignment", score=0.0, category=Category.UNKNOWN, phase=Phase.UNKNOWN, culprits=[],
        shows_failure=False, accounts_for=resolved,
        reasoning=f"The in-loop health check failed at call{'s' if len(calls) > 1 else ''} {shown} ({named}), "
                  "and a later check passed on every member: the group realigned and the job went on. "
                  "Each was a stall longer than the check's timeout, not a hang.")


PRINCIPLE = Principle(
    name="recovered-by-realignment", emits=("recovered-by-realignment",), run=recovered_by_realignment,
    fails_without_logged_failure=True,
    summary="Failed in-loop health checks (missing ranks, or no rank named) that a later check of the same group "
            "and tag passed again on every member (the line `triage.health` logs at that pass): the named ranks "
            "stalled and came back, and the group went on. Those failures are accounted for; with nothing else "
            "failing, the job did not fail. Wrong values are never resolved this way.")
