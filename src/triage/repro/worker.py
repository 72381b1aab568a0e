"""One rank of a repro run: comm_init, operator_load and execution, each under its deadline.

A rank is always a child of a process that outlives it: the standalone coordinator, or under
torchrun, srun or mpirun the `triage repro` process the launcher started (under_launcher.py). That parent
hosts (or reaches) the TCPStore the ranks meet at, so that results travel through the store, not
through a collective that a dying peer could break. Everything the diagnosis needs is written, line
by line, to `<log_dir>/rank<R>.log`.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, NoReturn

import torch
import torch.distributed as dist
from torch.distributed import PrefixStore, Store, TCPStore  # type: ignore[attr-defined]

from triage.repro import bandwidth, findings, transport, verify
from triage.repro.inject import Injector
from triage.repro.launcher_env import RankEnv
from triage.repro.logfile import LineLog
from triage.repro.options import ReproOptions, format_size
from triage.repro.protocol import (
    ENV_LABEL,
    ENV_OPTIONS,
    ENV_PARENT,
    ENV_RANK_ENV,
    EXIT_FAILED,
    EXIT_PASS,
    PHASES,
    StatusPipe,
)
from triage.repro.watchdog import Watchdog

OPERATOR_LOAD_ELEMENTS_PER_RANK = 256
# Lost-peer and timeout wordings of gloo, NCCL and c10d errors; anything else is the rank's own.
_PEER_LOST = ("closed by peer", "reset by peer", "Broken pipe", "Connection refused", "remote process exited",
              "ncclRemoteError", "communicator was aborted", "remote worker", "peer process")
_TIMED_OUT = ("timed out", "Timed out", "Timeout", "timeout")

TEARDOWN_POLL_S = 0.01


class PhaseFailed(Exception):
    """Every rank agreed that the phase's result is wrong (the lines naming who were logged)."""


def classify(exc: BaseException) -> str:
    text = str(exc)
    if any(marker in text for marker in _PEER_LOST):
        return "lost a peer"
    if any(marker in text for marker in _TIMED_OUT):
        return "timed out"
    return "own error"


