"""`triage.health`: an in-loop liveness check whose answer every rank shares, and the way on after a failure.

- `check(group=None, timeout=10)`: an all-reduce of one element, verified, with a deadline that
  holds; when it fails, one decision per call taken through the store, the same on every member,
  naming the ranks that did not contribute or contributed wrongly (`HealthResult.exclude`).
- `shrink(result, group=None)`: drop those ranks and hand back the survivors' group (`None` on an
  excluded rank).

See docs/health.md. Ranks in results are global ranks, also for sub-groups. Every member must call
`check` on a group as often as the others and with the same tag, as for any collective.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any, Literal

import torch.distributed as dist

from triage.health.protocol import GROUPS, Call
from triage.health.regroup import abort_registered, shrink
from triage.health.result import TAG, HealthCheckFailed, HealthResult, Phase, line, realigned_line

__all__ = ["TAG", "HealthCheckFailed", "HealthResult", "Phase", "check", "line", "shrink"]

OnFailure = Literal["log", "raise", "abort"]

log = logging.getLogger("triage.health")


def check(group: Any = None, *, timeout: float = 10.0, tag: str | None = None,
          on_failure: OnFailure = "log") -> HealthResult:
    """Check that every member of `group` (default: the world) contributes the right value in time.

    Returns on every member within `timeout` seconds plus at most 1 s for the roll call (and 1 s
    with `on_failure="abort"`), whatever the other ranks do, as long as the store answers. Every
    member that takes part returns the same decision for the same call. A no-op (ok) when
    torch.distributed is not initialised, or when this rank is not a member of `group`.
    """
    if on_failure not in ("log", "raise", "abort"):
        raise ValueError(f"on_failure must be 'log', 'raise' or 'abort', not {on_failure!r}")
    if not timeout > 0:
        raise ValueError(f"timeout must be positive, not {timeout!r}")
    started = time.monotonic()
    if not dist.is_available() or not dist.is_initialized():
        return HealthResult(True, 1, phase="skipped", reason="torch.distributed is not initialised: "
                            "nothing to check")
    pg: Any = dist.GroupMember.WORLD if group is None or group == dist.GroupMember.WORLD else group
    if pg is dist.GroupMember.NON_GROUP_MEMBER or dist.get_rank(pg) < 0:
        return HealthResult(True, 0, phase="skipped", reason="this rank is not a member of the group")
    name = str(pg.group_name)
    if (state := GROUPS.get(name)) is not None and state.aborted:
        result = HealthResult(False, pg.size(), phase="collective", elapsed=time.monotonic() - started,
                              reason=f"this rank aborted the process group ({name}) after an earlier failed "
                              "check: end the process, or shrink the group on the other ranks")
        return _act(result, pg, name, tag or "default", 0, "log" if on_failure == "abort" else on_failure)
    call = Call(pg, timeout, tag or "default", started)
    result = call.run()
    failed = call.state.failed
    if result.ok:
        if call.tag in failed:  # the first pass after failures: the line that says the job went on
            count, last = failed.pop(call.tag)
            log.warning(realigned_line(dist.get_rank(), name, call.ranks, call.number, call.tag, count, last))
        return result
    failed[call.tag] = (failed.get(call.tag, (0, 0))[0] + 1, call.number)
    return _act(result, pg, name, call.tag, call.number, on_failure)


def _act(result: HealthResult, pg: Any, name: str, tag: str, number: int, on_failure: OnFailure) -> HealthResult:
    """Log the failure's line, then abort or raise as asked."""
    log.error(line(result, dist.get_rank(), name, dist.get_process_group_ranks(pg), number, tag))
    if on_failure == "abort":
        abort_registered(pg)
        result = dataclasses.replace(result, reason=result.reason + "; the process group was aborted")
    if on_failure == "raise":
        raise HealthCheckFailed(result)
    return result
