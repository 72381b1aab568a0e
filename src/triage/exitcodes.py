"""The exit-code contract, the same for every command (README, "Exit codes")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from triage.status import Status

if TYPE_CHECKING:
    from triage.model import Report

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

# `triage rules test`: whether a rule folder's examples and conventions hold (2 as above: a bad
# folder, a file that is not readable YAML).
RULES_PASS = 0
RULES_FAIL = 1


def help_text(error: str | None = None, *, extra: tuple[tuple[int, str], ...] = ()) -> str:
    """The "Exit codes: ..." sentence of a command's help; `error` says what exit 2 means for it."""
    table = [(code, error if code == USAGE_OR_INPUT_ERROR and error else text) for code, text in TABLE]
    return "Exit codes: " + "; ".join(f"{code} {text}" for code, text in [*table, *extra]) + "."


# `--fail-on`: the verdicts that make the exit code non-zero (1 diagnosed, 3 inconclusive).
FAIL_ON_CHOICES = ("diagnosed", "inconclusive", "none")
FAIL_ON_DEFAULT = frozenset({Status.DIAGNOSED, Status.INCONCLUSIVE})


def parse_fail_on(text: str) -> frozenset[Status]:
    """`diagnosed,inconclusive` → the statuses; `none` → none (as --exit-zero). ValueError if bad."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in FAIL_ON_CHOICES]
    if bad or not names:
        raise ValueError(f"--fail-on takes a comma-separated list of {', '.join(FAIL_ON_CHOICES)}, "
                         f"not {text!r}")
    if "none" in names:
        if len(names) > 1:
            raise ValueError("--fail-on none cannot be combined with other statuses")
        return frozenset()
    return frozenset(Status(n) for n in names)


def exit_code(report: Report, fail_on: frozenset[Status] = FAIL_ON_DEFAULT) -> int:
    status = report.verdict.status
    if status not in fail_on:
        return NO_FAILURE
    return {
        Status.NO_FAILURE: NO_FAILURE,
        Status.DIAGNOSED: DIAGNOSED,
        Status.INCONCLUSIVE: INCONCLUSIVE,
    }[status]


# `--exit-code-from`: whose exit code a run leaves with. `decision` maps the decision's action
# through the policy's `exit_codes` (Decision.exit_code), for launchers whose requeue logic reads
# one; it is opt-in, the verdict's codes above stay the default.
EXIT_CODE_FROM = ("verdict", "decision")


def parse_exit_code_from(text: str, verdict_options: bool) -> bool:
    """Whether the decision gives the exit code; ValueError for a bad value, or for `decision` with
    --fail-on / --exit-zero (`verdict_options`), which only choose among the verdict's codes."""
    if text not in EXIT_CODE_FROM:
        raise ValueError(f"--exit-code-from takes {' or '.join(EXIT_CODE_FROM)}, not {text!r}")
    if text == "decision" and verdict_options:
        raise ValueError("--exit-code-from decision sets the exit code itself: drop --fail-on and --exit-zero")
    return text == "decision"


def decision_exit_code(report: Report) -> int:
    """The decision's exit code (0 when the report has no decision: nothing to act on)."""
    return report.decision.exit_code if report.decision is not None else NO_FAILURE
