"""Who this process is: one rank under a launcher (torchrun, srun, mpirun), or standalone.

Launchers tell each process who it is through the environment. torchrun (and anything that sets
the same variables) gives RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT; srun gives
SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID; Open MPI gives OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK and
MPICH/Intel MPI PMI_RANK/PMI_SIZE. Without any of them, `triage repro` launches its own ranks
(coordinator.py); with one, this process supervises its rank (under_launcher.py).
"""

from __future__ import annotations

import json
import socket
import zlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from triage.lazy_regex import lazy_compile

DEFAULT_PORT = 29500


class LaunchError(ValueError):
    """The launcher environment is incomplete; the message says what to set."""


@dataclass
class RankEnv:
    launcher: str  # torchrun | env | srun | mpirun
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    master_addr: str
    master_port: int
    run_id: str  # the same on every rank of the job: names the shared log folder
    use_agent_store: bool = False  # torchrun's agent hosts the TCPStore, not rank 0
    device: int | None = None  # the CUDA device (index among the visible ones) this rank uses
    nccl_hostid: str | None = None  # --ranks-per-gpu: this rank's own NCCL host identity

    @property
    def nodes(self) -> int:
        return max(1, -(-self.world_size // max(1, self.local_world_size)))

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> RankEnv:
        return cls(**json.loads(text))

    def option(self, what: str) -> str:
        """The launcher's own name for a setting, so that an error speaks the user's words."""
        return LAUNCHER_OPTIONS.get(self.launcher, LAUNCHER_OPTIONS["triage repro"])[what]


# What a user changes to fix a setting, per launcher: `processes` (ranks started on one host)
# and `address` (where the rendezvous is).
LAUNCHER_OPTIONS = {
    "torchrun": {"processes": "torchrun --nproc-per-node", "address": "torchrun --master-addr/--master-port"
                 " (or --rdzv-endpoint)"},
    "srun": {"processes": "srun --ntasks-per-node (or --gpus-per-task 1)",
             "address": "MASTER_ADDR/MASTER_PORT in the job's environment"},
    "mpirun": {"processes": "mpirun -npernode (or --map-by ppr:N:node)",
               "address": "mpirun -x MASTER_ADDR=… -x MASTER_PORT=…"},
    "env": {"processes": "the number of processes started on this host (LOCAL_WORLD_SIZE)",
            "address": "MASTER_ADDR/MASTER_PORT"},
    "triage repro": {"processes": "--world-size", "address": "MASTER_ADDR/MASTER_PORT"},
}


def gpu_of(local_rank: int, ranks_per_gpu: int) -> int:
    """The visible GPU a local rank uses: K consecutive local ranks share one."""
    return local_rank // max(1, ranks_per_gpu)


def _int(env: Mapping[str, str], *names: str) -> int | None:
    for name in names:
        value = env.get(name, "").strip()
        if value.lstrip("-").isdigit():
            return int(value)
    return None


_FIRST_HOST = lazy_compile(r"^(?P<prefix>[^,\[]*)(?:\[(?P<first>[^\]\-,]+))?")


def first_host(nodelist: str) -> str:
    """The first host of a Slurm node list: `gpu[03-06,9],cpu1` -> `gpu03`."""
    m = _FIRST_HOST.match(nodelist.strip())
    if m is None:
        return nodelist
    return (m["prefix"] or "") + (m["first"] or "")


def _port(env: Mapping[str, str], salt: str) -> int:
    port = _int(env, "MASTER_PORT")
    if port is not None:
        return port
    # Every rank derives the same port from the job id, away from the ephemeral range.
    return 20000 + zlib.crc32(salt.encode()) % 20000 if salt else DEFAULT_PORT


def detect(env: Mapping[str, str]) -> RankEnv | None:
    """This process's rank under a launcher, or None when there is no launcher (or one rank)."""
    found = _torchrun(env) or _mpi(env) or _slurm(env)
    if found is None or found.world_size <= 1:
        return None
    if not 0 <= found.rank < found.world_size:
        raise LaunchError(f"{found.launcher}: rank {found.rank} is outside world size {found.world_size}")
    return found


def _torchrun(env: Mapping[str, str]) -> RankEnv | None:
    rank, world = _int(env, "RANK"), _int(env, "WORLD_SIZE")
    if rank is None or world is None:
        return None
    launcher = "torchrun" if "TORCHELASTIC_RUN_ID" in env else "env"
    if world > 1 and not env.get("MASTER_ADDR"):
        raise LaunchError("RANK and WORLD_SIZE are set but MASTER_ADDR is not: set it to the host of rank 0")
    run_id = env.get("TORCHELASTIC_RUN_ID") or f"{env.get('MASTER_ADDR')}-{env.get('MASTER_PORT')}"
    restart = env.get("TORCHELASTIC_RESTART_COUNT", "0")
    return RankEnv(
        launcher=launcher, rank=rank, world_size=world,
        local_rank=_int(env, "LOCAL_RANK") or 0,
        local_world_size=_int(env, "LOCAL_WORLD_SIZE") or world,
        master_addr=env.get("MASTER_ADDR", "127.0.0.1"),
        master_port=_port(env, ""),
        run_id=f"{run_id}-{restart}" if launcher == "torchrun" else run_id,
        use_agent_store=env.get("TORCHELASTIC_USE_AGENT_STORE") == "True",
    )


def _mpi(env: Mapping[str, str]) -> RankEnv | None:
    rank = _int(env, "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")
    world = _int(env, "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")
    if rank is None or world is None:
        return None
    local_world = _int(env, "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS") or world
    addr = env.get("MASTER_ADDR")
    if not addr:
        if local_world < world:
            raise LaunchError("mpirun across nodes: set MASTER_ADDR to the host of rank 0 (mpirun -x MASTER_ADDR=…)")
        addr = "127.0.0.1"
    job = env.get("OMPI_MCA_ess_base_jobid") or env.get("PMI_ID", "") or ""
    return RankEnv(
        launcher="mpirun", rank=rank, world_size=world,
        local_rank=_int(env, "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID") or 0,
        local_world_size=local_world, master_addr=addr, master_port=_port(env, job),
        run_id=f"mpi-{job or addr}",
    )


def _slurm(env: Mapping[str, str]) -> RankEnv | None:
    # Only an srun step: a batch script also carries SLURM_PROCID=0, but it is one process, and
    # taking it for rank 0 of SLURM_NTASKS would wait forever for ranks that never come.
    step = env.get("SLURM_STEP_ID", "")
    if not step or step in ("4294967294", "batch", "extern"):
        return None
    rank, world = _int(env, "SLURM_PROCID"), _int(env, "SLURM_NTASKS", "SLURM_NPROCS")
    if rank is None or world is None:
        return None
    job = f"{env.get('SLURM_JOB_ID', '')}.{step}"
    nodes = _int(env, "SLURM_STEP_NUM_NODES", "SLURM_NNODES") or 1
    nodelist = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or ""
    addr = env.get("MASTER_ADDR") or (first_host(nodelist) if nodelist else "127.0.0.1")
    return RankEnv(
        launcher="srun", rank=rank, world_size=world,
        local_rank=_int(env, "SLURM_LOCALID") or 0,
        local_world_size=-(-world // nodes), master_addr=addr, master_port=_port(env, job),
        run_id=f"slurm-{job}",
    )


def free_port() -> int:
    """A TCP port that was free a moment ago on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
