"""`triage.health.check`: an in-loop liveness check of a process group whose deadline holds.

`check()` is the all-reduce-of-ones check that training loops run every N steps, made to keep its
deadline and to say *which* rank is at fault (docs/health.md). It is `triage repro`'s engine inside
the job, without a launcher of its own:

1. **Arrival, through the store.** Every member posts its arrival to the group's store (the default
   store, under a prefix per group, tag and call) and waits there, with the store's own timeout, for
   one decision: `go` (every member arrived) or `abandon` (the deadline passed first, with the
   members that had not arrived). The decision is taken once, atomically (`compare_set`), so every
   member acts on the same one: the all-reduce starts only when every member is known to be there,
   and a member that arrives after the others gave up learns it at once instead of entering a
   collective alone. Nothing here waits on the collective, so a missing rank cannot hang it.
2. **The all-reduce, polled.** One all-reduce of an n-element vector in which each member writes
   its own slot (`triage.repro.verify`: a value only it uses, different at every call). It is
   started asynchronously and polled (`work.is_completed()`) until the deadline; a wrong slot names
   the member that contributed it. When it fails or misses its deadline, the members that still run
   answer a roll call through the store: whoever does not answer is named missing (killed, frozen).
3. **After a failure**: one line that `triage analyze` knows (rules/repro/repro-health-*.yaml),
   then what `on_failure` asks: nothing more (`log`), raise `HealthCheckFailed` (`raise`), or abort
   the process group so that the process can exit (`abort`). An all-reduce that missed its deadline
   is never followed by another on that group: later checks fail at once while it is in flight.

Ranks in results are global ranks, also for sub-groups. Every member must call `check` on a group
as often as the others and with the same tag, as for any collective.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import dataclasses
import logging
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

import torch
import torch.distributed as dist
from torch.distributed import PrefixStore, Store  # type: ignore[attr-defined]

from triage.ranks import fmt_ranks
from triage.repro import verify
from triage.repro.logfile import stamp
from triage.repro.worker import classify

TAG = "triage-health"  # every line and store key of ours starts with it
GRACE_S = 0.5  # the all-reduce's own time when the last member arrived at the deadline
ROLLCALL_S = 1.0  # how long a failed all-reduce waits for the members' answers to its roll call
ROLLCALL_EVERY_S = 0.05  # how often a member polling the all-reduce looks for a roll call
ABORT_GRACE_S = 1.0  # how long `abort` waits for the process group's abort before returning
POLL_MAX_S = 0.002  # the longest sleep between two polls of a GPU all-reduce
WAIT_MIN_S = 0.002  # the shortest timed wait on a CPU all-reduce (a 0 ms timeout means none)
SETTLE_S = 2.0  # how long the exit waits for the backend's threads to let go of checks' buffers
SETTLING_MAX = 64  # buffers kept for that at most (a backend lets go of a finished one at once)

OnFailure = Literal["log", "raise", "abort"]
Phase = Literal["skipped", "arrival", "collective", "verify", "done"]

log = logging.getLogger("triage.health")


@dataclass(frozen=True)
class HealthResult:
    """What one `check` found, the same on every member that took part.

    `missing`: global ranks that did not arrive by the deadline, or did not answer the roll call
    after the all-reduce failed; `wrong`: global ranks whose slot of the all-reduce held something
    else than they wrote; `phase`: where the check ended (`arrival`, `collective`, `verify`, `done`,
    or `skipped` when there was nothing to check); `elapsed`: seconds this call took.
    """

    ok: bool
    world_size: int
    missing: tuple[int, ...] = ()
    wrong: tuple[int, ...] = ()
    phase: Phase = "done"
    elapsed: float = 0.0
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


class HealthCheckFailed(RuntimeError):
    """`check(on_failure="raise")` failed; `.result` says how."""

    def __init__(self, result: HealthResult) -> None:
        super().__init__(result.reason)
        self.result = result


@dataclass
class _Group:
    """What this process remembers of one group between checks."""

    calls: dict[str, int] = field(default_factory=dict)  # tag -> calls made
    in_flight: tuple[int, Any, torch.Tensor] | None = None  # (call, work, buffer) past its deadline
    aborted: bool = False


_LOCK = threading.Lock()
_GROUPS: dict[str, _Group] = {}
_WORLD_ABORTED = False
_RANK = -1  # this process's global rank, kept when a group is aborted
# Buffers of finished all-reduces that a backend thread may still hold (`_let_go`).
_SETTLING: list[torch.Tensor] = []
_ABORTS: list[threading.Thread] = []  # `_abort`'s threads, waited for at exit like the buffers


def check(group: Any = None, *, timeout: float = 10.0, tag: str | None = None,
          on_failure: OnFailure = "log") -> HealthResult:
    """Check that every member of `group` (default: the world) answers and contributes correctly.

    Returns on every rank within `timeout` seconds plus at most GRACE_S + ROLLCALL_S (and
    ABORT_GRACE_S with `on_failure="abort"`), whatever the other ranks do, as long as the store
    answers (under torchrun its server is the agent, not a rank). A no-op (ok) when
    torch.distributed is not initialised, or when this rank is not a member of `group`.
    """
    if on_failure not in ("log", "raise", "abort"):
        raise ValueError(f"on_failure must be 'log', 'raise' or 'abort', not {on_failure!r}")
    if not timeout > 0:
        raise ValueError(f"timeout must be positive, not {timeout!r}")
    started = time.monotonic()
    if _WORLD_ABORTED:
        return _aborted("world", tag, started, on_failure)
    if not dist.is_available() or not dist.is_initialized():
        return HealthResult(True, 1, phase="skipped", reason="torch.distributed is not initialised: "
                            "nothing to check")
    world = group is None or group == dist.GroupMember.WORLD
    pg = dist.GroupMember.WORLD if world else group
    name = str(getattr(pg, "group_name", ""))
    if (state := _GROUPS.get(name)) is not None and state.aborted:
        return _aborted(name, tag, started, on_failure)  # torch no longer knows the group
    if pg is dist.GroupMember.NON_GROUP_MEMBER or dist.get_rank(pg) < 0:
        return HealthResult(True, 0, phase="skipped", reason="this rank is not a member of the group")
    call = _Call(pg, world, timeout, tag or "default", started)
    result = call.run()
    return result if result.ok else _act(result, call, pg, on_failure)


class _Call:
    """One check on one member: arrival, the all-reduce, the verdict."""

    def __init__(self, pg: Any, world: bool, timeout: float, tag: str, started: float) -> None:
        self.pg = pg
        self.world = world
        self.name = str(pg.group_name)
        self.ranks: list[int] = dist.get_process_group_ranks(pg)
        self.n = len(self.ranks)
        self.index = dist.get_rank(pg)  # this member's rank in the group
        self.timeout = timeout
        self.tag = tag
        self.started = started
        self.deadline = started + timeout
        with _LOCK:
            self.state = _GROUPS.setdefault(self.name, _Group())
            self.number = self.state.calls.get(tag, 0) + 1
            self.state.calls[tag] = self.number
        # Ours alone: the default store under a prefix per group and tag; keys of one call below.
        default = dist.distributed_c10d._get_default_store()
        self.store: Store = PrefixStore(f"{TAG}/{self.name}/{tag}/", default)
        self.key = f"{self.number}/"

    # -- outcome -----------------------------------------------------------------------------

    def result(self, phase: Phase, reason: str, *, missing: list[int] | None = None,
               wrong: list[int] | None = None) -> HealthResult:
        return HealthResult(phase == "done", self.n, tuple(sorted(self.ranks[i] for i in missing or [])),
                            tuple(sorted(self.ranks[i] for i in wrong or [])), phase,
                            time.monotonic() - self.started, reason)

    def who(self, indices: list[int]) -> str:
        ranks = [self.ranks[i] for i in indices]
        return f"rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)}"

    # -- the check ---------------------------------------------------------------------------

    def run(self) -> HealthResult:
        if self.state.in_flight is not None:
            number, work, _ = self.state.in_flight
            if not work.is_completed():
                return self.result("collective", f"the all-reduce of check #{number} on this group is still "
                                   "in flight on this rank (it missed its deadline): the group is stuck; abort "
                                   "it (on_failure='abort') or end the process")
            self.state.in_flight = None
        try:
            missing = self.arrive()
        except RuntimeError as exc:
            return self.result("arrival", f"the store did not answer: {_first_line(exc)}")
        if missing:
            if self.index in missing:
                others = [i for i in missing if i != self.index]
                why = (f"this rank (rank {self.ranks[self.index]}) reached the check after the others had "
                       f"given up waiting at their {self.timeout:g} s deadline")
                if others:
                    why += f"; {self.who(others)} had not arrived either"
            else:
                why = f"{self.who(missing)} did not reach the check within the {self.timeout:g} s deadline"
            return self.result("arrival", why, missing=missing)
        return self.all_reduce()

    def arrive(self) -> list[int]:
        """Meet the other members through the store; the members missing at the decision (group ranks)."""
        s, k = self.store, self.key
        s.set(f"seen/{self.index}", str(self.number))
        if s.add(k + "n", 1) == self.n:
            decision = s.compare_set(k + "d", "", "go")
            if decision == b"go" and self.number > 1:
                self.forget(self.number - 1)
        else:
            decision = self.await_decision()
        text = decision.decode()
        if text == "go":
            return []
        return [int(i) for i in text.partition(":")[2].split(",") if i]

    def forget(self, number: int) -> None:
        """Remove the keys of an earlier call; every member has arrived at this one, so none reads them.

        The keys of a call that failed stay until a later call passes, and only those of the call
        just before it are removed then: a failed check leaves a few keys behind, a passing one none.
        """
        s, k = self.store, f"{number}/"
        s.delete_key(k + "n")
        s.delete_key(k + "d")
        if s.check([k + "rc"]):
            for key in ["rc", *(f"rc/{i}" for i in range(self.n))]:
                s.delete_key(k + key)

    def await_decision(self) -> bytes:
        s, k = self.store, self.key
        remaining = self.deadline - time.monotonic()
        if remaining > 0:
            try:
                s.wait([k + "d"], timedelta(seconds=remaining))
                return s.get(k + "d")
            except dist.DistStoreError:
                pass  # the deadline passed: decide to abandon, unless the decision came meanwhile
        missing = self.not_seen()
        return s.compare_set(k + "d", "", "abandon:" + ",".join(map(str, missing)))

    def not_seen(self) -> list[int]:
        """Members whose last arrival is older than this call."""
        keys = [f"seen/{i}" for i in range(self.n)]
        if self.store.check(keys):
            seen = [int(v) for v in self.store.multi_get(keys)]
        else:
            seen = [int(self.store.get(key)) if self.store.check([key]) else 0 for key in keys]
        return [i for i, number in enumerate(seen) if number < self.number]

    def all_reduce(self) -> HealthResult:
        buf = torch.zeros(self.n, device=_device(self.pg))
        verify.fill(buf, self.index, self.n, self.number, False)
        work = dist.all_reduce(buf, group=self.pg, async_op=True)
        # The last member may have arrived just before the deadline: the all-reduce still gets a grace.
        until = max(self.deadline, time.monotonic() + min(GRACE_S, self.timeout))
        if not self.poll(work, until, buf.device.type == "cpu"):
            self.state.in_flight = (self.number, work, buf)
            _never_destroy(work)
            missing = self.roll_call()
            why = (f"the all-reduce did not complete within the {self.timeout:g} s deadline although every "
                   "rank had arrived; ")
            why += (f"{self.who(missing)} did not answer the roll call afterwards (stopped or killed)" if missing
                    else "every rank answered the roll call: a link between them does not deliver")
            return self.result("collective", why, missing=missing)
        try:
            work.wait()
        except RuntimeError as exc:
            del work
            _let_go(buf)
            missing = self.roll_call()
            why = f"the all-reduce failed ({classify(exc)}: {type(exc).__name__}: {_first_line(exc)})"
            if missing:
                why += f"; {self.who(missing)} did not answer the roll call afterwards"
            return self.result("collective", why, missing=missing)
        del work
        _let_go(buf)
        wrong, _ = verify.check(buf.cpu(), self.n, self.number)  # one element a slot: nothing outside
        if wrong:
            why = "; ".join(f"rank {self.ranks[w.index]} contributed {w.got:g} in its slot, expected "
                            f"{w.expected:g}" for w in wrong)
            return self.result("verify", why, wrong=[w.index for w in wrong])
        return self.result("done", f"all {self.n} ranks arrived and contributed the right values")

    def poll(self, work: Any, until: float, cpu: bool) -> bool:
        """Wait for `work` until `until`, answering a roll call if one is called meanwhile.

        On the CPU, `Work.wait(timeout)` waits in slices that end at the deadline or at the next
        look for a roll call; each slice is at least WAIT_MIN_S (a timeout of 0 ms would mean no
        timeout at all). A GPU work is polled (`is_completed`: the device ran it), since NCCL's own
        timed wait may abort the communicator when it times out.
        """
        pause, look, answered = 0.0, time.monotonic() + ROLLCALL_EVERY_S, False
        while not work.is_completed():
            now = time.monotonic()
            if now >= until:
                return False
            if not answered and now >= look:
                look = now + ROLLCALL_EVERY_S
                try:
                    if self.store.check([self.key + "rc"]):
                        self.store.set(f"{self.key}rc/{self.index}", "1")
                        answered = True
                except RuntimeError:
                    answered = True  # no store: no roll call to answer
            if cpu:
                wake = until if answered else min(until, look)
                # On timeout it raises and leaves the work as it was; the work's own failure is
                # raised again once it is completed (all_reduce).
                with contextlib.suppress(RuntimeError):
                    work.wait(timedelta(seconds=max(WAIT_MIN_S, wake - now)))
            else:
                time.sleep(pause)
                pause = min(POLL_MAX_S, pause * 2 or 20e-6)
        return True

    def roll_call(self) -> list[int]:
        """Members that do not answer within ROLLCALL_S (group ranks); [] when the store does not answer."""
        keys = [f"{self.key}rc/{i}" for i in range(self.n)]
        try:
            self.store.set(self.key + "rc", "1")
            self.store.set(keys[self.index], "1")
            with contextlib.suppress(dist.DistStoreError):  # who answered is read below
                self.store.wait(keys, timedelta(seconds=min(ROLLCALL_S, self.timeout)))
            return [i for i, key in enumerate(keys) if not self.store.check([key])]
        except RuntimeError:
            return []


def _device(pg: Any) -> torch.device:
    """Where the group's collectives run: its bound device, else CUDA/NPU for NCCL/HCCL, else the CPU."""
    bound = getattr(pg, "bound_device_id", None)
    if bound is not None:
        return torch.device(bound)
    backend = str(dist.get_backend(pg)).lower()
    if "nccl" in backend and torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    npu = getattr(torch, "npu", None)
    if "hccl" in backend and npu is not None:
        return torch.device("npu", npu.current_device())
    return torch.device("cpu")


