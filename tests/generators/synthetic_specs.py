"""The synthetic whole-job fixtures that generators/make_synthetic.py writes: one Spec each (the
jobgen inputs, the verdict it must give, how the logs are delivered), and the principle that must
decide each."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

FIXTURES = REPO / "tests" / "fixtures"
EXAMPLES = REPO / "examples"


@dataclass
class Spec:
    name: str
    description: str
    gen: dict[str, Any]
    expect: dict[str, Any]
    seed: int
    post: str = ""  # "" | "tar:<name>" | "compress-mixed"
    only_hosts: list[int] | None = None
    args: dict[str, Any] = field(default_factory=dict)
    root: Path = FIXTURES


def rank(*ranks: int) -> list[dict[str, Any]]:
    return [{"kind": "rank", "rank": r} for r in ranks]


SPECS: list[Spec] = [
    Spec(
        "nccl24-silent-rank11",
        "2 hosts x 8 GPUs, torch 2.4, torchrun logs. Rank 11 stops in Python before the first "
        "gradient all-reduce of a step and never logs again; the other 15 ranks hit the 10 min "
        "watchdog timeout at the same SeqNum and abort.",
        {
            "hosts": 2,
            "gpus": 8,
            "era": "2.4",
            "fault": "silent",
            "culprit": 11,
            "layout": "torchrun",
            "noise_lines": 100,
        },
        {
            "status": "diagnosed",
            "phase": "execution",
            "category": "hung_process",
            "culprits": rank(11),
        },
        seed=11,
    ),
    Spec(
        "nccl26-missing-log-rank5",
        "2 x 8, torch >=2.6 wording, one log per rank. Every rank but 5 times out at the same "
        "SeqNum and rank 5's log file was never collected; the NCCL init lines say nranks 16.",
        {
            "hosts": 2,
            "gpus": 8,
            "era": "2.6",
            "fault": "missing",
            "culprit": 5,
            "layout": "per-rank",
            "noise_lines": 95,
        },
        {"status": "diagnosed", "phase": "execution", "culprits": rank(5)},
        seed=26,
    ),
    Spec(
        "nccl23-oom-rank6",
        "1 x 8, torch 2.3, one log per rank. Rank 6 dies with a CUDA out-of-memory error in the "
        "forward pass; ten minutes later the other seven ranks time out waiting for it.",
        {
            "hosts": 1,
            "gpus": 8,
            "era": "2.3",
            "fault": "oom",
            "culprit": 6,
            "layout": "per-rank",
            "noise_lines": 140,
        },
        {"status": "diagnosed", "phase": "execution", "category": "oom", "culprits": rank(6)},
        seed=23,
    ),
    Spec(
        "nccl25-sigkill-rank3",
        "2 x 4, torch 2.5 ([PG ID 0 PG GUID 0(default_pg) Rank r] prefix), torchrun logs. Rank 3 "
        "is SIGKILLed; rank 2 sees the connection close and aborts in the same agent poll, so "
        "gpu-node-01's ChildFailedError names rank 2 (-6) as Root Cause and lists rank 3 with -9. "
        "gpu-node-02's ranks time out ten minutes later.",
        {
            "hosts": 2,
            "gpus": 4,
            "era": "2.5",
            "fault": "sigkill",
            "culprit": 3,
            "layout": "torchrun",
            "noise_lines": 140,
        },
        {
            "status": "diagnosed",
            "phase": "execution",
            "category": "crashed_process",
            "culprits": rank(3),
        },
        seed=25,
    ),
    Spec(
        "nccl24-ib-host3",
        "4 x 8, torch 2.4, torchrun logs. The InfiniBand link of gpu-node-03 fails mid-step: every "
        "rank on the other hosts logs NET/IB completion errors (status=12) from peers at "
        "10.42.0.3, then all 32 ranks time out.",
        {
            "hosts": 4,
            "gpus": 8,
            "era": "2.4",
            "fault": "ib",
            "culprit": "gpu-node-03",
            "layout": "torchrun",
            "noise_lines": 85,
        },
        {
            "status": "diagnosed",
            "phase": "execution",
            "category": "network_fault",
            "culprits": [{"kind": "host", "host": "gpu-node-03"}],
        },
        seed=3,
    ),
    Spec(
        "nccl24-mismatch-rank4",
        "1 x 8, torch 2.4, one log per rank. At one SeqNum seven ranks call ALLREDUCE while rank 4 "
        "calls a different collective; all eight time out and the watchdog lines show the OpTypes.",
        {
            "hosts": 1,
            "gpus": 8,
            "era": "2.4",
            "fault": "mismatch",
            "culprit": 4,
            "layout": "per-rank",
            "noise_lines": 140,
        },
        {
            "status": "diagnosed",
            "phase": "execution",
            "category": "collective_mismatch",
            "culprits": rank(4),
        },
        seed=4,
    ),
    Spec(
        "nccl25-lagging-rank9",
        "2 x 8, torch 2.5, torchrun logs. Rank 9 stalled on the host side before enqueuing the "
        "next all-reduce: nothing in flight (its dump-signal line says last enqueued = last "
        "completed = 3513), so its watchdog never fires; the fifteen others, ahead by a step's "
        "worth of enqueued work, time out waiting in SeqNum 3514 and torchrun stops rank 9.",
        {
            "hosts": 2,
            "gpus": 8,
            "era": "2.5",
            "fault": "lagging",
            "culprit": 9,
            "layout": "torchrun",
            "noise_lines": 95,
        },
        {
            "status": "diagnosed",
            "phase": "execution",
            "category": "hung_process",
            "culprits": rank(9),
            # rank 9 reports no timeout (silent-rank decides) and its progress line shows nothing
            # in flight while the others wait (lagging-rank names it too and agrees)
            "says": {"reasoning": ["agrees with the lagging-rank evidence"]},
        },
        seed=9,
    ),
    Spec(
        "nccl23-desync-rank2",
        "1 x 8, torch 2.3 with TORCH_NCCL_DESYNC_DEBUG=1. Rank 2 never joins a collective; the "
        "seven others time out and their desync reports name rank 2.",
        {
            "hosts": 1,
            "gpus": 8,
            "era": "2.3",
            "fault": "desync",
            "culprit": 2,
            "layout": "per-rank",
            "noise_lines": 140,
        },
        {"status": "diagnosed", "phase": "execution", "culprits": rank(2)},
        seed=2,
    ),
    Spec(
        "nccl24-store-rank13",
        "2 x 8, torch 2.4, one log per rank (srun, TCPStore on rank 0). Rank 13 has a wrong "
        "MASTER_ADDR and never reaches the store; rank 0 gives up with '15/16 clients joined' and "
        "the others fail retrieving the ncclUniqueId from rank 0.",
        {
            "hosts": 2,
            "gpus": 8,
            "era": "2.4",
            "fault": "store",
            "culprit": 13,
            "layout": "per-rank",
            "noise_lines": 120,
        },
        {"status": "diagnosed", "phase": "comm_init", "culprits": rank(13)},
        seed=13,
    ),
    Spec(
        "nccl24-first-collective-rank12",
        "2 x 8, torch 2.4, torchrun logs. NCCL init completes everywhere, then the first "
        "collective (an all_to_all, SeqNum=1) cannot connect to rank 12: its proxy fails the "
        "Connect and its peers get 'Connection refused'. Everyone times out at SeqNum=1.",
        {
            "hosts": 2,
            "gpus": 8,
            "era": "2.4",
            "fault": "first-collective",
            "culprit": 12,
            "layout": "torchrun",
            "noise_lines": 100,
        },
        {"status": "diagnosed", "phase": "operator_load", "culprits": rank(12)},
        seed=12,
    ),
    Spec(
        "nccl21-silent-rank3",
        "1 x 8, torch 2.1 (no [rankN]: prefixes, [Rank r] work prefix), rank-0003.log naming, "
        "30 min timeout. Rank 3 hangs silently; the others hit the watchdog timeout.",
        {
            "hosts": 1,
            "gpus": 8,
            "era": "2.1",
            "fault": "silent",
            "culprit": 3,
            "layout": "per-rank",
            "noise_lines": 140,
        },
        {
            "status": "diagnosed",
            "phase": "execution",
            "category": "hung_process",
            "culprits": rank(3),
        },
        seed=21,
    ),
    Spec(
        "nccl24-slurm-interleaved-rank7",
        "2 x 4, torch 2.4, one slurm-<jobid>.out written through srun --label. Rank 7 hits an "
        "illegal memory access and exits 1 (srun: task 7: Exited with exit code 1); the other "
        "ranks time out ten minutes later.",
        {
            "hosts": 2,
            "gpus": 4,
            "era": "2.4",
            "fault": "cuda-error",
            "culprit": 7,
            "layout": "slurm-label",
            "noise_lines": 140,
        },
        {
            "status": "diagnosed",
            "phase": "execution",
            "category": "device_error",
            "culprits": rank(7),
        },
        seed=7,
    ),
    Spec(
        "nccl24-archive-silent-rank2",
        "1 x 8, torch 2.4, torchrun logs delivered as one job-logs.tar.gz. Rank 2 hangs "
        "silently; the others time out.",
        {
            "hosts": 1,
            "gpus": 8,
            "era": "2.4",
            "fault": "silent",
            "culprit": 2,
            "layout": "torchrun",
            "noise_lines": 160,
        },
        {
            "status": "diagnosed",
            "phase": "execution",
            "category": "hung_process",
            "culprits": rank(2),
        },
        seed=242,
        post="tar:job-logs.tar.gz",
    ),
    Spec(
        "nccl24-compressed-silent-rank6",
        "1 x 8, torch 2.4, one log per rank, each compressed differently (.gz, .bz2, .xz, one "
        "plain, and rank-0004.log is gzip data under a .log name). Rank 6 hangs silently.",
        {
            "hosts": 1,
            "gpus": 8,
            "era": "2.4",
            "fault": "silent",
            "culprit": 6,
            "layout": "per-rank",
            "noise_lines": 160,
        },
        {
            "status": "diagnosed",
            "phase": "execution",
            "category": "hung_process",
            "culprits": rank(6),
        },
        seed=246,
        post="compress-mixed",
    ),
    Spec(
        "nccl24-no-failure",
        "2 x 4, torch 2.4, torchrun logs. A clean run: init, training steps, "
        "destroy_process_group, every worker exits 0.",
        {
            "hosts": 2,
            "gpus": 4,
            "era": "2.4",
            "fault": "none",
            "layout": "torchrun",
            "noise_lines": 130,
        },
        {"status": "no_failure"},
        seed=240,
    ),
    Spec(
        "nccl24-only-host0-inconclusive",
        "2 x 8, torch 2.4, torchrun logs, but only gpu-node-01 (ranks 0-7) was collected. All "
        "eight time out at the same SeqNum; the rank that broke the job is among 8-15 and its "
        "logs are missing.",
        {
            "hosts": 2,
            "gpus": 8,
            "era": "2.4",
            "fault": "silent",
            "culprit": 13,
            "layout": "torchrun",
            "noise_lines": 120,
        },
        {"status": "inconclusive", "says": {"missing": ["8", "15"]}},
        seed=248,
        only_hosts=[0],
    ),
    Spec(
        "big-1024-silent-rank777",
        "128 hosts x 8 = 1,024 ranks, torch >=2.6 wording, torchrun logs in one job.tar.gz. "
        "Rank 777 hangs silently; the 1,023 others time out at the same SeqNum.",
        {
            "hosts": 128,
            "gpus": 8,
            "era": "2.6",
            "fault": "silent",
            "culprit": 777,
            "layout": "torchrun",
            "noise_lines": 60,
        },
        {
            "status": "diagnosed",
            "phase": "execution",
            "category": "hung_process",
            "culprits": rank(777),
        },
        seed=777,
        post="tar:job.tar.gz",
    ),
    Spec(
        "nccl26-subgroup-hang-rank5",
        "2 x 4, torch >=2.6 wording, torchrun logs. Ranks are paired into tensor-parallel "
        "new_group()s (desc tp: {0,1} GUID 1, {2,3} GUID 2, {4,5} GUID 3, {6,7} GUID 4); each step "
        "does one all-reduce in the pair, then the gradient all-reduce in the default PG. Rank 5 "
        "stops in Python before its pair all-reduce and never logs again. Its peer rank 4 times out "
        "in the tp group ([PG ID 1 PG GUID 3(tp) Rank 0], the tp SeqNum, far below the default "
        "PG's); the six others finish their pair all-reduce and time out a moment later in the "
        "default PG at one SeqNum. gpu-node-02's Root Cause names a victim.",
        {
            "hosts": 2,
            "gpus": 4,
            "era": "2.6",
            "fault": "subgroup",
            "culprit": 5,
            "layout": "torchrun",
            "noise_lines": 110,
            "tp": 2,
        },
        {
            "status": "diagnosed",
            "phase": "execution",
            "category": "hung_process",
            "says": {"reasoning": ["process group tp", "ALLREDUCE SeqNum"]},  # the group and the collective
            "culprits": rank(5),
        },
        seed=265,
    ),
    Spec(
        "nccl25-subgroup-hang-rank2",
        "1 x 8, torch 2.5, one log per rank. Tensor-parallel pairs {0,1} {2,3} {4,5} {6,7} "
        "(new_group desc tp, GUIDs 1-4) under a data-parallel default PG. Rank 2 hangs before its "
        "pair all-reduce; rank 3 times out in the tp group ([PG ID 1 PG GUID 2(tp) Rank 1], "
        "tp SeqNum); ranks 0, 1, 4-7 time out a moment later on the default PG's gradient "
        "all-reduce ([PG ID 0 PG GUID 0(default_pg) Rank r]) at one SeqNum.",
        {
            "hosts": 1,
            "gpus": 8,
            "era": "2.5",
            "fault": "subgroup",
            "culprit": 2,
            "layout": "per-rank",
            "noise_lines": 130,
            "tp": 2,
        },
        {
            "status": "diagnosed",
            "phase": "execution",
            "category": "hung_process",
            "says": {"reasoning": ["process group tp", "ALLREDUCE SeqNum"]},  # the group and the collective
            "culprits": rank(2),
        },
        seed=252,
    ),
    Spec(
        "job-2x8-hang",
        "2 hosts x 8 GPUs, torch >=2.6 wording, torchrun logs with agent logs. Rank 11 "
        "(gpu-node-02, local rank 3) hangs before a gradient all-reduce and never logs again; "
        "the 15 other ranks time out after 10 min and torchrun tears the job down.",
        {
            "hosts": 2,
            "gpus": 8,
            "era": "2.6",
            "fault": "silent",
            "culprit": 11,
            "layout": "torchrun",
            "noise_lines": 300,
        },
        {
            "status": "diagnosed",
            "phase": "execution",
            "category": "hung_process",
            "culprits": rank(11),
        },
        seed=2026,
        root=EXAMPLES,
    ),
]


# The principle that must decide each fixture (the reasoning it was built for), and the principles
# whose evidence is there and points elsewhere, which must lose (more in tests/test_hypotheses_lose.py).
PRINCIPLES: dict[str, str] = {
    "nccl23-desync-rank2": "named-by-tool",
    "nccl23-oom-rank6": "first-failure",
    "nccl25-sigkill-rank3": "first-failure",
    "nccl24-slurm-interleaved-rank7": "first-failure",
    "nccl24-store-rank13": "first-failure",
    "nccl24-silent-rank11": "silent-rank",
    "nccl21-silent-rank3": "silent-rank",
    "nccl26-missing-log-rank5": "silent-rank",
    "big-1024-silent-rank777": "silent-rank",
    "nccl26-subgroup-hang-rank5": "silent-rank",
    # A stalled rank reports no timeout of its own: silent-rank (0.8) decides, and lagging-rank (0.75),
    # reading its dump-signal line (nothing in flight), agrees — as for nccl27-stalled-rank5-itemsync-rank2.
    "nccl25-lagging-rank9": "silent-rank",
    "nccl24-mismatch-rank4": "collective-mismatch",
    "nccl24-ib-host3": "network-host",
    "nccl24-first-collective-rank12": "network-endpoint",
}
LOSES: dict[str, list[str]] = {
    "nccl23-desync-rank2": ["silent-rank"],
    "nccl24-first-collective-rank12": ["first-failure"],
}
for _s in SPECS:
    if _s.name in PRINCIPLES:
        _s.expect["principle"] = PRINCIPLES[_s.name]
    if _s.name in LOSES:
        _s.expect["principle_loses"] = LOSES[_s.name]
