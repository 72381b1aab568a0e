"""`check`: one all-reduce, one decision per call, the same on every member (docs/health.md, "How it works").

1. **The all-reduce first.** Each member contributes one float64 (`contribution`: a value that only
   it uses, different at every call) to an all-reduce started asynchronously and waited for until
   the deadline, never longer. A sum other than `expected_sum` runs a second, symmetric all-reduce
   with one slot per member (`triage.repro.verify`) that names the members whose value was wrong.
2. **One decision, through the store.** The member publishes what it saw with
   `compare_set(<call % SLOTS>/d, <what it read there SLOTS calls ago>, "<call> <proposal>")`: the
   first proposal for a call is its decision, and every member returns what the store holds (the
   decisions live in a ring of SLOTS keys, so that nothing has to be deleted). A member frozen in
   the check, whose contribution arrives after the others gave up, reads their decision when it
   wakes (it is named missing); a completion after a failure was decided never turns it into a pass.
3. **The roll call (only when the all-reduce fails or misses the deadline).** The members answer
   through the store (`append`); those that do not answer are named missing. The proposal is a
   pass only if this member's all-reduce completed with the right sum in the meantime.
4. **Realigning.** An all-reduce that missed its deadline stays in flight (no backend cancels one)
   and later checks queue their own behind it, so that when the late member comes back, its
   all-reduces pair with the others' in order, it reads the decisions of the calls it missed, and
   the checks pass again. A group whose all-reduce raised (a peer died) cannot realign: later
   checks go straight to the roll call and say so.

The fast path (every member in time) is one all-reduce of one element, on a buffer the group
reuses, and one store request per member.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed import PrefixStore, Store  # type: ignore[attr-defined]

from triage.health import keep
from triage.health.result import TAG, HealthResult, Phase
from triage.ranks import fmt_ranks
from triage.repro import verify
from triage.repro.worker import classify

GRACE_S = 0.5  # how long a member whose work is still in flight waits for it after the others decided a pass
ROLLCALL_S = 1.0  # how long the roll call waits for answers after the deadline
ROLLCALL_EVERY_S = 0.05  # how often a member waiting on its all-reduce looks for a roll call
POLL_MAX_S = 0.002  # the longest sleep between two polls of a GPU all-reduce
WAIT_MIN_S = 0.002  # the shortest timed wait on a CPU all-reduce (a 0 ms timeout means none)
OK = b"ok"
SLOTS = 256  # decision keys per group and tag, reused in turn: call n decides in slot n % SLOTS
PEEK = "?"  # a value no slot holds: compare_set(slot, PEEK, PEEK) reads a slot without waiting or writing
CORRUPT_SELF = False  # tests set it in a rank to make its contributions wrong (what a bad GPU or link does)


@dataclass
class GroupState:
    """What this process remembers of one group between checks."""

    calls: dict[str, int] = field(default_factory=dict)  # tag -> calls made
    pending: list[tuple[int, Any, torch.Tensor]] = field(default_factory=list)  # works in flight past their call
    broken: str = ""  # why the group cannot realign (an all-reduce on it raised)
    aborted: bool = False
    stale: dict[str, list[int]] = field(default_factory=dict)  # tag -> calls with roll-call keys to delete
    passed: dict[str, int] = field(default_factory=dict)  # tag -> the leader's last call decided a pass
    failed: dict[str, tuple[int, int]] = field(default_factory=dict)  # tag -> (failed calls, the last) since a pass
    seen: dict[str, dict[str, str]] = field(default_factory=dict)  # tag -> slot -> what this member last read there
    buf: torch.Tensor | None = None  # the fast path's buffer, reused while no all-reduce of it is in flight
    opts: Any = None  # the all-reduce's options (a sum), made once
    ranks: list[int] = field(default_factory=list)  # the group's global ranks
    index: int = -1  # this member's rank in the group
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    stores: dict[str, Store] = field(default_factory=dict)  # tag -> the store under the tag's prefix


LOCK = threading.Lock()
GROUPS: dict[str, GroupState] = {}


def contribution(index: int, world: int, number: int) -> float:
    """What member `index` adds to call `number`'s sum (verify.value: distinct per member and call)."""
    return verify.value(index, world, number)