def _never_destroy(obj: Any) -> None:
    """Keep `obj` alive until the process ends, through interpreter shutdown too.

    A gloo process group's destructor joins its worker threads, and one of them is stuck in the
    all-reduce that missed its deadline: destroyed by whoever drops the last reference (the abort
    itself, or the shutdown's clearing of modules), it would hang the exit that the abort is for.
    """
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))


def _refs(seq: list[torch.Tensor], i: int) -> int:
    return sys.getrefcount(seq[i])


_probe = [torch.empty(0)]
_UNHELD = _refs(_probe, 0)  # what `_refs` says of a tensor that only the list holds
del _probe


def _let_go(buf: torch.Tensor) -> None:
    """Keep `buf`, whose all-reduce has finished and whose work we dropped, until no backend thread holds it.

    The backend's thread (gloo's worker, NCCL's watchdog) drops its reference to a finished work a
    little after the work is marked completed. When that reference is the last, the work's destructor
    runs on that thread and releases the buffer, whose Python object it must then release too, with
    the GIL. During the interpreter's finalization that thread cannot take the GIL: it is ended in
    the middle of a noexcept destructor, and the process dies in `std::terminate` ("terminate called
    without an active exception"). That is what a check that ends just before the program exits
    would cause, under load. So the buffers are kept here, and `_settle_at_exit` waits, before the
    finalization, until the backend has let go of every one. A C++ reference to a tensor holds a
    reference to its Python object (torch >= 2.10), which `sys.getrefcount` shows: a buffer is
    released here once only this list holds it. Called with our own reference to the work dropped.
    """
    with _LOCK:
        _prune()
        _SETTLING.append(buf)
        del _SETTLING[:-SETTLING_MAX]


