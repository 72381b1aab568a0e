"""Deterministic generator of the logs a distributed PyTorch/NCCL job leaves behind.

No GPU is needed: the generator writes the files a real job would have written, line by line, in
the exact envelopes of each PyTorch/NCCL era (see docs in ``/work/shared/reference/formats.md``):
c10 ``[E ProcessGroupNCCL.cpp:…]`` / ``[rank3]:[E709 17:05:38.162555850 …]`` lines, NCCL
``host:pid:tid [dev] NCCL INFO …`` chatter with WARN lines preceded by a blank line, torchrun agent
logs with the ChildFailedError block, Slurm ``srun --label`` prefixes, training progress, Python
warnings and teardown noise.

Everything is seeded: the same arguments always produce the same bytes.

Usage::

    python bench/jobgen.py OUT_DIR --hosts 8 --gpus 8 --era 2.4 --fault silent --culprit 11 \\
        --noise-lines 2000 [--layout torchrun|per-rank|slurm-label] [--seed 1] [--tp 2]

or, as a library::

    from jobgen import generate
    truth = generate("out/job", hosts=2, gpus=8, era="2.4", fault="silent", culprit=11)

Eras: 2.1, 2.3, 2.4, 2.5, 2.6 (the 2.6 era renders the >=2.6 wording; its build is torch 2.7.1
with NCCL 2.26.2, so NCCL WARN lines carry timestamps and init prints ``Init timings``).

Faults: none, silent, missing, oom, sigkill, ib, mismatch, lagging, desync, store,
first-collective, cuda-error, subgroup.  ``--culprit`` is a global rank, except for ``ib`` where it
names the bad host (``gpu-node-03`` or its 1-based number ``3``).

``subgroup``: the ranks are split into tensor-parallel groups of ``--tp`` consecutive ranks
({0,1}, {2,3}, … for tp=2; every rank calls ``dist.new_group(ranks, group_desc="tp")`` once per
group, so group k has PG GUID k+1 and is PG ID 1 in its members).  Each step does one ALLREDUCE in
the rank's tp group (its own SeqNum counter) and then the data-parallel gradient all-reduce in the
default PG.  The culprit hangs in Python right before its tp all-reduce: it logs nothing more and is
SIGTERMed by the launcher.  Its tp peers time out in the tp group (``[PG ID 1 PG GUID 3(tp) Rank
0]``, the tp SeqNum and counters, their group-local rank in ``[Rank g]``); every other rank
finishes its tp all-reduce and times out a little later in the default PG at one SeqNum.  The tp
communicators are created lazily at the first tp all-reduce (no ``device_id`` was bound, so NCCL
gets ``ncclCommInitRankConfig``, not ``ncclCommSplit``) and print their own Init START/COMPLETE
lines (``rank {group_rank} nranks {tp}``, one commId per group).
"""

from __future__ import annotations

import argparse
import bz2
import calendar
import gzip
import heapq
import io
import lzma
import math
import random
import shutil
import sys
import tarfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from triage.ranks import fmt_ranks

# --------------------------------------------------------------------------------------------
# Eras


@dataclass(frozen=True)
class Era:
    name: str
    torch: str
    cuda: str
    nccl: tuple[int, int, int]
    nccl_cuda: str
    python: str
    date: tuple[int, int, int]
    c10_rank: bool  # "[rankN]:" in front of C++ log lines once the default PG exists
    c10_stamp: bool  # "[E709 17:05:38.162555850 file:line]" instead of "[E file:line]"
    excepthook: bool  # "[rankN]: " in front of every traceback line
    pg_prefix: str  # ProcessGroupNCCL log prefix, formatted with r=
    glog_agent: bool  # torchrun agent envelope "E0606 09:10:14.926000 pid file:line] "
    build_root: str  # source path in "Exception raised from … at {build_root}/csrc/…"
    monitor_interval: float  # torchrun --monitor-interval default
    terminate_type: str
    ln: dict[str, int] = field(default_factory=dict)  # c10 source line numbers
    # prefix of a new_group()'s log lines: id= (PG ID, per process), guid= (group name), desc=, r=
    sub_prefix: str = ""

    @property
    def nccl_str(self) -> str:
        return "{}.{}.{}".format(*self.nccl)


ERAS: dict[str, Era] = {
    "2.1": Era(
        "2.1",
        "2.1.2+cu121",
        "12.1",
        (2, 18, 1),
        "12.1",
        "3.10.13",
        (2023, 12, 4),
        c10_rank=False,
        c10_stamp=False,
        excepthook=False,
        pg_prefix="[Rank {r}] ",
        sub_prefix="[Rank {r}] ",
        glog_agent=False,
        build_root="../torch",
        monitor_interval=5.0,
        terminate_type="std::runtime_error",
        ln={
            "caught": 475,
            "check": 477,
            "some": 489,
            "avoid": 495,
            "terminated": 916,
            "watchdog": 920,
            "barrier": 2291,
            "utils": 135,
            "reducer": 1346,
            "errcheck": 1170,
            "desync": 839,
        },
    ),
    "2.3": Era(
        "2.3",
        "2.3.1+cu121",
        "12.1",
        (2, 20, 5),
        "12.4",
        "3.10.14",
        (2024, 6, 11),
        c10_rank=True,
        c10_stamp=False,
        excepthook=True,
        pg_prefix="[PG 0 Rank {r}] ",
        sub_prefix="[PG {id} Rank {r}] ",
        glog_agent=False,
        build_root="../torch",
        monitor_interval=5.0,
        terminate_type="c10::DistBackendError",
        ln={
            "caught": 565,
            "check": 567,
            "timeout_at": 1537,
            "some": 579,
            "avoid": 585,
            "terminated": 1414,
            "watchdog": 1418,
            "barrier": 3689,
            "utils": 155,
            "reducer": 1394,
            "errcheck": 1725,
            "desync": 1316,
        },
    ),
    "2.4": Era(
        "2.4",
        "2.4.1+cu124",
        "12.4",
        (2, 20, 5),
        "12.4",
        "3.11.9",
        (2024, 8, 20),
        c10_rank=True,
        c10_stamp=True,
        excepthook=True,
        pg_prefix="[PG 0 (default_pg) Rank {r}] ",
        sub_prefix="[PG {guid} ({desc}) Rank {r}] ",
        glog_agent=True,
        build_root="../torch",
        monitor_interval=0.1,
        terminate_type="c10::DistBackendError",
        ln={
            "caught": 607,
            "check": 609,
            "either": 1664,
            "timeout_at": 1709,
            "some": 621,
            "avoid": 627,
            "terminated": 1515,
            "watchdog": 1521,
            "barrier": 4115,
            "utils": 164,
            "reducer": 1400,
            "errcheck": 1884,
            "destroy": 1168,
            "desync": 1655,
        },
    ),
    "2.5": Era(
        "2.5",
        "2.5.1+cu124",
        "12.4",
        (2, 21, 5),
        "12.4",
        "3.11.10",
        (2024, 11, 19),
        c10_rank=True,
        c10_stamp=True,
        excepthook=True,
        pg_prefix="[PG ID 0 PG GUID 0(default_pg) Rank {r}] ",
        sub_prefix="[PG ID {id} PG GUID {guid}({desc}) Rank {r}] ",
        glog_agent=True,
        build_root="../torch",
        monitor_interval=0.1,
        terminate_type="c10::DistBackendError",
        ln={
            "caught": 616,
            "check": 618,
            "either": 1785,
            "timeout_at": 1834,
            "some": 630,
            "avoid": 636,
            "terminated": 1601,
            "watchdog": 1607,
            "barrier": 4286,
            "utils": 164,
            "reducer": 1400,
            "errcheck": 2027,
            "destroy": 1263,
            "desync": 1776,
        },
    ),
    "2.6": Era(
        "2.6",
        "2.7.1+cu126",
        "12.6",
        (2, 26, 2),
        "12.2",
        "3.12.11",
        (2025, 7, 8),
        c10_rank=True,
        c10_stamp=True,
        excepthook=True,
        pg_prefix="[PG ID 0 PG GUID 0(default_pg) Rank {r}] ",
        sub_prefix="[PG ID {id} PG GUID {guid}({desc}) Rank {r}] ",
        glog_agent=True,
        build_root="/pytorch/torch",
        monitor_interval=0.1,
        terminate_type="c10::DistBackendError",
        ln={
            "caught": 632,
            "check": 635,
            "detected": 2168,
            "stack": 2199,
            "some": 655,
            "avoid": 661,
            "terminated": 1895,
            "watchdog": 1901,
            "barrier": 4718,
            "utils": 182,
            "reducer": 1432,
            "errcheck": 2112,
            "destroy": 1476,
            "desync": 2224,
        },
    ),
}

FAULTS = (
    "none",
    "silent",
    "missing",
    "oom",
    "sigkill",
    "ib",
    "mismatch",
    "lagging",
    "desync",
    "store",
    "first-collective",
    "cuda-error",
    "subgroup",
)
LAYOUTS = ("torchrun", "per-rank", "slurm-label")

# phase and category of each fault: the truth a report should arrive at
TRUTH: dict[str, tuple[str, str]] = {
    "none": ("", ""),
    "silent": ("execution", "hung_process"),
    "missing": ("execution", "hung_process"),
    "oom": ("execution", "oom"),
    "sigkill": ("execution", "crashed_process"),
    "ib": ("execution", "network_fault"),
    "mismatch": ("execution", "collective_mismatch"),
    "lagging": ("execution", "hung_process"),
    "desync": ("execution", "hung_process"),
    "store": ("comm_init", "config_mismatch"),
    "first-collective": ("operator_load", "network_fault"),
    "cuda-error": ("execution", "device_error"),
    "subgroup": ("execution", "hung_process"),
}

BUS_IDS = ("1b000", "43000", "52000", "61000", "9d000", "c3000", "d1000", "df000")
AFFINITY = (
    "ffffffff,00000000,ffffffff",
    "ffffffff,00000000,ffffffff",
    "ffffffff,00000000,ffffffff",
    "ffffffff,00000000,ffffffff",
    "ffffffff,00000000,ffffffff,00000000",
    "ffffffff,00000000,ffffffff,00000000",
    "ffffffff,00000000,ffffffff,00000000",
    "ffffffff,00000000,ffffffff,00000000",
)
TRAIN = "/workspace/train.py"
WRONG_MASTER = "10.42.1.1"  # the store fault's typo'd MASTER_ADDR
ASYNC_ENV_WARNING = (
    "Warning: Environment variable NCCL_ASYNC_ERROR_HANDLING is deprecated; use "
    "TORCH_NCCL_ASYNC_ERROR_HANDLING instead (function operator())"
)
PYBIN = "/opt/venv/bin/python"


# --------------------------------------------------------------------------------------------
# Small helpers


