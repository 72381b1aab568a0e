"""What a check returns, and the lines that `triage analyze` reads back (rules/repro/repro-health-*.yaml)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from triage.ranks import fmt_ranks
from triage.repro.logfile import stamp

TAG = "triage-health"  # every line and store key of ours starts with it

Phase = Literal["skipped", "arrival", "collective", "verify", "done"]

# The launch's rank of each current global rank, once `shrink` re-formed the default group (the new
# group numbers its members from 0): the lines name processes as the launcher's logs do.
ORIGIN: list[int] = []


def launch_rank(rank: int) -> int:
    return ORIGIN[rank] if 0 <= rank < len(ORIGIN) else rank


def launch_ranks(ranks: tuple[int, ...] | list[int]) -> list[int]:
    return [launch_rank(r) for r in ranks]


@dataclass(frozen=True)
class HealthResult:
    """What one `check` decided, the same on every member that took part.

    `missing`: global ranks that did not contribute by the deadline and did not answer the roll
    call that followed (killed, frozen, or not at the check); `wrong`: global ranks whose
    contribution held something else than they wrote; `exclude`: the global ranks to drop
    (`missing` and `wrong`; empty when nobody could be named), the list `shrink` drops; `phase`:
    where the check ended (`arrival`, `collective`, `verify`, `done`, or `skipped` when there was
    nothing to check); `elapsed`: seconds this call took on this rank; `group`, `call`: which
    check this was (the group's name and this call's number on it, the same on every member).
    """

    ok: bool
    world_size: int
    missing: tuple[int, ...] = ()
    wrong: tuple[int, ...] = ()
    phase: Phase = "done"
    elapsed: float = 0.0
    reason: str = ""
    exclude: tuple[int, ...] = ()
    group: str = ""
    call: int = 0

    def __bool__(self) -> bool:
        return self.ok


class HealthCheckFailed(RuntimeError):
    """`check(on_failure="raise")` failed; `.result` says how."""

    def __init__(self, result: HealthResult) -> None:
        super().__init__(result.reason)
        self.result = result


def _ranks(word: str, ranks: tuple[int, ...] | list[int]) -> str:
    return f"{word}{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)}"


def line(result: HealthResult, rank: int, group: str, ranks: list[int], number: int, tag: str) -> str:
    """The one line a failed check logs (rules/repro/repro-health-check-*.yaml read it back).

    Ranks are the launch's (`launch_rank`), like the writer's own.
    """
    if result.missing:
        what = f"missing {_ranks('rank', launch_ranks(result.missing))}"
    elif result.wrong:
        what = f"wrong values from {_ranks('rank', launch_ranks(result.wrong))}"
    else:
        what = "no rank named"
    return (f"{stamp()} {TAG} rank {launch_rank(rank)}: check FAILED: {what} in group {group} "
            f"(ranks {fmt_ranks(launch_ranks(ranks))}), "
            f"call {number}, tag {tag}, at {result.phase} after {result.elapsed:.3f} s: {result.reason}")


def excluded_line(rank: int, exclude: tuple[int, ...], step: int | None, group: str, call: int,
                  survivors: int) -> str:
    """The line `shrink` logs on every survivor (rules/repro/repro-health-excluded.yaml); launch ranks."""
    at = f" at step {step}" if step is not None else ""
    return (f"{stamp()} {TAG} rank {launch_rank(rank)}: {_ranks('rank', launch_ranks(exclude))} excluded{at} (check call {call} of group "
            f"{group}); the job went on with {survivors} ranks")


def leaving_line(rank: int, step: int | None, group: str, call: int, survivors: int) -> str:
    """The line `shrink` logs on an excluded rank before it hands back None."""
    at = f" at step {step}" if step is not None else ""
    return (f"{stamp()} {TAG} rank {launch_rank(rank)}: this rank was excluded{at} (check call {call} of group {group}); "
            f"it leaves the job, which goes on with {survivors} ranks")


def realigned_line(rank: int, group: str, ranks: list[int], call: int, tag: str, failed: int, last: int) -> str:
    """The line a member logs at the first pass after failed checks (rules/repro/repro-health-realigned.yaml)."""
    return (f"{stamp()} {TAG} rank {launch_rank(rank)}: check passed again in group {group} "
            f"(ranks {fmt_ranks(launch_ranks(ranks))}), call {call}, tag {tag}, after {failed} failed "
            f"call{'s' if failed > 1 else ''} (the last: call {last}): the group realigned")
