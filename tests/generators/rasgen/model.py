"""What RAS reports on: NCCL's constants (``client_support.cc``) and the job state a dump is
rendered from (Process, Rank, Comm, Snapshot)."""

from __future__ import annotations

from dataclasses import dataclass

# ncclFunc_t 0..4 (NCCL_NUM_FUNCTIONS == 5): the collectives RAS counts (src/init.cc ncclFuncStr).
FUNCS = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce")

# ncclResult_t values as RAS names them (client_support.cc ncclErrorToString).
ERRORS = {
    1: "Unhandled CUDA error",
    2: "System error",
    3: "Internal error",
    4: "Invalid argument",
    5: "Invalid usage",
    6: "Remote process error",
    7: "NCCL operation in progress",
}
IN_PROGRESS = 7  # ncclInProgress: init_state of a rank still initializing

# Communicator status bits (rasACStatus) and their names; 2.24/2.25 call bit 0 UNKNOWN, 2.26+ NOCOMM.
NOCOMM, INIT, RUNNING, FINALIZE, ABORT = 1, 2, 4, 8, 16
STATUS_NAMES = ("NOCOMM", "INIT", "RUNNING", "FINALIZE", "ABORT")
STATUS_NAMES_224 = ("UNKNOWN", "INIT", "RUNNING", "FINALIZE", "ABORT")
# Communicator error bits (rasACError), the index into the Errors column's strings.
MISMATCH, ERROR, INCOMPLETE = 1, 2, 4
ERROR_COLUMN = (
    "OK",
    "MISMATCH",
    "ERROR",
    "ERROR,MISMATCH",
    "INCOMPLETE",
    "INCOMPLETE,MISMATCH",
    "INCOMPLETE,ERROR",
    "INCOMPLETE,ERROR,MISMATCH",
)

DETAIL_THRESHOLD = 10  # RAS_CLIENT_DETAIL_THRESHOLD
OUTLIER_FRACTION = 0.25  # RAS_CLIENT_OUTLIER_FRACTION
VERBOSE_OUTLIER_FRACTION = 0.5  # RAS_CLIENT_VERBOSE_OUTLIER_FRACTION


# --------------------------------------------------------------------------------------------
# The job state


@dataclass(frozen=True)
class Process:
    """One process of the job as RAS knows it (a rasPeerInfo): its node address, pid and GPUs."""

    ip: str
    pid: int
    gpus: tuple[int, ...]  # CUDA device numbers
    nvml: tuple[int, ...] | None = None  # NVML numbers, when CUDA_VISIBLE_DEVICES renumbers them
    host_hash: int = 0  # getHostHash() and getPidHash(): the JSON's secondary_hash of a
    pid_hash: int = 0  # communicator is rank 0's, each plus the communicator's hash

    @property
    def nvml_devs(self) -> tuple[int, ...]:
        return self.nvml if self.nvml is not None else self.gpus


@dataclass
class Rank:
    """One rank of a communicator: the process driving it and what that process reports."""

    rank: int  # rank within the communicator
    process: Process
    gpu: int  # CUDA device
    nvml: int | None = None  # NVML device (None: the same as gpu)
    counts: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)  # launched collectives, FUNCS order
    init_state: int = 0  # ncclResult_t: 0 initialized, 7 still initializing, else the init error
    async_error: int = 0  # ncclCommGetAsyncError
    finalize_called: bool = False
    destroy_flag: bool = False
    abort_flag: bool = False
    member: bool = True  # False: the process answers but no longer has this communicator (NOCOMM)

    @property
    def nvml_dev(self) -> int:
        return self.gpu if self.nvml is None else self.nvml

    @property
    def status(self) -> int:
        """The rank's status bit, as rasClientRunComms derives it."""
        if self.abort_flag:
            return ABORT
        if self.finalize_called or self.destroy_flag:
            return FINALIZE
        return RUNNING if self.init_state == 0 else INIT


@dataclass
class Comm:
    """A communicator: its hash (RAS's commHash) and all its ranks, by communicator rank."""

    hash: int
    ranks: list[Rank]

    @property
    def size(self) -> int:
        return len(self.ranks)


@dataclass
class Snapshot:
    """What RAS sees at one moment; `time` is when the client sent STATUS (UTC epoch seconds)."""

    time: float
    version: str  # NCCL version, e.g. "2.26.2"
    processes: list[Process]  # every process of the job (rasPeers), dead ones included
    comms: list[Comm]
    cuda: str = "12.8"  # CUDA NCCL was compiled with
    runtime: int = 12080  # cudaRuntimeGetVersion
    driver: int = 12080  # cudaDriverGetVersion
    unresponsive: frozenset[int] = frozenset()  # pids that did not answer (not yet dead)
    dead: frozenset[int] = frozenset()  # pids RAS considers dead
    verbose: bool = False  # VERBOSE STATUS (ncclras -v)
    timeouts: int = 0  # communication timeouts while gathering the data
    seconds: float = 0.01  # how long gathering the data took
    utc_offset: int = 0  # the answering process's local time - UTC, seconds (JSON, monitor stamps)

    def answered(self, process: Process) -> bool:
        return process.pid not in self.unresponsive and process.pid not in self.dead


def vtuple(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split(".")[:3])