def _prune() -> None:
    """Drop the buffers that no backend thread holds any more (called with _LOCK held)."""
    held = [i for i in range(len(_SETTLING)) if _refs(_SETTLING, i) > _UNHELD]
    if len(held) < len(_SETTLING):
        _SETTLING[:] = [_SETTLING[i] for i in held]


@atexit.register
def _settle_at_exit() -> None:
    """Before the finalization: let the backend's threads let go of the checks' buffers (`_let_go`).

    Sleeping releases the GIL, which the backend's thread needs to release a buffer's Python
    object. An abort still running (`_abort`) is waited for too: a thread that comes back from C++
    into Python during the finalization is ended the same way. Bounded by SETTLE_S in all; nothing
    is waited for when the last checks' buffers are released and no abort runs.
    """
    until = time.monotonic() + SETTLE_S
    for thread in _ABORTS:
        thread.join(max(0.0, until - time.monotonic()))
    while True:
        with _LOCK:
            _prune()
            if not _SETTLING:
                return
        if time.monotonic() >= until:
            return
        time.sleep(0.001)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


def line(result: HealthResult, rank: int, group: str, ranks: list[int], number: int, tag: str) -> str:
    """The one line a failed check logs (rules/repro/repro-health-*.yaml read it back)."""
    if result.missing:
        what = f"missing rank{'s' if len(result.missing) > 1 else ''} {fmt_ranks(result.missing)}"
    elif result.wrong:
        what = f"wrong values from rank{'s' if len(result.wrong) > 1 else ''} {fmt_ranks(result.wrong)}"
    else:
        what = "no rank named"
    return (f"{stamp()} {TAG} rank {rank}: check FAILED: {what} in group {group} (ranks {fmt_ranks(ranks)}), "
            f"call {number}, tag {tag}, at {result.phase} after {result.elapsed:.3f} s: {result.reason}")