class Clock:
    """Wall-clock rendering of job-relative seconds, cached per second (UTC, deterministic)."""

    def __init__(self, base_epoch: int) -> None:
        self.base = base_epoch
        self._cache: dict[int, tuple[str, str, str, str, str]] = {}
        self._sec: dict[int, str] = {}

    def parts(self, t: float) -> tuple[str, str, str, str, str]:
        """(YYYY-MM-DD, HH:MM:SS, c10 MMDD, glog MMDD, ctime-ish) for job time t."""
        s = math.floor(t)
        got = self._cache.get(s)
        if got is None:
            tm = time.gmtime(self.base + s)
            ymd = f"{tm.tm_year:04d}-{tm.tm_mon:02d}-{tm.tm_mday:02d}"
            hms = f"{tm.tm_hour:02d}:{tm.tm_min:02d}:{tm.tm_sec:02d}"
            day = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")[tm.tm_wday]
            mon = (
                "Jan",
                "Feb",
                "Mar",
                "Apr",
                "May",
                "Jun",
                "Jul",
                "Aug",
                "Sep",
                "Oct",
                "Nov",
                "Dec",
            )[tm.tm_mon - 1]
            got = (
                ymd,
                hms,
                str(tm.tm_mon * 100 + tm.tm_mday),
                f"{tm.tm_mon:02d}{tm.tm_mday:02d}",
                f"{day} {mon} {tm.tm_mday:02d} {hms} UTC {tm.tm_year}",
            )
            self._cache[s] = got
        return got

    def second(self, s: int) -> str:
        """'YYYY-MM-DD HH:MM:SS' for whole job second s."""
        got = self._sec.get(s)
        if got is None:
            ymd, hms, _, _, _ = self.parts(s)
            got = self._sec[s] = f"{ymd} {hms}"
        return got

    def ms(self, t: float) -> int:
        return int((t - math.floor(t)) * 1000)

    def logging(self, t: float) -> str:
        """Python logging asctime: 2024-08-20 14:03:11,512."""
        ymd, hms, _, _, _ = self.parts(t)
        return f"{ymd} {hms},{self.ms(t):03d}"

    def iso(self, t: float, sep: str = " ") -> str:
        ymd, hms, _, _, _ = self.parts(t)
        return f"{ymd}{sep}{hms}"


def host_name(i: int, hosts: int) -> str:
    """Host i (0-based) → gpu-node-01 … (three digits once there are 100+ hosts)."""
    width = max(2, len(str(hosts)))
    return f"gpu-node-{i + 1:0{width}d}"


def host_ip(i: int) -> str:
    n = i + 1
    return f"10.42.{n // 250}.{n % 250}" if n >= 250 else f"10.42.0.{n}"


def ranks_to_str(ranks: Sequence[int]) -> str:
    return ", ".join(str(r) for r in ranks)


def id_ranges(ids: Sequence[int]) -> str:
    """[0,1,2,4] → '0-2,4' (Slurm task-list style)."""
    return fmt_ranks(ids, sep=",")


def hostlist(names: Sequence[str]) -> str:
    """['gpu-node-01','gpu-node-02'] → 'gpu-node-[01-02]'."""
    if len(names) == 1:
        return names[0]
    stem = names[0].rsplit("-", 1)[0]
    width = len(names[0].rsplit("-", 1)[1])
    nums = [int(n.rsplit("-", 1)[1]) for n in names]
    parts = []
    for part in id_ranges(nums).split(","):
        a, _, b = part.partition("-")
        parts.append(f"{int(a):0{width}d}" + (f"-{int(b):0{width}d}" if b else ""))
    return f"{stem}-[{','.join(parts)}]"


Line = tuple[float, str]


@dataclass
class RankPlan:
    rank: int
    host: int
    local: int
    pid: int
    uptime: float  # host CLOCK_MONOTONIC offset (c10 fraction digits)
    aslr: int
    fate: str = "timeout"  # timeout|hang|exception|killed|remote_error|clean|store_*
    t_enq: float = 0.0  # when the stuck work was enqueued
    t_timeout: float = 0.0
    ran_ms: int = 0
    t_exit: float | None = None  # natural exit time (None: never exits by itself)
    exitcode: int = 0
    t_kill: float | None = None  # SIGTERM from the launcher before the natural exit
    enq: int = 0
    done: int = 0
    op: str = "ALLREDUCE"
    numel_in: int = 0
    numel_out: int = 0
    # where the stuck work lives when it is not the default PG (fault subgroup)
    seq: int = 0  # its SeqNum (0: the job's default-PG SeqNum)
    grank: int | None = None  # the rank within that group ([Rank g] of the work lines)
    pg_prefix: str = ""  # that group's log prefix ("": the default PG's)


@dataclass
class Truth:
    """What really happened in the generated job (the expected verdict)."""

    out_dir: str
    hosts: int
    gpus: int
    world_size: int
    era: str
    fault: str
    layout: str
    phase: str
    category: str
    culprit_rank: int | None
    culprit_host: str | None
    seq: int | None
    files: list[str]
    lines: int
    bytes: int
    end_epoch: int  # wall-clock end of the job (a natural mtime for archives of it)
    # the process group the culprit hung in, when it is not the default PG (fault subgroup)
    group_desc: str | None = None  # e.g. "tp"
    group_guid: str | None = None  # PG GUID (group name) of the culprit's group
    group_ranks: list[int] | None = None  # global ranks of the culprit's group
    group_seq: int | None = None  # SeqNum in that group the culprit never reached
    group_op: str | None = None  # OpType of that work


# --------------------------------------------------------------------------------------------
# The job