def expected_sum(world: int, number: int) -> float:
    return float(world * (world + 1) // 2 + world * world * (number % 1000))


def forget(names: list[str]) -> None:
    """Drop what was remembered of groups that no longer exist (`shrink`); their works stay alive."""
    with LOCK:
        for name in names:
            state = GROUPS.pop(name, None)
            for _, work, buf in state.pending if state else []:
                keep.never_destroy(work)
                keep.never_destroy(buf)
            if state and state.buf is not None:
                keep.let_go(state.buf)


@atexit.register
def release_buffers() -> None:
    """Hand the groups' reused buffers to `keep`, whose exit hook (registered before, so run after
    this one) waits until no backend thread holds them."""
    with LOCK:
        for state in GROUPS.values():
            if state.buf is not None:
                keep.let_go(state.buf)
                state.buf = None


class Call:
    """One check on one member."""

    def __init__(self, pg: Any, timeout: float, tag: str, started: float) -> None:
        self.pg = pg
        self.name = str(pg.group_name)
        self.timeout = timeout
        self.tag = tag
        self.started = started
        self.deadline = started + timeout
        with LOCK:
            self.state = GROUPS.get(self.name) or GROUPS.setdefault(self.name, GroupState())
            if not self.state.ranks:  # what does not change while the group lives, looked up once
                self.state.ranks = dist.get_process_group_ranks(pg)
                self.state.index = dist.get_rank(pg)
                self.state.device = _device(pg)
            if (store := self.state.stores.get(tag)) is None:
                default = dist.distributed_c10d._get_default_store()
                store = self.state.stores[tag] = PrefixStore(f"{TAG}/{self.name}/{tag}/", default)
            self.number = self.state.calls.get(tag, 0) + 1
            self.state.calls[tag] = self.number
        self.ranks: list[int] = self.state.ranks
        self.n = len(self.ranks)
        self.index: int = self.state.index
        self.device: torch.device = self.state.device
        self.store: Store = store
        self.key = f"{self.number}/"  # the roll call's keys
        self.slot = f"{self.number % SLOTS}/d"  # the decision's key
        self.answered = False

    # -- outcome -----------------------------------------------------------------------------

    def who(self, indices: list[int]) -> str:
        ranks = [self.ranks[i] for i in indices]
        return f"rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)}"

    def result(self, decision: bytes, seen: str) -> HealthResult:
        """This member's result for the published `decision`; `seen`: what this member saw itself."""
        elapsed = time.monotonic() - self.started
        if decision == OK:
            return HealthResult(True, self.n, elapsed=elapsed, group=self.name, call=self.number,
                                reason=f"all {self.n} ranks contributed the right values in time")
        d = json.loads(decision)
        missing = sorted(self.ranks[i] for i in d.get("missing", []))
        wrong = sorted(self.ranks[i] for i in d.get("wrong", []))
        reason = d["why"]
        if self.index in d.get("missing", []):
            reason = (f"this rank (rank {self.ranks[self.index]}) was named missing by the others' decision: "
                      f"its contribution came after they gave up ({seen}); their reason: {reason}")
        phase: Phase = d["phase"]
        return HealthResult(False, self.n, tuple(missing), tuple(wrong), phase, elapsed, reason,
                            tuple(sorted({*missing, *wrong})), self.name, self.number)

    # -- the check ---------------------------------------------------------------------------

    def run(self) -> HealthResult:
        self.prune()
        if self.state.broken:
            return self.decide(self.roll_call(), f"the group cannot realign: {self.state.broken}",
                               "collective", None)
        value = contribution(self.index, self.n, self.number) + (verify.CORRUPTION if CORRUPT_SELF else 0.0)
        buf, self.state.buf = self.state.buf, None  # in flight: not reused until it completes
        if buf is None:
            buf = torch.empty(1, dtype=torch.float64, device=self.device)
        buf.fill_(value)
        work = self.start(buf)
        self.tidy()
        done = self.wait(work, self.deadline)
        if done:
            try:
                work.wait()
            except RuntimeError as exc:
                self.state.broken = f"its all-reduce of check #{self.number} raised ({classify(exc)})"
                keep.let_go(buf)
                why = f"the all-reduce failed ({classify(exc)}: {type(exc).__name__}: {_first_line(exc)})"
                return self.decide(self.roll_call(), why, "collective", None)
            self.state.buf = buf
            total = float(buf.item())
            if total != expected_sum(self.n, self.number):
                return self.slots(total)
            # Published even when every member seems in time: a member whose all-reduce waits on a peer
            # frozen mid-collective may still give it up (its own completion comes later than ours).
            return self.result(self.publish(OK), "it completed in time")
        # The deadline passed with the all-reduce in flight: it stays so (a later check queues behind it).
        self.state.pending.append((self.number, work, buf))
        why = f"the all-reduce did not complete within the {self.timeout:g} s deadline"
        return self.decide(self.roll_call(), why, "arrival", work)

    def start(self, buf: torch.Tensor) -> Any:
        """Post the all-reduce (a sum) of `buf`: the group's own call, not dist.all_reduce (the same
        collective, without its per-call checks)."""
        if self.state.opts is None:
            self.state.opts = dist.AllreduceOptions()
            self.state.opts.asyncOp = True
        return self.pg.allreduce([buf], self.state.opts)

    def prune(self) -> None:
        """Forget the works of earlier calls that have completed since (a late member came back)."""
        still = []
        for number, work, buf in self.state.pending:
            if work.is_completed():
                keep.let_go(buf)
            else:
                still.append((number, work, buf))
        self.state.pending = still

    def tidy(self) -> None:
        """The leader deletes the roll-call keys of failed calls that every member has returned from.

        A call decided `ok` proves that every member started it, so every member had returned from
        the calls before it: their keys are read by no one any more. Done while this call's
        all-reduce runs. (The decisions need no deleting: they live in a ring of SLOTS keys.)
        """
        if self.index != 0:
            return
        stale, passed = self.state.stale.get(self.tag, []), self.state.passed.get(self.tag, 0)
        if not stale or stale[0] >= passed:
            return
        for number in stale:
            if number >= passed:
                break
            for key in ("rc", "rcn", "rcall"):
                with contextlib.suppress(RuntimeError):
                    self.store.delete_key(f"{number}/{key}")
        stale[:] = [s for s in stale if s >= passed]

    def publish(self, proposal: bytes) -> bytes:
        """The call's decision: `proposal` if it is the first, else the one published before it.

        The call's slot holds "<call> <decision>". This member expects it to hold what it read there
        SLOTS calls ago (the decision of that call), and replaces that, or finds this call's decision
        already there: one request. A slot of a later round means the others went on SLOTS calls
        without this member: this call's decision is lost, and the member says so.
        """
        seen = self.state.seen.setdefault(self.tag, {})
        mine, expected = f"{self.number} {proposal.decode()}", seen.get(self.slot, "")
        for _ in range(4):
            # `peek` may have read this call's decision already: it is not to be replaced.
            held = expected.encode() if _split(expected.encode())[0] == self.number else \
                self.store.compare_set(self.slot, expected, mine)
            number, decision = _split(held)
            if number > self.number:
                return self.lost(number)
            if number == self.number:
                seen[self.slot] = held.decode()
                if self.index == 0:
                    if decision == OK:
                        self.state.passed[self.tag] = self.number
                    if self.answered or decision != OK:  # a roll call may have left keys
                        self.state.stale.setdefault(self.tag, []).append(self.number)
                return decision
            # Not what this member saw there (it did not read the slot SLOTS calls ago): replace what
            # is there. If the store hands back `expected` itself, the slot is absent: try it as such.
            expected = "" if held.decode() == expected else held.decode()
        raise RuntimeError(f"the decision slot {self.slot} kept changing")

    def peek(self) -> bytes | None:
        """The call's decision if one was published, without waiting or writing."""
        held = self.store.compare_set(self.slot, PEEK, PEEK)
        number, decision = _split(held)
        if number == self.number:
            self.state.seen.setdefault(self.tag, {})[self.slot] = held.decode()
            return decision
        return self.lost(number) if number > self.number else None

    def lost(self, number: int) -> bytes:
        """The decision of a call whose slot a later round took: a failure that names no one."""
        self.state.broken = (f"the others went on {number - self.number} checks past check #{self.number} "
                             f"without this rank, and its decision was replaced (a group keeps {SLOTS})")
        return json.dumps({"phase": "collective", "missing": [],
                           "why": f"this check's decision is lost: {self.state.broken}"}).encode()

    def decide(self, missing: list[int] | None, why: str, phase: Phase, work: Any) -> HealthResult:
        """Publish a failure (or a pass, when this member's all-reduce completed meanwhile) and return the decision."""
        if missing is None:
            try:
                decision = self.peek()
                if decision is not None:
                    return self.result(decision, why)
                reason = f"{why}; the store did not answer the roll call, and holds no decision"
            except RuntimeError as exc:
                reason = f"{why}; the store did not answer: {_first_line(exc)}"
            return HealthResult(False, self.n, phase=phase, elapsed=time.monotonic() - self.started,
                                reason=reason, group=self.name, call=self.number)
        if work is not None and work.is_completed():
            with contextlib.suppress(RuntimeError):
                work.wait()
                buf = self.state.pending.pop()[2]
                keep.let_go(buf)
                if float(buf.item()) == expected_sum(self.n, self.number):
                    return self.result(self.publish(OK), "it completed after the deadline, before any decision")
        if missing:
            why += f"; {self.who(missing)} did not answer the roll call (stopped, killed, or not at the check)"
        else:
            why += "; every rank answered the roll call: a link between them does not deliver"
        proposal = json.dumps({"phase": phase, "missing": missing, "why": why}).encode()
        try:
            decision = self.publish(proposal)
        except RuntimeError as exc:
            return HealthResult(False, self.n, phase=phase, elapsed=time.monotonic() - self.started,
                                reason=f"{why}; the store did not answer: {_first_line(exc)}",
                                group=self.name, call=self.number)
        if decision == OK and work is not None:
            self.wait(work, time.monotonic() + GRACE_S)  # it completes: every member contributed
        return self.result(decision, why)

    def slots(self, total: float) -> HealthResult:
        """The sum was wrong: a second all-reduce with one slot per member names whose value was."""
        buf = torch.zeros(self.n, device=_device(self.pg))
        verify.fill(buf, self.index, self.n, self.number, CORRUPT_SELF)
        work = dist.all_reduce(buf, group=self.pg, async_op=True)
        if not self.wait(work, max(self.deadline, time.monotonic() + GRACE_S)):
            self.state.pending.append((self.number, work, buf))
            why = (f"the sum was {total:g}, expected {expected_sum(self.n, self.number):g}, and the all-reduce "
                   "that names the wrong rank did not complete")
            return self.decide(self.roll_call(), why, "verify", None)
        try:
            work.wait()
        except RuntimeError as exc:
            keep.let_go(buf)
            self.state.broken = f"its slot all-reduce of check #{self.number} raised ({classify(exc)})"
            return self.decide(self.roll_call(), f"the slot all-reduce failed ({classify(exc)})", "verify", None)
        keep.let_go(buf)
        wrong, _ = verify.check(buf.cpu(), self.n, self.number)
        if wrong:
            why = "; ".join(f"rank {self.ranks[w.index]} contributed {w.got:g} in its slot, expected "
                            f"{w.expected:g}" for w in wrong)
        else:
            why = (f"the sum was {total:g}, expected {expected_sum(self.n, self.number):g}, but every slot of the "
                   "all-reduce that followed was right: no rank named")
        proposal = json.dumps({"phase": "verify", "wrong": [w.index for w in wrong], "why": why}).encode()
        return self.result(self.publish(proposal), why)

    # -- waiting -----------------------------------------------------------------------------

    def wait(self, work: Any, until: float) -> bool:
        """Wait for `work` until `until`, answering a roll call if one is raised meanwhile."""
        cpu = self.device.type == "cpu"
        pause, look = 0.0, time.monotonic() + ROLLCALL_EVERY_S
        while not work.is_completed():
            now = time.monotonic()
            if now >= until:
                return False
            if not self.answered and now >= look:
                look = now + ROLLCALL_EVERY_S
                with contextlib.suppress(RuntimeError):
                    if self.store.check([self.key + "rc"]):
                        self.answer()
            if cpu:
                wake = until if self.answered else min(until, look)
                # On timeout it raises and leaves the work as it was; the work's own failure is
                # raised again by the caller's work.wait() once it is completed.
                with contextlib.suppress(RuntimeError):
                    work.wait(timedelta(seconds=max(WAIT_MIN_S, wake - now)))
            else:
                time.sleep(pause)
                pause = min(POLL_MAX_S, pause * 2 or 20e-6)
        return True

    def answer(self) -> None:
        if self.answered:
            return
        self.answered = True
        self.store.append(self.key + "rc", f"{self.index},")  # type: ignore[attr-defined]
        if self.store.add(self.key + "rcn", 1) >= self.n:
            self.store.set(self.key + "rcall", "1")

    def roll_call(self) -> list[int] | None:
        """Members that do not answer by max(deadline, now + ROLLCALL_S); None when the store does not answer.

        An earlier decision makes it moot: [] then, and `decide` returns that decision.
        """
        try:
            if self.peek() is not None:
                return []
            self.answer()
            until = max(self.deadline, time.monotonic() + ROLLCALL_S)
            with contextlib.suppress(dist.DistStoreError):  # who answered is read below
                self.store.wait([self.key + "rcall"], timedelta(seconds=max(0.001, until - time.monotonic())))
            here = {int(i) for i in self.store.get(self.key + "rc").decode().split(",") if i}
            return [i for i in range(self.n) if i not in here]
        except RuntimeError:
            return None


def _split(held: bytes) -> tuple[int, bytes]:
    """A slot's "<call> <decision>" as (call, decision); (0, b"") for an empty or absent slot."""
    number, _, decision = held.partition(b" ")
    return (int(number), decision) if number.isdigit() else (0, b"")


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


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
