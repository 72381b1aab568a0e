"""The PyTorch/NCCL eras the generator writes: envelopes, versions and source line numbers."""

from __future__ import annotations

from dataclasses import dataclass, field

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
            "dump": 1294,
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
            "dump": 1395,
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
            "dump": 1478,
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
            "dump": 1987,
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
