"""Small helpers shared by the job's parts: the clock, names and addresses, a rank's plan, the Truth."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

from triage.ranks import fmt_ranks

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
    fate: str = "timeout"  # timeout|hang|stalled|exception|killed|remote_error|clean|store_*
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



def hash_str(s: str) -> int:
    """Stable (process-independent) string hash."""
    h = 2166136261
    for ch in s.encode():
        h = ((h ^ ch) * 16777619) & 0xFFFFFFFF
    return h