class Job:
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
            elif f == "lagging" and p.rank == c:
                p.enq = self.seq
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

    def _startup(self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]) -> None:
        e = self.e
        t = self.t_start + rng.uniform(-1.5, 0.0)
        site = self.site()
        master = self.host_names[0] if self.layout == "torchrun" else self.host_ips[0]
        if self.fault == "store" and p.rank == self.culprit_rank:
            master = WRONG_MASTER
        env = [
            f"RANK={p.rank}",
            f"LOCAL_RANK={p.local}",
            f"WORLD_SIZE={self.W}",
            f"LOCAL_WORLD_SIZE={self.gpus}",
            f"MASTER_ADDR={master}",
            f"MASTER_PORT={self.master_port}",
            "NCCL_DEBUG=INFO",
            "NCCL_SOCKET_IFNAME=eth0",
            "NCCL_IB_HCA=mlx5",
        ]
        if self.flags["async_env"]:
            env.append("NCCL_ASYNC_ERROR_HANDLING=1")
        else:
            env.append("TORCH_NCCL_ASYNC_ERROR_HANDLING=1")
        if self.fault == "desync":
            env.append("TORCH_NCCL_DESYNC_DEBUG=1")
        if self.layout != "torchrun":
            env.append(f"SLURM_JOB_ID={self.jobid} SLURM_PROCID={p.rank}")
        out.append((t, f"[{self.host_names[p.host]}] launch env: {' '.join(env)}"))
        nc = e.nccl_str
        out.append(
            (
                t + 0.001,
                f"torch {e.torch} | cuda {e.cuda} | nccl {nc} | "
                f"python {e.python} | device cuda:{p.local} (NVIDIA H100 80GB HBM3)",
            )
        )
        if p.rank == 0:
            out.append(
                (
                    t + 0.002,
                    f"config: run={self.run_id} model=decoder-6.7b seq_len=4096 "
                    f"micro_bs=2 grad_accum=1 lr=3.0e-04 warmup=2000 "
                    f"max_steps={self.total_steps} bf16=True "
                    f"timeout={self.timeout_ms // 60000}min",
                )
            )
            out.append(
                (t + 0.003, "data: /datasets/fineweb-edu/tokenized (512 shards, 1.21e+11 tokens)")
            )
        warns: list[str] = []
        if e.name in ("2.4", "2.5", "2.6"):
            warns.append(
                f"{site}/torch/utils/checkpoint.py:1399: FutureWarning: `torch.cpu.amp.autocast"
                "(args...)` is deprecated. Please use `torch.amp.autocast('cpu', args...)` instead."
                "\n  with device_autocast_ctx, torch.cpu.amp.autocast(**cpu_autocast_kwargs), "
                "recompute_context:  # type: ignore[attr-defined]"
            )
        warns.append(
            f"{site}/torch/_utils.py:831: UserWarning: TypedStorage is deprecated. It will be "
            "removed in the future and UntypedStorage will be the only storage class. This should "
            "only matter to you if you are using storages directly.  To access UntypedStorage "
            "directly, use tensor.untyped_storage() instead.\n"
            "  return self.fget.__get__(instance, owner)()"
        )
        if self.flags["loader"]:
            warns.append(
                f"{site}/torch/utils/data/dataloader.py:617: UserWarning: This DataLoader will "
                "create 8 worker processes in total. Our suggested max number of worker in current"
                " system is 6, which is smaller than what this DataLoader is going to create. "
                "Please be aware that excessive worker creation might get DataLoader running "
                "slow or even freeze, lower the worker number to avoid potential slowness/freeze "
                "if necessary."
                "\n  warnings.warn("
            )
        tw = t + rng.uniform(0.3, 1.2)
        for w in warns[: 1 + rng.randrange(len(warns))]:
            err.append((tw, w))
            tw += 0.01

    def _init_nccl(self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]) -> None:
        e = self.e
        nv = e.nccl
        t = self.t_pg + rng.uniform(0.0, 0.05)
        if self.flags["async_env"]:
            msg = ASYNC_ENV_WARNING
            if e.name == "2.1":
                msg = msg.replace("operator()", "getCvarInt")
            err.append((t, self.c10(p, t, "W", "Utils.hpp", e.ln["utils"], msg, ranked=False)))
        t = self.t_nccl + rng.uniform(0.0, 0.05)
        if not self.first_coll:
            msg = self._barrier_warning(p)
            err.append((t, self.c10(p, t, "W", "ProcessGroupNCCL.cpp", e.ln["barrier"], msg)))
        ip = self.host_ips[p.host]
        info: list[str] = []
        ni = self.nccl_info
        if nv >= (2, 26, 0):
            info.append(ni(p, f"NCCL version {e.nccl_str}+cuda{e.nccl_cuda}"))
            info.append(ni(p, "NCCL_SOCKET_IFNAME set by environment to eth0"))
        info.append(ni(p, f"Bootstrap : Using eth0:{ip}<0>"))
        if nv < (2, 26, 0) and p.rank == 0:
            info.append(f"NCCL version {e.nccl_str}+cuda{e.nccl_cuda}")
        if nv >= (2, 18, 0):
            info.append(
                ni(p, "cudaDriverVersion 12040" if nv < (2, 26, 0) else "cudaDriverVersion 12080")
            )
        if nv >= (2, 21, 0):
            info.append(
                ni(p, "NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.")
            )
        else:
            info.append(
                ni(
                    p,
                    "NET/Plugin : dlerror=libnccl-net.so: cannot open shared object "
                    "file: No such file or directory No plugin found (libnccl-net.so), "
                    "using internal implementation",
                )
            )
        if nv < (2, 26, 0):
            info.append(ni(p, "NCCL_SOCKET_IFNAME set by environment to eth0"))
        info.append(ni(p, "NCCL_IB_HCA set by environment to mlx5"))
        devs = " ".join(f"[{i}]mlx5_{i}:1/IB" for i in range(min(self.gpus, 8)))
        info.append(ni(p, f"NET/IB : Using {devs} [RO]; OOB eth0:{ip}<0>"))
        if nv >= (2, 19, 0):
            info.append(ni(p, "Using non-device net plugin version 0"))
        info.append(ni(p, "Using network IB"))
        comm = self.comm_ptr(p)
        bus = BUS_IDS[p.local % 8]
        fn = "ncclCommInitRankConfig " if nv >= (2, 21, 0) else ""
        ids = (
            f"comm {comm} rank {p.rank} nranks {self.W} cudaDev {p.local} "
            f"nvmlDev {p.local} busId {bus} commId 0x{self.comm_id}"
        )
        if nv >= (2, 18, 0):
            info.append(ni(p, f"{fn}{ids} - Init START"))
        if nv >= (2, 26, 0):
            b = [rng.uniform(0.0001, 0.002) for _ in range(4)]
            info.append(
                ni(
                    p,
                    f"Bootstrap timings total {sum(b) + 0.3:.6f} (create {b[0]:.6f}, "
                    f"send {b[1]:.6f}, recv {0.3 + b[2]:.6f}, ring {b[3]:.6f}, "
                    "delay 0.000000)",
                )
            )
        info.append(ni(p, f"Setting affinity for GPU {p.local} to {AFFINITY[p.local % 8]}"))
        if nv >= (2, 17, 0):
            info.append(ni(p, f"NVLS multicast support is not available on dev {p.local}"))
        if nv >= (2, 20, 0):
            mn = " MNNVL 0" if nv >= (2, 21, 0) else ""
            info.append(
                ni(
                    p,
                    f"comm {comm} rank {p.rank} nRanks {self.W} nNodes {self.hosts} "
                    f"localRanks {self.gpus} localRank {p.local}{mn}",
                )
            )
        info.append(ni(p, self._trees(p)))
        info.append(ni(p, "P2P Chunksize set to 524288"))
        info.extend(ni(p, ch) for ch in self._channels(p))
        info.append(
            ni(
                p,
                "Connected all rings, use ring PXN 0 GDR 1"
                if nv >= (2, 24, 0)
                else "Connected all rings",
            )
        )
        info.append(ni(p, "Connected all trees"))
        info.append(ni(p, "threadThresholds 8/8/64 | 128/8/64 | 512 | 512"))
        nch = self.n_channels * 2
        info.append(
            ni(
                p,
                f"{nch} coll channels, {nch} collnet channels, 0 nvls channels, "
                f"{nch} p2p channels, 2 p2p channels per peer",
            )
        )
        done_ids = (
            ids
            if nv >= (2, 18, 0)
            else (f"comm {comm} rank {p.rank} nranks {self.W} cudaDev {p.local} busId {bus}")
        )
        info.append(ni(p, f"{fn}{done_ids} - Init COMPLETE"))
        if nv >= (2, 22, 0):
            parts = [rng.uniform(0.01, 0.3) for _ in range(8)]
            info.append(
                ni(
                    p,
                    f"Init timings - ncclCommInitRankConfig: rank {p.rank} nranks "
                    f"{self.W} total {sum(parts):.2f} (kernels {parts[0]:.2f}, alloc "
                    f"{parts[1]:.2f}, bootstrap {parts[2]:.2f}, allgathers "
                    f"{parts[3]:.2f}, topo {parts[4]:.2f}, graphs {parts[5]:.2f}, "
                    f"connections {parts[6]:.2f}, rest {parts[7]:.2f})",
                )
            )
        dt = self.init_dur / max(1, len(info))
        for i, line in enumerate(info):
            out.append((t + 0.01 + i * dt + rng.uniform(0.0, dt * 0.5), line))

    def _barrier_warning(self, p: RankPlan) -> str:
        e = self.e
        if e.name == "2.6":
            return (
                f"{self.pg(p)} using GPU {p.local} as device used by this process is "
                "currently unknown. This can potentially cause a hang if this rank to GPU "
                "mapping is incorrect. You can pecify device_id in init_process_group() to "
                "force use of a particular device."
            )
        if e.c10_stamp:
            return (
                f"{self.pg(p)} using GPU {p.local} to perform barrier as devices used by this "
                "process are currently unknown. This can potentially cause a hang if this rank "
                "to GPU mapping is incorrect.Specify device_ids in barrier() to force use of a "
                "particular device,or call init_process_group() with a device_id."
            )
        return (
            f"Rank {p.rank} using GPU {p.local} to perform barrier as devices used by this "
            "process are currently unknown. This can potentially cause a hang if this rank to "
            "GPU mapping is incorrect.Specify device_ids in barrier() to force use of a "
            "particular device."
        )

    def _ring_next_prev(self, p: RankPlan, c: int) -> tuple[int, int]:
        """Ring c visits each host's GPUs rotated by c, then moves on to the next host."""
        g = self.gpus
        order = [(p2 + c) % g for p2 in range(g)]
        pos = order.index(p.local)
        if pos + 1 < g:
            nxt = p.host * g + order[pos + 1]
        else:
            nxt = ((p.host + 1) % self.hosts) * g + order[0]
        prv = (
            p.host * g + order[pos - 1] if pos > 0 else ((p.host - 1) % self.hosts) * g + order[-1]
        )
        return nxt, prv

    def _channels(self, p: RankPlan) -> list[str]:
        g = self.gpus
        out = []
        for c in range(self.n_channels):
            nxt, prv = self._ring_next_prev(p, c)
            if prv // g != p.host:
                out.append(
                    f"Channel {c:02d}/0 : {prv}[{prv % g}] -> {p.rank}[{p.local}] "
                    f"[receive] via NET/IB/{p.local % 8}/GDRDMA"
                )
            if nxt // g == p.host:
                out.append(
                    f"Channel {c:02d}/0 : {p.rank}[{p.local}] -> {nxt}[{nxt % g}] via P2P/IPC"
                )
            else:
                out.append(
                    f"Channel {c:02d}/0 : {p.rank}[{p.local}] -> {nxt}[{nxt % g}] "
                    f"[send] via NET/IB/{p.local % 8}/GDRDMA"
                )
        return out

    def _trees(self, p: RankPlan) -> str:
        g = self.gpus
        parts = []
        for c in range(min(self.n_channels, 4)):
            up = p.rank - 1 if p.local > 0 else (-1 if p.host == 0 else p.rank - g)
            down = p.rank + 1 if p.local + 1 < g else -1
            cross = p.rank + g if p.local == 0 and p.host + 1 < self.hosts else -1
            parts.append(f"[{c}] {down}/{cross}/-1->{p.rank}->{up}")
        return "Trees " + " ".join(parts)

    def _setup(self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]) -> None:
        t = self.t_setup + rng.uniform(0.0, 0.4)
        lg = self.clock.logging
        err.append(
            (
                t,
                f"{lg(t)} INFO train: rank {p.rank}/{self.W} building model "
                "decoder-6.7b (6.74B params, bf16)",
            )
        )
        t2 = t + rng.uniform(2.0, 5.0)
        err.append(
            (
                t2,
                f"{lg(t2)} INFO train: rank {p.rank}/{self.W} DDP(bucket_cap_mb=25, "
                f"find_unused_parameters={self.flags['unused']}) "
                f"-> {self.n_buckets} buckets",
            )
        )
        if p.rank == 0:
            t3 = t2 + 0.2
            err.append(
                (
                    t3,
                    f"{lg(t3)} INFO train: optimizer AdamW(lr=3.0e-04, betas=(0.9, 0.95), "
                    "weight_decay=0.1), scheduler cosine(warmup=2000)",
                )
            )
        if self.first_coll:
            t4 = self.t_fstep - rng.uniform(0.2, 1.0)
            err.append(
                (
                    t4,
                    f"{lg(t4)} INFO train: rank {p.rank}/{self.W} routing warm-up: "
                    "all_to_all_single over 16777216 tokens",
                )
            )
            return
        t5 = self.t_train0 - rng.uniform(0.5, 2.0)
        err.append(
            (t5, f"{lg(t5)} INFO train: rank {p.rank}/{self.W} starting training from step 0")
        )

    def _init_tp(self, p: RankPlan, out: list[Line], err: list[Line]) -> None:
        """Fault subgroup: the script's tp group line and the tp communicator's NCCL init.

        ProcessGroupNCCL creates a group's communicator at its first collective (step 1's tp
        all-reduce); with no device_id bound there is no parent comm to split, so NCCL logs a
        plain ncclCommInitRankConfig with the group-local rank, nranks tp and the group's commId.
        """
        rng = random.Random((self.seed << 20) ^ (p.rank * 0x5851F42D + 11))  # noqa: S311
        e, nv, tp = self.e, self.e.nccl, self.tp
        k, g = self.tp_index(p.rank), p.rank % tp
        ranks = self.tp_ranks(k)
        lg = self.clock.logging
        t = self.t_setup + 0.45 + rng.uniform(0.0, 0.05)
        err.append(
            (
                t,
                f"{lg(t)} INFO train: rank {p.rank}/{self.W} tensor parallel: tp_size={tp} "
                f"tp_rank={g} group [{ranks_to_str(ranks)}] (new_group desc=tp); gradients are "
                "all-reduced over the default group",
            )
        )
        ni = self.nccl_info
        base = 0x55D000000000 + (((p.aslr * 7919) << 4) & 0xFFFFFFFF0)
        comm = f"0x{base + 0x3A8F40 + 0x1000 * k:x}"
        bus = BUS_IDS[p.local % 8]
        fn = "ncclCommInitRankConfig " if nv >= (2, 21, 0) else ""
        ids = (
            f"comm {comm} rank {g} nranks {tp} cudaDev {p.local} nvmlDev {p.local} "
            f"busId {bus} commId 0x{self.tp_comm_id(k)}"
        )
        info: list[str] = []
        if nv < (2, 26, 0) and g == 0:  # rank 0 of every communicator prints the banner
            info.append(f"NCCL version {e.nccl_str}+cuda{e.nccl_cuda}")
        info.append(ni(p, "Using network IB"))
        if nv >= (2, 18, 0):
            info.append(ni(p, f"{fn}{ids} - Init START"))
        if nv >= (2, 26, 0):
            b = [rng.uniform(0.0001, 0.002) for _ in range(4)]
            info.append(
                ni(
                    p,
                    f"Bootstrap timings total {sum(b) + 0.01:.6f} (create {b[0]:.6f}, "
                    f"send {b[1]:.6f}, recv {0.01 + b[2]:.6f}, ring {b[3]:.6f}, "
                    "delay 0.000000)",
                )
            )
        info.append(ni(p, f"Setting affinity for GPU {p.local} to {AFFINITY[p.local % 8]}"))
        if nv >= (2, 20, 0):
            mn = " MNNVL 0" if nv >= (2, 21, 0) else ""
            info.append(
                ni(
                    p,
                    f"comm {comm} rank {g} nRanks {tp} nNodes 1 localRanks {tp} localRank {g}{mn}",
                )
            )
        down = g + 1 if g + 1 < tp else -1
        up = g - 1 if g > 0 else -1
        trees = " ".join(f"[{c}] {down}/-1/-1->{g}->{up}" for c in range(min(self.n_channels, 4)))
        info.append(ni(p, f"Trees {trees}"))
        info.append(ni(p, "P2P Chunksize set to 524288"))
        nxt = (g + 1) % tp
        nxt_dev = (p.local - g + nxt) % self.gpus
        info.extend(
            ni(p, f"Channel {c:02d}/0 : {g}[{p.local}] -> {nxt}[{nxt_dev}] via P2P/IPC")
            for c in range(self.n_channels)
        )
        info.append(
            ni(
                p,
                "Connected all rings, use ring PXN 0 GDR 1"
                if nv >= (2, 24, 0)
                else "Connected all rings",
            )
        )
        info.append(ni(p, "Connected all trees"))
        info.append(ni(p, "threadThresholds 8/8/64 | 16/8/64 | 512 | 512"))
        nch = self.n_channels
        info.append(
            ni(
                p,
                f"{nch} coll channels, {nch} collnet channels, 0 nvls channels, "
                f"{nch} p2p channels, {nch} p2p channels per peer",
            )
        )
        done_ids = (
            ids
            if nv >= (2, 18, 0)
            else f"comm {comm} rank {g} nranks {tp} cudaDev {p.local} busId {bus}"
        )
        info.append(ni(p, f"{fn}{done_ids} - Init COMPLETE"))
        if nv >= (2, 22, 0):
            parts = [rng.uniform(0.005, 0.08) for _ in range(8)]
            info.append(
                ni(
                    p,
                    f"Init timings - ncclCommInitRankConfig: rank {g} nranks {tp} total "
                    f"{sum(parts):.2f} (kernels {parts[0]:.2f}, alloc {parts[1]:.2f}, bootstrap "
                    f"{parts[2]:.2f}, allgathers {parts[3]:.2f}, topo {parts[4]:.2f}, graphs "
                    f"{parts[5]:.2f}, connections {parts[6]:.2f}, rest {parts[7]:.2f})",
                )
            )
        t0 = self.t_train0 + 0.2 * self.step_time + rng.uniform(0.0, 0.05)
        dt = rng.uniform(0.3, 0.6) / len(info)
        for i, line in enumerate(info):
            out.append((t0 + i * dt + rng.uniform(0.0, dt * 0.5), line))

    def _curve(self) -> list[tuple[float, str]]:
        """Per step: (loss, '| lr … | grad_norm … | s/it | tok/s' text), shared by all ranks.

        The script logs the all-reduced loss (that is the metrics all-reduce that ends each
        step), so loss, lr, grad norm and step time read the same on every rank.
        """
        if not self._curve_cache:
            rng = random.Random(self.seed * 104729 + 3)  # noqa: S311
            st, tok = self.step_time, self.tok_per_step
            for k in range(self.steps + 1):
                dt = st * (0.97 + rng.random() * 0.06)
                gn = 0.35 + 2.0 * math.exp(-k / 400.0) + rng.random() * 0.2
                lr = 3e-4 * min(1.0, k / 2000.0)
                self._curve_cache.append(
                    (
                        2.05 + 8.8 * math.exp(-k / 260.0) + (rng.random() - 0.5) * 0.12,
                        f" | lr {lr:.3e} | grad_norm {gn:.3f} | {dt:.2f}s/it"
                        f" | tok/s {int(tok * self.W / dt):,}",
                    )
                )
        return self._curve_cache

    def _train(self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]) -> None:
        if self.steps == 0:
            return
        e = self.e
        lg = self.clock.logging
        st = self.step_time
        t0 = self.t_train0
        jitter = rng.uniform(0.001, 0.09)
        total = self.total_steps
        if self.flags["unused"]:
            t = t0 + 0.6 * st
            err.append(
                (
                    t,
                    self.c10(
                        p,
                        t,
                        "W",
                        "reducer.cpp",
                        e.ln["reducer"],
                        "Warning: find_unused_parameters=True was specified in DDP "
                        "constructor, but did not find any unused parameters in the "
                        "forward pass. This flag results in an extra traversal of the "
                        "autograd graph every iteration,  which can adversely affect "
                        "performance. If your model indeed never has any unused "
                        "parameters in the forward pass, consider turning this flag "
                        "off. Note that this warning may be a false positive if your "
                        "model has flow control causing later iterations to have "
                        "unused parameters. (function operator())",
                    ),
                )
            )
        rank, W = p.rank, self.W
        rnd = rng.random
        append = err.append
        stamp = self.clock.second
        curve = self._curve()
        mem = f" | mem {60.8 + rnd() * 1.5:.1f}GiB"
        for k in range(1, self.steps + 1):
            t = t0 + k * st + jitter + rnd() * 0.01
            sec = int(t)
            loss, rest = curve[k]
            append(
                (
                    t,
                    f"{stamp(sec)},{int((t - sec) * 1000):03d} INFO train: rank {rank}/{W} step "
                    f"{k}/{total} | loss {loss:.4f}{rest}{mem}",
                )
            )
            if rank == 0 and k % 250 == 0:
                append(
                    (
                        t + 0.004,
                        f"{lg(t + 0.004)} INFO train: eval at step {k}: val_loss "
                        f"{loss + 0.05:.4f} ppl {math.exp(loss + 0.05):.2f}",
                    )
                )
            if rank == 0 and k % 1000 == 0:
                append(
                    (
                        t + 0.006,
                        f"{lg(t + 0.006)} INFO train: saving checkpoint to "
                        f"/checkpoints/{self.run_id}/step_{k:07d}",
                    )
                )

    # ---------------------------------------------------------------- the end of a rank

    def _tail(self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]) -> None:
        f = self.fault
        if f == "none":
            self._clean_exit(p, rng, out, err)
            return
        if self.first_coll:
            self._first_collective(p, rng, out, err)
        if f == "ib":
            self._ib_warn(p, rng, out, err)
        if p.fate == "timeout":
            self._watchdog_timeout(p, rng, out, err)
        elif p.fate == "exception":
            self._exception(p, rng, out, err)
        elif p.fate == "remote_error":
            self._remote_error(p, rng, out, err)
        # hang / killed: nothing more from this process

    def _clean_exit(
        self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]
    ) -> None:
        lg = self.clock.logging
        t = self.t_train0 + self.steps * self.step_time + 0.5 + rng.uniform(0.0, 0.2)
        if p.rank == 0:
            err.append(
                (
                    t,
                    f"{lg(t)} INFO train: reached max_steps for this run "
                    f"({self.steps} steps); saving final checkpoint",
                )
            )
        t2 = t + 1.5 + rng.uniform(0.0, 0.3)
        err.append(
            (t2, f"{lg(t2)} INFO train: rank {p.rank}/{self.W} calling destroy_process_group()")
        )
        bus = BUS_IDS[p.local % 8]
        out.append(
            (
                t2 + 0.2,
                self.nccl_info(
                    p,
                    f"comm {self.comm_ptr(p)} rank {p.rank} nranks {self.W} cudaDev {p.local} "
                    f"busId {bus} - Destroy COMPLETE",
                ),
            )
        )
        if p.rank == 0:
            t3 = (p.t_exit or t2) - 0.2
            err.append(
                (
                    t3,
                    f"{lg(t3)} INFO train: training finished: {self.steps} steps in "
                    f"{self.steps * self.step_time / 60:.1f} min; exiting with status 0",
                )
            )

    def _watchdog_timeout(
        self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]
    ) -> None:
        e = self.e
        t = p.t_timeout
        pg = p.pg_prefix or self.pg(p)
        wr = p.rank if p.grank is None else p.grank  # [Rank r] is the rank within the PG
        seq = p.seq or self.seq
        work = self.work(p)
        caught = (
            f"[Rank {wr}] Watchdog caught collective operation timeout: {work} ran for "
            f"{p.ran_ms} milliseconds before timing out."
        )
        ln = e.ln
        F = "ProcessGroupNCCL.cpp"
        lines: list[str] = [self.c10(p, t, "E", F, ln["caught"], caught)]
        tt = t
        if e.name == "2.1":
            some = (
                "Some NCCL operations have failed or timed out. Due to the asynchronous nature "
                "of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete "
                "data."
            )
            term = f"[Rank {wr}] NCCL watchdog thread terminated with exception: {caught}"
            lines.append(self.c10(p, tt + 1e-4, "E", F, ln["some"], some))
            lines.append(
                self.c10(
                    p,
                    tt + 2e-4,
                    "E",
                    F,
                    ln["avoid"],
                    "To avoid data inconsistency, we are taking the entire process down.",
                )
            )
            err.append((t, "\n".join(lines)))
            # the watchdog thread rethrows a moment later and the process aborts
            tx = (p.t_exit or t) - 0.002
            tail = [
                self.c10(p, tx, "E", F, ln["terminated"], term),
                f"terminate called after throwing an instance of '{e.terminate_type}'",
                f"  what():  {term}",
            ]
            err.append((tx, "\n".join(tail)))
            return
        if self.fault == "desync":
            lines.append(self.c10(p, tt + 1e-4, "E", F, ln["desync"], pg + self._desync(p)))
        status = f"{seq}, last enqueued NCCL work: {p.enq}, last completed NCCL work: {p.done}."
        if e.name in ("2.4", "2.5"):
            lines.append(
                self.c10(
                    p,
                    tt + 2e-4,
                    "E",
                    F,
                    ln["either"],
                    f"{pg}Exception (either an error or timeout) detected by "
                    f"watchdog at work: {status}",
                )
            )
        if e.name in ("2.3", "2.4", "2.5"):
            lines.append(
                self.c10(
                    p, tt + 3e-4, "E", F, ln["timeout_at"], f"{pg}Timeout at NCCL work: {status}"
                )
            )
        if e.name == "2.6":
            lines.append(
                self.c10(
                    p,
                    tt + 2e-4,
                    "E",
                    F,
                    ln["detected"],
                    f"{pg} failure detected by watchdog at work sequence id: "
                    f"{seq} PG status: last enqueued work: {p.enq}, last "
                    f"completed work: {p.done}",
                )
            )
            lines.append(
                self.c10(
                    p,
                    tt + 3e-4,
                    "E",
                    F,
                    ln["stack"],
                    "Stack trace of the failed collective not found, potentially "
                    "because FlightRecorder is disabled. You can enable it by "
                    "setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.",
                )
            )
        lines.append(
            self.c10(
                p,
                tt + 4e-4,
                "E",
                F,
                ln["some"],
                f"[Rank {wr}] Some NCCL operations have failed or timed out. "
                "Due to the asynchronous nature of CUDA kernels, subsequent GPU "
                "operations might run on corrupted/incomplete data.",
            )
        )
        lines.append(
            self.c10(
                p,
                tt + 5e-4,
                "E",
                F,
                ln["avoid"],
                f"[Rank {wr}] To avoid data inconsistency, we are taking the entire process down.",
            )
        )
        term = f"{pg}Process group watchdog thread terminated with exception: {caught}"
        src = f"{e.build_root}/csrc/distributed/c10d/{F}"
        check = [
            f"Exception raised from checkTimeout at {src}:{ln['check']} (most recent call first):"
        ]
        check += self.frames(
            p,
            [
                ("c10::Error::Error(c10::SourceLocation, std::string)", "libc10.so"),
                (
                    "c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::"
                    "duration<long, std::ratio<1l, 1000l> > >)",
                    "libtorch_cuda.so",
                ),
                ("c10d::ProcessGroupNCCL::watchdogHandler()", "libtorch_cuda.so"),
                ("c10d::ProcessGroupNCCL::ncclCommWatchdog()", "libtorch_cuda.so"),
                *self.sys_frames(),
            ],
        )
        err.append((t, "\n".join(lines)))
        # the watchdog thread rethrows a moment later and the process aborts
        tx = (p.t_exit or t) - 0.002
        lines = [self.c10(p, tx, "E", F, ln["terminated"], term), *check, ""]
        lines.append(f"terminate called after throwing an instance of '{e.terminate_type}'")
        lines.append(f"  what():  {term}")
        lines.extend(check)
        lines.append("")
        lines.append(
            f"Exception raised from ncclCommWatchdog at {src}:{ln['watchdog']} (most "
            "recent call first):"
        )
        lines.extend(
            self.frames(
                p,
                [
                    ("c10::Error::Error(c10::SourceLocation, std::string)", "libc10.so"),
                    ("<unknown function>", "libtorch_cuda.so"),
                    (
                        "c10::detail::torchCheckFail(char const*, char const*, unsigned int, "
                        "std::string const&)",
                        "libc10.so",
                    ),
                    ("<unknown function>", "libtorch_cuda.so"),
                    *self.sys_frames(),
                ],
            )
        )
        lines.append("")
        err.append((tx, "\n".join(lines)))

    def _desync(self, p: RankPlan) -> str:
        c = self.culprit_rank if self.culprit_rank is not None else 0
        others = [r for r in range(self.W) if r != c]
        op = p.op
        s = self.seq
        return (
            f"\n\t - [{p.rank}] Timeout at collective: {op}, #{s}"
            "\n\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the "
            "desync are:"
            f"\n\t     [{c}] finished collective #{s - 1}, but didn't join collective #{s} "
            "(count from 1)"
            "\n\t - Snapshot of ranks' latest states:"
            f"\n\t   #{s - 1} finished ranks:"
            f"\n\t     [{c}] finished {op}"
            f"\n\t   #{s} started ranks:"
            f"\n\t     [{ranks_to_str(others)}] started {op}"
        )

    def _exception(self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]) -> None:
        e = self.e
        site = self.site()
        t = self.t_fault
        car = self.carets()
        tb = [
            "Traceback (most recent call last):",
            f'  File "{TRAIN}", line 214, in <module>',
            "    main()",
        ]
        if self.fault == "oom":
            tb += [
                f'  File "{TRAIN}", line 181, in main',
                "    loss = model(input_ids, labels=labels).loss",
            ]
            if car:
                tb.append("           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^")
            tb += [
                f'  File "{site}/torch/nn/modules/module.py", line 1553, in _wrapped_call_impl',
                "    return self._call_impl(*args, **kwargs)",
            ]
            if car:
                tb.append("           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^")
            tb += [
                f'  File "{site}/torch/nn/modules/module.py", line 1562, in _call_impl',
                "    return forward_call(*args, **kwargs)",
            ]
            if car:
                tb.append("           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^")
            tb += [
                f'  File "{site}/torch/nn/parallel/distributed.py", line 1636, in forward',
                "    else self._run_ddp_forward(*inputs, **kwargs)",
                f'  File "{site}/torch/nn/parallel/distributed.py", line 1454, in _run_ddp_forward',
                "    return self.module(*inputs, **kwargs)  # type: ignore[index]",
                '  File "/workspace/model.py", line 142, in forward',
                "    attn = torch.softmax(scores.float(), dim=-1).to(q.dtype)",
            ]
            free = rng.uniform(0.4, 2.2)
            used = 79.1 - free
            alloc = used - rng.uniform(2.0, 4.0)
            reserved = used - alloc - 0.6
            cls = "torch.OutOfMemoryError" if e.name >= "2.4" else "torch.cuda.OutOfMemoryError"
            if e.name == "2.1":
                msg = (
                    f"{cls}: CUDA out of memory. Tried to allocate 4.00 GiB. GPU {p.local} has a "
                    f"total capacty of 79.15 GiB of which {free:.2f} GiB is free. Process "
                    f"{p.pid} has {used:.2f} GiB memory in use. Of the allocated memory "
                    f"{alloc:.2f} GiB is allocated by PyTorch, and {reserved:.2f} GiB is "
                    "reserved by PyTorch but unallocated. If reserved but unallocated memory "
                    "is large try setting max_split_size_mb to avoid fragmentation.  See "
                    "documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF"
                )
            else:
                msg = (
                    f"{cls}: CUDA out of memory. Tried to allocate 4.00 GiB. GPU {p.local} has a "
                    f"total capacity of 79.10 GiB of which {free:.2f} GiB is free. Including "
                    f"non-PyTorch memory, this process has {used:.2f} GiB memory in use. Of "
                    f"the allocated memory {alloc:.2f} GiB is allocated by PyTorch, and "
                    f"{reserved:.2f} GiB is reserved by PyTorch but unallocated. If reserved "
                    "but unallocated memory is large try setting "
                    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
                    "  See documentation for Memory Management  "
                    "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
                )
            tb.append(msg)
        else:  # cuda-error
            proxy_tid = p.pid + 171
            out.append(
                (
                    t - 0.2,
                    self.nccl_warn(
                        p,
                        t - 0.2,
                        "proxy.cc:1047",
                        "Cuda failure 'an illegal memory access was encountered'",
                        proxy_tid,
                    ),
                )
            )
            tb += [f'  File "{TRAIN}", line 196, in main', "    loss_val = loss.detach().item()"]
            if car:
                tb.append("               ^^^^^^^^^^^^^^^^^^^^^^^^^^")
            tb += [
                "RuntimeError: CUDA error: an illegal memory access was encountered",
                "CUDA kernel errors might be asynchronously reported at some other API call, "
                "so the stacktrace below might be incorrect.",
                "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
                "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
                "",
            ]
        err.append((t, self.hook(p, tb)))
        if "destroy" in e.ln:
            t2 = t + 0.9
            if e.name == "2.6":
                msg = (
                    "Warning: WARNING: destroy_process_group() was not called before program "
                    "exit, which can leak resources. For more info, please see "
                    "https://pytorch.org/docs/stable/distributed.html#shutdown (function "
                    "operator())"
                )
            else:
                msg = (
                    "Warning: WARNING: process group has NOT been destroyed before we destruct "
                    "ProcessGroupNCCL. On normal program exit, the application should call "
                    "destroy_process_group to ensure that any pending NCCL operations have "
                    "finished in this process. In rare cases this process can exit before this "
                    "point and block the progress of another member of the process group. This "
                    "constraint has always been present,  but this warning has only been added "
                    "since PyTorch 2.4 (function operator())"
                )
            err.append((t2, self.c10(p, t2, "W", "ProcessGroupNCCL.cpp", e.ln["destroy"], msg)))

    def _remote_error(
        self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]
    ) -> None:
        """A local peer of a SIGKILLed rank: NCCL sees the socket close, the watchdog aborts."""
        e = self.e
        c = self.culprit_rank or 0
        t = p.t_timeout
        host = self.host_names[p.host]
        port = 40000 + (c * 977) % 20000
        last = f"socketProgress: Connection closed by remote peer {host}<{port}>"
        tid = p.pid + 173
        out.append((t - 0.01, self.nccl_warn(p, t - 0.01, "misc/socket.cc:50", last, tid)))
        out.extend(
            (t - 0.009, self.nccl_info(p, src, tid))
            for src in (
                "misc/socket.cc:752 -> 6",
                "transport/net_ib.cc:1130 -> 6",
                "proxy.cc:1474 -> 6",
            )
        )
        pg = self.pg(p)
        F = "ProcessGroupNCCL.cpp"
        ln = e.ln
        v = e.nccl_str
        what = (
            f"NCCL error: remote process exited or there was a network error, NCCL version {v}"
            "\nncclRemoteError: A call failed possibly due to a network error or a remote "
            f"process exiting prematurely. \nLast error:\n{last}"
        )
        status = (
            f"{self.seq}, last enqueued NCCL work: {p.enq}, last completed NCCL work: {p.done}."
        )
        lines = []
        if "either" in ln:
            lines.append(
                self.c10(
                    p,
                    t,
                    "E",
                    F,
                    ln["either"],
                    f"{pg}Exception (either an error or timeout) detected by "
                    f"watchdog at work: {status}",
                )
            )
        lines.append(
            self.c10(
                p,
                t + 1e-4,
                "E",
                F,
                ln["some"],
                f"[Rank {p.rank}] Some NCCL operations have failed or timed out. "
                "Due to the asynchronous nature of CUDA kernels, subsequent GPU "
                "operations might run on corrupted/incomplete data.",
            )
        )
        lines.append(
            self.c10(
                p,
                t + 2e-4,
                "E",
                F,
                ln["avoid"],
                f"[Rank {p.rank}] To avoid data inconsistency, we are taking the "
                "entire process down.",
            )
        )
        term = f"{pg}Process group watchdog thread terminated with exception: {what}"
        src = f"{e.build_root}/csrc/distributed/c10d/{F}"
        chk = [
            f"Exception raised from checkForNCCLErrorsInternal at {src}:{ln['errcheck']} (most "
            "recent call first):"
        ]
        chk += self.frames(
            p,
            [
                ("c10::Error::Error(c10::SourceLocation, std::string)", "libc10.so"),
                (
                    "c10d::ProcessGroupNCCL::checkForNCCLErrorsInternal(std::shared_ptr<c10d::NCCLComm>"
                    "&)",
                    "libtorch_cuda.so",
                ),
                ("c10d::ProcessGroupNCCL::WorkNCCL::checkAndSetException()", "libtorch_cuda.so"),
                ("c10d::ProcessGroupNCCL::watchdogHandler()", "libtorch_cuda.so"),
                ("c10d::ProcessGroupNCCL::ncclCommWatchdog()", "libtorch_cuda.so"),
                *self.sys_frames(),
            ],
        )
        lines.append(self.c10(p, t + 3e-4, "E", F, ln["terminated"], term))
        lines += [
            *chk,
            "",
            f"terminate called after throwing an instance of '{e.terminate_type}'",
            f"  what():  {term}",
            *chk,
            "",
        ]
        err.append((t, "\n".join(lines)))

    def _ib_warn(self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]) -> None:
        bad = self.culprit_host
        if bad is None or p.host == bad:
            return
        nv = self.e.nccl
        peer_local = (p.local + rng.randrange(self.gpus)) % self.gpus
        port = 40000 + ((bad * self.gpus + peer_local) * 1031) % 20000
        ip = self.host_ips[bad]
        vend = rng.choice((129, 244))
        op, kind = rng.choice(((0, "Send"), (128, "Recv")))
        if nv >= (2, 22, 0):
            msg = (
                f"NET/IB: Got completion from peer {ip}<{port}> with status=12 opcode={op} "
                f"len=0 vendor err {vend} ({kind}) hca mlx5_{p.local % 8}"
            )
        elif nv >= (2, 20, 0):
            msg = (
                f"NET/IB : Got completion from peer {ip}<{port}> with status=12 opcode={op} "
                f"len=0 vendor err {vend} ({kind})"
            )
        elif nv >= (2, 18, 0):
            msg = (
                f"NET/IB : Got completion from peer {ip}<{port}> with error 12, opcode {op}, "
                f"len 0, vendor err {vend} ({kind})"
            )
        else:
            msg = (
                f"NET/IB : Got completion from peer {ip}<{port}> with error 12, opcode {op}, "
                f"len 0, vendor err {vend}"
            )
        t = self.t_fault + rng.uniform(28.0, 36.0)
        tid = p.pid + 173
        out.append((t, self.nccl_warn(p, t, "transport/net_ib.cc:1696", msg, tid)))
        for i, src in enumerate(
            (
                "transport/net_ib.cc:1700 -> 6",
                "transport/net.cc:1131 -> 6",
                "proxy.cc:869 -> 6",
                "proxy.cc:895 -> 6",
            )
        ):
            out.append((t + 1e-4 * (i + 1), self.nccl_info(p, src, tid)))

    def _first_collective(
        self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]
    ) -> None:
        """all_to_all at SeqNum=1: p2p connections to the culprit are refused."""
        c = self.culprit_rank or 0
        g = self.gpus
        nv = self.e.nccl
        t = p.t_enq + 0.002
        tid = p.pid + 175
        remote = [q for q in range(self.W) if q // g != p.host]
        for i, q in enumerate(remote[: 2 * g]):
            if q == c or p.rank == c:
                continue
            out.append(
                (
                    t + 1e-4 * i,
                    self.nccl_info(
                        p,
                        f"Channel {i % 2:02d}/1 : {p.rank}[{p.local}] -> {q}[{q % g}] [send] via "
                        f"NET/IB/{p.local % 8}/GDRDMA/Shared",
                    ),
                )
            )
        port = 40000 + (c * 977) % 20000
        ip = self.host_ips[c // g]
        if p.rank == c:
            tc = t + 0.05
            out.append(
                (
                    tc,
                    self.nccl_warn(
                        p,
                        tc,
                        "proxy.cc:1540",
                        f"[Proxy Service {c}] Failed to execute operation "
                        f"Connect from rank {c}, retcode 2",
                        tid,
                    ),
                )
            )
            out.append((tc + 1e-4, self.nccl_info(p, "transport/net.cc:1001 -> 2", tid)))
            out.append((tc + 2e-4, self.nccl_info(p, "proxy.cc:1311 -> 2", tid)))
            return
        if c not in remote:
            return
        tr = t + 0.01
        for k in range(2):
            if nv >= (2, 24, 0):
                msg = (
                    f"socketStartConnect: connect to {ip}<{port}> returned Connection refused, "
                    f"retrying ({k + 1}/34) after sleep for {100 * (k + 1)} msec"
                )
            else:
                msg = "Call to connect returned Connection refused, retrying"
            out.append((tr + k * 0.5, self.nccl_info(p, msg, tid)))
        tw = tr + 1.2
        if nv >= (2, 24, 0):  # ECONNREFUSED is retried since 2.24
            msg = (
                f"socketStartConnect: connect to {ip}<{port}> returned Connection refused, "
                "exceeded error retry count after 34 attempts"
            )
        else:
            msg = f"socketStartConnect: Connect to {ip}<{port}> failed : Connection refused"
        out.append((tw, self.nccl_warn(p, tw, "misc/socket.cc:484", msg, tid)))
        for i, src in enumerate(
            (
                "misc/socket.cc:564 -> 2",
                "misc/socket.cc:668 -> 2",
                "transport/net_ib.cc:1057 -> 2",
                "transport/net.cc:683 -> 2",
                "proxy.cc:1370 -> 2",
            )
        ):
            out.append((tw + 1e-4 * (i + 1), self.nccl_info(p, src, tid)))

    def _store(self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]) -> None:
        """Rendezvous through a TCPStore on rank 0; the culprit dials a wrong MASTER_ADDR."""
        e = self.e
        site = self.site()
        t0 = self.t_pg
        lg = self.clock.logging
        wrong = WRONG_MASTER
        c10d = f"{site}/torch/distributed"
        head = [
            "Traceback (most recent call last):",
            f'  File "{TRAIN}", line 214, in <module>',
            "    main()",
            f'  File "{TRAIN}", line 98, in main',
            '    dist.init_process_group(backend="nccl", timeout=timedelta(minutes=10))',
            f'  File "{c10d}/c10d_logger.py", line 79, in wrapper',
            "    return func(*args, **kwargs)",
            f'  File "{c10d}/c10d_logger.py", line 93, in wrapper',
            "    func_return = func(*args, **kwargs)",
            f'  File "{c10d}/distributed_c10d.py", line 1361, in init_process_group',
            "    store, rank, world_size = next(rendezvous_iterator)",
            f'  File "{c10d}/rendezvous.py", line 258, in _env_rendezvous_handler',
            "    store = _create_c10d_store(",
            f'  File "{c10d}/rendezvous.py", line 185, in _create_c10d_store',
            "    return TCPStore(",
        ]
        if self.carets():
            head.insert(13, "            ^^^^^^^^^^^^^^^^^^^")
            head.append("           ^^^^^^^^^")
        src = f"{e.build_root}/csrc/distributed/c10d"
        if p.fate == "store_server":
            t = p.t_exit - 0.3 if p.t_exit else t0
            tb = [
                *head,
                f"torch.distributed.DistStoreError: Timed out after 601 seconds waiting "
                f"for clients. {self.W - 1}/{self.W} clients joined.",
            ]
            err.append((t, "\n".join(tb)))
        elif p.fate == "store_wrong":
            k = 0
            tw = t0 + rng.uniform(20.0, 40.0)
            while tw < t0 + 600.0:
                msg = (
                    f"[c10d] The client socket has failed to connect to [{wrong}]:"
                    f"{self.master_port} (errno: 110 - Connection timed out)."
                )
                err.append(
                    (
                        tw,
                        self.c10(
                            p,
                            tw,
                            "W",
                            "socket.cpp",
                            697 if e.name < "2.5" else 752,
                            msg,
                            ranked=False,
                        ),
                    )
                )
                tw += rng.uniform(60.0, 140.0)
                k += 1
            t = p.t_exit - 0.4 if p.t_exit else t0
            frames = self.frames(
                p,
                [
                    ("c10::Error::Error(c10::SourceLocation, std::string)", "libc10.so"),
                    ("<unknown function>", "libc10.so"),
                    (
                        "c10d::detail::TCPClient::connect(c10d::detail::SocketAddress const&, "
                        "c10d::TCPStoreOptions const&, std::shared_ptr<c10d::Backoff>)",
                        "libtorch_cpu.so",
                    ),
                    (
                        "c10d::TCPStore::TCPStore(std::string, c10d::TCPStoreOptions const&)",
                        "libtorch_cpu.so",
                    ),
                    ("<unknown function>", "libtorch_python.so"),
                ],
            )
            tb = [
                *head,
                f"torch.distributed.DistNetworkError: The client socket has timed out "
                f"after 600000ms while trying to connect to ({wrong}, "
                f"{self.master_port}).",
                f"Exception raised from throwTimeoutError at {src}/socket.cpp:1021 (most "
                "recent call first):",
                *frames,
            ]
            err.append((t, "\n".join(tb)))
        else:
            tw = t0 + rng.uniform(0.0, 0.05)
            if self.flags["async_env"]:
                err.append(
                    (
                        tw,
                        self.c10(
                            p, tw, "W", "Utils.hpp", e.ln["utils"], ASYNC_ENV_WARNING, ranked=False
                        ),
                    )
                )
            tb_t = t0 + rng.uniform(1.5, 3.0)
            err.append(
                (
                    tb_t + 0.01,
                    self.c10(
                        p,
                        tb_t + 0.01,
                        "W",
                        "ProcessGroupNCCL.cpp",
                        e.ln["barrier"],
                        self._barrier_warning(p),
                    ),
                )
            )
            err.append(
                (
                    tb_t,
                    f"{lg(tb_t)} INFO train: rank {p.rank}/{self.W} joined the store at "
                    f"{self.host_ips[0]}:{self.master_port}; dist.barrier()",
                )
            )
            t = p.t_exit - 0.4 if p.t_exit else t0
            frames = self.frames(
                p,
                [
                    ("c10::Error::Error(c10::SourceLocation, std::string)", "libc10.so"),
                    (
                        "c10d::ProcessGroupNCCL::broadcastUniqueNCCLID(ncclUniqueId*, bool, "
                        "std::string const&, int)",
                        "libtorch_cuda.so",
                    ),
                    (
                        "c10d::ProcessGroupNCCL::getNCCLComm(std::string const&, c10::Device&, "
                        "c10d::OpType, int, bool)",
                        "libtorch_cuda.so",
                    ),
                    (
                        "c10d::ProcessGroupNCCL::barrier(c10d::BarrierOptions const&)",
                        "libtorch_cuda.so",
                    ),
                    ("<unknown function>", "libtorch_python.so"),
                ],
            )
            tb = [
                "Traceback (most recent call last):",
                f'  File "{TRAIN}", line 214, in <module>',
                "    main()",
                f'  File "{TRAIN}", line 101, in main',
                "    dist.barrier()",
                f'  File "{c10d}/c10d_logger.py", line 79, in wrapper',
                "    return func(*args, **kwargs)",
                f'  File "{c10d}/distributed_c10d.py", line 3936, in barrier',
                "    work = default_pg.barrier(opts=opts)",
                f"torch.distributed.DistBackendError: [{p.rank}] is setting up NCCL "
                "communicator and retrieving ncclUniqueId from [0] via c10d key-value store by "
                "key '0', but store->get('0') got error: Connection reset by peer",
                f"Exception raised from recvBytes at {src}/Utils.hpp:670 (most recent call first):",
                *frames,
            ]
            err.append((t, self.hook(p, tb)))

    # ---------------------------------------------------------------- launchers

    def agent_log(self, h: int) -> list[Line]:
        """torchrun's own console output on host h (LOGLEVEL=INFO)."""
        e = self.e
        t = self.agent_t0[h]
        A = self.agent
        g = self.gpus
        lines: list[Line] = []
        omp = [
            A(h, t, "WARNING", "distributed.run", 793, m)
            for m in (
                "",
                "*****************************************",
                "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, "
                "to avoid your system being overloaded, please further tune the variable for "
                "optimal performance in your application as needed. ",
                "*****************************************",
            )
        ]
        lines.append((t, "\n".join(omp)))
        log_dir = f"/logs/{self.run_id}"
        cfg = [
            "Starting elastic_operator with launch configs:",
            f"  entrypoint       : {TRAIN.rsplit('/', 1)[1]}",
            f"  min_nodes        : {self.hosts}",
            f"  max_nodes        : {self.hosts}",
            f"  nproc_per_node   : {g}",
            f"  run_id           : {self.run_id}",
            "  rdzv_backend     : c10d",
            f"  rdzv_endpoint    : {self.host_names[0]}:{self.rdzv_port}",
            "  rdzv_configs     : {'timeout': 900}",
            "  max_restarts     : 0",
            f"  monitor_interval : {e.monitor_interval}",
            f"  log_dir          : {log_dir}",
            "  metrics_cfg      : {}",
            "",
        ]
        lines.append(
            (t + 0.002, A(h, t + 0.002, "INFO", "distributed.launcher.api", 188, "\n".join(cfg)))
        )
        tmp = f"{log_dir}/{self.run_id}_{self.tmp_tag[h]}"
        t1 = t + 0.01
        la = "distributed.elastic.agent.server.local_elastic_agent"
        sa = "distributed.elastic.agent.server.api"
        lines.append(
            (t1, A(h, t1, "INFO", la, 191 if e.glog_agent else 183, f"log directory set to: {tmp}"))
        )
        lines.append(
            (
                t1 + 0.001,
                A(
                    h,
                    t1 + 0.001,
                    "INFO",
                    sa,
                    866 if e.glog_agent else 825,
                    "[default] starting workers for entrypoint: python",
                ),
            )
        )
        lines.append(
            (
                t1 + 0.002,
                A(
                    h,
                    t1 + 0.002,
                    "INFO",
                    sa,
                    662 if e.glog_agent else 652,
                    "[default] Rendezvous'ing worker group",
                ),
            )
        )
        t2 = max(self.agent_t0) + 0.4 + 0.01 * h
        ranks = list(range(h * g, (h + 1) * g))
        res = [
            "[default] Rendezvous complete for workers. Result:",
            "  restart_count=0",
            f"  master_addr={self.host_names[0]}",
            f"  master_port={self.master_port}",
            f"  group_rank={h}",
            f"  group_world_size={self.hosts}",
            f"  local_ranks={list(range(g))}",
            f"  role_ranks={ranks}",
            f"  global_ranks={ranks}",
            f"  role_world_sizes={[self.W] * g}",
            f"  global_world_sizes={[self.W] * g}",
            "",
        ]
        lines.append((t2, A(h, t2, "INFO", sa, 525 if e.glog_agent else 518, "\n".join(res))))
        lines.append(
            (
                t2 + 0.001,
                A(
                    h,
                    t2 + 0.001,
                    "INFO",
                    sa,
                    670 if e.glog_agent else 660,
                    "[default] Starting worker group",
                ),
            )
        )
        lines.append(
            (
                t2 + 0.002,
                A(h, t2 + 0.002, "INFO", la, 298 if e.glog_agent else 294, "use_agent_store: True"),
            )
        )
        lines.append(
            (
                t2 + 0.003,
                A(
                    h,
                    t2 + 0.003,
                    "INFO",
                    la,
                    192 if e.glog_agent else 184,
                    "Environment variable 'TORCHELASTIC_ENABLE_FILE_TIMER' not "
                    "found. Do not start FileTimerServer.",
                ),
            )
        )
        if e.glog_agent:
            lines.append(
                (
                    t2 + 0.004,
                    A(
                        h,
                        t2 + 0.004,
                        "INFO",
                        la,
                        236,
                        "Environment variable 'TORCHELASTIC_HEALTH_CHECK_PORT' not "
                        "found. Do not start health check.",
                    ),
                )
            )
        for lr in range(g):
            ts = t2 + 0.005 + lr * 1e-4
            lines.append(
                (
                    ts,
                    A(
                        h,
                        ts,
                        "INFO",
                        "distributed.elastic.multiprocessing.api",
                        277 if e.glog_agent else 263,
                        f"Setting worker{lr} reply file to: {tmp}/attempt_0/{lr}/error.json",
                    ),
                )
            )
        lines.extend(self._agent_end(h))
        return lines

    def _agent_end(self, h: int) -> list[Line]:
        e = self.e
        A = self.agent
        g = self.gpus
        local = self.plans[h * g : (h + 1) * g]
        t = self.agent_poll[h]
        ma = "distributed.elastic.multiprocessing.api"
        sa = "distributed.elastic.agent.server.api"
        out: list[Line] = []
        if t < 0:  # nothing on this host ended: the agent was still waiting when logs were taken
            return out
        failures = [
            p
            for p in local
            if p.t_exit is not None
            and p.exitcode != 0
            and p.t_exit <= t
            and (p.t_kill is None or p.t_exit <= p.t_kill)
        ]
        if not failures:
            msgs = [
                "[default] worker group successfully finished. Waiting 300 seconds for other "
                "agents to finish.",
                "Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for "
                "other agents to finish",
                f"Done waiting for other agents. Elapsed: {self.rng.uniform(0.001, 4.0):.4f} "
                "seconds",
            ]
            for i, (m, ln) in enumerate(zip(msgs, (879, 932, 946), strict=True)):
                out.append((t + 0.01 * i, A(h, t + 0.01 * i, "INFO", sa, ln, m)))
            return out
        for p in local:
            if p.t_kill is not None and p.t_kill <= t + 0.1 and p not in failures:
                tk = p.t_kill
                out.append(
                    (
                        tk,
                        A(
                            h,
                            tk,
                            "WARNING",
                            ma,
                            897 if e.name >= "2.5" else 858,
                            f"Sending process {p.pid} closing signal SIGTERM",
                        ),
                    )
                )
        first = failures[0]  # min() over equal (whole-second) timestamps keeps local-rank order
        tf = t + 0.3
        out.append(
            (
                tf,
                A(
                    h,
                    tf,
                    "ERROR",
                    ma,
                    869 if e.name >= "2.5" else 833,
                    f"failed (exitcode: {first.exitcode}) local_rank: {first.local} "
                    f"(pid: {first.pid}) of binary: {PYBIN}",
                ),
            )
        )
        out.append((tf + 0.05, self._child_failed(h, failures, tf)))
        if h != 0 and self.agent_end[0] < tf:
            tr = tf + 0.002
            node = f"{self.host_names[h]}_{self.agent_pid[h]}_0"
            out.insert(
                -1,
                (
                    tr,
                    A(
                        h,
                        tr,
                        "WARNING",
                        "distributed.elastic.rendezvous.dynamic_rendezvous",
                        1283 if e.glog_agent else 1203,
                        f"The node '{node}' has failed to shutdown the rendezvous "
                        f"'{self.run_id}' due to an error of type "
                        "RendezvousConnectionError.",
                    ),
                ),
            )
        return out

    def _child_failed(self, h: int, failures: list[RankPlan], t: float) -> str:
        site = self.site()
        car = self.carets()
        stamp = self.clock.iso(self.agent_poll[h], "_")
        tb = [
            "Traceback (most recent call last):",
            '  File "/opt/venv/bin/torchrun", line 8, in <module>',
            "    sys.exit(main())",
        ]
        if car:
            tb.append("             ^^^^^^")
        tb += [
            f'  File "{site}/torch/distributed/elastic/multiprocessing/errors/__init__.py", '
            "line 355, in wrapper",
            "    return f(*args, **kwargs)",
        ]
        if car:
            tb.append("           ^^^^^^^^^^^^^^^^^^")
        tb += [
            f'  File "{site}/torch/distributed/run.py", line 919, in main',
            "    run(args)",
            f'  File "{site}/torch/distributed/run.py", line 910, in run',
            "    elastic_launch(",
            f'  File "{site}/torch/distributed/launcher/api.py", line 138, in __call__',
            "    return launch_agent(self._config, self._entrypoint, list(args))",
        ]
        if car:
            tb.append("           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^")
        tb += [
            f'  File "{site}/torch/distributed/launcher/api.py", line 269, in launch_agent',
            "    raise ChildFailedError(",
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        ]

        def block(idx: int, p: RankPlan) -> list[str]:
            sig = {
                -6: "Signal 6 (SIGABRT)",
                -9: "Signal 9 (SIGKILL)",
                -15: "Signal 15 (SIGTERM)",
                -11: "Signal 11 (SIGSEGV)",
            }
            trace = (
                f"{sig[p.exitcode]} received by PID {p.pid}"
                if p.exitcode < 0
                else "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
            )
            return [
                f"[{idx}]:",
                f"  time      : {stamp}",
                f"  host      : {self.host_names[h]}",
                f"  rank      : {p.rank} (local_rank: {p.local})",
                f"  exitcode  : {p.exitcode} (pid: {p.pid})",
                "  error_file: <N/A>",
                f"  traceback : {trace}",
            ]

        root, others = failures[0], failures[1:]
        other_lines: list[str] = []
        for i, p in enumerate(others, start=1):
            other_lines += block(i, p)
        if not others:
            other_lines = ["  <NO_OTHER_FAILURES>"]
        body = [
            "=" * 60,
            f"{TRAIN.rsplit('/', 1)[1]} FAILED",
            "-" * 60,
            "Failures:",
            *other_lines,
            "-" * 60,
            "Root Cause (first observed failure):",
            *block(0, root),
            "=" * 60,
        ]
        return "\n".join(tb + body)

    def slurm_tail(self) -> list[Line]:
        """srun's own lines: one per (host, status) batch of task exits, by time."""
        events: list[tuple[float, int, int, str]] = []
        for p in self.plans:
            if p.t_exit is not None and (p.t_kill is None or p.t_exit <= p.t_kill):
                if p.exitcode == 0:
                    continue
                code = p.exitcode
                tx = p.t_exit
            else:
                code, tx = -15, p.t_kill or 0.0
            what = {
                1: "Exited with exit code 1",
                -6: "Aborted (core dumped)",
                -9: "Killed",
                -15: "Terminated",
            }[code]
            events.append((tx, p.host, p.rank, what))
        events.sort()
        # slurmstepd reports the exits of one node together: batch per (host, status) within 1 s
        batches: list[tuple[float, int, str, list[int]]] = []
        open_: dict[tuple[int, str], int] = {}
        for tx, h, rank, what in events:
            k = open_.get((h, what))
            if k is not None and tx - batches[k][0] < 1.0:
                batches[k][3].append(rank)
            else:
                open_[(h, what)] = len(batches)
                batches.append((tx, h, what, [rank]))
        out: list[Line] = []
        cancelled = False
        for tx, h, what, ranks in batches:
            if what == "Terminated" and not cancelled:
                cancelled = True
                stamp = self.clock.iso(tx, "T")
                hosts = sorted({b[1] for b in batches if b[2] == "Terminated"})
                out.extend(
                    (
                        tx - 0.5,
                        f"slurmstepd: error: *** STEP {self.jobid}.0 ON "
                        f"{self.host_names[hh]} CANCELLED AT {stamp} ***",
                    )
                    for hh in hosts
                )
                out.append(
                    (
                        tx - 0.4,
                        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
                    )
                )
            noun = "task" if len(ranks) == 1 else "tasks"
            t_last = max(e[0] for e in events if e[1] == h and e[3] == what and e[2] in ranks)
            out.append(
                (
                    t_last + 0.05,
                    f"srun: error: {self.host_names[h]}: {noun} {id_ranges(ranks)}: {what}",
                )
            )
        return out


def hash_str(s: str) -> int:
    """Stable (process-independent) string hash."""
    h = 2166136261
    for ch in s.encode():
        h = ((h ^ ch) * 16777619) & 0xFFFFFFFF
    return h


# --------------------------------------------------------------------------------------------
# Writing


def _join(lines: Iterable[Line]) -> str:
    text = "\n".join(x[1] for x in lines)
    return text + "\n" if text else ""


def _merge(out: list[Line], err: list[Line]) -> list[Line]:
    out.sort(key=lambda x: x[0])
    err.sort(key=lambda x: x[0])
    return list(heapq.merge(out, err, key=lambda x: x[0]))


def generate(
    out_dir: str | Path,
    hosts: int = 2,
    gpus: int = 8,
    era: str = "2.4",
    fault: str = "silent",
    culprit: int | str | None = None,
    noise_lines: int = 200,
    layout: str = "torchrun",
    seed: int = 1,
    timeout_min: int = 10,
    only_hosts: Sequence[int] | None = None,
    tp: int = 2,
) -> Truth:
    """Write one job's log folder into out_dir (created; must be empty or absent).

    only_hosts: keep only these hosts' files (0-based indices), as if the rest were never
    collected (per-rank and torchrun layouts).  tp: tensor-parallel group size (fault subgroup).
    """
    job = Job(hosts, gpus, era, fault, culprit, noise_lines, layout, seed, timeout_min, tp)
    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    if any(root.iterdir()):
        raise FileExistsError(f"{root} is not empty")
    keep_hosts = set(range(hosts)) if only_hosts is None else set(only_hosts)
    files: list[str] = []
    n_lines = 0
    n_bytes = 0

    def write(rel: str, text: str) -> None:
        nonlocal n_lines, n_bytes
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode()
        path.write_bytes(data)
        files.append(rel)
        n_lines += text.count("\n")
        n_bytes += len(data)

    skip = job.culprit_rank if fault == "missing" else None
    if layout == "torchrun":
        for h in range(hosts):
            if h not in keep_hosts:
                continue
            hn = job.host_names[h]
            write(f"{hn}/agent.log", _join(job.agent_log(h)))
            for lr in range(gpus):
                r = h * gpus + lr
                out, err = job.rank_streams(r)
                if r == skip:
                    continue
                out.sort(key=lambda x: x[0])
                err.sort(key=lambda x: x[0])
                write(f"{hn}/attempt_0/{lr}/stdout.log", _join(out))
                write(f"{hn}/attempt_0/{lr}/stderr.log", _join(err))
    elif layout == "per-rank":
        for r in range(job.W):
            if r // gpus not in keep_hosts or r == skip:
                continue
            out, err = job.rank_streams(r)
            write(f"rank-{r:04d}.log", _join(_merge(out, err)))
    else:
        width = len(str(job.W - 1))
        streams = []
        for r in range(job.W):
            out, err = job.rank_streams(r)
            lab = f"{r:>{width}}: "
            merged = _merge(out, err)
            streams.append([(t, lab + text.replace("\n", "\n" + lab)) for t, text in merged])
        body = list(heapq.merge(*streams, key=lambda x: x[0]))
        t_hdr = -1.0
        head = [
            (
                t_hdr,
                f"Job {job.jobid} ({job.run_id}) started on "
                f"{hostlist(job.host_names)} at {job.clock.parts(0.0)[4]}",
            ),
            (
                t_hdr,
                f"NODES={hosts} GPUS_PER_NODE={gpus} WORLD_SIZE={job.W} "
                f"MASTER_ADDR={job.host_ips[0]} MASTER_PORT={job.master_port}",
            ),
            (
                t_hdr,
                f"+ srun --label --kill-on-bad-exit=0 --ntasks={job.W} "
                f"--ntasks-per-node={gpus} python {TRAIN}",
            ),
        ]
        write(
            f"slurm-{job.jobid}.out",
            _join(head + list(heapq.merge(body, job.slurm_tail(), key=lambda x: x[0]))),
        )
    return _truth(job, str(root), files, n_lines, n_bytes)


def _truth(job: Job, out_dir: str, files: list[str], n_lines: int, n_bytes: int) -> Truth:
    fault = job.fault
    phase, category = TRUTH[fault]
    c = job.culprit_rank
    sub = fault == "subgroup" and c is not None
    k = job.tp_index(c) if sub and c is not None else 0
    return Truth(
        out_dir=out_dir,
        hosts=job.hosts,
        gpus=job.gpus,
        world_size=job.W,
        era=job.e.name,
        fault=fault,
        layout=job.layout,
        phase=phase,
        category=category,
        culprit_rank=c,
        culprit_host=(
            job.host_names[job.culprit_host]
            if fault == "ib" and job.culprit_host is not None
            else None
        ),
        seq=job.seq or None,
        files=sorted(files),
        lines=n_lines,
        bytes=n_bytes,
        end_epoch=job.clock.base + math.ceil(job.t_end()) + 60,
        group_desc="tp" if sub else None,
        group_guid=job.tp_guid(k) if sub else None,
        group_ranks=job.tp_ranks(k) if sub else None,
        group_seq=job.tp_seq if sub else None,
        group_op="ALLREDUCE" if sub else None,
    )


def plan(
    hosts: int = 2,
    gpus: int = 8,
    era: str = "2.4",
    fault: str = "silent",
    culprit: int | str | None = None,
    noise_lines: int = 200,
    layout: str = "torchrun",
    seed: int = 1,
    timeout_min: int = 10,
    only_hosts: Sequence[int] | None = None,
    tp: int = 2,
) -> Truth:
    """The Truth generate() would return for these arguments, without rendering or writing.

    ``files`` lists the relative paths generate() would write; ``lines``/``bytes`` are 0 and
    ``out_dir`` is "".  Cheap even for thousands of ranks (only the job's plan is computed).
    """
    job = Job(hosts, gpus, era, fault, culprit, noise_lines, layout, seed, timeout_min, tp)
    keep = set(range(hosts)) if only_hosts is None else set(only_hosts)
    skip = job.culprit_rank if fault == "missing" else None
    files: list[str] = []
    if layout == "torchrun":
        for h in sorted(keep & set(range(hosts))):
            hn = job.host_names[h]
            files.append(f"{hn}/agent.log")
            for lr in range(gpus):
                if h * gpus + lr != skip:
                    files.append(f"{hn}/attempt_0/{lr}/stdout.log")
                    files.append(f"{hn}/attempt_0/{lr}/stderr.log")
    elif layout == "per-rank":
        files = [f"rank-{r:04d}.log" for r in range(job.W) if r // gpus in keep and r != skip]
    else:
        files = [f"slurm-{job.jobid}.out"]
    return _truth(job, "", files, 0, 0)


# --------------------------------------------------------------------------------------------
# Packaging helpers (deterministic archives and compressed files)


def make_tar_gz(src_dir: str | Path, dest: str | Path, mtime: int = 1_700_000_000) -> None:
    """Pack src_dir's contents into dest (.tar.gz) byte-for-byte reproducibly."""
    src = Path(src_dir)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(src.rglob("*"), key=lambda q: q.relative_to(src).as_posix()):
            rel = path.relative_to(src).as_posix()
            info = tarfile.TarInfo(rel)
            info.mtime = mtime
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if path.is_dir():
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
            else:
                data = path.read_bytes()
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    Path(dest).write_bytes(out.getvalue())


def compress_file(path: str | Path, kind: str, rename_to: str | None = None) -> Path:
    """Replace path by a compressed copy (kind: gz|bz2|xz); returns the new path."""
    src = Path(path)
    data = src.read_bytes()
    if kind == "gz":
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
            gz.write(data)
        blob = buf.getvalue()
    elif kind == "bz2":
        blob = bz2.compress(data, 9)
    elif kind == "xz":
        blob = lzma.compress(data, format=lzma.FORMAT_XZ, preset=6)
    else:
        raise ValueError(f"unknown compression {kind!r}")
    dest = src.with_name(rename_to) if rename_to else src.with_name(f"{src.name}.{kind}")
    src.unlink()
    dest.write_bytes(blob)
    return dest


# --------------------------------------------------------------------------------------------
# CLI


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--hosts", type=int, default=2)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--era", choices=list(ERAS), default="2.4")
    ap.add_argument("--fault", choices=list(FAULTS), default="silent")
    ap.add_argument(
        "--culprit",
        default=None,
        help="global rank (for --fault ib: host name or 1-based host number)",
    )
    ap.add_argument(
        "--noise-lines",
        type=int,
        default=200,
        help="approximate noise lines per rank (init chatter, progress, warnings)",
    )
    ap.add_argument("--layout", choices=list(LAYOUTS), default="torchrun")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout-min", type=int, default=10, choices=(10, 30))
    ap.add_argument("--tp", type=int, default=2, help="tensor-parallel group size (fault subgroup)")
    ap.add_argument("--force", action="store_true", help="empty OUT_DIR first")
    ap.add_argument(
        "--tar",
        metavar="NAME",
        help="after generating, pack everything into OUT_DIR/NAME (.tar.gz)",
    )
    args = ap.parse_args(argv)
    out = Path(args.out_dir)
    if args.force and out.exists():
        shutil.rmtree(out)
    culprit: int | str | None = args.culprit
    if culprit is not None and args.fault != "ib":
        culprit = int(culprit)
    t0 = time.perf_counter()
    try:
        truth = generate(
            out,
            hosts=args.hosts,
            gpus=args.gpus,
            era=args.era,
            fault=args.fault,
            culprit=culprit,
            noise_lines=args.noise_lines,
            layout=args.layout,
            seed=args.seed,
            timeout_min=args.timeout_min,
            tp=args.tp,
        )
    except (ValueError, FileExistsError) as exc:
        print(f"jobgen: {exc}", file=sys.stderr)
        return 2
    if args.tar:
        tmp = out.with_name(out.name + ".tmp-pack")
        out.rename(tmp)
        out.mkdir()
        make_tar_gz(tmp, out / args.tar, mtime=truth.end_epoch)
        shutil.rmtree(tmp)
    dt = time.perf_counter() - t0
    who = truth.culprit_host or truth.culprit_rank
    print(
        f"{out}: {truth.world_size} ranks, {len(truth.files)} files, {truth.lines:,} lines, "
        f"{truth.bytes / 1e6:.1f} MB in {dt:.1f}s; fault={truth.fault} culprit={who} "
        f"seq={truth.seq} phase={truth.phase or '-'} category={truth.category or '-'}"
        + (
            f" group={truth.group_desc} {truth.group_ranks} seq={truth.group_seq}"
            if truth.group_desc
            else ""
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