class Rank:
    def __init__(self, opts: ReproOptions, env: RankEnv, job_rank: int, status: StatusPipe,
                 parents: set[int] | None = None) -> None:
        self.opts = opts
        self.env = env
        self.index = env.rank  # rank within this run's group
        self.world = env.world_size
        self.job_rank = job_rank
        self.group = opts.group or list(range(env.world_size))
        self.status = status
        self.log = LineLog(Path(opts.log_dir) / f"rank{job_rank}.log", f"rank {job_rank}")
        self.watchdog = Watchdog(self.log, job_rank, opts.deadlines, parents)
        self.inject = Injector(opts.inject, job_rank, self.log, opts.deadlines,
                               findings.exec_ops(opts.sizes, opts.iters))
        self.cuda = opts.backend == "nccl"
        cuda_index = env.device if env.device is not None else env.local_rank
        self.device = torch.device("cuda", cuda_index) if self.cuda else torch.device("cpu")
        self.collectives = 0
        self.waited = dict.fromkeys(PHASES, 0.0)
        self.exec_waits: list[float] = []
        self.phase_secs: dict[str, float] = {}
        self.elements: dict[int, int] = {}
        self.result: dict[str, Any] | None = None  # rank 0's findings, once execution finished
        self.store: Store  # this run's keys in the store our parent hosts (set in comm_init)
        self.end_status: str | None = None
        self._ending = threading.Lock()

    # -- life cycle ---------------------------------------------------------------------------

    def run(self) -> NoReturn:
        self.watchdog.start(self.end)
        try:
            self._announce()
            for phase, body in (("comm_init", self._comm_init), ("operator_load", self._operator_load),
                                ("execution", self._execution)):
                if not self._phase(phase, body):
                    self.end(EXIT_FAILED, f"failed in phase {phase}")
        except BaseException as exc:
            # A bug of ours, not a finding: its traceback goes to the log with our prefix on
            # every line, so that no rule takes it for the rank's own failure.
            self.log.line(f"internal error: {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
            self.end(EXIT_FAILED, "internal error")
        self.end(EXIT_PASS, "passed")

    def end(self, code: int, status: str) -> NoReturn:
        """Log the end, tell the coordinator, exit at once.

        os._exit, not a return: after a failure, tearing a process group down politely can block
        on a dead peer (a passing run has torn it down in order already, see `_teardown`).
        The main thread and the watchdog thread may both get here; the first one wins.
        """
        self._ending.acquire()
        self.end_status = status
        self.watchdog.stop()
        self.log.line(f"finished: {status} (exit code {code})")
        self.status.send(type="end", rank=self.job_rank, code=code, status=status)
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        os._exit(code)

    def _announce(self) -> None:
        bisect = f", in bisect group {self.group}" if len(self.group) < self.opts.job_world_size else ""
        device = f", device {self.device}" if self.cuda else ""
        hostid = f", NCCL_HOSTID {self.env.nccl_hostid}" if self.env.nccl_hostid else ""
        self.log.line(
            f"starting: rank {self.job_rank} of {self.opts.job_world_size} on host {socket.gethostname()} "
            f"pid {os.getpid()}, local rank {self.env.local_rank}, backend {self.opts.backend}{device}{hostid}, "
            f"torch {torch.__version__}, launched by {self.env.launcher}{bisect}")
        deadlines = ", ".join(f"{p} {self.opts.deadlines[p]:g} s" for p in PHASES)
        sizes = ",".join(format_size(s) for s in self.opts.sizes)
        self.log.line(f"plan: deadlines {deadlines}; sizes {sizes}; {self.opts.iters} iterations each")
        self.inject.announce()

    def _phase(self, phase: str, body: Callable[[], None]) -> bool:
        self.watchdog.enter_phase(phase)
        self.status.send(type="phase", rank=self.job_rank, phase=phase, state="start")
        self.log.line(f"phase {phase} start")
        started = time.monotonic()
        try:
            body()
        except Exception as exc:
            if self._ending.locked():
                # The watchdog is ending this rank, and its peers' exits made this call fail:
                # nothing more to log, the first ending wins (this call blocks until the exit).
                self.end(EXIT_FAILED, "failed")
            self._log_failure(phase, time.monotonic() - started, exc)
            return False
        secs = time.monotonic() - started
        self.phase_secs[phase] = secs
        self.log.line(f"phase {phase} done in {secs:.3f} s after {self.collectives} collectives")
        self.status.send(type="phase", rank=self.job_rank, phase=phase, state="done", secs=secs)
        return True

    def _log_failure(self, phase: str, secs: float, exc: Exception) -> None:
        if isinstance(exc, PhaseFailed):
            self.log.line(f"phase {phase} FAILED (wrong result) after {secs:.2f} s: {exc}")
            why = f"wrong result: {exc}"
        else:
            kind = classify(exc)
            text = (str(exc).strip().splitlines() or [""])[0][:400]
            self.log.line(f"phase {phase} FAILED ({kind}) after {secs:.2f} s in {self.watchdog.step}: "
                          f"{type(exc).__name__}: {text}")
            why = f"{kind}: {type(exc).__name__}: {text}"
        self.status.send(type="phase", rank=self.job_rank, phase=phase, state="failed", secs=secs, why=why)

    @contextmanager
    def _waiting(self, phase: str, what: str) -> Iterator[None]:
        started = time.perf_counter()
        with self.watchdog.waiting(what):
            yield
        self.waited[phase] += time.perf_counter() - started

    # -- comm_init: store, process group, communicator; every rank agrees on the job ------------

    def _comm_init(self) -> None:
        env = self.env
        self.watchdog.doing(f"before the TCPStore rendezvous at {env.master_addr}:{env.master_port}")
        self.inject.at_start("comm_init")
        # Torch's own timeouts stay well beyond ours: the watchdog decides, not a library error.
        timeout = timedelta(seconds=2 * max(self.opts.deadlines.values()) + 10)
        # Our parent (or torchrun's agent) hosts the store: it outlives every rank, so a rank that
        # dies cannot take the rendezvous, or the results posted to it, down with it.
        with self._waiting("comm_init", f"TCPStore rendezvous at {env.master_addr}:{env.master_port}"):
            store = TCPStore(env.master_addr, env.master_port, self.world, is_master=False,
                             timeout=timeout, wait_for_workers=False)
        self.store = PrefixStore(f"triage-repro/{env.run_id}/{'-'.join(map(str, self.group))}/", store)
        kwargs: dict[str, Any] = {}
        if self.cuda:
            self.watchdog.doing(f"selecting {self.device}")
            self._check_device()
            torch.cuda.set_device(self.device)
            kwargs["device_id"] = self.device  # eager: the NCCL communicator is built here, in comm_init
        with self._waiting("comm_init", f"init_process_group({self.opts.backend})"):
            dist.init_process_group(self.opts.backend, store=PrefixStore("pg", self.store),
                                    rank=self.index, world_size=self.world, timeout=timeout, **kwargs)
        self._agree_on_config(PrefixStore("config", self.store))

    def _check_device(self) -> None:
        """Say plainly why CUDA cannot give this rank its device, before CUDA says it cryptically."""
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        where = f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            available = torch.cuda.is_available()
        if not available:
            why = next((str(w.message).splitlines()[0] for w in caught), "torch.cuda.is_available() is False")
            raise RuntimeError(f"CUDA could not be initialised in this rank{where}: {why}")
        count = torch.cuda.device_count()
        if self.device.index is not None and self.device.index >= count:
            raise RuntimeError(f"{self.device} does not exist: {count} GPU(s) visible to this rank{where}")

    def _config(self) -> dict[str, Any]:
        world = self.world + (1 if self.inject.corrupts("comm_init") else 0)
        nccl = ".".join(map(str, torch.cuda.nccl.version())) if self.cuda else None  # type: ignore[no-untyped-call]
        return {"world_size": world, "backend": self.opts.backend, "sizes": self.opts.sizes,
                "iters": self.opts.iters, "torch": torch.__version__, "nccl": nccl}

    def _agree_on_config(self, store: Store) -> None:
        """Every rank publishes its view of the job; a rank whose view differs is named."""
        store.set(str(self.index), json.dumps(self._config(), sort_keys=True))
        keys = [str(i) for i in range(self.world)]
        with self._waiting("comm_init", "configuration exchange"):
            store.wait(keys)
        views = {i: store.get(str(i)).decode() for i in range(self.world)}
        # The process group's own size is the truth: a rank that states another is wrong even when
        # no majority can say so (two ranks); for the rest, the majority decides.
        outliers = [i for i, v in views.items() if json.loads(v).get("world_size") != self.world] or \
            verify.majority_outliers(views)
        if outliers is None:
            self.log.line("verification: the ranks disagree on the job configuration and no majority "
                          "exists: " + "; ".join(f"rank {self.group[i]}: {v}" for i, v in views.items()))
            raise PhaseFailed("configuration differs between ranks")
        if outliers:
            majority = next(json.loads(v) for i, v in views.items() if i not in outliers)
            for i in outliers:
                theirs = json.loads(views[i])
                diff = ", ".join(f"{k}={theirs.get(k)} (the others: {majority.get(k)})"
                                 for k in sorted(majority) if theirs.get(k) != majority.get(k))
                self.log.line(f"verification: rank {self.group[i]} contributed a wrong configuration "
                              f"in phase comm_init: {diff}")
            raise PhaseFailed("configuration of rank " + ", ".join(str(self.group[i]) for i in outliers))

    # -- collectives ---------------------------------------------------------------------------

    def _all_reduce(self, buf: torch.Tensor, phase: str, what: str,
                    op: dist.ReduceOp.RedOpType = dist.ReduceOp.SUM) -> float:
        with self._waiting(phase, what):
            started = time.perf_counter()
            dist.all_reduce(buf, op=op)
            if self.cuda:
                torch.cuda.synchronize(self.device)
            return time.perf_counter() - started

    def _next(self, size: int) -> str:
        return f"all_reduce #{self.collectives + 1} ({format_size(size)})"

    def _verified(self, buf: torch.Tensor, phase: str, check_no: int) -> float:
        """One all-reduce of slotted values, checked by every rank; all ranks stop together."""
        what = self._next(buf.numel() * 4)
        self.watchdog.doing(f"filling the buffer of {what}")
        verify.fill(buf, self.index, self.world, check_no, self.inject.corrupts(phase))
        self.watchdog.doing(f"before {what}")
        wait = self._all_reduce(buf, phase, what)
        self.collectives += 1
        self.watchdog.doing(f"checking the result of {what}")
        wrong, outside = verify.check(buf, self.world, check_no)
        for w in wrong:
            self.log.line(
                f"verification: rank {self.group[w.index]} contributed wrong values in slot {w.index} of "
                f"{what} in phase {phase}: {w.wrong} of {w.total} elements wrong, first at element "
                f"{w.first}: expected {w.expected:g}, got {w.got:g}")
        if outside:
            self.log.line(f"verification: {outside} elements outside every rank's slot are wrong in "
                          f"{what} in phase {phase}: a rank wrote outside its own slot")
        # A rank that saw a wrong result must not leave the others waiting in the next collective.
        flag = torch.tensor([1.0 if (wrong or outside) else 0.0], device=self.device)
        self._all_reduce(flag, phase, f"agreement after {what}", op=dist.ReduceOp.MAX)
        if flag.item() > 0:
            who = ", ".join(str(self.group[w.index]) for w in wrong) or "unknown"
            raise PhaseFailed(f"{what} returned wrong values (contributed by rank {who})")
        return wait

    # -- operator_load: the first collective sets up the connections ---------------------------

    def _operator_load(self) -> None:
        buf = torch.empty(self.world * OPERATOR_LOAD_ELEMENTS_PER_RANK, dtype=torch.float32,
                          device=self.device)
        self.watchdog.doing(f"before {self._next(buf.numel() * 4)}")
        self.inject.at_start("operator_load")
        self._verified(buf, "operator_load", check_no=0)

    # -- execution: all-reduces over the sizes, timed, checked before and after ------------------

    def _execution(self) -> None:
        op = 0
        check_no = 1
        for size in self.opts.sizes:
            numel = max(self.world, size // 4)
            self.elements[size] = numel
            buf = torch.empty(numel, dtype=torch.float32, device=self.device)
            self.watchdog.doing(f"before {self._next(numel * 4)}")
            self.inject.before_op(op)
            self.exec_waits.append(self._verified(buf, "execution", check_no))
            op, check_no = op + 1, check_no + 1
            buf.zero_()  # zeros stay zeros under a sum: the timed loop needs no refill
            for _ in range(self.opts.iters):
                what = self._next(numel * 4)
                self.watchdog.doing(f"before {what}")
                self.inject.before_op(op)
                self.exec_waits.append(self._all_reduce(buf, "execution", what))
                self.collectives += 1
                op += 1
            self.watchdog.doing(f"before {self._next(numel * 4)}")
            self.inject.before_op(op)
            self.exec_waits.append(self._verified(buf, "execution", check_no))
            op, check_no = op + 1, check_no + 1
            del buf
        self._conclude()

    def _conclude(self) -> None:
        """Post this rank's timings to the store; rank 0 gathers them, names late ranks, measures bandwidth.

        Through the store, not a collective: a gather that a rank leaves before its data has left
        (NCCL's network proxy sends asynchronously) would turn a healthy run into a failure.
        """
        self.watchdog.doing("posting the timings")
        mine = {"waits": [self.waited["comm_init"], self.waited["operator_load"], *self.exec_waits],
                "transport": self._transport()}
        self.store.set(f"timings/{self.index}", json.dumps(mine))
        if self.index == 0:
            keys = [f"timings/{i}" for i in range(self.world)]
            with self._waiting("execution", "gathering every rank's timings (through the store)"):
                self.store.wait(keys)
            self._judge([json.loads(self.store.get(k)) for k in keys])
        self._teardown()

    def _transport(self) -> dict[str, Any] | None:
        """What NCCL connected this rank with, from its own INFO lines in its log (NCCL only)."""
        if not self.cuda:
            return None
        try:
            with open(self.log.path, encoding="utf-8", errors="replace") as f:
                return transport.read_transports(f).to_json()
        except OSError:
            return None

    def _teardown(self) -> None:
        """Leave together, then tear the process group down in order.

        Every collective was waited for (synchronised on GPUs); the barrier makes sure no rank
        destroys its communicator while a peer may still be using it.
        """
        self.watchdog.doing("teardown")
        self.store.add("teardown", 1)
        with self._waiting("execution", "the teardown barrier (through the store)"):
            while int(self.store.add("teardown", 0)) < self.world:
                time.sleep(TEARDOWN_POLL_S)
        with self._waiting("execution", "destroy_process_group"):
            dist.destroy_process_group()

    def _judge(self, posted: list[dict[str, Any]]) -> None:
        table = [p["waits"] for p in posted]
        timings = findings.Timings([r[0] for r in table], [r[1] for r in table], [r[2:] for r in table])
        rows = findings.bandwidth_rows(timings, self.opts.sizes, self.opts.iters, self.elements)
        late = findings.late_ranks(timings, self.opts.deadlines, self.opts.backend)
        uses = [transport.TransportUse.from_json(p["transport"]) for p in posted if p.get("transport")]
        used = transport.combine(uses) if uses else None
        gpu = torch.cuda.get_device_name(self.device) if self.cuda else None
        link = transport.p2p_link(used, bandwidth.gpu_topology()) if used is not None else None
        expected, why_none = bandwidth.expectation(
            gpu, used.bottleneck if used is not None else None, link, self.world, self.env.nodes,
            pcie=bandwidth.pcie_link() if link == "pcie" else None,
            interfaces=used.interfaces if used is not None else ())
        for r in rows:
            self.log.line(f"bandwidth: {format_size(r.size)} in {r.seconds * 1000:.3f} ms: algbw "
                          f"{bandwidth.gbps(r.algbw)} GB/s, busbw {bandwidth.gbps(r.busbw)} GB/s")
        if used is not None:
            self.log.line(f"transport: {used.describe()}")
        for phase, s in late:
            what = "collectives" if phase == "execution" else "blocking steps"
            self.log.line(f"rank {self.group[s.index]} slow: arrived {s.lag_s * 1000:.0f} ms late on average "
                          f"at {s.late} of {s.total} {what} in phase {phase}; the other ranks waited for it")
        short = bandwidth.shortfall(rows, expected)
        if short is not None:
            self.log.line(f"bandwidth: host {socket.gethostname()} slow: busbw {short.row.busbw:.1f} GB/s at "
                          f"{format_size(short.row.size)} is {short.percent}% of the {short.expected.low:g} "
                          f"GB/s expected for {short.expected.label}")
        if not late and short is None:
            self.log.line(f"PASS: all {self.world} ranks passed comm_init, operator_load and execution")
        self.result = {
            # #wrong as nccl-tests prints it: the checks of every size passed, or the phase failed.
            "rows": [{**vars(r), "count": r.size // 4, "wrong": 0} for r in rows],
            "expected": vars(expected) if expected else None,
            "expected_note": why_none or bandwidth.comparable_note(rows, expected),
            "transport": used.describe() if used else None,
            "late": [{"phase": p, "rank": self.group[s.index], "lag_s": s.lag_s, "late": s.late,
                      "total": s.total} for p, s in late],
            "shortfall": short.percent if short else None,
            "world_size": self.world,
        }
        self.status.send(type="result", rank=self.job_rank, **self.result)


def main() -> NoReturn:
    """Entry of a rank, forked for its parent (the coordinator, or under a launcher its supervisor)."""
    # The rank ends when it is orphaned: its parent is the zygote, then the coordinator.
    parents = {os.getppid(), int(os.environ[ENV_PARENT])}
    opts = ReproOptions.from_json(os.environ[ENV_OPTIONS])
    env = RankEnv.from_json(os.environ[ENV_RANK_ENV])
    Rank(opts, env, int(os.environ[ENV_LABEL]), StatusPipe.from_env(), parents=parents).run()


if __name__ == "__main__":
    main()
