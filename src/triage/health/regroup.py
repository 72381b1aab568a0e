"""`shrink`: drop the ranks a failed check named, and hand the survivors their new group (docs/health.md).

On a backend that can shrink (NCCL >= 2.27 under torch >= 2.10: `supports_shrinking`), it is
`torch.distributed.shrink_group(ranks, group, SHRINK_ABORT)`: the communicator drops the ranks and
aborts what was in flight. On the others (gloo), the old groups are aborted and kept alive (a
destructor would wait for a thread stuck on the dropped rank), and the survivors form a new default
group over the same store under a prefix that only this decision uses. Either way the new group
is the default when the default group was shrunk, and an excluded rank gets None with its old group
aborted, so that it can leave without waiting on anyone.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed import PrefixStore  # type: ignore[attr-defined]

from triage.health import keep, protocol, result
from triage.health.result import TAG, HealthResult, excluded_line, leaving_line

log = logging.getLogger("triage.health")

ABORT_GRACE_S = 1.0  # how long an abort may take before the caller goes on (it goes on in its thread)


def shrink(outcome: HealthResult, group: Any = None, *, step: int | None = None,
           timeout: float | None = None) -> Any:
    """The survivors' group after dropping `outcome.exclude`; None on an excluded rank.

    `outcome` is what `check(group)` returned (the same on every member); `step` goes into the
    line that `triage analyze` reads; `timeout` bounds the forming of a new gloo group (seconds;
    torch's default when None). Every survivor must call it, with the same result; an excluded
    rank may call it too (it returns None at once, touching no peer), and should then end.
    """
    if outcome.ok or not outcome.exclude:
        raise ValueError("shrink needs a failed check that named ranks to exclude (HealthResult.exclude); "
                         f"this one {'passed' if outcome.ok else 'named no rank'}")
    if not dist.is_initialized():
        raise ValueError("torch.distributed is not initialised: there is no group to shrink")
    pg: Any = dist.GroupMember.WORLD if group is None or group == dist.GroupMember.WORLD else group
    default = pg == dist.GroupMember.WORLD
    ranks: list[int] = dist.get_process_group_ranks(pg)
    me = dist.get_rank()
    unknown = [r for r in outcome.exclude if r not in ranks]
    if unknown:
        raise ValueError(f"ranks {unknown} of the result are not members of this group (ranks {ranks})")
    survivors = [r for r in ranks if r not in outcome.exclude]
    name = str(pg.group_name)
    if me in outcome.exclude:
        log.warning(leaving_line(me, step, name, outcome.call, len(survivors)))
        for each in list(dist.distributed_c10d._world.pg_map) if default else [pg]:
            abort_registered(each)
        return None
    log.warning(excluded_line(me, outcome.exclude, step, name, outcome.call, len(survivors)))
    backend = _backend(pg)
    if bool(getattr(backend, "supports_shrinking", False)):
        protocol.forget(_names() if default else [name])
        index = [ranks.index(r) for r in outcome.exclude]
        return dist.shrink_group(index, pg, dist.distributed_c10d.SHRINK_ABORT)
    if not default:
        raise ValueError(f"the {dist.get_backend(pg)} backend cannot shrink a group, and a sub-group cannot be "
                         "re-formed without every rank of the world: shrink the default group (group=None)")
    return _reform(outcome, survivors, me, timeout)


def _reform(outcome: HealthResult, survivors: list[int], me: int, timeout: float | None) -> Any:
    """Abort every group and form a new default group of `survivors` over the same store."""
    backend = str(dist.get_backend())
    store = dist.distributed_c10d._get_default_store()
    _abort_all()
    dist.distributed_c10d._world.group_count = 0
    prefix = f"{TAG}/regroup/{outcome.group}/{outcome.call}/"
    kwargs: dict[str, Any] = {} if timeout is None else {"timeout": timedelta(seconds=timeout)}
    dist.init_process_group(backend, store=PrefixStore(prefix, store), rank=survivors.index(me),
                            world_size=len(survivors), **kwargs)
    result.ORIGIN[:] = [result.launch_rank(r) for r in survivors]
    return dist.GroupMember.WORLD


def _names() -> list[str]:
    return [str(pg.group_name) for pg in list(dist.distributed_c10d._world.pg_map)]


def _abort_all() -> None:
    """Abort every group and forget them (torch and us), keeping their objects alive."""
    protocol.forget(_names())
    for pg in list(dist.distributed_c10d._world.pg_map):
        keep.never_destroy(pg)
    thread = threading.Thread(target=dist.distributed_c10d._abort_process_group, daemon=True,
                              name=f"{TAG}-abort")
    thread.start()
    keep.THREADS.append(thread)
    thread.join()  # quick: it aborts each backend (gloo: marks it; NCCL: ncclCommAbort) and forgets it


def abort_registered(pg: Any) -> None:
    """Abort `pg`'s backend so that nothing waits on it, keeping it registered and alive.

    It stays known to torch, so that `destroy_process_group()` neither asserts nor hangs (a gloo
    group's destructor would wait for a thread stuck in an all-reduce: `keep.never_destroy`).
    Later checks on it fail at once. The abort runs in a thread bounded by ABORT_GRACE_S.
    """
    name = str(pg.group_name)
    with protocol.LOCK:
        state = protocol.GROUPS.setdefault(name, protocol.GroupState())
        state.aborted = True
        for _, work, buf in state.pending:
            keep.never_destroy(work)
            keep.never_destroy(buf)
    keep.never_destroy(pg)
    thread = threading.Thread(target=pg.abort, daemon=True, name=f"{TAG}-abort")
    thread.start()
    keep.THREADS.append(thread)
    thread.join(ABORT_GRACE_S)


def _backend(pg: Any) -> Any:
    bound = getattr(pg, "bound_device_id", None)
    for device in ([bound] if bound is not None else []) + [torch.device("cuda"), torch.device("cpu")]:
        with contextlib.suppress(RuntimeError):
            return pg._get_backend(device)
    return None