def _act(result: HealthResult, call: _Call, pg: Any, on_failure: OnFailure) -> HealthResult:
    """Log the failure's line, then abort or raise as asked."""
    log.error(line(result, dist.get_rank(), call.name, call.ranks, call.number, call.tag))
    if on_failure == "abort":
        _abort(pg, call)
        result = dataclasses.replace(result, reason=result.reason + "; the process group was aborted")
    if on_failure == "raise":
        raise HealthCheckFailed(result)
    return result


def _aborted(name: str, tag: str | None, started: float, on_failure: OnFailure) -> HealthResult:
    """A check on a group that an earlier failed check aborted: it fails at once, touching nothing."""
    result = HealthResult(False, 0, phase="collective", elapsed=time.monotonic() - started,
                          reason=f"the process group ({name}) was aborted by an earlier failed check: end the process")
    log.error(line(result, _RANK, name, [], 0, tag or "default"))
    if on_failure == "raise":
        raise HealthCheckFailed(result)
    return result


def _abort(pg: Any, call: _Call) -> None:
    """Abort the group (the world: every group), from a thread bounded by ABORT_GRACE_S."""
    global _WORLD_ABORTED, _RANK
    _RANK = dist.get_rank()  # for the lines of later checks, when torch no longer knows it
    call.state.aborted = True
    _never_destroy(pg)
    if call.world:
        _WORLD_ABORTED = True
        for each in list(dist.distributed_c10d._world.pg_map):  # every group goes with the world
            _never_destroy(each)
    target = dist.distributed_c10d._abort_process_group
    thread = threading.Thread(target=target, args=(None if call.world else pg,), daemon=True,
                              name=f"{TAG}-abort")
    thread.start()
    _ABORTS.append(thread)
    thread.join(ABORT_GRACE_S)
