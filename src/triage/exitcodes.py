"""The exit-code contract, the same for every command (README, "Exit codes")."""

from __future__ import annotations

from triage.model import Report, Status

NO_FAILURE = 0  # the analysis ran and found no failure
DIAGNOSED = 1  # a failure was found and its culprit named
USAGE_OR_INPUT_ERROR = 2  # bad options, no readable input, invalid rules, internal error
INCONCLUSIVE = 3  # a failure was found, but the evidence does not name the culprit

TABLE = (
    (NO_FAILURE, "no failure found"),
    (DIAGNOSED, "failure diagnosed: phase and culprit named"),
    (USAGE_OR_INPUT_ERROR, "usage or input error (nothing readable, bad option, invalid rule)"),
    (INCONCLUSIVE, "failure found, culprit not settled (inconclusive)"),
)


def exit_code(report: Report) -> int:
    return {
        Status.NO_FAILURE: NO_FAILURE,
        Status.DIAGNOSED: DIAGNOSED,
        Status.INCONCLUSIVE: INCONCLUSIVE,
    }[report.verdict.status]
