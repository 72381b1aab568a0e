"""The job: its plan (who fails how, when) and the line envelopes every part uses."""

from __future__ import annotations

import calendar
import random
from collections.abc import Iterable, Sequence

from .common import Clock, Line, RankPlan, hash_str, host_ip, host_name
from .eras import ERAS, FAULTS, LAYOUTS
from .failures import Failures
from .launcher import Launcher
from .network import Network
from .startup import Startup
from .training import Training

# --------------------------------------------------------------------------------------------
# The job


class Job(Startup, Training, Failures, Network, Launcher):
    def __init__(
        self,
        hosts: int,
        gpus: int,
        era: str,
        fault: str,
        culprit: int | str | None,
        noise_lines: int,
        layout: str,
        seed: int,
        timeout_min: int,
        tp: int = 2,
    ) -> None:
        if era not in ERAS:
            raise ValueError(f"unknown era {era!r}; choose from {', '.join(ERAS)}")
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; choose from {', '.join(FAULTS)}")
        if layout not in LAYOUTS:
            raise ValueError(f"unknown layout {layout!r}; choose from {', '.join(LAYOUTS)}")
        if hosts < 1 or gpus < 1:
            raise ValueError("hosts and gpus must be >= 1")
        if fault == "subgroup" and (tp < 2 or gpus % tp):
            raise ValueError(f"fault subgroup needs --tp >= 2 dividing --gpus {gpus} (got {tp})")
        self.tp = tp
        self.e = ERAS[era]
        self.hosts, self.gpus, self.W = hosts, gpus, hosts * gpus
        self.fault, self.layout, self.seed = fault, layout, seed
        self.noise = max(0, noise_lines)
        self.timeout_ms = timeout_min * 60_000
        self.rng = random.Random(seed * 7919 + 17)  # noqa: S311 - reproducible, not secret
        self.host_names = [host_name(i, hosts) for i in range(hosts)]
        self.host_ips = [host_ip(i) for i in range(hosts)]
        self.culprit_rank: int | None = None
        self.culprit_host: int | None = None
        self._set_culprit(culprit)
        rng = self.rng
        y, m, d = self.e.date
        self.clock = Clock(
            calendar.timegm(
                (y, m, d, rng.randrange(0, 20), rng.randrange(60), rng.randrange(60), 0, 0, 0)
            )
        )
        self.jobid = rng.randrange(180_000, 990_000)
        self.run_id = rng.choice(("llm7b", "llama3-8b", "gpt-1p3b", "moe-a2b", "pretrain-13b"))
        self.run_id += f"-{rng.randrange(1000, 9999)}"
        self.master_port = 29500 if layout != "torchrun" else rng.randrange(29510, 49000)
        self.rdzv_port = 29400
        self.comm_id = f"{rng.getrandbits(64):x}"
        self.host_uptime = [rng.uniform(8e4, 9e6) for _ in range(hosts)]
        self.agent_pid = [rng.randrange(4000, 3_900_000) for _ in range(hosts)]
        self.agent_t0 = [rng.uniform(0.0, 1.6) for _ in range(hosts)]
        self.tmp_tag = [
            "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789_") for _ in range(8))
            for _ in range(hosts)
        ]
        self.flags = {
            "async_env": rng.random() < 0.6,  # legacy NCCL_ASYNC_ERROR_HANDLING set
            "unused": rng.random() < 0.5,  # DDP find_unused_parameters=True
            "loader": rng.random() < 0.7,
        }
        # collectives per training step: DDP gradient buckets + one metrics allreduce
        self.n_buckets = rng.randrange(40, 64) if fault == "lagging" else rng.randrange(18, 34)
        self.per_step = self.n_buckets + 1
        self.bucket_numel = [
            rng.choice((6_553_600, 13_107_200, 26_214_400)) for _ in range(self.n_buckets)
        ]
        self.bucket_numel[0] = rng.randrange(1_000_000, 6_000_000)
        self.n_bcast = rng.randrange(2, 6)
        self.first_coll = fault == "first-collective"
        self.init_colls = 0 if self.first_coll else 1 + self.n_bcast
        self.step_time = rng.uniform(1.2, 3.4)
        self.total_steps = rng.choice((20_000, 50_000, 100_000, 250_000))
        self.n_channels = 2 if self.noise < 100 else 4 if self.noise < 400 else 8
        self.tok_per_step = rng.choice((4096, 8192)) * rng.choice((2, 4, 8))
        self.mismatch_op = rng.choice(("ALLGATHER", "BROADCAST"))
        self.victim: int | None = None
        self._curve_cache: list[tuple[float, str]] = []
        self.tp_seq = 0  # fault subgroup: the tp SeqNum the culprit never reached
        self.tp_numel = 2 * 4096 * 4096  # micro_bs x seq_len x hidden: one activation all-reduce
        self.plans: list[RankPlan] = []
        self._plan()

    # ---------------------------------------------------------------- planning

    def _set_culprit(self, culprit: int | str | None) -> None:
        if self.fault == "none":
            return
        if self.fault == "ib":
            if culprit is None:
                raise ValueError("fault ib needs --culprit HOST (name or 1-based number)")
            s = str(culprit)
            if s in self.host_names:
                self.culprit_host = self.host_names.index(s)
            elif s.isdigit() and 1 <= int(s) <= self.hosts:
                self.culprit_host = int(s) - 1
            else:
                raise ValueError(f"ib culprit {culprit!r} is not a host of this job")
            if self.hosts < 2:
                raise ValueError("fault ib needs at least 2 hosts")
            return
        if culprit is None:
            raise ValueError(f"fault {self.fault} needs --culprit RANK")
        r = int(culprit)
        if not 0 <= r < self.W:
            raise ValueError(f"culprit rank {r} outside world size {self.W}")
        if self.fault == "store" and r == 0:
            raise ValueError("fault store: the culprit must not be rank 0 (rank 0 hosts the store)")
        self.culprit_rank = r
        self.culprit_host = r // self.gpus

    def _fixed_noise(self) -> int:
        """Approximate noise lines per rank that do not come from training steps."""
        n = 24 + 2 * self.n_channels + (2 if self.hosts > 1 else 0)
        return n

    def _plan(self) -> None:
        rng = self.rng
        fixed = self._fixed_noise()
        self.steps = (
            0 if self.fault in ("store", "first-collective") else max(3, self.noise - fixed)
        )
        if self.fault == "none":
            self.total_steps = self.steps
        # timeline (seconds since launch)
        self.t_start = max(self.agent_t0) + 3.0  # python up, imports done
        self.t_pg = self.t_start + rng.uniform(2.5, 5.0)  # init_process_group returns
        self.t_nccl = self.t_pg + rng.uniform(0.1, 0.6)  # first comm init (barrier)
        self.init_dur = 0.8 + 0.004 * self.W + rng.uniform(0.0, 1.0)
        self.t_setup = self.t_nccl + self.init_dur + rng.uniform(0.5, 1.5)
        self.t_train0 = self.t_setup + rng.uniform(6.0, 20.0)
        self.t_fstep = self.t_train0 + self.steps * self.step_time  # failing step begins
        if self.first_coll:
            self.t_fstep = self.t_setup + rng.uniform(4.0, 9.0)
        self.seq = self._stuck_seq()
        tmo = self.timeout_ms / 1000.0
        for r in range(self.W):
            h, lr = divmod(r, self.gpus)
            prng = random.Random((self.seed << 24) ^ (r * 2654435761 % 4294967296))  # noqa: S311
            p = RankPlan(
                rank=r,
                host=h,
                local=lr,
                pid=self.agent_pid[h] + 40 + lr * 3 + prng.randrange(0, 3),
                uptime=self.host_uptime[h],
                aslr=prng.getrandbits(20),
            )
            p.op, p.numel_in, p.numel_out = "ALLREDUCE", self.bucket_numel[0], self.bucket_numel[0]
            p.enq = self.init_colls + (self.steps + 1) * self.per_step
            p.done = self.seq - 1
            p.t_enq = self.t_fstep + 0.55 * self.step_time + prng.uniform(0.0, 0.03)
            self.plans.append(p)
        f = self.fault
        c = self.culprit_rank
        for p in self.plans:
            prng = random.Random((self.seed << 16) ^ (p.rank * 40503 + 7))  # noqa: S311
            extra = prng.uniform(0.001, 0.05)
            if f == "mismatch":
                p.enq = self.seq
                p.t_enq = self.t_fstep + 0.95 * self.step_time + prng.uniform(0.0, 0.02)
                p.numel_in = p.numel_out = 1
                if p.rank == c:
                    p.op = self.mismatch_op
                    p.numel_out = self.W if p.op == "ALLGATHER" else 1
            elif self.first_coll:
                p.enq, p.done = 1, 0
                p.op = "ALLTOALL_BASE"
                p.numel_in = p.numel_out = 16_777_216
                p.t_enq = self.t_fstep + prng.uniform(0.0, 0.03)
            p.ran_ms = self.timeout_ms + int(extra * 1000)
            p.t_timeout = p.t_enq + tmo + extra
            p.fate = "timeout"
            p.t_exit = p.t_timeout + prng.uniform(0.3, 1.2)
            p.exitcode = -6
        t_fault = self.t_fstep + rng.uniform(0.15, 0.5) * self.step_time
        self.t_fault = t_fault
        if f == "none":
            end = self.t_train0 + self.steps * self.step_time
            for p in self.plans:
                p.fate, p.exitcode = "clean", 0
                p.t_exit = end + 3.0 + rng.uniform(0.0, 1.5)
        elif f in ("silent", "missing", "desync") and c is not None:
            self.plans[c].fate, self.plans[c].t_exit = "hang", None
        elif f == "lagging" and c is not None:
            # Stalled on the host (data loader, checkpoint, a code path the others did not take)
            # before it enqueued the collective the others wait in: nothing in flight, so its own
            # watchdog has nothing to time out on; it runs until the launcher stops it.
            pc = self.plans[c]
            pc.enq = pc.done = self.seq - 1
            pc.fate, pc.t_exit = "stalled", None
        elif f == "subgroup" and c is not None:
            self._plan_subgroup(c)
        elif f in ("oom", "cuda-error") and c is not None:
            pc = self.plans[c]
            pc.fate, pc.exitcode, pc.t_exit = "exception", 1, t_fault + rng.uniform(1.5, 3.0)
        elif f == "sigkill" and c is not None:
            pc = self.plans[c]
            pc.fate, pc.exitcode, pc.t_exit = "killed", -9, t_fault
            lr = c % self.gpus
            if self.gpus > 1:
                vl = lr - 1 if lr > 0 else lr + 1
                self.victim = c - lr + vl
                pv = self.plans[self.victim]
                pv.fate, pv.exitcode = "remote_error", -6
                pv.t_timeout = t_fault + rng.uniform(0.02, 0.05)
                pv.t_exit = pv.t_timeout + 0.03
        elif f == "store" and c is not None:
            t_wait = self.t_pg  # rank 0 creates the server and waits for the clients
            for p in self.plans:
                if p.rank == 0:
                    p.fate, p.exitcode, p.t_exit = "store_server", 1, t_wait + 601.2
                elif p.rank == c:
                    p.fate, p.exitcode = "store_wrong", 1
                    p.t_exit = t_wait + 600.0 + rng.uniform(0.3, 1.5) + 0.4
                else:
                    p.fate, p.exitcode = "store_client", 1
                    p.t_exit = t_wait + 601.2 + rng.uniform(0.01, 0.3) + 0.4
        self._apply_launcher()

    # tensor-parallel sub-groups (fault subgroup)

    def tp_index(self, r: int) -> int:
        """Which tp group global rank r is in (group k = ranks k*tp … k*tp+tp-1)."""
        return r // self.tp

    def tp_ranks(self, k: int) -> list[int]:
        return list(range(k * self.tp, (k + 1) * self.tp))

    def tp_guid(self, k: int) -> str:
        """PG GUID (group name) of tp group k: the default PG is 0, new_group() calls count up."""
        return str(k + 1)

    def tp_prefix(self, r: int) -> str:
        """The tp group's log prefix on global rank r (PG ID 1: the rank's second PG)."""
        k = self.tp_index(r)
        return self.e.sub_prefix.format(id=1, guid=self.tp_guid(k), desc="tp", r=r % self.tp)

    def tp_comm_id(self, k: int) -> str:
        return f"{random.Random(self.seed * 1_000_003 + 7 * k + 5).getrandbits(64):x}"  # noqa: S311

    def _plan_subgroup(self, c: int) -> None:
        """The culprit stops before its tp all-reduce of the failing step.

        Its tp peers enqueue that all-reduce and time out on it in the tp group; every other rank
        completes its own tp all-reduce and then times out a little later on the first gradient
        all-reduce of the default PG (the culprit and its peers never join it).  The peers abort
        well before the launcher could stop the others, so all of them log their timeouts.
        """
        rng = random.Random(self.seed * 6151 + 29)  # noqa: S311 - own stream: other faults unchanged
        tmo = self.timeout_ms / 1000.0
        self.tp_seq = self.steps + 1  # one tp all-reduce per step, the first one at step 1
        pc = self.plans[c]
        pc.fate, pc.t_exit = "hang", None
        for r in self.tp_ranks(self.tp_index(c)):
            if r == c:
                continue
            p = self.plans[r]
            gap = rng.uniform(0.12, 0.25)  # the tp all-reduce comes just before the gradient one
            extra = rng.uniform(0.001, 0.05)
            p.seq, p.enq, p.done = self.tp_seq, self.tp_seq, self.tp_seq - 1
            p.grank, p.pg_prefix = r % self.tp, self.tp_prefix(r)
            p.op, p.numel_in, p.numel_out = "ALLREDUCE", self.tp_numel, self.tp_numel
            p.t_enq -= gap
            p.ran_ms = self.timeout_ms + int(extra * 1000)
            p.t_timeout = p.t_enq + tmo + extra
            p.t_exit = p.t_timeout + rng.uniform(0.5, 1.2)

    def t_end(self) -> float:
        """When the last process of the job ended (or was killed)."""
        ends = [p.t_exit or 0.0 for p in self.plans] + [p.t_kill or 0.0 for p in self.plans]
        return max([*ends, *self.agent_end])

    def _stuck_seq(self) -> int:
        if self.fault == "none":
            return 0
        if self.first_coll:
            return 1
        if self.fault == "mismatch":
            return self.init_colls + (self.steps + 1) * self.per_step
        return self.init_colls + self.steps * self.per_step + 1

    def _apply_launcher(self) -> None:
        """torchrun: the first local failure makes the agent SIGTERM the other local workers."""
        self.agent_end: list[float] = [0.0] * self.hosts
        self.agent_poll: list[float] = [0.0] * self.hosts
        if self.layout != "torchrun":
            ends = [p.t_exit for p in self.plans if p.t_exit is not None]
            self.t_cancel = max(ends) + self.rng.uniform(60.0, 240.0) if ends else 0.0
            for p in self.plans:
                if p.t_exit is None:
                    p.t_kill = self.t_cancel
            return
        interval = self.e.monitor_interval
        for h in range(self.hosts):
            local = self.plans[h * self.gpus : (h + 1) * self.gpus]
            bad = [p.t_exit for p in local if p.t_exit is not None and p.exitcode != 0]
            if not bad:
                done = [p.t_exit for p in local if p.t_exit is not None]
                t_poll = max(done) + self.rng.uniform(0.0, interval) if done else -1.0
            else:
                t_poll = min(bad) + self.rng.uniform(0.2, 1.0) * interval
                if self.fault == "sigkill" and self.victim is not None and h == self.culprit_host:
                    t_poll = max(t_poll, self.plans[self.victim].t_exit or 0.0) + 0.004
                for p in local:
                    if p.t_exit is None or p.t_exit > t_poll:
                        p.t_kill = t_poll + 0.001 * (p.local + 1)
            self.agent_poll[h] = t_poll
            self.agent_end[h] = t_poll + 0.05

    # ---------------------------------------------------------------- envelopes

    def c10(
        self, p: RankPlan, t: float, sev: str, file: str, line: int, msg: str, ranked: bool = True
    ) -> str:
        e = self.e
        pre = f"[rank{p.rank}]:" if ranked and e.c10_rank else ""
        if e.c10_stamp:
            _, hms, md, _, _ = self.clock.parts(t)
            ns = int(((t + p.uptime) % 1.0) * 1e9)
            return f"{pre}[{sev}{md} {hms}.{ns:09d} {file}:{line}] {msg}"
        return f"{pre}[{sev} {file}:{line}] {msg}"

    def hook(self, p: RankPlan, lines: Iterable[str]) -> str:
        """Python traceback text, with the distributed excepthook prefix where the era has one."""
        if self.e.excepthook:
            pre = f"[rank{p.rank}]: "
            return "\n".join(pre + ln for ln in lines)
        return "\n".join(lines)

    def nccl_pre(self, p: RankPlan, tid: int | None = None) -> str:
        return f"{self.host_names[p.host]}:{p.pid}:{p.pid if tid is None else tid} [{p.local}]"

    def nccl_info(self, p: RankPlan, msg: str, tid: int | None = None) -> str:
        return f"{self.nccl_pre(p, tid)} NCCL INFO {msg}"

    def nccl_warn(self, p: RankPlan, t: float, src: str, msg: str, tid: int | None = None) -> str:
        stamp = f"[{self.clock.iso(t)}] " if self.e.nccl >= (2, 26, 0) else ""
        return f"\n{stamp}{self.nccl_pre(p, tid)} {src} NCCL WARN {msg}"

    def agent(self, h: int, t: float, lvl: str, mod: str, lineno: int, msg: str) -> str:
        if self.e.glog_agent:
            _, hms, _, md, _ = self.clock.parts(t)
            path = "torch/" + mod.replace(".", "/") + ".py"
            pid = self.agent_pid[h]
            return f"{lvl[0]}{md} {hms}.{self.clock.ms(t):03d}000 {pid} {path}:{lineno}] {msg}"
        return f"[{self.clock.logging(t)}] torch.{mod}: [{lvl}] {msg}"

    def site(self) -> str:
        py = ".".join(self.e.python.split(".")[:2])
        return f"/opt/venv/lib/python{py}/site-packages"

    def carets(self) -> bool:
        return self.e.python >= "3.11"

    def pg(self, p: RankPlan) -> str:
        return self.e.pg_prefix.format(r=p.rank)

    def frames(self, p: RankPlan, names: Sequence[tuple[str, str]]) -> list[str]:
        """C++ frames of an 'Exception raised from …' block, with per-process ASLR bases."""
        lib = f"{self.site()}/torch/lib"
        out = []
        for i, (name, libname) in enumerate(names):
            base = 0x7F0000000000 + ((hash_str(libname) & 0xFF) << 32) + (p.aslr << 16)
            if name == "<unknown function>":
                off = (hash_str(f"{libname}:{i}") & 0xFFFFF) | 0x1000
                shown = off
            else:
                shown = (hash_str(name) & 0x3FF) | 0x10
                off = ((hash_str(name) >> 8) & 0xFFFFF) + shown
            where = libname if libname.startswith("/") else f"{lib}/{libname}"
            out.append(f"frame #{i}: {name} + 0x{shown:x} (0x{base + off:x} in {where})")
        return out

    def sys_frames(self) -> list[tuple[str, str]]:
        return [
            ("<unknown function>", "/lib/x86_64-linux-gnu/libstdc++.so.6"),
            ("<unknown function>", "/lib/x86_64-linux-gnu/libc.so.6"),
            ("clone", "/lib/x86_64-linux-gnu/libc.so.6"),
        ]

    def work(self, p: RankPlan) -> str:
        return (
            f"WorkNCCL(SeqNum={p.seq or self.seq}, OpType={p.op}, NumelIn={p.numel_in}, "
            f"NumelOut={p.numel_out}, Timeout(ms)={self.timeout_ms})"
        )

    def comm_ptr(self, p: RankPlan) -> str:
        return f"0x{0x55D000000000 + (((p.aslr * 7919) << 4) & 0xFFFFFFFF0):x}"

    # ---------------------------------------------------------------- rank streams

    def rank_streams(self, r: int) -> tuple[list[Line], list[Line]]:
        p = self.plans[r]
        rng = random.Random((self.seed << 28) ^ (r * 0x9E3779B97F4A7C15 % 2**64))  # noqa: S311
        out: list[Line] = []
        err: list[Line] = []
        self._startup(p, rng, out, err)
        if self.fault == "store":
            self._store(p, rng, out, err)
        else:
            self._init_nccl(p, rng, out, err)
            self._setup(p, rng, out, err)
            if self.fault == "subgroup":
                self._init_tp(p, out, err)
            self._train(p, rng, out, err)
            self._tail(p, rng, out, err)
        limit = p.t_kill
        if limit is not None and (p.t_exit is None or limit < p.t_exit):
            out = [x for x in out if x[0] <= limit]
            err = [x for x in err if x[0] <= limit]
        return out, err
